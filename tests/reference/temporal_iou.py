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
