# SPDX-License-Identifier: Apache-2.0
"""Plain-Python reference for ``fastvqa.ops.nms_1d``, written from its
specification: the greedy loop (hard) and mmcv's soft-NMS loop (linear,
gaussian), one group at a time, with explicit per-operation arithmetic.

By default every value is a float64 Python float. ``dtype=np.float32``
mirrors a float32 computation operation by operation (each intermediate is
rounded to float32), so that threshold decisions match a float32 kernel
exactly; ``exp`` can be replaced by the function the kernel calls.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from tests.reference.temporal_iou import span_overlap_exact_ref


def special_endpoint_bound(f=float) -> float:
    """Endpoints at least this large in magnitude (2**124 in float32, 2**1020
    in float64), and infinite ones, are special: the textbook formula could
    overflow, so pairs with one take the exact rule of temporal_iou's
    extended path."""
    return 2.0**124 if f is np.float32 else 2.0**1020


def span_iou(a0, a1, b0, b1, f=float):
    """Temporal IoU in arithmetic type ``f`` (NaN if any endpoint is): the
    textbook formula, or, for a pair with a special endpoint, the exact value
    (infinite lengths compared as limits) rounded to ``f``."""
    a0, a1, b0, b1 = f(a0), f(a1), f(b0), f(b1)
    if any(math.isnan(float(x)) for x in (a0, a1, b0, b1)):
        return f(math.nan)
    if any(abs(float(x)) >= special_endpoint_bound(f) for x in (a0, a1, b0, b1)):
        return f(span_overlap_exact_ref(float(a0), float(a1), float(b0), float(b1), "iou"))
    zero = f(0.0)
    len_a = max(a1 - a0, zero)
    len_b = max(b1 - b0, zero)
    inter = max(min(a1, b1) - max(a0, b0), zero)
    union = len_a + len_b - inter
    return inter / union if union > zero else zero


def _num_key(x: float) -> tuple:
    """Ascending order with NaN last (all NaNs equal)."""
    return (1, 0.0) if math.isnan(x) else (0, x)


def rank_key(score: float, start: float, end: float, index: int, ties: str = "start") -> tuple:
    """Higher score first (NaN last); equal scores by ``ties``: ``"start"``
    smaller start, smaller end, smaller index; ``"stable"`` smaller index
    (input order)."""
    s = (1, 0.0) if math.isnan(score) else (0, -score)
    if ties == "stable":
        return (s, index)
    if ties != "start":
        raise ValueError(f"unknown ties rule {ties!r}")
    return (s, _num_key(start), _num_key(end), index)


def nms_1d_ref(
    spans,
    scores,
    iou_threshold: float,
    method: str = "hard",
    sigma: float = 0.5,
    offsets=None,
    score_threshold: float = -math.inf,
    dtype=np.float64,
    exp: Optional[Callable[[float], float]] = None,
    ties: str = "start",
):
    """Returns ``(keep, keep_offsets, kept_scores)`` as NumPy arrays (the scores
    as float64 values of the ``dtype`` computation)."""
    f = float if np.dtype(dtype) == np.float64 else np.dtype(dtype).type
    exp = exp or math.exp
    sp = np.asarray(spans, dtype=dtype).reshape(-1, 2)
    sc = np.asarray(scores, dtype=dtype).reshape(-1)
    n = sp.shape[0]
    off = [0, n] if offsets is None else [int(o) for o in np.asarray(offsets).reshape(-1)]
    keep: list[int] = []
    kept_scores: list[float] = []
    keep_offsets = [0]

    def alive(s) -> bool:
        return not math.isnan(float(s)) and not float(s) < score_threshold

    with np.errstate(all="ignore"):
        for g in range(len(off) - 1):
            members = list(range(off[g], off[g + 1]))
            start = {k: f(sp[k, 0]) for k in members}
            end = {k: f(sp[k, 1]) for k in members}
            if method == "hard":
                order = sorted(
                    members,
                    key=lambda k: rank_key(float(sc[k]), float(start[k]), float(end[k]), k, ties),
                )
                kept_here: list[int] = []
                for k in order:
                    if not alive(sc[k]):
                        continue
                    if any(
                        float(span_iou(start[q], end[q], start[k], end[k], f)) > iou_threshold
                        for q in kept_here
                    ):
                        continue
                    kept_here.append(k)
                    keep.append(k)
                    kept_scores.append(float(f(sc[k])))
            else:
                cur = {k: f(sc[k]) for k in members if alive(sc[k])}
                while cur:
                    sel = min(
                        cur,
                        key=lambda k: rank_key(float(cur[k]), float(start[k]), float(end[k]), k,
                                           ties),
                    )
                    keep.append(sel)
                    kept_scores.append(float(cur.pop(sel)))
                    for k in list(cur):
                        iou = span_iou(start[sel], end[sel], start[k], end[k], f)
                        if method == "linear":
                            w = f(1.0) - iou if float(iou) > iou_threshold else f(1.0)
                        elif math.isnan(float(iou)):
                            w = f(1.0)
                        else:
                            w = f(exp(-(iou * iou) / f(sigma)))
                        cur[k] = cur[k] * w
                        if not alive(cur[k]):
                            del cur[k]
            keep_offsets.append(len(keep))
    return (
        np.array(keep, dtype=np.int64),
        np.array(keep_offsets, dtype=np.int64),
        np.array(kept_scores, dtype=np.float64),
    )
