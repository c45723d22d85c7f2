# SPDX-License-Identifier: Apache-2.0
"""fastvqa.nn span conversions and losses: hand values, float64 plain-Python
references (tests/reference/span_losses.py), the compiled gIoU ops on the same
inputs, gradcheck, reductions, shapes, degenerate spans (no NaN), errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fastvqa.errors import InputError  # noqa: E402
from fastvqa.nn import (  # noqa: E402
    center_width_to_spans,
    clamp_spans,
    denormalize_spans,
    generalized_temporal_iou_loss,
    normalize_spans,
    pairwise_generalized_temporal_iou,
    span_l1_loss,
    spans_to_center_width,
)
from fastvqa.ops import paired_temporal_iou, temporal_iou  # noqa: E402
from tests.conftest import DEVICES  # noqa: E402
from tests.reference.span_losses import (  # noqa: E402
    giou_loss_ref,
    giou_ref,
    pairwise_giou_ref,
    span_l1_loss_ref,
)

F64 = torch.float64


def random_spans(n, seed, *, dtype=F64, scale=10.0):
    """``(n, 2)`` non-degenerate (start < end) spans in [0, scale]."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g, dtype=F64) * scale
    lo, hi = x.min(-1).values, x.max(-1).values
    return torch.stack([lo, hi + 0.05], -1).to(dtype)


# Degenerate pairs and what the eps rule (docs of generalized_temporal_iou_loss)
# says their gIoU is, by hand.
DEGENERATE = [
    ((2.0, 2.0), (2.0, 2.0), 0.0),    # the same point: union = hull = 0
    ((1.0, 1.0), (3.0, 3.0), -1.0),   # two points apart: union 0, hull 2
    ((1.0, 1.0), (0.0, 4.0), 0.0 - 0.0 / 4.0),  # a point inside a span: IoU 0, hull = union
    ((6.0, 5.0), (0.0, 2.0), 0.0 - 3.0 / 5.0),  # reversed (empty) a: hull 5, union 2
    ((5.0, 3.0), (5.0, 3.0), 0.0),    # both reversed: hull clamped to 0
    ((0.0, 1.0), (1.0, 2.0), 0.0),    # touching: IoU 0, hull = union
    ((0.0, 1.0), (0.0, 1.0), 1.0),    # identical
]


# --------------------------------------------------------------------------
# conversions
# --------------------------------------------------------------------------

def test_center_width_by_hand():
    se = torch.tensor([[1.0, 3.0], [2.0, 8.0], [5.0, 4.0]])
    cw = spans_to_center_width(se)
    assert cw.tolist() == [[2.0, 2.0], [5.0, 6.0], [4.5, -1.0]]
    assert center_width_to_spans(cw).tolist() == se.tolist()


def test_conversions_keep_any_leading_shape():
    x = torch.rand(3, 4, 5, 2, dtype=F64)
    for f in (spans_to_center_width, center_width_to_spans):
        assert f(x).shape == x.shape and f(x).dtype == F64
    torch.testing.assert_close(center_width_to_spans(spans_to_center_width(x)), x)
    assert spans_to_center_width(torch.empty(0, 2)).shape == (0, 2)


def test_normalize_per_row_and_scalar():
    spans = torch.tensor([[[1.0, 3.0], [2.0, 8.0]], [[0.0, 10.0], [5.0, 15.0]]], dtype=F64)
    per_row = normalize_spans(spans, torch.tensor([10.0, 20.0]))  # cast to the spans' dtype
    assert per_row.dtype == F64
    assert per_row.tolist() == [[[0.1, 0.3], [0.2, 0.8]], [[0.0, 0.5], [0.25, 0.75]]]
    torch.testing.assert_close(denormalize_spans(per_row, torch.tensor([10.0, 20.0])), spans)
    assert normalize_spans(spans, 4).tolist() == (spans / 4).tolist()
    assert normalize_spans(spans, torch.tensor(4.0)).tolist() == (spans / 4).tolist()
    # (B, 2) with one duration per row
    assert normalize_spans(spans[:, 0], torch.tensor([10.0, 20.0])).tolist() == [
        [0.1, 0.3], [0.0, 0.5]]


def test_clamp_by_hand():
    spans = torch.tensor([[-2.0, 3.0], [4.0, 12.0], [-5.0, -1.0], [11.0, 15.0], [6.0, 2.0],
                          [1.0, 9.0]])
    assert clamp_spans(spans, 10.0).tolist() == [
        [0.0, 3.0], [4.0, 10.0], [0.0, 0.0], [10.0, 10.0], [6.0, 6.0], [1.0, 9.0]]
    per_row = clamp_spans(torch.tensor([[[0.5, 1.5]], [[0.5, 1.5]]]), torch.tensor([1.0, 2.0]))
    assert per_row.tolist() == [[[0.5, 1.0]], [[0.5, 1.5]]]
    nan = clamp_spans(torch.tensor([[math.nan, 1.0]]), 10.0)
    assert math.isnan(nan[0, 0].item())


def test_clamp_gradient_flows_to_unclamped_endpoints():
    spans = torch.tensor([[-2.0, 3.0], [4.0, 12.0]], dtype=F64, requires_grad=True)
    clamp_spans(spans, 10.0).sum().backward()
    assert spans.grad.tolist() == [[0.0, 1.0], [1.0, 0.0]]


@pytest.mark.parametrize("call, match", [
    (lambda: spans_to_center_width([[0.0, 1.0]]), "must be a torch tensor"),
    (lambda: spans_to_center_width(torch.zeros(3, 3)), r"shape \(\.\.\., 2\)"),
    (lambda: center_width_to_spans(torch.zeros(2, dtype=torch.int64)), "floating-point"),
    (lambda: normalize_spans(torch.zeros(2, 2), 0.0), "finite and > 0"),
    (lambda: normalize_spans(torch.zeros(2, 2), math.inf), "finite and > 0"),
    (lambda: normalize_spans(torch.zeros(2, 2), "10"), "number or a tensor"),
    (lambda: normalize_spans(torch.zeros(2, 3, 2), torch.ones(3)), r"shape \(B,\)"),
    (lambda: denormalize_spans(torch.zeros(2, 2), torch.tensor([1.0, -1.0])), "every duration"),
    (lambda: clamp_spans(torch.zeros(2, 2), torch.ones(2, 1)), r"shape \(B,\)"),
])
def test_conversion_errors(call, match):
    with pytest.raises(InputError, match=match):
        call()


# --------------------------------------------------------------------------
# losses against the float64 references
# --------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_losses_match_reference(reduction):
    pred, target = random_spans(40, 0), random_spans(40, 1)
    got = generalized_temporal_iou_loss(pred, target, reduction=reduction)
    want = giou_loss_ref(pred, target, reduction)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    pred_cw, target_cw = spans_to_center_width(pred), spans_to_center_width(target)
    got = span_l1_loss(pred_cw, target_cw, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), span_l1_loss_ref(pred_cw, target_cw, reduction),
                               rtol=1e-12, atol=1e-12)
    assert got.shape == ((40,) if reduction == "none" else ())


def test_pairwise_matches_reference_and_paired():
    a, b = random_spans(7, 2), random_spans(5, 3)
    got = pairwise_generalized_temporal_iou(a, b)
    assert got.shape == (7, 5)
    np.testing.assert_allclose(got.numpy(), pairwise_giou_ref(a, b), rtol=1e-12, atol=1e-12)
    paired = 1 - generalized_temporal_iou_loss(a[:, None].expand(7, 5, 2),
                                               b[None].expand(7, 5, 2))
    torch.testing.assert_close(paired, got)


def test_losses_keep_leading_shape():
    pred = random_spans(24, 4).reshape(2, 3, 4, 2)
    target = random_spans(24, 5).reshape(2, 3, 4, 2)
    assert generalized_temporal_iou_loss(pred, target).shape == (2, 3, 4)
    assert span_l1_loss(pred, target).shape == (2, 3, 4)
    np.testing.assert_allclose(generalized_temporal_iou_loss(pred, target).reshape(-1).numpy(),
                               giou_loss_ref(pred, target), rtol=1e-12)


def test_losses_on_no_spans():
    empty = torch.empty(0, 2, dtype=F64, requires_grad=True)
    for loss in (span_l1_loss, generalized_temporal_iou_loss):
        assert loss(empty, empty).shape == (0,)
        for reduction in ("mean", "sum"):
            value = loss(empty, empty, reduction=reduction)
            assert value.item() == 0.0 and value.requires_grad
    assert pairwise_generalized_temporal_iou(empty, random_spans(3, 0)).shape == (0, 3)


def test_degenerate_spans_by_hand_and_no_nan():
    pred = torch.tensor([p for p, _, _ in DEGENERATE], dtype=F64, requires_grad=True)
    target = torch.tensor([t for _, t, _ in DEGENERATE], dtype=F64, requires_grad=True)
    loss = generalized_temporal_iou_loss(pred, target)
    want = [1.0 - g for _, _, g in DEGENERATE]
    np.testing.assert_allclose(loss.detach().numpy(), want, rtol=0, atol=1e-15)
    np.testing.assert_allclose(loss.detach().numpy(), giou_loss_ref(pred.detach(),
                                                                    target.detach()), atol=1e-15)
    loss.sum().backward()
    assert torch.isfinite(pred.grad).all() and torch.isfinite(target.grad).all()
    pw = pairwise_generalized_temporal_iou(pred, target)
    pw.sum().backward()
    assert torch.isfinite(pw).all() and torch.isfinite(pred.grad).all()
    # Zero-width (centre, width) spans through the L1 loss: finite too.
    cw = torch.zeros(3, 2, dtype=F64, requires_grad=True)
    span_l1_loss(cw, torch.zeros(3, 2, dtype=F64), reduction="mean").backward()
    assert torch.isfinite(cw.grad).all()


def test_short_unions_follow_the_eps_rule():
    # An identical pair shorter than eps: divided by eps, not by its length.
    a = torch.tensor([[0.0, 1e-9]], dtype=F64)
    got = generalized_temporal_iou_loss(a, a, eps=1e-7)
    assert got.item() == pytest.approx(1.0 - 1e-9 / 1e-7, abs=1e-15)
    assert got.item() == pytest.approx(giou_loss_ref(a, a, eps=1e-7)[0], abs=1e-15)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(*[st.integers(-3, 6)] * 4), min_size=1, max_size=12))
def test_giou_property_against_reference(rows):
    """Small integer grids hit ties, touching, zero-length and reversed spans."""
    x = torch.tensor(rows, dtype=F64)
    pred, target = x[:, :2], x[:, 2:]
    got = 1 - generalized_temporal_iou_loss(pred, target)
    want = [giou_ref(a0, a1, b0, b1) for a0, a1, b0, b1 in x.tolist()]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------
# agreement with the compiled ops (forward values)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_forward_equals_compiled_giou(device, dtype):
    a, b = random_spans(50, 6, dtype=dtype).to(device), random_spans(50, 7, dtype=dtype).to(device)
    # Plus the degenerate pairs where the eps rule and the compiled op agree
    # (everything in DEGENERATE: unions are 0 or >= 1 there).
    deg = torch.tensor([[*p, *t] for p, t, _ in DEGENERATE], dtype=dtype, device=device)
    a, b = torch.cat([a, deg[:, :2]]), torch.cat([b, deg[:, 2:]])
    tol = {"rtol": 1e-6, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 1e-12,
                                                                       "atol": 1e-12}
    torch.testing.assert_close(1 - generalized_temporal_iou_loss(a, b),
                               paired_temporal_iou(a, b, "giou"), **tol)
    torch.testing.assert_close(pairwise_generalized_temporal_iou(a, b),
                               temporal_iou(a, b, "giou"), **tol)


@pytest.mark.cuda
def test_cuda_values_and_gradients_equal_cpu():
    pred, target = random_spans(30, 13), random_spans(30, 14)
    results = []
    for device in ("cpu", "cuda"):
        p = pred.to(device).requires_grad_()
        t = target.to(device).requires_grad_()
        loss = generalized_temporal_iou_loss(p, t) + span_l1_loss(
            spans_to_center_width(p), spans_to_center_width(t))
        loss.sum().backward()
        results.append([x.detach().cpu() for x in (loss, p.grad, t.grad)])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------
# gradients
# --------------------------------------------------------------------------

def test_gradcheck_losses_and_pairwise():
    pred = random_spans(6, 8).requires_grad_()
    target = random_spans(6, 9).requires_grad_()
    a, b = random_spans(4, 10).requires_grad_(), random_spans(3, 11).requires_grad_()
    for reduction in ("none", "mean", "sum"):
        assert torch.autograd.gradcheck(
            lambda p, t: generalized_temporal_iou_loss(p, t, reduction=reduction),
            (pred, target))
        assert torch.autograd.gradcheck(
            lambda p, t: span_l1_loss(spans_to_center_width(p), spans_to_center_width(t),
                                      reduction=reduction), (pred, target))
    assert torch.autograd.gradcheck(pairwise_generalized_temporal_iou, (a, b))
    # and through the conversions
    assert torch.autograd.gradcheck(
        lambda p: clamp_spans(denormalize_spans(center_width_to_spans(p), 10.0), 10.0),
        (spans_to_center_width(random_spans(5, 12, scale=1.2)).detach().requires_grad_(),))


def test_disjoint_spans_still_get_a_gradient():
    # IoU is flat (0) for disjoint spans; the gIoU hull term pulls them together.
    pred = torch.tensor([[0.0, 1.0]], dtype=F64, requires_grad=True)
    target = torch.tensor([[3.0, 4.0]], dtype=F64)
    generalized_temporal_iou_loss(pred, target, reduction="sum").backward()
    assert pred.grad.sum() < 0  # moving it right (both endpoints up) lowers the loss
    assert pred.grad[0, 1] < 0  # and so does stretching its end towards the target


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

@pytest.mark.parametrize("call, match", [
    (lambda: span_l1_loss(torch.zeros(3, 2), torch.zeros(2, 2)), "same shape"),
    (lambda: generalized_temporal_iou_loss(torch.zeros(3, 2), torch.zeros(3, 2),
                                           reduction="avg"), "reduction must be one of"),
    (lambda: generalized_temporal_iou_loss(torch.zeros(3, 2), torch.zeros(3, 2), eps=0.0),
     "eps must be > 0"),
    (lambda: generalized_temporal_iou_loss(torch.zeros(3, 3), torch.zeros(3, 3)),
     r"pred must have shape \(\.\.\., 2\)"),
    (lambda: pairwise_generalized_temporal_iou(torch.zeros(2, 3, 2), torch.zeros(3, 2)),
     r"\(N, 2\) and \(M, 2\)"),
])
def test_loss_errors(call, match):
    with pytest.raises(InputError, match=match):
        call()
