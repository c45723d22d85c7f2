# SPDX-License-Identifier: Apache-2.0
"""Tests for ``fastvqa.ops.temporal_iou``, ``paired_temporal_iou`` and
``grounding_overlap`` against the plain-Python references in
``tests/reference/temporal_iou.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastvqa.ops import grounding_overlap, paired_temporal_iou, temporal_iou
from tests.conftest import DEVICES
from tests.reference.temporal_iou import (
    MODES,
    grounding_overlap_ref,
    nextgqa_pair_ref,
    grounding_overlap_exact_ref,
    paired_temporal_iou_ref,
    span_overlap_exact_ref,
    temporal_iou_exact_ref,
    temporal_iou_ref,
)

NAN = math.nan

# conftest's autouse RNG-restoring fixture is function-scoped; that is harmless here.
QUIET_CHECKS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=QUIET_CHECKS)
DEVICE_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=QUIET_CHECKS)

NP_DTYPES = {"float32": np.float32, "float64": np.float64}
TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64}
KIND_DTYPES = [
    pytest.param("numpy", "float32", id="numpy-float32"),
    pytest.param("numpy", "float64", id="numpy-float64"),
    pytest.param("torch", "float32", id="torch-float32"),
    pytest.param("torch", "float64", id="torch-float64"),
]
NUMPY_LAYOUTS = ["contiguous", "transposed", "strided", "reversed", "colstride"]
TORCH_LAYOUTS = ["contiguous", "transposed", "strided", "colstride"]

# float64 temporal_iou: the library may order its few flops differently.
TOL64 = {"rtol": 1e-12, "atol": 1e-12}
TOL32 = {"rtol": 1e-5, "atol": 1e-6}


def tol(dtype: str) -> dict:
    return TOL64 if dtype == "float64" else TOL32


# --------------------------------------------------------------------------
# Input construction
# --------------------------------------------------------------------------


def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """The float64 values the library actually sees for ``dtype`` inputs."""
    return np.asarray(values, dtype=np.float64).astype(NP_DTYPES[dtype]).astype(np.float64)


def make_spans(values: np.ndarray, kind: str, dtype: str, layout: str = "contiguous"):
    """An ``(N, 2)`` NumPy array or torch tensor of ``values`` in ``dtype``,
    laid out contiguously or as one of several non-contiguous views whose
    surrounding memory holds decoy values."""
    arr = np.asarray(values, dtype=np.float64).reshape(-1, 2).astype(NP_DTYPES[dtype])
    n = arr.shape[0]
    if kind == "torch" and layout == "reversed":
        layout = "strided"  # torch has no negative strides
    if layout == "contiguous":
        base, view = arr.copy(), (lambda x: x)
    elif layout == "transposed":  # (2, N) buffer viewed as (N, 2)
        base = np.ascontiguousarray(arr.T)
        view = (lambda x: x.t()) if kind == "torch" else (lambda x: x.T)
    elif layout == "strided":  # every other row
        base = np.full((2 * n, 2), 777.0, dtype=arr.dtype)
        base[::2] = arr
        view = lambda x: x[::2]  # noqa: E731
    elif layout == "reversed":  # NumPy negative row stride
        base = np.ascontiguousarray(arr[::-1])
        view = lambda x: x[::-1]  # noqa: E731
    elif layout == "colstride":  # every other column of an (N, 4) buffer
        base = np.full((n, 4), -333.0, dtype=arr.dtype)
        base[:, ::2] = arr
        view = lambda x: x[:, ::2]  # noqa: E731
    else:  # pragma: no cover
        raise AssertionError(layout)
    out = view(torch.from_numpy(base) if kind == "torch" else base)
    assert tuple(out.shape) == (n, 2)
    if kind == "torch":
        np.testing.assert_array_equal(out.numpy(), arr)
    else:
        np.testing.assert_array_equal(out, arr)
    if layout != "contiguous" and n >= 2:
        contiguous = out.is_contiguous() if kind == "torch" else out.flags.c_contiguous
        assert not contiguous
    return out


def make_offsets(offsets, kind: str, dtype=np.int64):
    arr = np.asarray(offsets, dtype=dtype)
    return torch.from_numpy(arr) if kind == "torch" else arr


def to_numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return x


def check_output(out, kind: str, dtype: str, shape: tuple) -> np.ndarray:
    if kind == "torch":
        assert isinstance(out, torch.Tensor)
        assert out.dtype == TORCH_DTYPES[dtype]
        assert out.device.type == "cpu"
    else:
        assert isinstance(out, np.ndarray)
        assert out.dtype == NP_DTYPES[dtype]
    assert tuple(out.shape) == shape
    return to_numpy(out)


def assert_close(actual, expected, **kw):
    """Values within tolerance; NaN exactly where the reference has NaN."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    np.testing.assert_allclose(actual, expected, equal_nan=True, **kw)


# --------------------------------------------------------------------------
# Hypothesis strategies
# --------------------------------------------------------------------------

# Multiples of 0.5 in [-5, 20]: ties, touching and identical spans are common,
# and every value is exact in float16/bfloat16/float32.
GRID = st.integers(-10, 40).map(lambda k: k * 0.5)
STEP = st.integers(0, 8).map(lambda k: k * 0.5)
GENERAL = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)
STYLES = st.sampled_from(["grid", "grid", "general", "mixed"])


def value_strategy(style: str):
    return {"grid": GRID, "general": GENERAL, "mixed": st.one_of(GRID, GENERAL)}[style]


@st.composite
def fresh_span(draw, style: str) -> list[float]:
    values = value_strategy(style)
    shape = draw(st.sampled_from(["sorted", "sorted", "raw", "zero", "reversed"]))
    s = draw(values)
    if shape == "zero":
        return [s, s]
    e = draw(values)
    if shape == "sorted":
        s, e = min(s, e), max(s, e)
    elif shape == "reversed":
        s, e = max(s, e), min(s, e)
    return [s, e]


@st.composite
def related_span(draw, anchors: list[list[float]], style: str) -> list[float]:
    """A span that is fresh, or identical/touching/nested/reversed relative to
    one of ``anchors``."""
    rel = draw(
        st.sampled_from(
            ["fresh", "fresh", "copy", "after", "before", "reversed", "around", "same_start"]
        )
    )
    if rel == "fresh" or not anchors:
        return draw(fresh_span(style))
    s, e = anchors[draw(st.integers(0, len(anchors) - 1))]
    d1, d2 = draw(STEP), draw(STEP)
    if rel == "copy":
        return [s, e]
    if rel == "after":  # touches: starts where the anchor ends
        return [e, e + d1]
    if rel == "before":  # touches: ends where the anchor starts
        return [s - d1, s]
    if rel == "reversed":
        return [e, s]
    if rel == "around":
        return [s - d1, e + d2]
    return [s, s + d1]  # same_start


@st.composite
def with_nans(draw, rows: list[list[float]], enabled: bool) -> np.ndarray:
    arr = np.array(rows, dtype=np.float64).reshape(-1, 2)
    if enabled and arr.size:
        flags = draw(st.lists(st.integers(0, 7), min_size=arr.size, max_size=arr.size))
        arr.reshape(-1)[np.array(flags) == 7] = NAN
    return arr


@st.composite
def span_sets(draw, paired: bool, max_n: int = 8):
    """``(a, b)`` float64 value arrays; ``b`` has as many rows as ``a`` when paired."""
    style = draw(STYLES)
    nan = draw(st.booleans())
    n = draw(st.integers(0, max_n))
    m = n if paired else draw(st.integers(0, max_n))
    a_rows = [draw(fresh_span(style)) for _ in range(n)]
    if paired:
        b_rows = [draw(related_span([a_rows[i]], style)) for i in range(n)]
    else:
        b_rows = [draw(related_span(a_rows, style)) for _ in range(m)]
    return draw(with_nans(a_rows, nan)), draw(with_nans(b_rows, nan))


@st.composite
def grounding_sets(draw, max_n: int = 7, max_row: int = 4):
    """``(pred, gt, offsets)``: ragged gold rows (possibly empty) built around
    each prediction."""
    style = draw(STYLES)
    nan = draw(st.booleans())
    n = draw(st.integers(0, max_n))
    pred_rows = [draw(fresh_span(style)) for _ in range(n)]
    counts = [draw(st.integers(0, max_row)) for _ in range(n)]
    gt_rows = []
    for p, c in zip(pred_rows, counts):
        gt_rows += [draw(related_span([p], style)) for _ in range(c)]
    offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
    return draw(with_nans(pred_rows, nan)), draw(with_nans(gt_rows, nan)), offsets


# --------------------------------------------------------------------------
# Property tests against the references
# --------------------------------------------------------------------------


def draw_inputs(data, a_vals, b_vals, kind: str, dtype: str):
    """``(a, b, mode)``: the two span sets in drawn memory layouts, and a drawn mode."""
    layouts = TORCH_LAYOUTS if kind == "torch" else NUMPY_LAYOUTS
    mode = data.draw(st.sampled_from(MODES), label="mode")
    la = data.draw(st.sampled_from(layouts), label="layout_a")
    lb = data.draw(st.sampled_from(layouts), label="layout_b")
    return make_spans(a_vals, kind, dtype, la), make_spans(b_vals, kind, dtype, lb), mode


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@SETTINGS
@given(data=st.data(), case=span_sets(paired=False))
def test_temporal_iou_matches_reference(kind, dtype, data, case):
    a_vals, b_vals = case
    a, b, mode = draw_inputs(data, a_vals, b_vals, kind, dtype)
    out = temporal_iou(a, b, mode=mode)
    got = check_output(out, kind, dtype, (len(a_vals), len(b_vals)))
    expected = temporal_iou_ref(round_to(a_vals, dtype), round_to(b_vals, dtype), mode)
    assert_close(got, expected, **tol(dtype))


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@SETTINGS
@given(data=st.data(), case=span_sets(paired=True))
def test_paired_temporal_iou_matches_reference(kind, dtype, data, case):
    a_vals, b_vals = case
    a, b, mode = draw_inputs(data, a_vals, b_vals, kind, dtype)
    out = paired_temporal_iou(a, b, mode)
    got = check_output(out, kind, dtype, (len(a_vals),))
    expected = paired_temporal_iou_ref(round_to(a_vals, dtype), round_to(b_vals, dtype), mode)
    assert_close(got, expected, **tol(dtype))
    # The paired result is the diagonal of the pairwise one.
    full = to_numpy(temporal_iou(a, b, mode))
    assert_close(got, np.diagonal(full).copy(), **tol(dtype))


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@SETTINGS
@given(data=st.data(), case=grounding_sets())
def test_grounding_overlap_matches_reference(kind, dtype, data, case):
    pred_vals, gt_vals, offsets = case
    layouts = TORCH_LAYOUTS if kind == "torch" else NUMPY_LAYOUTS
    lp = data.draw(st.sampled_from(layouts), label="layout_pred")
    lg = data.draw(st.sampled_from(layouts), label="layout_gt")
    off_dtype = data.draw(st.sampled_from([np.int64, np.int32]), label="offsets_dtype")
    pred = make_spans(pred_vals, kind, dtype, lp)
    gt = make_spans(gt_vals, kind, dtype, lg)
    iou, iop = grounding_overlap(pred, gt, make_offsets(offsets, kind, off_dtype))
    n = len(pred_vals)
    got_iou = check_output(iou, kind, dtype, (n,))
    got_iop = check_output(iop, kind, dtype, (n,))
    exp_iou, exp_iop = grounding_overlap_ref(
        round_to(pred_vals, dtype), round_to(gt_vals, dtype), offsets
    )
    if dtype == "float64":
        # The official evaluator in Python floats, bit for bit.
        np.testing.assert_array_equal(got_iou, exp_iou)
        np.testing.assert_array_equal(got_iop, exp_iop)
    else:
        assert_close(got_iou, exp_iou, **TOL32)
        assert_close(got_iop, exp_iop, **TOL32)
    # Invariant: IoU never exceeds IoP (the hull contains the prediction).
    ok = ~np.isnan(got_iou)
    assert np.all(got_iou[ok] <= got_iop[ok])
    assert np.all((got_iou[ok] >= 0) & (got_iop[ok] >= 0) & (got_iop[ok] <= 1))


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@settings(max_examples=100, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(data=st.data(), case=span_sets(paired=False))
def test_mixed_float_dtypes_promote_to_float64(kind, data, case):
    a_vals, b_vals = case
    mode = data.draw(st.sampled_from(MODES), label="mode")
    a32_first = data.draw(st.booleans(), label="a_is_float32")
    da, db = ("float32", "float64") if a32_first else ("float64", "float32")
    a = make_spans(a_vals, kind, da)
    b = make_spans(b_vals, kind, db)
    out = temporal_iou(a, b, mode)
    got = check_output(out, kind, "float64", (len(a_vals), len(b_vals)))
    expected = temporal_iou_ref(round_to(a_vals, da), round_to(b_vals, db), mode)
    assert_close(got, expected, **TOL64)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@settings(max_examples=100, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(case=grounding_sets())
def test_grounding_mixed_dtypes_promote_to_float64(kind, case):
    pred_vals, gt_vals, offsets = case
    pred = make_spans(pred_vals, kind, "float32")
    gt = make_spans(gt_vals, kind, "float64")
    iou, iop = grounding_overlap(pred, gt, make_offsets(offsets, kind))
    n = len(pred_vals)
    exp_iou, exp_iop = grounding_overlap_ref(round_to(pred_vals, "float32"), gt_vals, offsets)
    np.testing.assert_array_equal(check_output(iou, kind, "float64", (n,)), exp_iou)
    np.testing.assert_array_equal(check_output(iop, kind, "float64", (n,)), exp_iop)


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@settings(max_examples=100, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(case=span_sets(paired=False))
def test_overlap_invariants(kind, dtype, case):
    a_vals, b_vals = case
    a = make_spans(a_vals, kind, dtype)
    b = make_spans(b_vals, kind, dtype)
    res = {mode: to_numpy(temporal_iou(a, b, mode)) for mode in MODES}
    finite = ~np.isnan(res["iou"])
    for mode in MODES:
        np.testing.assert_array_equal(np.isnan(res[mode]), ~finite)
    eps = 1e-12 if dtype == "float64" else 1e-6
    iou, giou = res["iou"][finite], res["giou"][finite]
    for mode in ("iou", "iop", "iog"):
        vals = res[mode][finite]
        assert np.all((vals >= 0) & (vals <= 1 + eps))
    assert np.all(giou >= -1 - eps) and np.all(giou <= 1 + eps)
    assert np.all(giou <= iou + eps)
    # IoU is at most both IoP and IoG.
    assert np.all(iou <= res["iop"][finite] + eps)
    assert np.all(iou <= res["iog"][finite] + eps)
    # Swapping the arguments transposes IoU/GIoU and exchanges IoP and IoG.
    swapped = {mode: to_numpy(temporal_iou(b, a, mode)) for mode in MODES}
    assert_close(swapped["iou"], res["iou"].T, **tol(dtype))
    assert_close(swapped["giou"], res["giou"].T, **tol(dtype))
    assert_close(swapped["iop"], res["iog"].T, **tol(dtype))


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@settings(max_examples=100, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(
    rows=st.lists(
        st.tuples(GRID, STEP.filter(lambda d: d > 0)).map(lambda t: [t[0], t[0] + t[1]]),
        min_size=1,
        max_size=8,
    )
)
def test_self_iou_diagonal_is_one(kind, dtype, rows):
    a = make_spans(np.array(rows), kind, dtype)
    for mode in ("iou", "iop", "iog", "giou"):
        out = to_numpy(temporal_iou(a, a, mode))
        np.testing.assert_array_equal(np.diagonal(out), np.ones(len(rows)))
        np.testing.assert_array_equal(to_numpy(paired_temporal_iou(a, a, mode)), np.ones(len(rows)))


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@settings(max_examples=100, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(
    total=st.integers(1, 400).map(lambda k: k * 0.5),
    frac=st.tuples(st.floats(0, 1), st.floats(0, 1)),
)
def test_full_video_prediction_scores_gold_fraction(kind, dtype, total, frac):
    gs, ge = sorted((round(frac[0] * total * 2) / 2, round(frac[1] * total * 2) / 2))
    pred = make_spans([[0.0, total]], kind, dtype)
    gt = make_spans([[gs, ge]], kind, dtype)
    iou, iop = (to_numpy(x) for x in grounding_overlap(pred, gt, make_offsets([0, 1], kind)))
    expected = (ge - gs) / total
    np.testing.assert_allclose(iou, [expected], rtol=1e-6 if dtype == "float32" else 0)
    np.testing.assert_array_equal(iou, iop)


# --------------------------------------------------------------------------
# Hand-computed cases (NExT-GQA evaluator documentation)
# --------------------------------------------------------------------------


def _single(pred, gold, kind="numpy", dtype="float64"):
    gold = np.asarray(gold, dtype=np.float64).reshape(-1, 2)
    iou, iop = grounding_overlap(
        make_spans([pred], kind, dtype),
        make_spans(gold, kind, dtype),
        make_offsets([0, len(gold)], kind),
    )
    return float(to_numpy(iou)[0]), float(to_numpy(iop)[0])


NEXTGQA_CASES = [
    pytest.param([19, 23], [[0, 10], [20, 22]], 0.5, 0.5, id="multiple-gold"),
    pytest.param([0, 5], [[0, 10]], 0.5, 1.0, id="half-of-gold"),
    pytest.param([5, 15], [[0, 10]], 1 / 3, 0.5, id="half-of-pred"),
    pytest.param([8, 9], [[2, 6]], 0.0, 0.0, id="disjoint-clamped"),
    pytest.param([5, 3], [[2, 6]], 0.0, 0.0, id="reversed-pred"),
    pytest.param([4, 4], [[2, 6]], 0.0, 1.0, id="zero-length-inside"),
    pytest.param([6, 6], [[2, 6]], 0.0, 1.0, id="zero-length-on-end"),
    pytest.param([2, 2], [[2, 6]], 0.0, 1.0, id="zero-length-on-start"),
    pytest.param([7, 7], [[2, 6]], 0.0, 0.0, id="zero-length-outside"),
    pytest.param([0, 5], [[3, 3]], 0.0, 0.0, id="zero-length-gold"),
    pytest.param([6, 8], [[2, 6]], 0.0, 0.0, id="touching"),
    pytest.param([0, 5], [], 0.0, 0.0, id="empty-row"),
    pytest.param([2, 6], [[2, 6]], 1.0, 1.0, id="identical"),
    pytest.param([0, 10], [[1, 2], [5, 9]], 0.4, 0.4, id="best-of-two"),
    pytest.param([0, 4], [[0, 10], [1, 3]], 0.5, 1.0, id="independent-maxima"),
]


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@pytest.mark.parametrize(("pred", "gold", "want_iou", "want_iop"), NEXTGQA_CASES)
def test_nextgqa_documented_cases(kind, dtype, pred, gold, want_iou, want_iop):
    iou, iop = _single(pred, gold, kind, dtype)
    rel = 1e-6 if dtype == "float32" else 1e-15
    assert iou == pytest.approx(want_iou, rel=rel, abs=0)
    assert iop == pytest.approx(want_iop, rel=rel, abs=0)
    ref_iou, ref_iop = grounding_overlap_ref([pred], np.reshape(gold, (-1, 2)), [0, len(gold)])
    assert (iou, iop) == pytest.approx((float(ref_iou[0]), float(ref_iop[0])), rel=rel, abs=0)


def test_half_of_gold_counts_as_hit_at_threshold_half():
    iou, _ = _single([0, 5], [[0, 10]])
    assert iou == 0.5 and iou >= 0.5  # the R@0.5 threshold is inclusive


# pred [1.2, 7.4], gold [3.6, 6.7]: the hull IoU is exactly 0.5 in float64,
# the textbook len + len - inter IoU rounds to 0.49999999999999994.
HULL_CASE = (1.2, 7.4, 3.6, 6.7)


def _find_hull_union_disagreement(limit: int = 200_000):
    """Brute force one-decimal spans whose hull IoU and union IoU fall on
    different sides of 0.5 in float64."""
    rng = np.random.default_rng(0)
    for _ in range(limit):
        ps, pe, gs, ge = (float(x) for x in np.round(rng.uniform(0, 10, 4), 1))
        ps, pe = min(ps, pe), max(ps, pe)
        gs, ge = min(gs, ge), max(gs, ge)
        inter = min(pe, ge) - max(ps, gs)
        if ps == pe or gs == ge or inter <= 0:
            continue
        hull = max(pe, ge) - min(ps, gs)
        union = (pe - ps) + (ge - gs) - inter
        if (inter / hull >= 0.5) != (inter / union >= 0.5):
            return ps, pe, gs, ge
    return None


@pytest.mark.parametrize("case", [HULL_CASE, "search"], ids=["known", "searched"])
def test_grounding_iou_uses_hull_at_exact_half(case):
    if case == "search":
        case = _find_hull_union_disagreement()
        if case is None:  # pragma: no cover
            pytest.skip("no hull/union disagreement found")
    ps, pe, gs, ge = case
    inter = min(pe, ge) - max(ps, gs)
    hull_iou = inter / (max(pe, ge) - min(ps, gs))
    union_iou = inter / ((pe - ps) + (ge - gs) - inter)
    assert (hull_iou >= 0.5) != (union_iou >= 0.5)  # the case is a real boundary case
    iou, iop = _single([ps, pe], [[gs, ge]])
    assert iou == hull_iou
    assert (iou >= 0.5) == (hull_iou >= 0.5)
    assert (iou, iop) == nextgqa_pair_ref(ps, pe, gs, ge)


# --------------------------------------------------------------------------
# Hand-computed temporal_iou cases
# --------------------------------------------------------------------------

TEMPORAL_CASES = [
    # a, b, iou, iop, iog, giou
    pytest.param([0, 10], [5, 15], 1 / 3, 0.5, 0.5, 1 / 3, id="half-overlap"),
    pytest.param([0, 2], [2, 4], 0.0, 0.0, 0.0, 0.0, id="touching"),
    pytest.param([0, 2], [3, 4], 0.0, 0.0, 0.0, -0.25, id="disjoint"),
    pytest.param([0, 10], [2, 4], 0.2, 0.2, 1.0, 0.2, id="nested"),
    pytest.param([3, 3], [3, 3], 0.0, 0.0, 0.0, 0.0, id="both-zero-length"),
    pytest.param([2, 2], [0, 4], 0.0, 0.0, 0.0, 0.0, id="zero-length-inside"),
    pytest.param([4, 2], [0, 4], 0.0, 0.0, 0.0, 0.0, id="reversed-a"),
    pytest.param([4, 2], [1, 0], 0.0, 0.0, 0.0, -1.0, id="both-reversed-hull-positive"),
    pytest.param([4, 2], [5, 3], 0.0, 0.0, 0.0, 0.0, id="both-reversed-hull-negative"),
    pytest.param([2, 1], [3, 1], 0.0, 0.0, 0.0, 0.0, id="both-reversed-same-end"),
    pytest.param([0, 1], [1, 1], 0.0, 0.0, 0.0, 0.0, id="zero-length-at-end"),
    pytest.param([NAN, 1], [0, 1], NAN, NAN, NAN, NAN, id="nan-a"),
    pytest.param([0, 1], [0, NAN], NAN, NAN, NAN, NAN, id="nan-b"),
    pytest.param([5, 3], [0, NAN], NAN, NAN, NAN, NAN, id="nan-with-reversed"),
]


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@pytest.mark.parametrize(("a", "b", "iou", "iop", "iog", "giou"), TEMPORAL_CASES)
def test_temporal_iou_hand_cases(kind, dtype, a, b, iou, iop, iog, giou):
    want = {"iou": iou, "iop": iop, "iog": iog, "giou": giou}
    A, B = make_spans([a], kind, dtype), make_spans([b], kind, dtype)
    for mode, value in want.items():
        ref = temporal_iou_ref([a], [b], mode)[0, 0]
        assert_close([ref], [value], rtol=1e-15, atol=0)
        assert_close(to_numpy(temporal_iou(A, B, mode))[0], [value], rtol=1e-6, atol=0)
        assert_close(to_numpy(paired_temporal_iou(A, B, mode)), [value], rtol=1e-6, atol=0)


def test_default_mode_is_iou():
    a = np.array([[0.0, 10.0]])
    b = np.array([[5.0, 15.0]])
    np.testing.assert_array_equal(temporal_iou(a, b), temporal_iou(a, b, "iou"))
    np.testing.assert_array_equal(paired_temporal_iou(a, b), paired_temporal_iou(a, b, "iou"))


def test_nan_in_one_gold_span_poisons_only_its_row():
    pred = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 2.0]])
    gt = np.array([[0.0, 1.0], [0.0, 2.0], [NAN, 1.0], [0.0, 1.0]])
    iou, iop = grounding_overlap(pred, gt, np.array([0, 1, 3, 4]))
    np.testing.assert_array_equal(iou, [1.0, NAN, 0.5])
    np.testing.assert_array_equal(iop, [1.0, NAN, 0.5])


def test_nan_prediction_with_empty_row_is_nan():
    iou, iop = grounding_overlap(np.array([[NAN, NAN]]), np.zeros((0, 2)), np.array([0, 0]))
    assert np.isnan(iou[0]) and np.isnan(iop[0])


# --------------------------------------------------------------------------
# Empty inputs
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@pytest.mark.parametrize(("n", "m"), [(0, 0), (0, 3), (3, 0)])
def test_empty_shapes(kind, dtype, n, m):
    a = make_spans(np.arange(2 * n, dtype=np.float64).reshape(n, 2), kind, dtype)
    b = make_spans(np.arange(2 * m, dtype=np.float64).reshape(m, 2), kind, dtype)
    for mode in MODES:
        check_output(temporal_iou(a, b, mode), kind, dtype, (n, m))
    if n == m:
        check_output(paired_temporal_iou(a, b), kind, dtype, (0,))
        iou, iop = grounding_overlap(a, b, make_offsets([0], kind))
        check_output(iou, kind, dtype, (0,))
        check_output(iop, kind, dtype, (0,))
    if m == 0:  # predictions whose rows are all empty
        iou, iop = grounding_overlap(a, b, make_offsets([0] * (n + 1), kind))
        np.testing.assert_array_equal(check_output(iou, kind, dtype, (n,)), np.zeros(n))
        np.testing.assert_array_equal(check_output(iop, kind, dtype, (n,)), np.zeros(n))


# --------------------------------------------------------------------------
# dtype conversions
# --------------------------------------------------------------------------


@pytest.mark.parametrize("int_dtype", [np.int32, np.int64, np.uint8, np.int16])
def test_numpy_integer_inputs_convert_to_float64(int_dtype):
    a_vals = np.array([[0, 10], [5, 15], [3, 3], [9, 4]])
    b_vals = np.array([[5, 15], [0, 2], [10, 12]])
    for mode in MODES:
        out = temporal_iou(a_vals.astype(int_dtype), b_vals.astype(int_dtype), mode)
        got = check_output(out, "numpy", "float64", (4, 3))
        assert_close(got, temporal_iou_ref(a_vals, b_vals, mode), **TOL64)
        # integers next to float32 still give float64 (integers become float64 first)
        out = temporal_iou(a_vals.astype(int_dtype), b_vals.astype(np.float32), mode)
        check_output(out, "numpy", "float64", (4, 3))
    pred = np.array([[0, 5], [4, 4]], dtype=int_dtype)
    gt = np.array([[0, 10], [2, 6]], dtype=int_dtype)
    iou, iop = grounding_overlap(pred, gt, np.array([0, 1, 2]))
    np.testing.assert_array_equal(check_output(iou, "numpy", "float64", (2,)), [0.5, 0.0])
    np.testing.assert_array_equal(check_output(iop, "numpy", "float64", (2,)), [1.0, 1.0])


def test_python_lists_are_accepted():
    out = temporal_iou([[0, 10]], [[5, 15]])
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    assert_close(out, [[1 / 3]], **TOL64)


@pytest.mark.parametrize("int_dtype", [torch.int32, torch.int64])
def test_torch_integer_inputs_convert_to_default_dtype(int_dtype):
    a_vals = np.array([[0, 10], [5, 15], [3, 3], [9, 4]])
    b_vals = np.array([[5, 15], [0, 2], [10, 12]])
    a = torch.tensor(a_vals, dtype=int_dtype)
    b = torch.tensor(b_vals, dtype=int_dtype)
    default = torch.get_default_dtype()
    for mode in MODES:
        out = temporal_iou(a, b, mode)
        assert isinstance(out, torch.Tensor) and out.dtype == default
        assert_close(to_numpy(out), temporal_iou_ref(a_vals, b_vals, mode), **TOL32)
        out = paired_temporal_iou(a[:3], b, mode)
        assert out.dtype == default
    iou, iop = grounding_overlap(a[:2], b[:2], torch.tensor([0, 1, 2]))
    assert iou.dtype == default and iop.dtype == default
    assert_close(to_numpy(iou), [1 / 3, 0.0], **TOL32)
    assert_close(to_numpy(iop), [0.5, 0.0], **TOL32)


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
@settings(max_examples=60, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(case=span_sets(paired=True), data=st.data())
def test_torch_half_inputs_compute_in_float32(half, case, data):
    # grid-only values so every input is exact in float16 and bfloat16
    a_vals, b_vals = case
    if not (_on_grid(a_vals) and _on_grid(b_vals)):
        a_vals = np.where(np.isnan(a_vals), a_vals, np.round(np.clip(a_vals, -5, 20) * 2) / 2)
        b_vals = np.where(np.isnan(b_vals), b_vals, np.round(np.clip(b_vals, -5, 20) * 2) / 2)
    mode = data.draw(st.sampled_from(MODES), label="mode")
    a = torch.tensor(a_vals.reshape(-1, 2), dtype=half)
    b = torch.tensor(b_vals.reshape(-1, 2), dtype=half)
    a32, b32 = a.float(), b.float()
    pairs = ((temporal_iou, temporal_iou_ref), (paired_temporal_iou, paired_temporal_iou_ref))
    for fn, ref_fn in pairs:
        out = fn(a, b, mode)
        assert isinstance(out, torch.Tensor) and out.dtype == half
        out32 = fn(a32, b32, mode)
        torch.testing.assert_close(out, out32.to(half), rtol=0, atol=0, equal_nan=True)
        assert_close(out.float().numpy(), ref_fn(a_vals, b_vals, mode), rtol=1e-2, atol=1e-3)
    offsets = torch.tensor([0, *range(1, len(a_vals) + 1)], dtype=torch.int64)
    iou, iop = grounding_overlap(a, b, offsets)
    iou32, iop32 = grounding_overlap(a32, b32, offsets)
    assert iou.dtype == half and iop.dtype == half
    torch.testing.assert_close(iou, iou32.to(half), rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(iop, iop32.to(half), rtol=0, atol=0, equal_nan=True)


def _on_grid(x: np.ndarray) -> bool:
    v = x[~np.isnan(x)]
    return bool(np.all((v * 2 == np.round(v * 2)) & (v >= -5) & (v <= 20)))


def test_torch_mixed_half_and_float32_gives_float32():
    a = torch.tensor([[0.0, 10.0]], dtype=torch.float16)
    b = torch.tensor([[5.0, 15.0]], dtype=torch.float32)
    out = temporal_iou(a, b)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, torch.tensor([[1 / 3]]))


# --------------------------------------------------------------------------
# torch specifics
# --------------------------------------------------------------------------


def _grad_inputs():
    a = torch.tensor([[0.0, 10.0], [5.0, 15.0]], requires_grad=True)
    b = torch.tensor([[5.0, 15.0], [0.0, 2.0]], requires_grad=True)
    return a, b


def test_requires_grad_inputs_are_accepted():
    a, b = _grad_inputs()
    for mode in MODES:
        assert_close(
            to_numpy(temporal_iou(a, b, mode)),
            temporal_iou_ref(a.detach(), b.detach(), mode),
            **TOL32,
        )
        assert_close(
            to_numpy(paired_temporal_iou(a, b, mode)),
            paired_temporal_iou_ref(a.detach(), b.detach(), mode),
            **TOL32,
        )
    iou, iop = grounding_overlap(a, b, torch.tensor([0, 1, 2]))
    assert_close(to_numpy(iou), [1 / 3, 0.0], **TOL32)
    assert_close(to_numpy(iop), [0.5, 0.0], **TOL32)


def test_requires_grad_inputs_give_results_without_grad():
    """The overlaps are metrics without a registered gradient, so the results
    must not claim to require grad (backward would only fail later)."""
    a, b = _grad_inputs()
    outs = [temporal_iou(a, b, mode) for mode in MODES]
    outs += [paired_temporal_iou(a, b, mode) for mode in MODES]
    outs += list(grounding_overlap(a, b, torch.tensor([0, 1, 2])))
    for out in outs:
        assert not out.requires_grad
        assert out.grad_fn is None


def test_torch_inputs_are_not_modified():
    a = torch.tensor([[0.0, 10.0], [5.0, 3.0]])
    b = torch.tensor([[5.0, 15.0], [NAN, 2.0]])
    a0, b0 = a.clone(), b.clone()
    for mode in MODES:
        temporal_iou(a, b, mode)
        paired_temporal_iou(a, b, mode)
    grounding_overlap(a, b, torch.tensor([0, 1, 2]))
    torch.testing.assert_close(a, a0, equal_nan=True)
    torch.testing.assert_close(b, b0, equal_nan=True)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

GOOD = np.array([[0.0, 1.0], [2.0, 3.0]])


def _call(fn_name, a, b):
    if fn_name == "grounding_overlap":
        n = a.shape[0] if hasattr(a, "shape") and len(a.shape) else 0
        k = b.shape[0] if hasattr(b, "shape") and len(b.shape) else 0
        offsets = np.array([0] * n + [k], dtype=np.int64)
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            offsets = torch.from_numpy(offsets)
        return grounding_overlap(a, b, offsets)
    return {"temporal_iou": temporal_iou, "paired_temporal_iou": paired_temporal_iou}[fn_name](a, b)


FN_NAMES = ["temporal_iou", "paired_temporal_iou", "grounding_overlap"]
BAD_SHAPES = [
    pytest.param(np.zeros((2, 3)), id="n-by-3"),
    pytest.param(np.zeros((2, 1)), id="n-by-1"),
    pytest.param(np.zeros(4), id="flat"),
    pytest.param(np.zeros((1, 2, 2)), id="3d"),
    pytest.param(np.float64(1.0), id="scalar"),
    pytest.param(np.zeros((0, 3)), id="empty-n-by-3"),
]


@pytest.mark.parametrize("fn_name", FN_NAMES)
@pytest.mark.parametrize("bad", BAD_SHAPES)
@pytest.mark.parametrize("which", ["a", "b"])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_wrong_shape_raises(fn_name, bad, which, kind):
    bad = np.asarray(bad)
    good = GOOD[: bad.shape[0]] if bad.ndim and fn_name == "paired_temporal_iou" else GOOD
    if kind == "torch":
        bad, good = torch.from_numpy(bad), torch.from_numpy(good)
    a, b = (bad, good) if which == "a" else (good, bad)
    with pytest.raises(ValueError, match=r"must have shape \(N, 2\)"):
        _call(fn_name, a, b)


@pytest.mark.parametrize("fn_name", FN_NAMES)
@pytest.mark.parametrize(
    "bad", [GOOD.astype(bool), GOOD.astype(np.complex128), GOOD.astype(str), GOOD.astype(object)]
)
@pytest.mark.parametrize("which", ["a", "b"])
def test_numpy_non_real_dtype_raises(fn_name, bad, which):
    a, b = (bad, GOOD) if which == "a" else (GOOD, bad)
    with pytest.raises(TypeError, match="must hold real numbers"):
        _call(fn_name, a, b)


@pytest.mark.parametrize("fn_name", FN_NAMES)
@pytest.mark.parametrize("bad_dtype", [torch.bool, torch.complex64, torch.complex128])
@pytest.mark.parametrize("which", ["a", "b"])
def test_torch_non_real_dtype_raises(fn_name, bad_dtype, which):
    good = torch.from_numpy(GOOD)
    bad = good.to(bad_dtype)
    a, b = (bad, good) if which == "a" else (good, bad)
    with pytest.raises(TypeError, match="must hold real numbers"):
        _call(fn_name, a, b)


@pytest.mark.parametrize("fn", [temporal_iou, paired_temporal_iou])
@pytest.mark.parametrize("mode", ["IOU", "dice", "", "iou ", "miou"])
def test_unknown_mode_raises(fn, mode):
    with pytest.raises(ValueError, match="mode must be one of"):
        fn(GOOD, GOOD, mode)


@pytest.mark.parametrize("fn", [temporal_iou, paired_temporal_iou])
@pytest.mark.parametrize("mode", [None, 0, 1.5, b"iou", ["iou"]])
def test_non_string_mode_raises(fn, mode):
    with pytest.raises(TypeError, match="mode must be a string"):
        fn(GOOD, GOOD, mode)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize(("n", "m"), [(2, 1), (1, 2), (0, 1), (3, 0)])
def test_paired_length_mismatch_raises(kind, n, m):
    a = make_spans(np.zeros((n, 2)), kind, "float64")
    b = make_spans(np.zeros((m, 2)), kind, "float64")
    with pytest.raises(ValueError, match="same number of spans"):
        paired_temporal_iou(a, b)


PRED2 = np.array([[0.0, 5.0], [1.0, 2.0]])
GT3 = np.array([[0.0, 10.0], [1.0, 2.0], [3.0, 4.0]])
SHAPE_MSG = r"gt_offsets must have shape \(N \+ 1,\)"
END_MSG = "must end at the number of ground-truth spans"


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize(
    ("offsets", "exc", "match"),
    [
        pytest.param(np.array([0.0, 1.0, 3.0]), TypeError, "must hold integers", id="float"),
        pytest.param(
            np.array([0.0, 1.0, 3.0], np.float32), TypeError, "must hold integers", id="f32"
        ),
        pytest.param(np.array([False, True, True]), TypeError, "must hold integers", id="bool"),
        pytest.param(np.array([0, 3]), ValueError, SHAPE_MSG, id="short"),
        pytest.param(np.array([0, 1, 2, 3]), ValueError, SHAPE_MSG, id="long"),
        pytest.param(np.array([[0, 1, 3]]), ValueError, SHAPE_MSG, id="2d"),
        pytest.param(np.array([1, 1, 3]), ValueError, "must start at 0", id="start"),
        pytest.param(np.array([0, 2, 1]), ValueError, "non-decreasing", id="decreasing"),
        pytest.param(np.array([0, -1, 3]), ValueError, "non-decreasing", id="negative"),
        pytest.param(np.array([0, 5, 3]), ValueError, "non-decreasing", id="overshoot"),
        pytest.param(np.array([0, 1, 2]), ValueError, END_MSG, id="end-low"),
        pytest.param(np.array([0, 1, 4]), ValueError, END_MSG, id="end-high"),
    ],
)
def test_bad_gt_offsets_raise(kind, offsets, exc, match):
    pred, gt = make_spans(PRED2, kind, "float64"), make_spans(GT3, kind, "float64")
    off = torch.from_numpy(offsets) if kind == "torch" else offsets
    with pytest.raises(exc, match=match):
        grounding_overlap(pred, gt, off)


def test_offsets_must_end_at_zero_without_gold():
    with pytest.raises(ValueError, match="must end at the number of ground-truth spans"):
        grounding_overlap(PRED2, np.zeros((0, 2)), np.array([0, 1, 1]))


@pytest.mark.parametrize("fn_name", FN_NAMES)
@pytest.mark.parametrize("torch_side", ["a", "b"])
def test_mixing_numpy_and_torch_raises(fn_name, torch_side):
    a, b = GOOD, GOOD
    if torch_side == "a":
        a = torch.from_numpy(GOOD)
    else:
        b = torch.from_numpy(GOOD)
    with pytest.raises(TypeError, match="must be a torch tensor"):
        _call(fn_name, a, b)


@pytest.mark.parametrize("torch_arg", ["pred", "gt", "offsets"])
def test_grounding_mixing_numpy_and_torch_raises(torch_arg):
    args = {"pred": PRED2, "gt": GT3, "offsets": np.array([0, 1, 3])}
    args[torch_arg] = torch.from_numpy(args[torch_arg])
    with pytest.raises(TypeError, match="must be a torch tensor"):
        grounding_overlap(args["pred"], args["gt"], args["offsets"])


# --------------------------------------------------------------------------
# Extreme and infinite endpoints (issue 11): exact references in Fractions,
# with the documented limit rule for +-inf.
# --------------------------------------------------------------------------

INF = math.inf
BIG = 1e308


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
def test_identical_huge_spans_have_full_overlap(kind, dtype):
    # [-1e308, 1e308] has length 2e308, which overflows; it used to score 0.
    big = 1e308 if dtype == "float64" else 3e38
    for span in ([-big, big], [0.0, big], [-big, -big / 2], [big / 2, big]):
        a = make_spans([span], kind, dtype)
        for mode in MODES:
            assert to_numpy(temporal_iou(a, a, mode))[0, 0] == 1.0, (span, mode)
            assert to_numpy(paired_temporal_iou(a, a, mode))[0] == 1.0, (span, mode)
        iou, iop = grounding_overlap(a, a, make_offsets([0, 1], kind))
        assert to_numpy(iou)[0] == 1.0 and to_numpy(iop)[0] == 1.0, span


# (a, b, iou, iop, iog, giou) under the limit rule, by hand.
INF_CASES = [
    ([-INF, INF], [-INF, INF], 1.0, 1.0, 1.0, 1.0),
    ([0.0, INF], [0.0, INF], 1.0, 1.0, 1.0, 1.0),
    ([0.0, INF], [5.0, INF], 1.0, 1.0, 1.0, 1.0),
    ([-INF, INF], [0.0, INF], 0.5, 0.5, 1.0, 0.5),
    ([0.0, INF], [-INF, INF], 0.5, 1.0, 0.5, 0.5),
    ([0.0, 1.0], [0.0, INF], 0.0, 1.0, 0.0, 0.0),
    ([0.0, 1.0], [-INF, INF], 0.0, 1.0, 0.0, 0.0),
    ([0.0, BIG], [0.0, INF], 0.0, 1.0, 0.0, 0.0),  # any finite length is 0 next to L
    ([-INF, 0.0], [0.0, INF], 0.0, 0.0, 0.0, 0.0),  # touching at 0
    ([-INF, -1.0], [1.0, INF], 0.0, 0.0, 0.0, 0.0),  # hull 2L, union 2L
    ([INF, INF], [INF, INF], 0.0, 0.0, 0.0, 0.0),  # zero-length spans at +L
    ([INF, -INF], [0.0, 1.0], 0.0, 0.0, 0.0, 0.0),  # reversed: empty; hull 1 = union
    ([-BIG, BIG], [-BIG, BIG], 1.0, 1.0, 1.0, 1.0),
    ([-BIG, BIG], [0.0, BIG], 0.5, 0.5, 1.0, 0.5),
    ([-1.7e308, 1.7e308], [-1.7e308, 0.0], 0.5, 0.5, 1.0, 0.5),
    ([0.0, BIG], [0.0, 1.0], 1e-308, 1e-308, 1.0, 1e-308),
]


@pytest.mark.parametrize(("a", "b", "iou", "iop", "iog", "giou"), INF_CASES)
def test_infinite_and_huge_endpoints_by_hand(a, b, iou, iop, iog, giou):
    want = {"iou": iou, "iop": iop, "iog": iog, "giou": giou}
    for mode in MODES:
        exact = span_overlap_exact_ref(*a, *b, mode)
        assert exact == pytest.approx(want[mode], rel=1e-12, abs=0), (mode, "reference")
        for kind in ("numpy", "torch"):
            got = to_numpy(temporal_iou(make_spans([a], kind, "float64"),
                                        make_spans([b], kind, "float64"), mode))[0, 0]
            assert got == pytest.approx(exact, rel=1e-15, abs=0), (mode, kind)
            got = to_numpy(paired_temporal_iou(make_spans([a], kind, "float64"),
                                               make_spans([b], kind, "float64"), mode))[0]
            assert got == pytest.approx(exact, rel=1e-15, abs=0), (mode, kind)


def test_iou_and_iog_agree_on_nested_infinite_spans():
    # Issue 11: IoU and IoG disagreed for infinite endpoints. b inside a: IoG 1,
    # and IoU = len(b) / len(a) in the limit, for finite and infinite b alike.
    a = np.array([[-INF, INF]])
    b = np.array([[0.0, INF], [-INF, 0.0], [1.0, 2.0], [-INF, INF]])
    np.testing.assert_array_equal(temporal_iou(a, b, "iog"), [[1.0, 1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(temporal_iou(a, b, "iou"), [[0.5, 0.5, 0.0, 1.0]])
    np.testing.assert_array_equal(temporal_iou(a, b, "iop"), [[0.5, 0.5, 0.0, 1.0]])


# A common power-of-two scale per example (near the overflow bound, or
# subnormal), grid values times it, and +-inf mixed in.
SCALES = st.sampled_from([1.0, 2.0**60, 2.0**120, 2.0**124, 2.0**126, 2.0**127, 2.0**1000,
                          2.0**1018, 2.0**1020, 2.0**1021, 2.0**1022, 2.0**-1000, 2.0**-1060])


@st.composite
def extreme_spans(draw, n: int, scale: float) -> np.ndarray:
    value = st.one_of(GRID.map(lambda v: v * scale), GRID.map(lambda v: v * scale),
                      st.sampled_from([INF, -INF, 1.7976931348623157e308, -1.7976931348623157e308]))
    rows = []
    for _ in range(n):
        s, e = draw(value), draw(value)
        if draw(st.integers(0, 3)) > 0:
            s, e = min(s, e), max(s, e)
        rows.append([s, e])
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@SETTINGS
@given(data=st.data(), scale=SCALES, n=st.integers(1, 6), m=st.integers(1, 6))
def test_extreme_endpoints_match_exact_reference(kind, dtype, data, scale, n, m):
    a_vals = data.draw(extreme_spans(n, scale), label="a")
    b_vals = data.draw(extreme_spans(m, scale), label="b")
    # A copy of a's rows in b makes identical pairs common.
    b_vals[0] = a_vals[data.draw(st.integers(0, n - 1), label="copy")]
    with np.errstate(over="ignore"):
        a_seen, b_seen = round_to(a_vals, dtype), round_to(b_vals, dtype)
    mode = data.draw(st.sampled_from(MODES), label="mode")
    with np.errstate(over="ignore"):
        a, b = make_spans(a_vals, kind, dtype), make_spans(b_vals, kind, dtype)
    out = check_output(temporal_iou(a, b, mode), kind, dtype, (n, m))
    assert_close(out, temporal_iou_exact_ref(a_seen, b_seen, mode), **tol(dtype))
    k = min(n, m)
    out = to_numpy(paired_temporal_iou(a[:k], b[:k], mode))
    assert_close(out, np.diag(temporal_iou_exact_ref(a_seen[:k], b_seen[:k], mode)), **tol(dtype))
    iou, iop = grounding_overlap(a, b, make_offsets([0] * n + [m], kind))
    exp_iou, exp_iop = grounding_overlap_exact_ref(a_seen, b_seen, [0] * n + [m])
    assert_close(to_numpy(iou), exp_iou, **tol(dtype))
    assert_close(to_numpy(iop), exp_iop, **tol(dtype))


@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@SETTINGS
@given(data=st.data(), case=span_sets(paired=False, max_n=6),
       k=st.sampled_from([0, 500, 900, 1000, 1010]))
def test_power_of_two_scaling_keeps_every_ratio(kind, dtype, data, case, k):
    # Scaling every endpoint by 2^k is exact, so no mode may change: this
    # covers the rows that take the extended path next to ones that do not.
    a_vals, b_vals = round_to(case[0], dtype), round_to(case[1], dtype)
    if dtype == "float32":
        k = k // 10
    mode = data.draw(st.sampled_from(MODES), label="mode")
    base = to_numpy(temporal_iou(make_spans(a_vals, kind, dtype), make_spans(b_vals, kind, dtype),
                                 mode))
    sa, sb = make_spans(a_vals * 2.0**k, kind, dtype), make_spans(b_vals * 2.0**k, kind, dtype)
    np.testing.assert_array_equal(to_numpy(temporal_iou(sa, sb, mode)), base)


def test_grounding_with_infinite_and_huge_endpoints_by_hand():
    pred = np.array([[-BIG, BIG], [0.0, INF], [INF, INF], [5.0, 5.0], [-INF, INF]])
    gt = np.array([[-BIG, BIG], [0.0, INF], [1.0, INF], [0.0, INF], [-INF, 0.0], [3.0, 4.0]])
    iou, iop = grounding_overlap(pred, gt, np.array([0, 1, 3, 4, 5, 6]))
    # [0, inf] vs [1, inf]: inter L - 1, hull L, IoU and IoP -> 1.
    # [inf, inf] is a zero-length prediction at L, inside [0, L]: IoP 1.
    # [-inf, inf] vs [3, 4]: IoU 1 / 2L -> 0, IoP -> 0.
    np.testing.assert_array_equal(iou, [1.0, 1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(iop, [1.0, 1.0, 1.0, 0.0, 0.0])


# --------------------------------------------------------------------------
# Devices (CUDA runs only with a CUDA build and a visible GPU)
# --------------------------------------------------------------------------


def _device_tensor(values, dtype: str, device: str, layout: str = "contiguous"):
    return make_spans(values, "torch", dtype, layout).to(device)


@pytest.mark.parametrize("device", DEVICES)
class TestDevices:
    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    @DEVICE_SETTINGS
    @given(data=st.data(), case=span_sets(paired=False, max_n=12))
    def test_temporal_iou(self, device, dtype, data, case):
        a_vals, b_vals = case
        mode = data.draw(st.sampled_from(MODES), label="mode")
        layout = data.draw(st.sampled_from(TORCH_LAYOUTS), label="layout")
        a = _device_tensor(a_vals, dtype, device, layout)
        b = _device_tensor(b_vals, dtype, device, layout)
        out = temporal_iou(a, b, mode)
        assert isinstance(out, torch.Tensor) and out.device == a.device
        assert out.dtype == TORCH_DTYPES[dtype] and tuple(out.shape) == (len(a_vals), len(b_vals))
        expected = temporal_iou_ref(round_to(a_vals, dtype), round_to(b_vals, dtype), mode)
        assert_close(to_numpy(out.cpu()), expected, **tol(dtype))
        cpu = temporal_iou(a.cpu(), b.cpu(), mode)
        assert_close(to_numpy(out.cpu()), to_numpy(cpu), **tol(dtype))

    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    @DEVICE_SETTINGS
    @given(data=st.data(), case=span_sets(paired=True, max_n=12))
    def test_paired_temporal_iou(self, device, dtype, data, case):
        a_vals, b_vals = case
        mode = data.draw(st.sampled_from(MODES), label="mode")
        layout = data.draw(st.sampled_from(TORCH_LAYOUTS), label="layout")
        a = _device_tensor(a_vals, dtype, device, layout)
        b = _device_tensor(b_vals, dtype, device)
        out = paired_temporal_iou(a, b, mode)
        assert isinstance(out, torch.Tensor) and out.device == a.device
        assert out.dtype == TORCH_DTYPES[dtype] and tuple(out.shape) == (len(a_vals),)
        expected = paired_temporal_iou_ref(round_to(a_vals, dtype), round_to(b_vals, dtype), mode)
        assert_close(to_numpy(out.cpu()), expected, **tol(dtype))

    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    @DEVICE_SETTINGS
    @given(data=st.data(), case=grounding_sets(max_n=10))
    def test_grounding_overlap(self, device, dtype, data, case):
        pred_vals, gt_vals, offsets = case
        layout = data.draw(st.sampled_from(TORCH_LAYOUTS), label="layout")
        pred = _device_tensor(pred_vals, dtype, device, layout)
        gt = _device_tensor(gt_vals, dtype, device, layout)
        off = torch.from_numpy(offsets).to(device)
        iou, iop = grounding_overlap(pred, gt, off)
        for out in (iou, iop):
            assert isinstance(out, torch.Tensor) and out.device == pred.device
            assert out.dtype == TORCH_DTYPES[dtype] and tuple(out.shape) == (len(pred_vals),)
        exp_iou, exp_iop = grounding_overlap_ref(
            round_to(pred_vals, dtype), round_to(gt_vals, dtype), offsets
        )
        if dtype == "float64":
            np.testing.assert_array_equal(to_numpy(iou.cpu()), exp_iou)
            np.testing.assert_array_equal(to_numpy(iop.cpu()), exp_iop)
        else:
            assert_close(to_numpy(iou.cpu()), exp_iou, **TOL32)
            assert_close(to_numpy(iop.cpu()), exp_iop, **TOL32)

    @pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
    def test_half_precision(self, device, half):
        a = torch.tensor([[0.0, 10.0], [5.0, 15.0], [3.0, 3.0]], dtype=half, device=device)
        b = torch.tensor([[5.0, 15.0], [0.0, 2.0], [2.0, 6.0]], dtype=half, device=device)
        for mode in MODES:
            out = temporal_iou(a, b, mode)
            assert out.dtype == half and out.device == a.device
            torch.testing.assert_close(
                out.cpu(), temporal_iou(a.float(), b.float(), mode).to(half).cpu(), rtol=0, atol=0
            )
            expected = temporal_iou_ref(a.float().cpu(), b.float().cpu(), mode)
            assert_close(out.float().cpu().numpy(), expected, rtol=1e-2, atol=1e-3)
        iou, iop = grounding_overlap(a, b, torch.tensor([0, 1, 2, 3], device=device))
        assert iou.dtype == half and iou.device == a.device
        assert_close(iou.float().cpu().numpy(), [1 / 3, 0.0, 0.0], rtol=1e-2, atol=1e-3)
        assert_close(iop.float().cpu().numpy(), [0.5, 0.0, 1.0], rtol=1e-2, atol=1e-3)

    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    @DEVICE_SETTINGS
    @given(data=st.data(), scale=SCALES, n=st.integers(1, 6), m=st.integers(1, 6))
    def test_extreme_endpoints_match_cpu(self, device, dtype, data, scale, n, m):
        with np.errstate(over="ignore"):
            a = make_spans(data.draw(extreme_spans(n, scale)), "torch", dtype)
            b = make_spans(data.draw(extreme_spans(m, scale)), "torch", dtype)
        for mode in MODES:
            np.testing.assert_array_equal(to_numpy(temporal_iou(a.to(device), b.to(device), mode)),
                                          to_numpy(temporal_iou(a, b, mode)))
        off = torch.tensor([0] * n + [m])
        got = grounding_overlap(a.to(device), b.to(device), off.to(device))
        for x, y in zip(got, grounding_overlap(a, b, off)):
            np.testing.assert_array_equal(to_numpy(x), to_numpy(y))

    def test_empty(self, device):
        a = torch.zeros((0, 2), device=device)
        b = torch.zeros((3, 2), device=device)
        out = temporal_iou(a, b)
        assert out.shape == (0, 3) and out.device == a.device
        out = temporal_iou(b, a, "giou")
        assert out.shape == (3, 0) and out.device == a.device
        iou, iop = grounding_overlap(a, a, torch.zeros(1, dtype=torch.int64, device=device))
        assert iou.shape == (0,) and iou.device == a.device


@pytest.mark.cuda
@pytest.mark.parametrize("fn_name", FN_NAMES)
@pytest.mark.parametrize("cuda_side", ["a", "b"])
def test_inputs_on_different_devices_raise(fn_name, cuda_side):
    a, b = torch.from_numpy(GOOD), torch.from_numpy(GOOD)
    if cuda_side == "a":
        a = a.cuda()
    else:
        b = b.cuda()
    with pytest.raises(ValueError, match="same device"):
        _call(fn_name, a, b)


# --------------------------------------------------------------------------
# out=: a preallocated result, written once and returned
# --------------------------------------------------------------------------


def _empty_like_result(kind: str, dtype: str, shape: tuple):
    if kind == "numpy":
        return np.full(shape, -7.0, dtype=NP_DTYPES[dtype])  # poisoned: every cell is written
    return torch.full(shape, -7.0, dtype=TORCH_DTYPES[dtype])


@pytest.mark.parametrize("paired", [False, True])
@pytest.mark.parametrize(("kind", "dtype"), KIND_DTYPES)
@SETTINGS
@given(data=st.data(), case=span_sets(paired=True))
def test_out_matches_reference_and_is_returned(paired, kind, dtype, data, case):
    a_vals, b_vals = case
    a, b, mode = draw_inputs(data, a_vals, b_vals, kind, dtype)
    n = len(a_vals)
    shape = (n,) if paired else (n, len(b_vals))
    out = _empty_like_result(kind, dtype, shape)
    fn = paired_temporal_iou if paired else temporal_iou
    result = fn(a, b, mode, out=out)
    assert result is out
    ref = paired_temporal_iou_ref if paired else temporal_iou_ref
    expected = ref(round_to(a_vals, dtype), round_to(b_vals, dtype), mode)
    assert_close(to_numpy(out), expected, **tol(dtype))
    # Bit for bit the result without out=.
    np.testing.assert_array_equal(to_numpy(out), to_numpy(fn(a, b, mode)))


def test_out_torch_half_is_cast_once_into_out():
    a = torch.tensor([[0.0, 2.0], [1.0, 3.0]], dtype=torch.float16)
    b = torch.tensor([[1.0, 2.0]], dtype=torch.float16)
    out = torch.full((2, 1), -7.0, dtype=torch.float16)
    assert temporal_iou(a, b, out=out) is out
    # Hand values: [0,2] vs [1,2] -> 1/2; [1,3] vs [1,2] -> 1/2.
    assert out.tolist() == [[0.5], [0.5]]


def test_out_empty_shapes():
    a = np.zeros((0, 2))
    b = np.array([[0.0, 1.0]])
    out = np.empty((0, 1))
    assert temporal_iou(a, b, out=out) is out
    t_out = torch.empty((0, 1), dtype=torch.float64)
    assert temporal_iou(torch.as_tensor(a), torch.as_tensor(b), out=t_out) is t_out


@pytest.mark.parametrize("paired", [False, True])
def test_out_torch_compile_fullgraph(paired):
    fn = paired_temporal_iou if paired else temporal_iou

    def step(a, b, out):
        return fn(a, b, "giou", out=out) * 2  # the written out feeds later ops

    a = torch.tensor([[0.0, 2.0], [1.0, 4.0], [5.0, 6.0]], dtype=torch.float64)
    b = torch.tensor([[1.0, 3.0], [0.0, 1.0], [2.0, 5.0]], dtype=torch.float64)
    shape = (3,) if paired else (3, 3)
    out = torch.zeros(shape, dtype=torch.float64)
    got = torch.compile(step, fullgraph=True)(a, b, out)
    ref = paired_temporal_iou_ref if paired else temporal_iou_ref
    expected = ref(a.numpy(), b.numpy(), "giou")
    assert_close(out.numpy(), expected, **TOL64)
    assert_close(got.numpy(), 2 * expected, **TOL64)


def test_out_ops_pass_opcheck():
    a = torch.tensor([[0.0, 2.0], [1.0, 4.0]], dtype=torch.float64)
    b = torch.tensor([[1.0, 3.0], [0.5, 1.0]], dtype=torch.float64)
    op = torch.ops.fastvqa.temporal_iou.out
    torch.library.opcheck(op, (a, b, "iou", False, torch.empty(2, 2, dtype=torch.float64)))
    torch.library.opcheck(op, (a, b, "iop", True, torch.empty(2, dtype=torch.float64)))
    # The functional overload stays pure: it declares no mutated argument.
    assert not any(arg.alias_info for arg in torch.ops.fastvqa.temporal_iou.default._schema.arguments)


def _np_readonly(shape):
    arr = np.empty(shape)
    arr.flags.writeable = False
    return arr


NUMPY_BAD_OUTS = [
    pytest.param(lambda: np.empty((3, 2)), ValueError, r"out must have shape \(2, 3\), got \(3, 2\)",
                 id="shape"),
    pytest.param(lambda: np.empty((2, 3), np.float32), TypeError, "result dtype float64, got float32",
                 id="dtype"),
    pytest.param(lambda: np.empty((2, 3), ">f8"), TypeError, "result dtype float64", id="byteorder"),
    pytest.param(lambda: np.empty((3, 2)).T, ValueError, "out must be C-contiguous", id="strides"),
    pytest.param(lambda: _np_readonly((2, 3)), ValueError, "out must be writeable", id="readonly"),
    pytest.param(lambda: torch.empty(2, 3, dtype=torch.float64), TypeError,
                 "out must be a NumPy array like the inputs, got torch.Tensor", id="kind"),
    pytest.param(lambda: [[0.0] * 3] * 2, TypeError, "out must be a NumPy array", id="list"),
]


@pytest.mark.parametrize(("make", "exc", "match"), NUMPY_BAD_OUTS)
def test_out_numpy_bad_raises(make, exc, match):
    a = np.array([[0.0, 1.0], [2.0, 3.0]])
    b = np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(exc, match=match):
        temporal_iou(a, b, out=make())


TORCH_BAD_OUTS = [
    pytest.param(lambda: torch.empty(3, 2, dtype=torch.float64), ValueError,
                 r"out must have shape \(2, 3\), got \(3, 2\)", id="shape"),
    pytest.param(lambda: torch.empty(2, 3), TypeError,
                 "result dtype torch.float64, got torch.float32", id="dtype"),
    pytest.param(lambda: torch.empty(3, 2, dtype=torch.float64).T, ValueError,
                 "out must be contiguous", id="strides"),
    pytest.param(lambda: torch.empty(2, 3, dtype=torch.float64, device="meta"), ValueError,
                 "out must be on the inputs' device cpu, got meta", id="device"),
    pytest.param(lambda: torch.empty(2, 3, dtype=torch.float64, requires_grad=True), ValueError,
                 "out must not require grad", id="grad"),
    pytest.param(lambda: np.empty((2, 3)), TypeError,
                 "out must be a torch tensor like the inputs, got numpy.ndarray", id="kind"),
]


@pytest.mark.parametrize(("make", "exc", "match"), TORCH_BAD_OUTS)
def test_out_torch_bad_raises(make, exc, match):
    a = torch.tensor([[0.0, 1.0], [2.0, 3.0]], dtype=torch.float64)
    b = torch.tensor([[0.0, 1.0], [1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    with pytest.raises(exc, match=match):
        temporal_iou(a, b, out=make())


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("which", ["a", "b"])
def test_out_overlapping_an_input_raises_and_leaves_it(kind, which):
    lib = np if kind == "numpy" else torch
    buf = lib.zeros(16, dtype=lib.float64)
    buf[:8] = lib.arange(8, dtype=lib.float64) if kind == "numpy" else torch.arange(8.0)
    a, b = buf[0:4].reshape(2, 2), buf[4:8].reshape(2, 2)
    before = to_numpy(buf).copy()
    out = buf[2:4] if which == "a" else buf[6:8]  # overlaps a's second / b's second row
    with pytest.raises(ValueError, match=f"out must not overlap the input {which}"):
        paired_temporal_iou(a, b, out=out)
    np.testing.assert_array_equal(to_numpy(buf), before)
    # A disjoint slice of the same buffer is fine: [0,1] v [4,5] and [2,3] v [6,7] -> 0.
    disjoint = buf[8:10]
    assert paired_temporal_iou(a, b, out=disjoint) is disjoint
    assert to_numpy(disjoint).tolist() == [0.0, 0.0]


def test_out_bad_inputs_still_name_the_input():
    with pytest.raises(ValueError, match="b must have shape"):
        temporal_iou(np.zeros((2, 2)), np.zeros((2, 3)), out=np.empty((2, 2)))
    with pytest.raises(ValueError, match="same number of spans"):
        paired_temporal_iou(np.zeros((2, 2)), np.zeros((3, 2)), out=np.empty(2))
    with pytest.raises(ValueError, match="mode must be one of"):
        temporal_iou(np.zeros((2, 2)), np.zeros((2, 2)), "bad", out=np.empty((2, 2)))


# --------------------------------------------------------------------------
# Large outputs: written with streaming stores (csrc/fastvqa/common/stream_store.h)
# --------------------------------------------------------------------------


def _numpy_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU in the inputs' dtype, one IEEE operation at a time, in the order of
    temporal_iou_math.h's formulas (lengths, intersection, union, guarded
    ratio): the same bits when both round every operation."""
    zero = a.dtype.type(0)
    len_a = np.maximum(a[:, 1] - a[:, 0], zero)[:, None]
    len_b = np.maximum(b[:, 1] - b[:, 0], zero)[None, :]
    inter = np.maximum(np.minimum(a[:, None, 1], b[None, :, 1])
                       - np.maximum(a[:, None, 0], b[None, :, 0]), zero)
    union = len_a + len_b - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > zero, inter / np.where(union > zero, union, 1), zero)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("offset", [0, 1])  # 1: an out= whose rows start off 16-byte alignment
def test_large_outputs_are_streamed_to_the_same_bits(dtype, offset):
    # 8 MiB and more is written past the caches, a block at a time; every
    # value must still equal the plain formula, including rows whose length
    # is not a multiple of the block or of the vector width.
    rng = np.random.default_rng(5)
    n, m = (1100, 2003) if dtype == "float32" else (700, 1601)
    assert n * m * np.dtype(dtype).itemsize >= 8 << 20
    start_a, start_b = rng.uniform(0, 90, n), rng.uniform(0, 90, m)
    a = np.stack([start_a, start_a + rng.uniform(0, 10, n)], 1).astype(dtype)
    b = np.stack([start_b, start_b + rng.uniform(0, 10, m)], 1).astype(dtype)
    a[::97, 1] = a[::97, 0]  # zero-length spans: union 0 against themselves' kind
    expected = _numpy_iou(a, b)
    assert 0.05 < np.mean(expected > 0) < 0.95
    np.testing.assert_array_equal(temporal_iou(a, b), expected)
    out = np.full(n * m + offset, -7.0, dtype)[offset:].reshape(n, m)
    assert temporal_iou(a, b, out=out) is out
    np.testing.assert_array_equal(out, expected)
    for mode in ("iop", "iog", "giou"):  # rows of a small (not streamed) call agree
        big = temporal_iou(a, b, mode)
        np.testing.assert_array_equal(big[5:9], temporal_iou(a[5:9], b, mode))
