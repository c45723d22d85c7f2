# SPDX-License-Identifier: Apache-2.0
"""Plain-Python float64 references for ``fastvqa.ops`` temporal overlaps.

Written from the specification (see ``fastvqa.ops.temporal_iou``'s docs and the
official NExT-GQA evaluator), not from the library's kernels: explicit loops
over Python floats, so every rounding step is the obvious one.

Spans are ``[start, end]``; every input is anything ``np.asarray`` accepts with
shape ``(N, 2)`` (values are read as float64 Python floats).
"""

from __future__ import annotations

import math

import numpy as np

MODES = ("iou", "iop", "iog", "giou")


def _rows(x) -> list[tuple[float, float]]:
    arr = np.asarray(x, dtype=np.float64)
    if arr.size == 0:
        return []
    arr = arr.reshape(-1, 2)
    return [(float(s), float(e)) for s, e in arr.tolist()]


def span_overlap_ref(a0: float, a1: float, b0: float, b1: float, mode: str) -> float:
    """Overlap of one span ``a = [a0, a1]`` with one span ``b = [b0, b1]``."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    if math.isnan(a0) or math.isnan(a1) or math.isnan(b0) or math.isnan(b1):
        return math.nan
    len_a = max(a1 - a0, 0.0)
    len_b = max(b1 - b0, 0.0)
    inter = max(min(a1, b1) - max(a0, b0), 0.0)
    union = len_a + len_b - inter
    iou = inter / union if union > 0.0 else 0.0
    if mode == "iou":
        return iou
    if mode == "iop":
        return inter / len_a if len_a > 0.0 else 0.0
    if mode == "iog":
        return inter / len_b if len_b > 0.0 else 0.0
    # giou: the hull comes from the raw endpoints (reversed spans included).
    hull = max(a1, b1) - min(a0, b0)
    if hull <= 0.0:
        return iou
    return iou - (hull - union) / hull


def temporal_iou_ref(a, b, mode: str = "iou") -> np.ndarray:
    """``(N, M)`` float64: ``out[i, j] = overlap(a[i], b[j])``."""
    ra, rb = _rows(a), _rows(b)
    out = np.zeros((len(ra), len(rb)), dtype=np.float64)
    for i, (a0, a1) in enumerate(ra):
        for j, (b0, b1) in enumerate(rb):
            out[i, j] = span_overlap_ref(a0, a1, b0, b1, mode)
    return out


def paired_temporal_iou_ref(a, b, mode: str = "iou") -> np.ndarray:
    """``(N,)`` float64: ``out[i] = overlap(a[i], b[i])``."""
    ra, rb = _rows(a), _rows(b)
    if len(ra) != len(rb):
        raise ValueError("a and b must have the same number of spans")
    out = np.zeros(len(ra), dtype=np.float64)
    for i, ((a0, a1), (b0, b1)) in enumerate(zip(ra, rb)):
        out[i] = span_overlap_ref(a0, a1, b0, b1, mode)
    return out


def nextgqa_pair_ref(ps: float, pe: float, gs: float, ge: float) -> tuple[float, float]:
    """(IoU, IoP) of prediction ``[ps, pe]`` against one gold span ``[gs, ge]``,
    as the official NExT-GQA evaluator computes them (signed, unclamped)."""
    if ps == pe:
        return 0.0, (1.0 if gs <= ps <= ge else 0.0)
    inter = min(pe, ge) - max(ps, gs)
    hull = max(pe, ge) - min(ps, gs)
    iou = inter / hull if hull > 0.0 else 0.0
    iop = inter / (pe - ps) if pe > ps else 0.0
    return iou, iop


def grounding_overlap_ref(pred, gt, offsets) -> tuple[np.ndarray, np.ndarray]:
    """``(iou (N,), iop (N,))`` float64: per-prediction max over its gold spans,
    each starting at 0; NaN when the prediction or any of its gold spans has a NaN."""
    rp, rg = _rows(pred), _rows(gt)
    offs = [int(o) for o in np.asarray(offsets).reshape(-1).tolist()]
    if len(offs) != len(rp) + 1:
        raise ValueError("offsets must have N + 1 entries")
    n = len(rp)
    iou_out = np.zeros(n, dtype=np.float64)
    iop_out = np.zeros(n, dtype=np.float64)
    for i, (ps, pe) in enumerate(rp):
        row = rg[offs[i] : offs[i + 1]]
        has_nan = math.isnan(ps) or math.isnan(pe)
        for gs, ge in row:
            if math.isnan(gs) or math.isnan(ge):
                has_nan = True
        if has_nan:
            iou_out[i] = math.nan
            iop_out[i] = math.nan
            continue
        best_iou = 0.0
        best_iop = 0.0
        for gs, ge in row:
            iou, iop = nextgqa_pair_ref(ps, pe, gs, ge)
            if iou > best_iou:
                best_iou = iou
            if iop > best_iop:
                best_iop = iop
        iou_out[i] = best_iou
        iop_out[i] = best_iop
    return iou_out, iop_out


# --------------------------------------------------------------------------
# Exact references for extreme and infinite endpoints
# --------------------------------------------------------------------------
# The documented rule: an infinite endpoint is the limit of one huge value
# L -> +inf (+inf is L, -inf is -L, the same L for the whole pair). Every
# quantity is then k * L + v; it is kept here as the tuple (k, v) with v an
# exact Fraction, so nothing overflows or rounds, and Python's tuple order is
# the lexicographic order of the limit. A ratio is its limit as L -> inf.

from fractions import Fraction  # noqa: E402

_ZERO = (0, Fraction(0))


def _ext(x: float) -> tuple[int, Fraction]:
    if math.isinf(x):
        return (1 if x > 0 else -1, Fraction(0))
    return (0, Fraction(x))


def _sub(x, y):
    return (x[0] - y[0], x[1] - y[1])


def _add(x, y):
    return (x[0] + y[0], x[1] + y[1])


def _limit(x, den) -> float:
    """lim x / den as L -> inf, for den > 0."""
    if den[0] != 0:
        return float(Fraction(x[0], den[0]))
    if x[0] != 0:
        return math.inf if x[0] > 0 else -math.inf
    r = x[1] / den[1]
    try:
        return float(r)
    except OverflowError:  # a signed NExT-GQA ratio beyond DBL_MAX
        return math.inf if r > 0 else -math.inf


def _ratio_or_zero(x, den) -> float:
    return _limit(x, den) if den > _ZERO else 0.0


def span_overlap_exact_ref(a0: float, a1: float, b0: float, b1: float, mode: str) -> float:
    """``span_overlap_ref`` in exact arithmetic, with the infinite-endpoint rule."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    if math.isnan(a0) or math.isnan(a1) or math.isnan(b0) or math.isnan(b1):
        return math.nan
    A0, A1, B0, B1 = _ext(a0), _ext(a1), _ext(b0), _ext(b1)
    len_a = max(_sub(A1, A0), _ZERO)
    len_b = max(_sub(B1, B0), _ZERO)
    inter = max(_sub(min(A1, B1), max(A0, B0)), _ZERO)
    if mode == "iop":
        return _ratio_or_zero(inter, len_a)
    if mode == "iog":
        return _ratio_or_zero(inter, len_b)
    union = _sub(_add(len_a, len_b), inter)
    iou = _ratio_or_zero(inter, union)
    if mode == "iou":
        return iou
    hull = _sub(max(A1, B1), min(A0, B0))
    if not hull > _ZERO:
        return iou
    return iou - _limit(_sub(hull, union), hull)


def temporal_iou_exact_ref(a, b, mode: str = "iou") -> np.ndarray:
    ra, rb = _rows(a), _rows(b)
    out = np.zeros((len(ra), len(rb)), dtype=np.float64)
    for i, (a0, a1) in enumerate(ra):
        for j, (b0, b1) in enumerate(rb):
            out[i, j] = span_overlap_exact_ref(a0, a1, b0, b1, mode)
    return out


def nextgqa_pair_exact_ref(ps: float, pe: float, gs: float, ge: float) -> tuple[float, float]:
    """``nextgqa_pair_ref`` in exact arithmetic, with the infinite-endpoint rule."""
    if ps == pe:
        return 0.0, (1.0 if gs <= ps <= ge else 0.0)
    P0, P1, G0, G1 = _ext(ps), _ext(pe), _ext(gs), _ext(ge)
    inter = _sub(min(P1, G1), max(P0, G0))
    hull = _sub(max(P1, G1), min(P0, G0))
    iou = _limit(inter, hull) if hull > _ZERO else 0.0
    iop = _limit(inter, _sub(P1, P0)) if P1 > P0 else 0.0
    return iou, iop


def grounding_overlap_exact_ref(pred, gt, offsets) -> tuple[np.ndarray, np.ndarray]:
    rp, rg = _rows(pred), _rows(gt)
    offs = [int(o) for o in np.asarray(offsets).reshape(-1).tolist()]
    n = len(rp)
    iou_out = np.zeros(n, dtype=np.float64)
    iop_out = np.zeros(n, dtype=np.float64)
    for i, (ps, pe) in enumerate(rp):
        row = rg[offs[i] : offs[i + 1]]
        if any(math.isnan(x) for x in (ps, pe, *(v for g in row for v in g))):
            iou_out[i] = iop_out[i] = math.nan
            continue
        best_iou = best_iop = 0.0
        for gs, ge in row:
            iou, iop = nextgqa_pair_exact_ref(ps, pe, gs, ge)
            best_iou = iou if iou > best_iou else best_iou
            best_iop = iop if iop > best_iop else best_iop
        iou_out[i], iop_out[i] = best_iou, best_iop
    return iou_out, iop_out
