# SPDX-License-Identifier: Apache-2.0
"""Loop reference for span_similarity, float64, written from the spec: every
span enumerated, each pooled directly (no prefix sums)."""

from __future__ import annotations

import math

import numpy as np


def cosine(x: np.ndarray, y: np.ndarray, eps: float) -> float:
    """torch.nn.functional.cosine_similarity: each norm clamped at eps; a zero
    vector's cosine is 0 (torch: NaN at eps = 0)."""
    if not np.any(x) or not np.any(y):
        return 0.0
    return float(x @ y) / (max(float(np.linalg.norm(x)), eps) * max(float(np.linalg.norm(y)), eps))


def span_value(frames: np.ndarray, query: np.ndarray, i: int, j: int, pool: str,
               eps: float) -> float:
    """One row's score of the inclusive span [i, j] (assumed valid)."""
    seg = frames[i : j + 1].astype(np.float64)
    q = query.astype(np.float64)
    if not np.all(np.isfinite(seg)) or not np.all(np.isfinite(q)):
        return math.nan
    if pool == "mean_of_cos":
        return sum(cosine(f, q, eps) for f in seg) / len(seg)
    return cosine(seg.mean(axis=0), q, eps)


def span_similarity_ref(frames, query, spans, pool, eps=1e-8) -> np.ndarray:
    B, T, _ = frames.shape
    S = spans.shape[1]
    out = np.full((B, S), -np.inf)
    for b in range(B):
        for s in range(S):
            i, j = int(spans[b, s, 0]), int(spans[b, s, 1])
            if 0 <= i <= j < T:
                out[b, s] = span_value(frames[b], query[b], i, j, pool, eps)
    return out


def span_similarity_all_ref(frames, query, pool, min_len=1, max_len=None, lengths=None,
                            eps=1e-8) -> np.ndarray:
    B, T, _ = frames.shape
    W = T if max_len is None else min(max_len, T)  # no span is longer than its row
    out = np.full((B, T, W), -np.inf)
    for b in range(B):
        length = T if lengths is None else int(lengths[b])
        for i in range(T):
            for d in range(W):
                n, j = d + 1, i + d
                if min_len <= n <= W and j < length:
                    out[b, i, d] = span_value(frames[b], query[b], i, j, pool, eps)
    return out


# --------------------------------------------------------------------------
# Exact reference for extreme magnitudes: sums and dot products as Fractions
# (no overflow, no rounding), square roots and quotients in 60-digit Decimal
# with an unbounded exponent, one rounding to float at the end.
# --------------------------------------------------------------------------

from decimal import Decimal, localcontext  # noqa: E402
from fractions import Fraction  # noqa: E402


def _dec(x: Fraction) -> Decimal:
    return Decimal(x.numerator) / Decimal(x.denominator)


def _cos_exact(x: list[Fraction], y: list[Fraction], eps: float) -> Decimal:
    nx2 = sum(a * a for a in x)
    ny2 = sum(b * b for b in y)
    if nx2 == 0 or ny2 == 0:
        return Decimal(0)
    dot = sum(a * b for a, b in zip(x, y))
    e = _dec(Fraction(eps))
    return _dec(dot) / (max(_dec(nx2).sqrt(), e) * max(_dec(ny2).sqrt(), e))


def span_value_exact(frames, query, i: int, j: int, pool: str, eps: float) -> float:
    """span_value in exact arithmetic (finite inputs)."""
    with localcontext() as ctx:
        ctx.prec = 60
        ctx.Emax, ctx.Emin = 10**6, -(10**6)
        seg = [[Fraction(float(v)) for v in f] for f in np.asarray(frames)[i : j + 1]]
        q = [Fraction(float(v)) for v in np.asarray(query)]
        if pool == "mean_of_cos":
            return float(sum(_cos_exact(f, q, eps) for f in seg) / len(seg))
        n = len(seg)
        mean = [sum(f[k] for f in seg) / n for k in range(len(q))]
        return float(_cos_exact(mean, q, eps))


def span_similarity_all_exact(frames, query, pool, eps) -> np.ndarray:
    """(B, T, T) band of span_value_exact (all spans, no padding)."""
    B, T, _ = frames.shape
    out = np.full((B, T, T), -np.inf)
    for b in range(B):
        for i in range(T):
            for d in range(T - i):
                out[b, i, d] = span_value_exact(frames[b], query[b], i, i + d, pool, eps)
    return out
