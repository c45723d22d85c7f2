# SPDX-License-Identifier: Apache-2.0
"""fastvqa.nn heads: masking, losses against hand computations, fully masked
rows (no span, no NaN), decoding, and torch.compile(fullgraph=True)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from fastvqa.nn import IOHead, SpanHead, TemporalAttentionPool, lengths_to_mask  # noqa: E402
from tests.conftest import DEVICES  # noqa: E402

GOLD = torch.tensor([[[1, 3], [-1, -1]], [[0, 2], [1, 1]], [[0, 0], [-1, -1]]])
LENGTHS = torch.tensor([10, 4, 0])


def _hidden(device="cpu", B=3, T=10, H=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, T, H, generator=g).to(device)


def test_lengths_to_mask():
    m = lengths_to_mask(torch.tensor([2, 0, 3]), 3, 3, torch.device("cpu"))
    assert m.tolist() == [[True, True, False], [False, False, False], [True, True, True]]


@pytest.mark.parametrize("multi_span", ["first", "mean", "logsumexp"])
def test_span_loss_by_hand(multi_span):
    torch.manual_seed(0)
    head = SpanHead(8, multi_span=multi_span)
    h = _hidden()
    s, e = head(h)
    loss = head.loss(s, e, GOLD, LENGTHS)
    lp_s = [torch.log_softmax(s[b, :n], 0) for b, n in enumerate(LENGTHS.tolist())]
    lp_e = [torch.log_softmax(e[b, :n], 0) for b, n in enumerate(LENGTHS.tolist())]
    # Row 2 has length 0: excluded. Row 0 has one gold span, row 1 two.
    r0 = -(lp_s[0][1] + lp_e[0][3])
    if multi_span == "first":
        r1 = -(lp_s[1][0] + lp_e[1][2])
    elif multi_span == "mean":
        r1 = (-(lp_s[1][0] + lp_e[1][2]) - (lp_s[1][1] + lp_e[1][1])) / 2
    else:
        r1 = -(torch.logsumexp(lp_s[1][[0, 1]], 0) + torch.logsumexp(lp_e[1][[2, 1]], 0))
    torch.testing.assert_close(loss, (r0 + r1) / 2)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in head.parameters())


def test_padding_does_not_change_loss_or_decode():
    torch.manual_seed(1)
    head = SpanHead(8)
    h = _hidden()
    h2 = h.clone()
    h2[1, 4:] = 1e4  # garbage in the padding of row 1
    losses, decoded = [], []
    for x in (h, h2):
        s, e = head(x)
        losses.append(head.loss(s, e, GOLD, LENGTHS))
        decoded.append(head.decode(s, e, LENGTHS, max_len=3)[0])
    torch.testing.assert_close(losses[0], losses[1])
    assert torch.equal(decoded[0], decoded[1])
    assert decoded[0][2].tolist() == [-1, -1] and decoded[0][1, 1] < 4


def test_fully_masked_batch_gives_zero_loss_not_nan():
    head, io = SpanHead(4), IOHead(4)
    h = torch.randn(2, 5, 4)
    zero = torch.zeros(2, dtype=torch.int64)
    s, e = head(h)
    loss = head.loss(s, e, torch.tensor([[0, 1], [2, 2]]), zero) + io.loss(io(h), torch.ones(2, 5), zero)
    assert loss.item() == 0.0
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in (*head.parameters(), *io.parameters()))


def test_span_decode_matches_brute_force():
    torch.manual_seed(2)
    head = SpanHead(8)
    s, e = head(_hidden())
    spans, scores = head.decode(s, e, LENGTHS, max_len=3, k=2)
    for b, n in enumerate(LENGTHS.tolist()):
        if n == 0:
            continue
        ls, le = torch.log_softmax(s[b, :n], 0), torch.log_softmax(e[b, :n], 0)
        cands = sorted(((-(ls[i] + le[j]).item(), i, j) for i in range(n)
                        for j in range(i, min(n, i + 3))))
        assert spans[b].tolist() == [[i, j] for _, i, j in cands[:2]]


def test_attention_pool_masks_exactly():
    torch.manual_seed(3)
    pool = TemporalAttentionPool(8, query_size=5, max_len=4)
    h = _hidden()
    out = pool(h, LENGTHS, torch.randn(3, 5))
    assert torch.all(out.attention[1, 4:] == 0) and torch.all(out.attention[2] == 0)
    torch.testing.assert_close(out.attention[:2].sum(-1), torch.ones(2))
    torch.testing.assert_close(out.pooled[1], (out.attention[1, :4, None] * h[1, :4]).sum(0))
    assert torch.all(out.pooled[2] == 0)
    assert out.span[2].tolist() == [-1, -1] and out.span_score[2] == -math.inf
    assert 0 <= out.span[1, 0] <= out.span[1, 1] < 4 and out.span[0, 1] - out.span[0, 0] < 4
    out.pooled.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in pool.parameters())


def test_io_decode_runs():
    probs = torch.tensor([[0.9, 0.6, 0.2, 0.7, 0.7, math.nan, 0.8],
                          [0.1, 0.5, 0.5, 0.1, 0.9, 0.9, 0.9]])
    logits = torch.logit(probs)
    spans, offsets, scores = IOHead(2).decode(logits, torch.tensor([7, 5]))
    assert offsets.tolist() == [0, 3, 5]
    assert spans.tolist() == [[6, 6], [0, 1], [3, 4], [4, 4], [1, 2]]
    torch.testing.assert_close(scores, torch.tensor([0.8, 0.75, 0.7, 0.9, 0.5]))
    spans, offsets, _ = IOHead(2).decode(logits, torch.tensor([7, 5]), min_len=2)
    assert spans.tolist() == [[0, 1], [3, 4], [1, 2]] and offsets.tolist() == [0, 2, 3]


def test_io_tags_from_spans():
    tags = IOHead.tags_from_spans(torch.tensor([[[1, 2], [4, 4]], [[-1, -1], [-1, -1]]]), 6)
    assert tags.tolist() == [[0, 1, 1, 0, 1, 0], [0] * 6]


@pytest.mark.parametrize("device", DEVICES)
def test_modules_compile_fullgraph(device):
    torch._dynamo.reset()
    torch.manual_seed(5)
    span, pool, io = SpanHead(8).to(device), TemporalAttentionPool(8).to(device), IOHead(8).to(device)
    h, lengths, gold = _hidden(device), LENGTHS.to(device), GOLD.to(device)
    tags = IOHead.tags_from_spans(gold, h.shape[1])

    def step(h, lengths):
        s, e = span(h)
        out = pool(h, lengths)
        logits = io(h)
        loss = span.loss(s, e, gold, lengths) + io.loss(logits, tags, lengths) + out.pooled.sum()
        spans, _ = span.decode(s, e, lengths, max_len=4)
        return loss, spans, out.span, out.attention

    compiled = torch.compile(step, fullgraph=True)
    got, want = compiled(h, lengths), step(h, lengths)
    torch.testing.assert_close(got[0], want[0])
    for a, b in zip(got[1:], want[1:]):
        torch.testing.assert_close(a, b)
