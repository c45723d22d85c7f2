# SPDX-License-Identifier: Apache-2.0
"""Tests for ``fastvqa.ops.span_scores`` (with its backward) and ``top_spans``
against the float64 brute-force references in ``tests/reference/span_scores.py``.

Tie-heavy inputs are small integers and halves (plus NaN and +-inf), so every
prefix difference is exact in float64 and every mean/contrast is computed by
the same operations as the reference: bands and top spans must then match the
reference *exactly*, which pins down the tie rule and the special values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fastvqa.ops import (
    nms_1d,
    span_scores,
    span_similarity,
    span_similarity_all,
    temporal_iou,
    top_spans,
)

from tests.conftest import DEVICES
from tests.conftest import assert_opcheck  # noqa: E402
from tests.reference.span_scores import (
    check_band,
    check_grad,
    span_scores_grad_ref,
    span_scores_ref,
    top_spans_ref,
)

SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
REDUCES = ["sum", "mean", "contrast"]
TIE_VALUES = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]
SPECIAL_VALUES = [math.nan, math.inf, -math.inf]
GARBAGE = 1000.0  # what a kernel reading the wrong element would see
LAYOUTS = ["contiguous", "transposed", "every_other_column", "every_other_row"]


def np_layout(x: np.ndarray, layout: str) -> np.ndarray:
    B, T = x.shape
    if layout == "contiguous":
        return np.ascontiguousarray(x)
    if layout == "transposed":
        return np.ascontiguousarray(x.T).T
    if layout == "every_other_column":
        buf = np.full((B, 2 * T), GARBAGE, dtype=x.dtype)
        buf[:, ::2] = x
        return buf[:, ::2]
    buf = np.full((2 * B, T), GARBAGE, dtype=x.dtype)
    buf[::2] = x
    return buf[::2]


def torch_layout(x: np.ndarray, layout: str, dtype, device="cpu") -> torch.Tensor:
    """``x`` as a torch tensor on ``device`` with the same values, another layout."""
    B, T = x.shape
    t = torch.from_numpy(np.ascontiguousarray(x)).to(dtype=dtype, device=device)
    if layout == "contiguous":
        return t
    if layout == "transposed":
        return t.t().contiguous().t()
    if layout == "every_other_column":
        buf = torch.full((B, 2 * T), GARBAGE, dtype=dtype, device=device)
        buf[:, ::2] = t
        return buf[:, ::2]
    buf = torch.full((2 * B, T), GARBAGE, dtype=dtype, device=device)
    buf[::2] = t
    return buf[::2]


@st.composite
def problems(draw, values, max_B=4, max_T=14):
    """(x, min_len, max_len, lengths) with x float64."""
    B = draw(st.integers(0, max_B))
    T = draw(st.integers(0, max_T))
    min_len = draw(st.integers(1, 4))
    max_len = draw(st.one_of(st.none(), st.integers(min_len, min_len + T + 2)))
    lengths = draw(st.one_of(st.none(), st.lists(st.integers(0, T), min_size=B, max_size=B)))
    if lengths is not None:
        lengths = np.array(lengths, dtype=np.int64).reshape(B)
    x = draw(arrays(np.float64, (B, T), elements=values))
    return x, min_len, max_len, lengths


tie_problems = st.one_of(
    problems(st.sampled_from(TIE_VALUES)),
    problems(st.sampled_from(TIE_VALUES * 3 + SPECIAL_VALUES)),
)


def assert_same(actual, expected):
    """Exact equality, NaN equal to NaN."""
    np.testing.assert_array_equal(np.asarray(actual, dtype=np.float64), expected)


# --------------------------------------------------------------------------- #
# span_scores: forward
# --------------------------------------------------------------------------- #


@settings(max_examples=150, **SETTINGS)
@given(prob=tie_problems, reduce=st.sampled_from(REDUCES),
       dtype=st.sampled_from([np.float32, np.float64]), layout=st.sampled_from(LAYOUTS))
def test_band_tie_heavy_numpy_matches_reference(prob, reduce, dtype, layout):
    x, min_len, max_len, lengths = prob
    xd = np_layout(x.astype(dtype), layout)
    out = span_scores(xd, reduce=reduce, min_len=min_len, max_len=max_len, lengths=lengths)
    ref = span_scores_ref(x, reduce, min_len, max_len, lengths)
    assert isinstance(out, np.ndarray) and out.dtype == dtype
    assert out.shape == ref.shape == (x.shape[0], x.shape[1], x.shape[1] if max_len is None
                                      else min(max_len, x.shape[1]))
    # float32: the float64 score cast once.
    assert_same(out, ref.astype(dtype).astype(np.float64))


@settings(max_examples=100, **SETTINGS)
@given(prob=tie_problems, reduce=st.sampled_from(REDUCES),
       dtype=st.sampled_from([torch.float32, torch.float64]), layout=st.sampled_from(LAYOUTS),
       len_dtype=st.sampled_from([torch.int64, torch.int32]))
def test_band_tie_heavy_torch_matches_reference(prob, reduce, dtype, layout, len_dtype):
    x, min_len, max_len, lengths = prob
    xt = torch_layout(x, layout, dtype)
    lens = None if lengths is None else torch.from_numpy(lengths).to(len_dtype)
    out = span_scores(xt, reduce=reduce, min_len=min_len, max_len=max_len, lengths=lens)
    assert isinstance(out, torch.Tensor) and out.dtype == dtype and not out.requires_grad
    ref = span_scores_ref(x, reduce, min_len, max_len, lengths)
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    assert_same(out.numpy(), ref.astype(np_dtype).astype(np.float64))


@settings(max_examples=100, **SETTINGS)
@given(prob=problems(st.floats(-1e3, 1e3, width=32)), reduce=st.sampled_from(REDUCES),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_band_general_floats(prob, reduce, dtype):
    x, min_len, max_len, lengths = prob
    x = x.astype(dtype)
    out = span_scores(x, reduce=reduce, min_len=min_len, max_len=max_len, lengths=lengths)
    ref = span_scores_ref(x, reduce, min_len, max_len, lengths)
    np.testing.assert_array_equal(np.isneginf(out), np.isneginf(ref))
    fin = np.isfinite(ref)
    # Prefix differences in float64 err by ~1e-16 of the row's magnitude.
    scale = 1e3 * max(1, x.shape[1])
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out[fin], ref[fin], rtol=tol, atol=tol * scale)


def test_hand_computed_contrast():
    x = np.array([[1.0, 3.0, 2.0, 6.0]])
    out = span_scores(x, reduce="contrast", max_len=4)
    # [1, 2]: mean 2.5, outside {1, 6} mean 3.5
    assert out[0, 1, 1] == 2.5 - 3.5
    # [0, 3]: the whole row, outside empty -> its mean is 0
    assert out[0, 0, 3] == 3.0
    # [3, 3]: 6 - mean(1, 3, 2)
    assert out[0, 3, 0] == 6.0 - 2.0
    assert out[0, 3, 1] == -np.inf  # past the row's end
    lengths = np.array([2])
    out = span_scores(x, reduce="contrast", max_len=4, lengths=lengths)
    assert out[0, 0, 0] == 1.0 - 3.0 and out[0, 1, 0] == 3.0 - 1.0 and out[0, 0, 1] == 2.0
    assert np.all(np.isneginf(out[0, 2:])) and np.isneginf(out[0, 1, 1])


def test_nan_propagates_only_to_spans_holding_it():
    x = np.array([[1.0, np.nan, 2.0, 3.0, -np.inf, np.inf, 4.0]])
    out = span_scores(x, reduce="sum", max_len=3)
    assert out[0, 0, 0] == 1.0 and np.isnan(out[0, 0, 1]) and np.isnan(out[0, 1, 0])
    assert out[0, 2, 1] == 5.0  # [2, 3] lies after the NaN
    assert out[0, 3, 1] == -np.inf and np.isnan(out[0, 4, 1]) and out[0, 5, 1] == np.inf
    assert out[0, 6, 0] == 4.0 and out[0, 6, 1] == -np.inf
    mean = span_scores(x, reduce="mean", max_len=3)
    assert mean[0, 2, 1] == 2.5
    contrast = span_scores(x, reduce="contrast")
    # The NaN is inside or outside every span: all valid cells are NaN.
    assert np.isnan(contrast[0][~np.isneginf(contrast[0])]).all()


def test_min_len_max_len_and_lengths_mask_cells():
    x = np.arange(5.0)[None]
    out = span_scores(x, reduce="sum", min_len=2, max_len=3, lengths=np.array([4]))
    expect = np.full((1, 5, 3), -np.inf)
    expect[0, 0, 1:] = [1, 3]
    expect[0, 1, 1:] = [3, 6]
    expect[0, 2, 1] = 5
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("shape,max_len", [((0, 5), None), ((3, 0), None), ((0, 0), 4),
                                           ((2, 0), 3)])
def test_empty(shape, max_len):
    x = np.zeros(shape)
    out = span_scores(x, reduce="mean", max_len=max_len)
    assert out.shape == (shape[0], shape[1], shape[1] if max_len is None else min(max_len, shape[1]))
    spans, scores = top_spans(x, 2, reduce="mean", max_len=max_len, nms_iou=0.5)
    assert spans.shape == (shape[0], 2, 2) and scores.shape == (shape[0], 2)
    assert (spans == -1).all() and np.isneginf(scores).all()
    xt = torch.zeros(shape, requires_grad=True)
    out = span_scores(xt, reduce="mean", max_len=max_len)
    out.sum().backward()
    assert xt.grad.shape == shape


def test_fully_masked_rows():
    x = np.ones((3, 4))
    lengths = np.array([0, 4, 0])
    out = span_scores(x, reduce="contrast", lengths=lengths)
    assert np.isneginf(out[[0, 2]]).all() and np.isfinite(out[1, 0]).all()
    spans, scores = top_spans(x, 3, reduce="contrast", lengths=lengths, nms_iou=0.0)
    assert (spans[[0, 2]] == -1).all() and np.isneginf(scores[[0, 2]]).all()
    xt = torch.ones((3, 4), dtype=torch.float64, requires_grad=True)
    out = span_scores(xt, reduce="mean", lengths=torch.from_numpy(lengths))
    out.masked_fill(out.isinf(), 0).sum().backward()
    assert (xt.grad[[0, 2]] == 0).all() and (xt.grad[1] > 0).all()


def test_half_precision_torch():
    x = torch.tensor([[0.5, 1.0, -2.0, 2.0]], dtype=torch.float16)
    out = span_scores(x, reduce="mean", max_len=2)
    assert out.dtype == torch.float16
    ref = span_scores_ref(x.float(), "mean", 1, 2)
    assert_same(out.float().numpy(), ref)
    spans, scores = top_spans(x.to(torch.bfloat16), 2, reduce="sum", max_len=2)
    assert scores.dtype == torch.bfloat16 and spans.tolist() == [[[3, 3], [0, 1]]]


# --------------------------------------------------------------------------- #
# span_scores: backward
# --------------------------------------------------------------------------- #


def _masked(out):
    # gradcheck's finite differences of -inf cells would be NaN: zero them.
    return out.masked_fill(torch.isinf(out.detach()), 0.0)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("min_len,max_len,with_lengths", [(1, None, False), (2, 3, True),
                                                          (1, 8, True), (3, 3, False)])
def test_gradcheck(reduce, min_len, max_len, with_lengths):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(3, 6, dtype=torch.float64, generator=g, requires_grad=True)
    lengths = torch.tensor([6, 4, 0]) if with_lengths else None

    def f(x):
        return _masked(span_scores(x, reduce=reduce, min_len=min_len, max_len=max_len,
                                   lengths=lengths))

    assert torch.autograd.gradcheck(f, (x,))


@settings(max_examples=60, **SETTINGS)
@given(prob=problems(st.sampled_from(TIE_VALUES), max_T=10), reduce=st.sampled_from(REDUCES),
       seed=st.integers(0, 2**31 - 1), nonfinite=st.booleans(), expanded=st.booleans())
def test_backward_matches_reference(prob, reduce, seed, nonfinite, expanded):
    """Including stride-0 (expanded) and non-finite upstream gradients, which
    must reach exactly the steps of the spans holding them."""
    x, min_len, max_len, lengths = prob
    B, T = x.shape
    W = T if max_len is None else min(max_len, T)
    rng = np.random.default_rng(seed)
    if expanded:
        grad = torch.tensor(rng.normal(), dtype=torch.float64).expand(B, T, W)
    else:
        g = rng.normal(size=(B, T, W))
        if nonfinite and g.size:
            flat = g.reshape(-1)
            flat[rng.integers(0, flat.size, 2)] = [np.nan, np.inf][: 2]
        grad = torch.from_numpy(g)
    xt = torch.from_numpy(x).requires_grad_()
    lens = None if lengths is None else torch.from_numpy(lengths)
    out = span_scores(xt, reduce=reduce, min_len=min_len, max_len=max_len, lengths=lens)
    (gx,) = torch.autograd.grad(out, xt, grad, allow_unused=True) if B * T else (torch.zeros(B, T),)
    ref = span_scores_grad_ref(grad, reduce, min_len, lengths)
    np.testing.assert_array_equal(np.isnan(gx.numpy()), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(gx.numpy()), np.isinf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(gx.numpy()[fin], ref[fin], rtol=1e-10, atol=1e-10)


def test_backward_float32_and_half():
    x = torch.randn(2, 9, requires_grad=True)
    out = span_scores(x, reduce="contrast", max_len=4)
    grad = torch.randn_like(out)
    (gx,) = torch.autograd.grad(out, x, grad)
    assert gx.dtype == torch.float32
    ref = span_scores_grad_ref(grad, "contrast", 1)
    np.testing.assert_allclose(gx.numpy(), ref, rtol=1e-5, atol=1e-5)
    xh = x.detach().half().requires_grad_()
    outh = span_scores(xh, reduce="contrast", max_len=4)
    (gh,) = torch.autograd.grad(outh, xh, grad.half())
    assert gh.dtype == torch.float16
    np.testing.assert_allclose(gh.float().numpy(), ref, rtol=1e-2, atol=1e-2)


# --------------------------------------------------------------------------- #
# top_spans
# --------------------------------------------------------------------------- #

NMS = st.one_of(st.none(), st.sampled_from([0.0, 0.2, 0.5, 0.6, 1.0]))


@settings(max_examples=150, **SETTINGS)
@given(prob=tie_problems, reduce=st.sampled_from(REDUCES), k=st.integers(1, 12), nms=NMS,
       dtype=st.sampled_from([np.float32, np.float64]), layout=st.sampled_from(LAYOUTS))
def test_top_spans_tie_heavy_matches_reference(prob, reduce, k, nms, dtype, layout):
    x, min_len, max_len, lengths = prob
    xd = np_layout(x.astype(dtype), layout)
    spans, scores = top_spans(xd, k, reduce=reduce, min_len=min_len, max_len=max_len,
                              lengths=lengths, nms_iou=nms)
    assert spans.dtype == np.int64 and scores.dtype == dtype
    ref_spans, ref_scores = top_spans_ref(x, k, reduce, min_len, max_len, lengths, nms,
                                          out_dtype=dtype)
    np.testing.assert_array_equal(spans, ref_spans)
    assert_same(scores, ref_scores)


@settings(max_examples=100, **SETTINGS)
@given(prob=problems(st.floats(-10, 10, width=32), max_T=24), reduce=st.sampled_from(REDUCES),
       k=st.integers(1, 10), nms=NMS, dtype=st.sampled_from([torch.float32, torch.float64]))
def test_top_spans_equal_top_of_band(prob, reduce, k, nms, dtype):
    """General floats: exactly the ranked (and NMS'd) cells of span_scores' band."""
    x, min_len, max_len, lengths = prob
    xt = torch.from_numpy(x).to(dtype)
    lens = None if lengths is None else torch.from_numpy(lengths)
    spans, scores = top_spans(xt, k, reduce=reduce, min_len=min_len, max_len=max_len,
                              lengths=lens, nms_iou=nms)
    band = span_scores(xt, reduce=reduce, min_len=min_len, max_len=max_len, lengths=lens)
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    ref_spans, ref_scores = top_spans_ref(x, k, reduce, min_len, max_len, lengths, nms,
                                          out_dtype=np_dtype, band=band.double().numpy())
    np.testing.assert_array_equal(spans.numpy(), ref_spans)
    assert_same(scores.numpy(), ref_scores)


def test_nms_beyond_the_first_round():
    """nms_iou = 0 keeps only disjoint spans: the best 32 spans all overlap the
    peak, so the exact continuation past the first round is what finds them."""
    x = -np.abs(np.arange(60.0) - 30)[None] / 10
    spans, scores = top_spans(x, 6, reduce="sum", max_len=8, nms_iou=0.0)
    ref_spans, ref_scores = top_spans_ref(x, 6, "sum", 1, 8, None, 0.0)
    np.testing.assert_array_equal(spans, ref_spans)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-12)
    assert spans[0, 0].tolist() == [30, 30]
    # kept spans are pairwise disjoint
    s = sorted(map(tuple, spans[0].tolist()))
    assert all(a[1] < b[0] for a, b in zip(s, s[1:]))


def test_nms_hand_computed():
    x = np.array([[1.0, 2.0, 3.0, 0.0, 5.0]])
    # Ranked (max_len 3): [2,4] 8, [0,2] 6, then the 5s by start, end:
    # [1,2], [1,3], [3,4], [4,4], ...
    spans, scores = top_spans(x, 3, reduce="sum", max_len=3)
    assert spans[0].tolist() == [[2, 4], [0, 2], [1, 2]]
    assert scores[0].tolist() == [8.0, 6.0, 5.0]
    # nms 0.5: [0,2] has IoU 1/5 with [2,4]: kept; [1,2] has 2/3 with [0,2]:
    # dropped; [1,3] has exactly 2/4 with both: kept (strict >).
    spans, scores = top_spans(x, 3, reduce="sum", max_len=3, nms_iou=0.5)
    assert spans[0].tolist() == [[2, 4], [0, 2], [1, 3]]
    assert scores[0].tolist() == [8.0, 6.0, 5.0]
    # nms 0.49 drops [1,3] too, and [3,4] (2/3 with [2,4]); [4,4] has 1/3.
    spans, _ = top_spans(x, 3, reduce="sum", max_len=3, nms_iou=0.49)
    assert spans[0].tolist() == [[2, 4], [0, 2], [4, 4]]


def test_top_spans_not_differentiable():
    x = torch.randn(2, 8, requires_grad=True)
    spans, scores = top_spans(x, 2, reduce="mean")
    assert not scores.requires_grad and spans.dtype == torch.int64


# --------------------------------------------------------------------------- #
# Extreme magnitudes: each sum is made of its own terms only
# --------------------------------------------------------------------------- #

F32, F64 = np.finfo(np.float32), np.finfo(np.float64)
EXTREME32 = st.one_of(
    st.sampled_from([float(F32.min), float(F32.max), -1e38, 3e38, float(F32.tiny), 1e-45,
                     0.0, -0.0, 1.0, -0.5]),
    st.floats(-10, 10, width=32),
    st.floats(width=32, allow_nan=False, allow_infinity=False),
)
EXTREME64 = st.one_of(
    st.sampled_from([float(F64.min), float(F64.max), 1e308, -1e308, 9e307, float(F64.tiny),
                     5e-324, 0.0, -0.0, 1.0, -0.5, 1e200, -1e-200, float(F32.min)]),
    st.floats(-10, 10),
    st.floats(allow_nan=False, allow_infinity=False),
)


@st.composite
def extreme_problems(draw, max_B=3, max_T=9):
    """(x, min_len, max_len, lengths, dtype): finite extremes, sometimes a NaN or inf."""
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    values = EXTREME32 if dtype == np.float32 else EXTREME64
    if draw(st.booleans()):
        values = st.one_of(values, st.sampled_from(SPECIAL_VALUES))
    x, min_len, max_len, lengths = draw(problems(values, max_B=max_B, max_T=max_T))
    return x.astype(dtype), min_len, max_len, lengths, dtype


def test_finfo_min_mask_does_not_wipe_out_other_spans():
    """Issue 11: a finfo(float32).min mask step made every later span 0 (a
    difference of prefix sums around -3.4e38), so [0, 1] came out best."""
    x = np.array([[0.3, 0.5, F32.min, 0.2, 0.9]], dtype=np.float32)
    spans, scores = top_spans(x, 3, reduce="sum", max_len=2)
    assert spans[0].tolist() == [[3, 4], [4, 4], [0, 1]]
    f = np.float64
    expect = [np.float32(f(x[0, 3]) + f(x[0, 4])), x[0, 4], np.float32(f(x[0, 0]) + f(x[0, 1]))]
    assert scores[0].tolist() == [float(v) for v in expect]
    for reduce in REDUCES:
        band = span_scores(x, reduce=reduce, max_len=5)
        check_band(band, x, reduce, max_len=5, dtype=np.float32)
    band = span_scores(x, reduce="sum", max_len=2)
    assert band[0, 3, 1] == expect[0] and band[0, 4, 0] == x[0, 4]
    assert band[0, 1, 1] == np.float32(f(F32.min) + f(x[0, 1]))
    spans_t, scores_t = top_spans(torch.from_numpy(x), 3, reduce="sum", max_len=2)
    assert spans_t.tolist() == spans.tolist() and scores_t.tolist() == scores.tolist()


def test_1e308_mix_stays_finite():
    """Issue 11: [1e308, 1e308, -1e308, 5] gave [1e308, inf, nan, nan] for
    single steps (prefix sums overflowed)."""
    x = np.array([[1e308, 1e308, -1e308, 5.0]])
    out = span_scores(x, reduce="sum", max_len=1)
    assert out[0, :, 0].tolist() == [1e308, 1e308, -1e308, 5.0]
    for reduce in REDUCES:
        check_band(span_scores(x, reduce=reduce), x, reduce)
    out = span_scores(x, reduce="sum")
    assert out[0, 0, 1] == math.inf  # 2e308: the span's own sum overflows
    mean = span_scores(x, reduce="mean")
    assert mean[0, 0, 1] == 1e308  # its mean does not: computed in units of 2**64
    contrast = span_scores(x, reduce="contrast")
    assert np.isfinite(contrast[0][~np.isneginf(contrast[0])]).all()
    spans, scores = top_spans(x, 2, reduce="mean", max_len=2)
    assert spans[0].tolist() == [[0, 0], [0, 1]] and scores[0].tolist() == [1e308, 1e308]


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=80, **SETTINGS)
@given(prob=extreme_problems(), reduce=st.sampled_from(REDUCES), k=st.integers(1, 6), nms=NMS)
def test_extreme_magnitudes_band_and_top_spans(device, prob, reduce, k, nms):
    """Bands within the bounds of the exact value (tests/reference), and
    top_spans exactly the ranked cells of that band."""
    x, min_len, max_len, lengths = prob[:4]
    dtype = prob[4]
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    xt = torch.from_numpy(x).to(device=device, dtype=tdtype)
    lens = None if lengths is None else torch.from_numpy(lengths).to(device)
    band = span_scores(xt, reduce=reduce, min_len=min_len, max_len=max_len, lengths=lens)
    band_np = band.cpu().numpy()
    check_band(band_np, x, reduce, min_len, max_len, lengths, dtype=dtype)
    if device == "cpu":
        assert_same(span_scores(x, reduce=reduce, min_len=min_len, max_len=max_len,
                                lengths=lengths), band_np.astype(np.float64))
    spans, scores = top_spans(xt, k, reduce=reduce, min_len=min_len, max_len=max_len,
                              lengths=lens, nms_iou=nms)
    ref_spans, ref_scores = top_spans_ref(x, k, reduce, min_len, max_len, lengths, nms,
                                          out_dtype=dtype, band=band_np.astype(np.float64))
    np.testing.assert_array_equal(spans.cpu().numpy(), ref_spans)
    assert_same(scores.cpu().numpy(), ref_scores)


@pytest.mark.parametrize("reduce", REDUCES)
def test_long_rows_against_reference(reduce):
    """Rows longer than the vector groups of the CPU loops (heads, aligned
    bodies, tails at every offset), min_len > 1, ragged lengths, and a
    non-contiguous upstream gradient."""
    g = np.random.default_rng(5)
    x = g.standard_normal((3, 90))
    lengths = np.array([90, 61, 7])
    out = span_scores(x, reduce=reduce, min_len=3, max_len=23, lengths=lengths)
    ref = span_scores_ref(x, reduce, 3, 23, lengths)
    np.testing.assert_array_equal(np.isneginf(out), np.isneginf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(out[fin], ref[fin], rtol=1e-12, atol=1e-12)
    xt = torch.from_numpy(x).requires_grad_()
    band = span_scores(xt, reduce=reduce, min_len=3, max_len=23,
                       lengths=torch.from_numpy(lengths))
    gbuf = torch.from_numpy(g.standard_normal((3, 23, 90)))
    for grad in (gbuf.transpose(1, 2), gbuf.transpose(1, 2).contiguous()):  # d stride 90, 1
        (gx,) = torch.autograd.grad(band, xt, grad, retain_graph=True)
        gref = span_scores_grad_ref(grad, reduce, 3, lengths)
        np.testing.assert_allclose(gx.numpy(), gref, rtol=1e-10, atol=1e-10)


def test_huge_grad_stays_in_its_span():
    """A huge upstream gradient reaches only the steps of its span (sum,
    mean) instead of swamping every later step through a difference array."""
    for dtype, huge in ((torch.float32, float(F32.max)), (torch.float64, 1e308)):
        x = torch.zeros(1, 6, dtype=dtype, requires_grad=True)
        out = span_scores(x, reduce="sum", max_len=3)
        g = torch.full_like(out, 0.25)
        g[0, 0, 0] = huge
        g[0, 0, 1] = huge  # [0, 1]: steps 0 and 1 hold two huge terms
        (gx,) = torch.autograd.grad(out, x, g.masked_fill(out.isinf(), 0))
        # steps 2..5 hold only 0.25 terms: one per span of <= 3 steps holding t
        counts = [sum(1 for i in range(6) for d in range(3) if i <= t <= i + d < 6)
                  for t in range(6)]
        assert gx[0, 2:].tolist() == [0.25 * c for c in counts[2:]]
        assert gx[0, 0] == math.inf  # its own terms: 2 * huge overflows
        assert gx[0, 1] == huge  # huge + 0.25 * 4, rounded


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=60, **SETTINGS)
@given(prob=extreme_problems(max_T=7), reduce=st.sampled_from(REDUCES),
       seed=st.integers(0, 2**31 - 1), expanded=st.booleans())
def test_extreme_grad_within_bounds(device, prob, reduce, seed, expanded):
    """Upstream gradients of extreme magnitudes (drawn from the same values):
    each step's gradient within the bounds of the exact sum of its terms."""
    x, min_len, max_len, lengths, dtype = prob
    B, T = x.shape
    W = T if max_len is None else min(max_len, T)
    rng = np.random.default_rng(seed)
    pool = x.reshape(-1) if x.size else np.array([1.0], dtype=dtype)
    if expanded:
        grad = torch.tensor(pool[rng.integers(0, pool.size)]).expand(B, T, W)
    else:
        grad = torch.from_numpy(pool[rng.integers(0, pool.size, (B, T, W))].astype(dtype))
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    grad = grad.to(tdtype)
    xt = torch.from_numpy(x).to(device=device, dtype=tdtype).requires_grad_()
    lens = None if lengths is None else torch.from_numpy(lengths).to(device)
    out = span_scores(xt, reduce=reduce, min_len=min_len, max_len=max_len, lengths=lens)
    if B * T == 0:
        return
    (gx,) = torch.autograd.grad(out, xt, grad.to(device))
    check_grad(gx.cpu(), grad, reduce, min_len, lengths, dtype=dtype)


# --------------------------------------------------------------------------- #
# Errors
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_errors(kind):
    conv = (lambda a: a) if kind == "numpy" else torch.as_tensor
    x = conv(np.zeros((2, 5)))
    with pytest.raises(ValueError, match=r"span_scores: reduce must be one of .*got 'max'"):
        span_scores(x, reduce="max")
    with pytest.raises(TypeError, match="top_spans: reduce must be a string, got int"):
        top_spans(x, 1, reduce=3)
    with pytest.raises(ValueError, match=r"span_scores: min_len must be >= 1, got 0"):
        span_scores(x, reduce="sum", min_len=0)
    with pytest.raises(ValueError, match=r"max_len must be >= min_len, got max_len = 2 and "
                                         r"min_len = 3"):
        span_scores(x, reduce="sum", min_len=3, max_len=2)
    with pytest.raises(ValueError, match=r"top_spans: max_len must be >= 1 .*got 0"):
        top_spans(x, 1, reduce="sum", max_len=0)
    with pytest.raises(ValueError, match=r"span_scores: x must have shape \(B, T\), got shape "
                                         r"\(10,\)"):
        span_scores(conv(np.zeros(10)), reduce="sum")
    with pytest.raises(ValueError, match=r"lengths must have shape \(B,\) = \(2,\), got shape "
                                         r"\(3,\)"):
        span_scores(x, reduce="sum", lengths=conv(np.array([1, 2, 3])))
    with pytest.raises(ValueError, match=r"top_spans: lengths must lie in \[0, T\] = \[0, 5\], "
                                         r"got lengths\[1\] = 6"):
        top_spans(x, 1, reduce="sum", lengths=conv(np.array([1, 6])))
    with pytest.raises(TypeError, match="span_scores: lengths must hold integers"):
        span_scores(x, reduce="sum", lengths=conv(np.array([1.0, 2.0])))
    with pytest.raises(ValueError, match="top_spans: k must be >= 1, got 0"):
        top_spans(x, 0, reduce="sum")
    with pytest.raises(ValueError, match=r"nms_iou must lie in \[0, 1\].*got 1.5"):
        top_spans(x, 1, reduce="sum", nms_iou=1.5)
    with pytest.raises(ValueError, match=r"nms_iou must lie in \[0, 1\].*got nan"):
        top_spans(x, 1, reduce="sum", nms_iou=math.nan)
    with pytest.raises(TypeError, match="top_spans: nms_iou must be a real number, got str"):
        top_spans(x, 1, reduce="sum", nms_iou="0.5")
    with pytest.raises(TypeError, match="top_spans: k must be an integer, got bool"):
        top_spans(x, True, reduce="sum")
    with pytest.raises(TypeError, match="span_scores: x must hold real numbers"):
        span_scores(conv(np.zeros((2, 3), dtype=np.complex64)), reduce="sum")


def test_mixed_frameworks_error():
    with pytest.raises(TypeError, match="span_scores: lengths must be a torch tensor like x"):
        span_scores(torch.zeros(2, 3), reduce="sum", lengths=np.array([1, 2]))


def test_integer_input_is_converted():
    out = span_scores(np.array([[1, 2, 3]]), reduce="mean")
    assert out.dtype == np.float64 and out[0, 0, 2] == 2.0


# --------------------------------------------------------------------------- #
# torch.library: opcheck and torch.compile
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    from fastvqa.ops import _torch_span_scores  # noqa: F401  (registers the ops)

    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 10, dtype=torch.float64, generator=g).to(device)
    lengths = torch.tensor([10, 6, 0], device=device)
    grad = torch.randn(3, 10, 4, dtype=torch.float64, generator=g).to(device)
    ops = torch.ops.fastvqa
    samples = [
        (ops.span_scores.default, (x.clone().requires_grad_(), "contrast", 1, 4, lengths)),
        (ops.span_scores.default, (x.clone().requires_grad_(), "sum", 2, None, None)),
        (ops.span_scores_backward.default, (grad, "mean", 1, lengths)),
        (ops.top_spans.default, (x, 3, "mean", 1, 5, lengths, 0.3)),
        (ops.top_spans.default, (x, 2, "sum", 1, None, None, None)),
    ]
    for op, args in samples:
        assert_opcheck(op, args)


def _pipeline(x, lengths):
    band = span_scores(x, reduce="contrast", max_len=5, lengths=lengths)
    loss = torch.logsumexp(band.flatten(1), dim=1).sum()
    spans, scores = top_spans(x, 3, reduce="contrast", max_len=5, lengths=lengths, nms_iou=0.5)
    return loss, spans, scores


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph_matches_eager(device):
    torch._dynamo.reset()
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(5)).to(device)
    lengths = torch.tensor([16, 9, 5, 1], device=device)
    xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
    compiled = torch.compile(_pipeline, fullgraph=True)
    loss_c, spans_c, scores_c = compiled(xc, lengths)
    loss_e, spans_e, scores_e = _pipeline(xe, lengths)
    torch.testing.assert_close(loss_c, loss_e)
    assert torch.equal(spans_c, spans_e) and torch.equal(scores_c, scores_e)
    loss_c.backward()
    loss_e.backward()
    torch.testing.assert_close(xc.grad, xe.grad)


# --------------------------------------------------------------------------- #
# CUDA (and the same checks on torch CPU)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=60, **SETTINGS)
@given(prob=tie_problems, reduce=st.sampled_from(REDUCES), k=st.integers(1, 8), nms=NMS,
       dtype=st.sampled_from([torch.float32, torch.float64]), layout=st.sampled_from(LAYOUTS))
def test_tie_heavy_on_device(device, prob, reduce, k, nms, dtype, layout):
    x, min_len, max_len, lengths = prob
    xt = torch_layout(x, layout, dtype, device)
    lens = None if lengths is None else torch.from_numpy(lengths).to(device)
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    band = span_scores(xt, reduce=reduce, min_len=min_len, max_len=max_len, lengths=lens)
    assert band.device.type == device
    assert_same(band.cpu().numpy(),
                span_scores_ref(x, reduce, min_len, max_len, lengths).astype(np_dtype))
    spans, scores = top_spans(xt, k, reduce=reduce, min_len=min_len, max_len=max_len,
                              lengths=lens, nms_iou=nms)
    ref_spans, ref_scores = top_spans_ref(x, k, reduce, min_len, max_len, lengths, nms,
                                          out_dtype=np_dtype)
    np.testing.assert_array_equal(spans.cpu().numpy(), ref_spans)
    assert_same(scores.cpu().numpy(), ref_scores)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduce", REDUCES)
def test_long_rows_cpu_cuda_agree(device, reduce):
    """Rows longer than a block, forward, backward (incl. a non-finite grad)
    and top spans with NMS rounds, against the CPU kernels."""
    g = torch.Generator().manual_seed(11)
    B, T, W = 5, 700, 40
    x = torch.randn(B, T, dtype=torch.float64, generator=g)
    x[1, 100] = math.nan
    x[2, 5] = -math.inf
    lengths = torch.tensor([T, 0, 513, 1, 650])
    grad = torch.randn(B, T, W, dtype=torch.float64, generator=g)
    grad[4, 10, 3] = math.inf
    results = {}
    for dev in ("cpu", device):
        xd = x.to(dev).requires_grad_()
        band = span_scores(xd, reduce=reduce, max_len=W, lengths=lengths.to(dev))
        (gx,) = torch.autograd.grad(band, xd, grad.to(dev))
        spans, scores = top_spans(x.to(dev), 7, reduce=reduce, max_len=W,
                                  lengths=lengths.to(dev), nms_iou=0.1)
        results[dev] = [t.cpu() for t in (band, gx, spans, scores)]
    for a, b in zip(results["cpu"], results[device]):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-9, equal_nan=True)
    assert torch.equal(results["cpu"][2], results[device][2])


# --------------------------------------------------------------------------- #
# String options: checked once, in C++, with a one-line message
# --------------------------------------------------------------------------- #

_X = np.zeros((2, 4))


def _zero_spans(x):
    """[2, 1, 2] int64 spans (0, 0) in the framework of ``x``."""
    z = np.zeros((2, 1, 2), np.int64)
    return torch.from_numpy(z) if isinstance(x, torch.Tensor) else z


_STRING_OPTIONS = [
    (lambda x, v: span_scores(x, reduce=v), "span_scores", "reduce",
     "must be one of 'sum', 'mean', 'contrast', got 'median'"),
    (lambda x, v: top_spans(x, 2, reduce=v), "top_spans", "reduce",
     "must be one of 'sum', 'mean', 'contrast', got 'median'"),
    (lambda x, v: span_similarity(x[:, :, None], x[:, :1], _zero_spans(x), pool=v),
     "span_similarity", "pool", "must be 'mean_of_cos' or 'cos_of_mean', got 'median'"),
    (lambda x, v: span_similarity_all(x[:, :, None], x[:, :1], pool=v),
     "span_similarity_all", "pool", "must be 'mean_of_cos' or 'cos_of_mean', got 'median'"),
    (lambda x, v: nms_1d(x[0, :2].reshape(1, 2), x[0, :1], iou_threshold=0.5, method=v),
     "nms_1d", "method", "must be one of 'hard', 'linear', 'gaussian', got 'median'"),
    (lambda x, v: temporal_iou(x[:, :2], x[:, :2], v), "temporal_iou", "mode",
     "must be one of 'iou', 'iop', 'iog', 'giou', got 'median'"),
]


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("call, op, arg, rest", _STRING_OPTIONS,
                         ids=[f"{o}-{a}" for _, o, a, _ in _STRING_OPTIONS])
def test_string_options_fail_in_one_line_naming_the_argument(kind, call, op, arg, rest):
    x = torch.from_numpy(_X) if kind == "torch" else _X
    with pytest.raises(ValueError) as info:
        call(x, "median")
    assert str(info.value) == f"{op}: {arg} {rest}"
    # Not a string at all: pybind11 would print the whole signature; the wrapper says it.
    with pytest.raises(TypeError) as info:
        call(x, 3)
    assert str(info.value) == f"{op}: {arg} must be a string, got int"
