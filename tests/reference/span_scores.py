# SPDX-License-Identifier: Apache-2.0
"""Plain-Python references for ``fastvqa.ops.span_scores`` and ``top_spans``.

Written from the documented contract only (not from the kernels): every span
``[i, j]`` (inclusive) of every row is enumerated and its elements summed one
by one in float64 (so NaN and infinities behave as IEEE addition makes them):

* valid when ``min_len <= n <= max_len`` (``n = j - i + 1``) and ``j < L``;
* ``sum`` = S, ``mean`` = S / n, ``contrast`` = S / n - S_out / (L - n) with
  S_out the sum of the row's other valid steps, and S / n when ``L == n``;
* the band is ``[B, T, max_len]`` with span ``[i, i + d]`` at ``[b, i, d]``,
  ``-inf`` where invalid;
* top spans: valid, non-NaN spans ordered by higher score (in the output
  dtype), then smaller start, then smaller end; greedy NMS keeps a span
  unless its IoU (inclusive index spans) with a kept one exceeds the threshold.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np


def _rows(x) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor
        x = x.detach().to("cpu")
        x = x.double() if x.dtype.is_floating_point else x.double()
        x = x.numpy()
    return np.array(x, dtype=np.float64, copy=True)


def _lengths(lengths, B: int, T: int) -> list[int]:
    if lengths is None:
        return [T] * B
    if hasattr(lengths, "detach"):
        lengths = lengths.detach().to("cpu").numpy()
    return [int(v) for v in np.asarray(lengths).reshape(-1)]


def _plain_sum(values) -> float:
    total = 0.0
    for v in values:
        total += float(v)
    return total


def span_value(row, i: int, j: int, length: int, reduce: str) -> float:
    """Score of span [i, j] of one row (float64), by explicit summation."""
    n = j - i + 1
    inside = _plain_sum(row[i : j + 1])
    if reduce == "sum":
        return inside
    mean_in = inside / n
    if reduce == "mean":
        return mean_in
    assert reduce == "contrast", reduce
    n_out = length - n
    if n_out == 0:
        return mean_in
    outside = _plain_sum(row[:i]) + _plain_sum(row[j + 1 : length])
    return mean_in - outside / n_out


def span_scores_ref(x, reduce: str, min_len: int = 1, max_len: Optional[int] = None,
                    lengths=None) -> np.ndarray:
    """The band ``[B, T, max_len]`` in float64 (``max_len=None`` means T)."""
    xs = _rows(x)
    B, T = xs.shape
    width = T if max_len is None else max_len
    lens = _lengths(lengths, B, T)
    out = np.full((B, T, width), -np.inf)
    for b in range(B):
        for i in range(T):
            for d in range(width):
                j = i + d
                if d + 1 < min_len or j >= lens[b]:
                    continue
                out[b, i, d] = span_value(xs[b], i, j, lens[b], reduce)
    return out


def span_scores_grad_ref(grad_out, reduce: str, min_len: int = 1, lengths=None) -> np.ndarray:
    """d(sum(grad_out * band)) / dx in float64, span by span: a span adds
    ``g * dscore/dx[t]`` to every step t it depends on; invalid cells add nothing."""
    g = _rows(grad_out)
    B, T, width = g.shape
    lens = _lengths(lengths, B, T)
    grad = np.zeros((B, T))
    for b in range(B):
        L = lens[b]
        acc = [0.0] * T
        for i in range(L):
            for d in range(width):
                j = i + d
                n = d + 1
                if n < min_len or j >= L:
                    continue
                gv = g[b, i, d]
                for t in range(L):
                    inside = i <= t <= j
                    if reduce == "sum":
                        coef = 1.0 if inside else 0.0
                    elif reduce == "mean":
                        coef = 1.0 / n if inside else 0.0
                    elif L == n:  # contrast, no outside
                        coef = 1.0 / n
                    else:
                        coef = 1.0 / n if inside else -1.0 / (L - n)
                    if coef != 0.0:
                        acc[t] += gv * coef
        grad[b] = acc
    return grad


def index_iou(a, b) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]) + 1)
    union = (a[1] - a[0] + 1) + (b[1] - b[0] + 1) - inter
    return inter / union


def top_spans_ref(x, k: int, reduce: str, min_len: int = 1, max_len: Optional[int] = None,
                  lengths=None, nms_iou: Optional[float] = None, *, out_dtype=np.float64,
                  band: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """Reference top spans: ``(spans [B, k, 2] int64, scores [B, k] float64)``.

    Scores are ranked after casting to ``out_dtype`` (the kernel's output
    dtype). ``band`` (``[B, T, W]``) replaces the computed scores, e.g. with
    ``span_scores``' own output, so the ranking can be checked exactly.
    """
    xs = _rows(x)
    B, T = xs.shape
    if band is None:
        band = span_scores_ref(xs, reduce, min_len, max_len, lengths)
    band = np.asarray(band, dtype=np.float64)
    lens = _lengths(lengths, B, T)
    spans = np.full((B, k, 2), -1, dtype=np.int64)
    scores = np.full((B, k), -np.inf)
    limit = T if max_len is None else max_len
    for b in range(B):
        cands = []
        for i in range(T):
            for j in range(i, T):
                n = j - i + 1
                if n < min_len or n > limit or j >= lens[b]:
                    continue
                s = float(out_dtype(band[b, i, j - i]))
                if math.isnan(s):
                    continue
                cands.append((s, i, j))
        cands.sort(key=lambda c: (-c[0], c[1], c[2]))
        kept = []
        for s, i, j in cands:
            if len(kept) == k:
                break
            if nms_iou is not None and any(index_iou((i, j), (ki, kj)) > nms_iou
                                           for _, ki, kj in kept):
                continue
            kept.append((s, i, j))
        for r, (s, i, j) in enumerate(kept):
            spans[b, r] = (i, j)
            scores[b, r] = s
    return spans, scores
