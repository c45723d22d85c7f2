# SPDX-License-Identifier: Apache-2.0
"""fastvqa.nn's query-conditioned grounding models (MomentDETR, SpanGrounder,
IOGrounder) and saliency_loss: shapes, padding invariance, the saliency loss
against hand computations, gradcheck, decoding to seconds, the registry, and
a tiny overfit run in which only the query tells which of two signals to find.

Overfit data: 2 videos (14 and 16 steps of 1 s, 6-d features), each with two
planted signals (channel 0 raised on one span, channel 1 on another), and 4
examples: each video with a query saying "channel 0" and with one saying
"channel 1" (query tokens raised on that channel). The two examples of a
video differ only in the query, so a model that ignored it could fit at most
one span per video (mIoU near 0.5 at best); each model (width 32) must reach
mIoU > 0.7 of its top decoded span in 150 AdamW steps (seeds 0 to 4: MomentDETR
0.95 to 0.98, the other two 1.0; about 1 s each on one core).
"""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("scipy")

from fastvqa.errors import InputError  # noqa: E402
from fastvqa.nn import (  # noqa: E402
    MODELS,
    DecodedMoments,
    GroundingOutput,
    IOGrounder,
    IOOutput,
    MomentDETR,
    SpanGrounder,
    SpanOutput,
    build_model,
    saliency_loss,
)
from tests.test_nn_moment_detr import iou_f64 as iou, one_thread  # noqa: E402, F401

SMALL = dict(hidden=16, heads=2, enc_layers=1, ffn=32, dropout=0.0)
EXTRA = {"moment_detr": dict(dec_layers=1, num_queries=4), "span": {}, "io": {}}
DV, DQ = 6, 4


def small(name, seed=0, **kw):
    torch.manual_seed(seed)
    return build_model(name, video_dim=DV, query_dim=DQ, **{**SMALL, **EXTRA[name], **kw})


def batch_for(features, lengths, query, query_lengths, gold, saliency=None, labelled=None):
    """A batch as StoreDataset.collate gives it, from unpadded pieces padded
    to the sizes of ``features`` / ``query``; ``gold`` one (start, end) step
    span per row."""
    B, T, _ = features.shape
    mask = torch.arange(T)[None] < torch.tensor(lengths)[:, None]
    query_mask = torch.arange(query.shape[1])[None] < torch.tensor(query_lengths)[:, None]
    g = torch.tensor(gold, dtype=torch.int64)[:, None, :]
    n = torch.tensor(lengths, dtype=torch.float32).clamp_min(1)
    cw = torch.stack(((g[..., 0] + g[..., 1] + 1) / 2 / n[:, None],
                      (g[..., 1] + 1 - g[..., 0]) / n[:, None]), dim=-1).float()
    return dict(features=features, mask=mask, query=query, query_mask=query_mask, gold=g,
                gold_cw=cw, gold_mask=g[..., 0] >= 0,
                saliency=torch.zeros(B, T) if saliency is None else saliency,
                saliency_mask=torch.zeros(B, T, dtype=torch.bool) if labelled is None
                else labelled,
                duration=torch.tensor(lengths, dtype=torch.float64))


def run(model, batch):
    return model(batch["features"], batch["mask"], batch["query"], batch["query_mask"])


# ---------------------------------------------------------------- shapes, masking

@pytest.mark.parametrize("name", sorted(MODELS))
def test_shapes_and_padded_steps(name):
    model = small(name).eval()
    g = torch.Generator().manual_seed(1)
    batch = batch_for(torch.randn(3, 7, DV, generator=g), [7, 4, 0],
                      torch.randn(3, 5, DQ, generator=g), [5, 2, 3], [(1, 3), (0, 0), (-1, -1)])
    out = run(model, batch)
    lowest = torch.finfo(torch.float32).min
    if name == "moment_detr":
        assert isinstance(out, GroundingOutput)
        assert out.pred_logits.shape == (3, 4, 2) and out.pred_spans.shape == (3, 4, 2)
        assert ((out.pred_spans > 0) & (out.pred_spans < 1)).all()
        assert torch.isfinite(out.pred_logits).all()  # the empty row too
        per_step = [out.saliency]
    elif name == "span":
        assert isinstance(out, SpanOutput)
        per_step = [out.start_logits, out.end_logits]
    else:
        assert isinstance(out, IOOutput)
        per_step = [out.logits]
    for scores in per_step:
        assert scores.shape == (3, 7)
        assert (scores[~batch["mask"]] == lowest).all()
        assert torch.isfinite(scores[batch["mask"]]).all()
    terms = model.loss(out, batch)
    assert terms._fields[0] == "total" and all(t.ndim == 0 for t in terms)
    assert torch.isfinite(terms.total)
    decoded = model.decode(out, batch["duration"].clamp_min(1.0), batch["mask"])
    assert len(decoded) == 3 and len(decoded[2].spans) == 0  # the empty row


@pytest.mark.parametrize("name", sorted(MODELS))
def test_extra_padding_changes_nothing(name):
    """The same 2 examples, padded to (T, L) = (6, 3) and to (9, 5) with garbage
    (large values, NaN) in the padding, give the same outputs on the real
    steps, the same loss, and the same decoded moments; and row 1 alone,
    unpadded, gives row 1's outputs."""
    model = small(name, seed=2).eval()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 6, DV, generator=g)
    q = torch.randn(2, 3, DQ, generator=g)
    x[1, 4:] = 0.0
    q[1, 2:] = 0.0
    lengths, qlengths, gold = [6, 4], [3, 2], [(2, 4), (1, 1)]
    sal = torch.tensor([[0.0, 1.0, 3.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    labelled = torch.tensor([[True] * 6, [False] * 6])
    tight = batch_for(x, lengths, q, qlengths, gold, sal, labelled)
    xp = torch.full((2, 9, DV), 1e3)
    xp[:, :6] = x
    xp[1, 4:] = float("nan")
    qp = torch.full((2, 5, DQ), -1e3)
    qp[:, :3] = q
    qp[1, 2:] = float("nan")
    salp = torch.full((2, 9), 7.0)
    salp[:, :6] = sal
    labp = torch.zeros(2, 9, dtype=torch.bool)
    labp[:, :6] = labelled
    loose = batch_for(xp, lengths, qp, qlengths, gold, salp, labp)
    a, b = run(model, tight), run(model, loose)
    for ta, tb in zip(a, b):
        if ta.shape[1] == 6:  # per-step outputs: compare the real steps
            torch.testing.assert_close(ta[tight["mask"]], tb[:, :6][tight["mask"]])
        else:
            torch.testing.assert_close(ta, tb)
    for la, lb in zip(model.loss(a, tight), model.loss(b, loose)):
        torch.testing.assert_close(la, lb)
    for da, db in zip(model.decode(a, tight["duration"], tight["mask"]),
                      model.decode(b, loose["duration"], loose["mask"])):
        torch.testing.assert_close(da.spans, db.spans)
        torch.testing.assert_close(da.scores, db.scores)
    alone = batch_for(x[1:, :4], [4], q[1:, :2], [2], gold[1:])
    c = run(model, alone)
    for ta, tc in zip(a, c):
        torch.testing.assert_close(ta[1:, :tc.shape[1]], tc)


# ---------------------------------------------------------------- saliency loss

def _saliency_case():
    """Three videos of 4 steps (hand computation in test_saliency_loss_by_hand)."""
    scores = torch.tensor([[0.3, -0.1, 0.25, 0.9],
                           [0.0, 0.5, 0.1, 100.0],
                           [0.4, 0.2, 0.0, 0.0]], dtype=torch.float64)
    saliency = torch.tensor([[3.0, 1.0, 2.0, 0.0],
                             [0.0, 0.0, 0.0, 0.0],
                             [1.0, 1.0, 5.0, 0.0]], dtype=torch.float64)
    labelled = torch.tensor([[True] * 4, [False] * 4, [True, True, False, False]])
    mask = torch.tensor([[True] * 4, [True, True, True, False], [True] * 4])
    gold = torch.tensor([[[0, 0]], [[1, 2]], [[2, 3]]])
    return scores, saliency, labelled, mask, gold


def test_saliency_loss_by_hand():
    scores, saliency, labelled, mask, gold = _saliency_case()
    # Video 0 (labels 3 1 2 0, scores .3 -.1 .25 .9), pairs higher > lower with
    # max(0, 0.2 - s_hi + s_lo): (0,1) -0.2 -> 0, (0,2) 0.15, (0,3) 0.8,
    # (2,1) -0.15 -> 0, (2,3) 0.85, (1,3) 1.2: 3.0 / 6 = 0.5.
    # Video 1 (no labels; gold [1, 2]; step 3 is padding): steps 1, 2 inside,
    # step 0 outside: (1,0) -0.3 -> 0, (2,0) 0.1: 0.05.
    # Video 2: labelled steps 0 and 1 tie, so no pair (its gold is not used:
    # it has labels). Mean over the 2 videos with pairs: 0.275.
    got = saliency_loss(scores, saliency, labelled, mask, gold=gold)
    assert got.item() == pytest.approx(0.275, abs=1e-12)
    assert got.dtype == torch.float64
    # Without gold, video 1 has no pair: only video 0 counts.
    assert saliency_loss(scores, saliency, labelled, mask).item() == pytest.approx(0.5, abs=1e-12)
    # Margin 0: video 0 gives (0.6 + 0.65 + 1.0) / 6, video 1 (0.1 - 0.0 -> 0, 0.5 -> 0) 0.
    zero_margin = saliency_loss(scores, saliency, labelled, mask, 0.0, gold=gold).item()
    assert zero_margin == pytest.approx((2.25 / 6 + 0.0) / 2, abs=1e-12)


def test_saliency_loss_gradient_reaches_only_usable_steps():
    scores, saliency, labelled, mask, gold = _saliency_case()
    scores.requires_grad_(True)
    saliency_loss(scores, saliency, labelled, mask, gold=gold).backward()
    # Video 0: d/ds of the active hinges (0,2), (0,3), (2,3), (1,3), / 6 / 2 videos.
    torch.testing.assert_close(scores.grad[0], torch.tensor([-2.0, -1.0, 0.0, 3.0],
                                                            dtype=torch.float64) / 12)
    # Video 1: of its 2 pairs only (2,0) is active: +1 on step 0, -1 on step 2,
    # / 2 pairs / 2 videos; the padded step gets nothing.
    torch.testing.assert_close(scores.grad[1], torch.tensor([0.25, 0.0, -0.25, 0.0],
                                                            dtype=torch.float64))
    assert (scores.grad[2] == 0).all()


@pytest.mark.parametrize("case", ["ties", "unlabelled", "no_steps", "empty_batch", "padding"])
def test_saliency_loss_is_zero_without_pairs(case):
    B, T = {"no_steps": (2, 0), "empty_batch": (0, 4)}.get(case, (2, 4))
    scores = torch.randn(B, T, requires_grad=True)
    saliency = torch.ones(B, T)
    labelled = torch.ones(B, T, dtype=torch.bool)
    mask = torch.ones(B, T, dtype=torch.bool)
    gold = None
    if case == "unlabelled":  # no labels and no gold spans
        labelled[:] = False
        gold = torch.full((B, 1, 2), -1)
    if case == "padding":  # distinct labels, but only on padded steps
        saliency = torch.arange(T, dtype=torch.float32).expand(B, T)
        mask[:, 1:] = False
    got = saliency_loss(scores, saliency, labelled, mask, gold=gold)
    assert got.item() == 0.0
    got.backward()
    assert (scores.grad == 0).all()


def test_saliency_loss_gradcheck():
    g = torch.Generator().manual_seed(4)
    scores = torch.randn(3, 5, dtype=torch.float64, generator=g, requires_grad=True)
    saliency = torch.randint(0, 4, (3, 5), generator=g).double()
    labelled = torch.tensor([[True] * 5, [False] * 5, [True, False, True, True, False]])
    mask = torch.tensor([[True] * 5, [True] * 4 + [False], [True] * 5])
    gold = torch.tensor([[[0, 1]], [[2, 3]], [[-1, -1]]])
    assert torch.autograd.gradcheck(
        lambda s: saliency_loss(s, saliency, labelled, mask, 0.3, gold=gold), (scores,))


def test_combined_loss_is_the_weighted_sum_and_passes_gradcheck():
    from fastvqa.nn import set_prediction_loss

    model = small("moment_detr", span_weight=2.0, giou_weight=3.0, class_weight=0.5,
                  eos_coef=0.2, saliency_weight=1.5, saliency_margin=0.3)
    g = torch.Generator().manual_seed(5)
    B, Q, T = 2, 4, 5
    logits = torch.randn(B, Q, 2, dtype=torch.float64, generator=g, requires_grad=True)
    spans = (0.2 + 0.6 * torch.rand(B, Q, 2, dtype=torch.float64, generator=g)).requires_grad_()
    scores = torch.randn(B, T, dtype=torch.float64, generator=g, requires_grad=True)
    batch = batch_for(torch.zeros(B, T, DV), [5, 4], torch.zeros(B, 2, DQ), [2, 2],
                      [(1, 2), (0, 3)], torch.tensor([[0.0, 2.0, 1.0, 3.0, 0.0]] * 2),
                      torch.tensor([[True] * 5, [False] * 5]))
    terms = model.loss(GroundingOutput(logits, spans, scores), batch)
    targets = [batch["gold_cw"][0].double(), batch["gold_cw"][1].double()]
    matched = set_prediction_loss((logits, spans), targets, span_weight=2.0, giou_weight=3.0,
                                  class_weight=0.5, eos_coef=0.2)
    ranking = saliency_loss(scores, batch["saliency"], batch["saliency_mask"], batch["mask"],
                            0.3, gold=batch["gold"])
    assert terms.total.item() == pytest.approx(matched.total.item() + 1.5 * ranking.item(),
                                               abs=1e-12)
    assert terms.saliency.item() == pytest.approx(ranking.item(), abs=1e-12)
    assert [terms.span_l1.item(), terms.giou.item(), terms.classification.item()] == \
        pytest.approx([matched.span_l1.item(), matched.giou.item(),
                       matched.classification.item()], abs=1e-12)
    assert torch.autograd.gradcheck(
        lambda lo, sp, sc: model.loss(GroundingOutput(lo, sp, sc), batch).total,
        (logits, spans, scores))


# ---------------------------------------------------------------- decoding

def test_moment_detr_decode_seconds_and_stable_ties():
    model = small("moment_detr")
    # Video 0 (20 s): three equal scores, disjoint spans: stable order = query order.
    # Video 1 (8 s): query 1 runs past the end and is clamped; query 0 is the best.
    # Video 2: no real step.
    logits = torch.log(torch.tensor([[[0.6, 0.4]] * 4,
                                     [[0.9, 0.1], [0.7, 0.3], [0.2, 0.8], [0.1, 0.9]],
                                     [[0.9, 0.1]] * 4]))
    cw = torch.tensor([[[0.85, 0.1], [0.5, 0.1], [0.15, 0.1], [0.5, 0.1]],
                       [[0.25, 0.25], [0.95, 0.3], [0.25, 0.25], [0.6, 0.1]],
                       [[0.5, 0.5]] * 4])
    out = GroundingOutput(logits, cw, torch.zeros(3, 4))
    mask = torch.tensor([[True] * 4, [True] * 4, [False] * 4])
    got = model.decode(out, torch.tensor([20.0, 8.0, 4.0]), mask, iou_threshold=0.7)
    assert all(isinstance(m, DecodedMoments) for m in got)
    # Query 3 repeats query 1's span (IoU 1 > 0.7) and is suppressed.
    assert got[0].queries.tolist() == [0, 1, 2]
    torch.testing.assert_close(got[0].spans, torch.tensor([[16.0, 18.0], [9.0, 11.0], [2.0, 4.0]]))
    # Video 1: 0.9 (query 0: [1, 3]), 0.7 (query 1: [6.4, 8.8] -> [6.4, 8]), query 2
    # (0.2, same span as query 0) suppressed, 0.1 (query 3: [4.4, 5.2]).
    assert got[1].queries.tolist() == [0, 1, 3]
    torch.testing.assert_close(got[1].spans, torch.tensor([[1.0, 3.0], [6.4, 8.0], [4.4, 5.2]]))
    torch.testing.assert_close(got[1].scores, torch.tensor([0.9, 0.7, 0.1]))
    assert len(got[2].spans) == 0
    assert model.decode(out, 20.0, mask, ties="start")[0].queries.tolist() == [2, 1, 0]


def test_span_decode_seconds_and_ties():
    model = small("span")
    # Row 0: 4 steps over 8 s, uniform logits: every span (i <= j) has
    # P = 1/16; equal scores -> smaller start, then smaller end.
    # Row 1: 2 real steps over 3 s (steps 2, 3 padding: huge logits ignored).
    start = torch.tensor([[0.0, 0.0, 0.0, 0.0], [5.0, 0.0, 99.0, 99.0]])
    end = torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, 5.0, 99.0, 99.0]])
    mask = torch.tensor([[True] * 4, [True, True, False, False]])
    got = model.decode(SpanOutput(start, end), torch.tensor([8.0, 3.0]), mask, k=3)
    torch.testing.assert_close(got[0].spans, torch.tensor([[0.0, 2.0], [0.0, 4.0], [0.0, 6.0]]))
    torch.testing.assert_close(got[0].scores, torch.full((3,), 1 / 16))
    p = 1 / (1 + math.exp(-5))  # P(start = 0) = P(end = 1)
    torch.testing.assert_close(got[1].spans, torch.tensor([[0.0, 3.0], [0.0, 1.5], [1.5, 3.0]]))
    torch.testing.assert_close(got[1].scores, torch.tensor([p * p, p * (1 - p), (1 - p) * p]))
    assert got[1].queries.tolist() == [-1, -1, -1]
    # With the steps' own times (the last step is short) and clamping to 7 s.
    times = torch.tensor([[0.0, 2.0, 4.0, 6.0], [0.0, 1.5, 0.0, 0.0]], dtype=torch.float64)
    ends = torch.tensor([[2.0, 4.0, 6.0, 7.5], [1.5, 3.0, 0.0, 0.0]], dtype=torch.float64)
    got = model.decode(SpanOutput(start, end), torch.tensor([7.0, 3.0]), mask, k=10,
                       start=times, end=ends)
    assert len(got[0].spans) == 10 and len(got[1].spans) == 3
    assert got[0].spans[3].tolist() == [0.0, 7.0]  # steps (0, 3)
    assert got[0].spans[9].tolist() == [6.0, 7.0]  # steps (3, 3)


def test_io_decode_seconds_and_order():
    model = small("io")
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    logits = torch.tensor([[-1.0, 1.0, -1.0, 2.0, 3.0, -2.0], [3.0, 3.0, 3.0, -1.0, 0, 0]])
    mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    got = model.decode(IOOutput(logits), torch.tensor([12.0, 6.0]), mask)
    # Row 0, 2 s per step: runs [3, 4] (mean of sigmoid 2, 3) then [1, 1].
    torch.testing.assert_close(got[0].spans, torch.tensor([[6.0, 10.0], [2.0, 4.0]]))
    torch.testing.assert_close(got[0].scores, torch.tensor([(sig(2) + sig(3)) / 2, sig(1)]))
    # Row 1: 3 real steps over 6 s, one run over all of them.
    torch.testing.assert_close(got[1].spans, torch.tensor([[0.0, 6.0]]))
    top = model.decode(IOOutput(logits), torch.tensor([12.0, 6.0]), mask, top_k=1)
    assert [len(m.spans) for m in top] == [1, 1] and top[0].spans[0].tolist() == [6.0, 10.0]
    # Equal scores: smaller start first.
    tie = model.decode(IOOutput(torch.tensor([[2.0, -1.0, 2.0]])), 3.0)
    assert tie[0].spans.tolist() == [[0.0, 1.0], [2.0, 3.0]]


# ---------------------------------------------------------------- registry, config

@pytest.mark.parametrize("name", sorted(MODELS))
def test_build_model_round_trip(name):
    model = small(name, seed=6).eval()
    config = json.loads(json.dumps(model.config))  # a plain, JSON-ready dict
    assert config == model.config and config["hidden"] == 16 and config["video_dim"] == DV
    assert type(model).name == name and MODELS[name] is type(model)
    again = build_model(name, **config)
    assert type(again) is type(model) and again.config == config
    assert type(model)(**config).config == config
    again.load_state_dict(model.state_dict())
    again.eval()
    batch = batch_for(torch.randn(2, 5, DV), [5, 3], torch.randn(2, 2, DQ), [2, 1],
                      [(0, 1), (2, 2)])
    for a, b in zip(run(model, batch), run(again, batch)):
        torch.testing.assert_close(a, b)


def test_configs_hold_the_documented_defaults():
    detr = MomentDETR(8, 4).config
    assert {k: detr[k] for k in ("hidden", "heads", "enc_layers", "dec_layers", "num_queries",
                                 "ffn", "dropout", "span_weight", "giou_weight", "class_weight",
                                 "eos_coef", "saliency_weight", "saliency_margin")} == dict(
        hidden=256, heads=8, enc_layers=2, dec_layers=2, num_queries=10, ffn=1024, dropout=0.1,
        span_weight=10.0, giou_weight=1.0, class_weight=4.0, eos_coef=0.1, saliency_weight=1.0,
        saliency_margin=0.2)
    assert SpanGrounder(8, 4).config["multi_span"] == "mean"
    assert set(IOGrounder(8, 4).config) == {"video_dim", "query_dim", "hidden", "heads",
                                            "enc_layers", "ffn", "dropout"}


# ---------------------------------------------------------------- errors

def _batch_without(key):
    batch = batch_for(torch.randn(1, 4, DV), [4], torch.randn(1, 2, DQ), [2], [(0, 1)])
    del batch[key]
    return batch


@pytest.mark.parametrize("call, match", [
    (lambda: build_model("detr", video_dim=DV, query_dim=DQ),
     "unknown model 'detr'; expected one of io, moment_detr, span"),
    (lambda: build_model("io", video_dim=DV, query_dim=DQ, num_queries=3),
     "takes no option num_queries"),
    (lambda: build_model("span", query_dim=DQ), "needs video_dim"),
    (lambda: MomentDETR(DV, DQ, hidden=30, heads=4), "divisible by heads"),
    (lambda: MomentDETR(DV, DQ, eos_coef=-1.0), "eos_coef must be >= 0"),
    (lambda: SpanGrounder(DV, DQ, multi_span="all"), "multi_span must be one of"),
    (lambda: small("io")(torch.zeros(1, 4, DV), torch.ones(1, 4), torch.zeros(1, 2, DQ),
                         torch.ones(1, 2, dtype=torch.bool)), "mask must be a bool tensor"),
    (lambda: small("io")(torch.zeros(1, 4, DV), torch.tensor([[True, False, True, True]]),
                         torch.zeros(1, 2, DQ), torch.ones(1, 2, dtype=torch.bool)), "got a gap"),
    (lambda: small("span")(torch.zeros(1, 4, DV + 1), torch.ones(1, 4, dtype=torch.bool),
                           torch.zeros(1, 2, DQ), torch.ones(1, 2, dtype=torch.bool)),
     r"features must have shape \(B, T, 6\)"),
    (lambda: small("span")(torch.zeros(1, 4, DV), torch.ones(1, 4, dtype=torch.bool),
                           torch.zeros(2, 2, DQ), torch.ones(2, 2, dtype=torch.bool)),
     r"query must have shape \(1, L, 4\)"),
    (lambda: small("moment_detr").loss(run(small("moment_detr"), _batch_without("gold_cw")),
                                       _batch_without("gold_cw")),
     "batch needs a tensor 'gold_cw'"),
    (lambda: small("io").loss(IOOutput(torch.zeros(1, 4)), _batch_without("gold")),
     "batch needs a tensor 'gold'"),
    (lambda: small("io").decode(IOOutput(torch.zeros(2, 4)), torch.tensor([1.0, 2.0, 3.0])),
     r"duration must be a number or have shape \(2,\)"),
    (lambda: small("io").decode(IOOutput(torch.zeros(1, 4)), 4.0, top_k=0), "top_k must be >= 1"),
    (lambda: small("span").decode(SpanOutput(torch.zeros(1, 4), torch.zeros(1, 4)), 4.0,
                                  start=torch.zeros(1, 4)), "both start and end"),
    (lambda: saliency_loss(torch.zeros(2, 3), torch.zeros(2, 4), torch.ones(2, 3, dtype=torch.bool),
                           torch.ones(2, 3, dtype=torch.bool)),
     r"saliency must be a tensor of shape \(2, 3\)"),
    (lambda: saliency_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2, 3),
                           torch.ones(2, 3, dtype=torch.bool)),
     "saliency_mask must be a bool tensor"),
    (lambda: saliency_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.bool),
                           torch.ones(2, 3, dtype=torch.bool), margin=-0.1), "margin must be >= 0"),
])
def test_errors(call, match):
    with pytest.raises(InputError, match=match):
        call()


# ---------------------------------------------------------------- overfit

def overfit_batch():
    g = torch.Generator().manual_seed(0)
    T, L = 16, 3
    lengths = [14, 16]
    planted = [{0: (2, 5), 1: (9, 12)}, {0: (10, 14), 1: (1, 3)}]  # channel -> steps
    videos = torch.randn(2, T, DV, generator=g) * 0.3
    for v, spans in enumerate(planted):
        for channel, (s, e) in spans.items():
            videos[v, s:e + 1, channel] += 1.0
        videos[v, lengths[v]:] = 0.0
    rows = [(v, c) for v in range(2) for c in (0, 1)]
    queries = torch.randn(4, L, DQ, generator=g) * 0.3
    for i, (_, c) in enumerate(rows):
        queries[i, :, c] += 1.0
    return batch_for(videos[[v for v, _ in rows]], [lengths[v] for v, _ in rows], queries,
                     [3, 2, 3, 2], [planted[v][c] for v, c in rows])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_each_model_overfits_four_examples_where_the_query_decides(name, one_thread):
    batch = overfit_batch()
    extra = dict(dec_layers=2, num_queries=5) if name == "moment_detr" else {}
    torch.manual_seed(0)
    model = build_model(name, video_dim=DV, query_dim=DQ, hidden=32, heads=4, enc_layers=2,
                        ffn=64, dropout=0.0, **extra)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss = model.loss(run(model, batch), batch).total
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        decoded = model.decode(run(model, batch), batch["duration"], batch["mask"])
    # gold steps (s, e) inclusive at 1 s per step -> seconds [s, e + 1]
    ious = [iou(m.spans[0].tolist(), (g[0, 0].item(), g[0, 1].item() + 1.0))
            if len(m.spans) else 0.0 for m, g in zip(decoded, batch["gold"])]
    assert sum(ious) / 4 > 0.7, ious
