# SPDX-License-Identifier: Apache-2.0
"""Toy training: the heads learn to locate a planted span.

Synthetic data: B sequences of T steps with H-dimensional Gaussian noise and
ragged lengths; inside one planted span per row (length 3..8, within the
row's length) every step is shifted by a fixed random direction. A small
encoder (a width-3 Conv1d + GELU, so a step sees its neighbours, which a start
or end needs) feeds the head, trained with Adam for 300 steps of 32 rows. After training on CPU, the
mean temporal IoU (inclusive step spans) between decoded and planted spans
on a fresh batch must exceed 0.7 for SpanHead (decoded with
``span_argmax``, max_len 10) and for IOHead (longest-scoring run);
TemporalAttentionPool, trained only on a label that depends on the planted
steps, must put its best attention span there with mean IoU above 0.5 (seed
0 reaches about 0.85).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fastvqa.nn import IOHead, SpanHead, TemporalAttentionPool  # noqa: E402

T, H, IOU_THRESHOLD = 32, 16, 0.7


def make_batch(B, generator, direction):
    lengths = torch.randint(16, T + 1, (B,), generator=generator)
    n = torch.randint(3, 9, (B,), generator=generator)
    start = (torch.rand(B, generator=generator) * (lengths - n + 1)).long()
    end = start + n - 1
    x = torch.randn(B, T, H, generator=generator)
    t = torch.arange(T)
    inside = (t >= start[:, None]) & (t <= end[:, None])
    x = x + 1.5 * inside[..., None] * direction
    return x, lengths, torch.stack([start, end], dim=-1)


def iou(a, b):
    """Inclusive step spans; (-1, -1) predictions score 0."""
    inter = (torch.minimum(a[:, 1], b[:, 1]) - torch.maximum(a[:, 0], b[:, 0]) + 1).clamp_min(0)
    union = (a[:, 1] - a[:, 0] + 1) + (b[:, 1] - b[:, 0] + 1) - inter
    return torch.where(a[:, 0] >= 0, inter / union, torch.zeros_like(union, dtype=torch.float32))


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(H, H, 3, padding=1)

    def forward(self, x):
        return torch.nn.functional.gelu(self.conv(x.transpose(1, 2)).transpose(1, 2))


def train(head, forward_loss, steps=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    direction = torch.randn(H, generator=g)
    encoder = Encoder()
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-2)
    for _ in range(steps):
        x, lengths, gold = make_batch(32, g, direction)
        loss = forward_loss(head, encoder(x), lengths, gold)
        opt.zero_grad()
        loss.backward()
        opt.step()
    x, lengths, gold = make_batch(256, g, direction)
    with torch.no_grad():
        return encoder(x), lengths, gold


def test_span_head_locates_planted_span():
    head = SpanHead(H)

    def loss_fn(head, h, lengths, gold):
        s, e = head(h)
        return head.loss(s, e, gold, lengths)

    h, lengths, gold = train(head, loss_fn)
    s, e = head(h)
    spans, _ = head.decode(s, e, lengths, max_len=10)
    mean_iou = iou(spans, gold).mean().item()
    assert mean_iou > IOU_THRESHOLD, mean_iou


def test_io_head_locates_planted_span():
    head = IOHead(H)

    def loss_fn(head, h, lengths, gold):
        return head.loss(head(h), IOHead.tags_from_spans(gold[:, None], T), lengths)

    h, lengths, gold = train(head, loss_fn)
    spans, offsets, _ = head.decode(head(h), lengths)
    best = torch.full_like(gold, -1)
    has = offsets[1:] > offsets[:-1]
    best[has] = spans[offsets[:-1][has]]  # each row's best-scoring run
    mean_iou = iou(best, gold).mean().item()
    assert mean_iou > IOU_THRESHOLD, mean_iou


def test_attention_pool_locates_planted_span_from_labels_alone():
    """Weak supervision: the label is the sign of the planted shift (+/- the
    direction), so only the planted steps carry information and the attention
    must learn to look there. The best span of the attention (``top_spans``,
    contrast, max_len 10) must reach a mean IoU above 0.5 with the planted span,
    although no span was ever given as a target."""
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    direction = torch.randn(H, generator=g)
    encoder, pool = Encoder(), TemporalAttentionPool(H, max_len=10)
    classifier = torch.nn.Linear(H, 1)
    params = [*encoder.parameters(), *pool.parameters(), *classifier.parameters()]
    opt = torch.optim.Adam(params, lr=1e-2)

    def batch(B):
        x, lengths, gold = make_batch(B, g, direction)
        label = torch.randint(0, 2, (B,), generator=g)
        sign = (2.0 * label - 1.0)[:, None, None]
        t = torch.arange(T)
        inside = (t >= gold[:, :1]) & (t <= gold[:, 1:])
        # make_batch shifted the span by +1.5 * direction; flip it for label 0.
        x = x + (sign - 1.0) * 1.5 * inside[..., None] * direction
        return x, lengths, gold, label.float()

    for _ in range(300):
        x, lengths, _, label = batch(32)
        out = pool(encoder(x), lengths)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            classifier(out.pooled).squeeze(-1), label)
        opt.zero_grad()
        loss.backward()
        opt.step()
    x, lengths, gold, _ = batch(256)
    with torch.no_grad():
        out = pool(encoder(x), lengths)
    mean_iou = iou(out.span, gold).mean().item()
    assert mean_iou > 0.5, mean_iou
