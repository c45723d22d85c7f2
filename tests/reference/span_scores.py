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

For extreme magnitudes (masks of ``finfo.min``, 1e308 mixes) the float64 loop
above is itself inexact, so ``span_bounds`` / ``grad_bounds`` give the exact
value of each score (``fractions``: finite values summed exactly, NaN and
infinities counted apart) and the documented error bound around it: every
sum is a float64 sum of its own m terms, so it lies within
``m * 2**-53 * sum(|term|)`` of the exact sum (plus ``m * 2**-1010`` for the
2**64-scaled fallback), then one more rounding per division and subtraction.
``check_band`` / ``check_grad`` require each result to lie between the
dtype-rounded ends of that interval, which also pins down overflow: +-inf only
where the interval reaches beyond the dtype's range.
"""

from __future__ import annotations

import math
from fractions import Fraction
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
    """The band ``[B, T, min(max_len, T)]`` in float64 (``max_len=None``
    means T; no span is longer than its row, so the band never is either)."""
    xs = _rows(x)
    B, T = xs.shape
    width = T if max_len is None else min(max_len, T)
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


# --------------------------------------------------------------------------- #
# Exact values with error bounds (extreme magnitudes)
# --------------------------------------------------------------------------- #

U = Fraction(1, 2**53)  # float64 unit roundoff
TINY = Fraction(1, 2**1010)  # underflow of one term scaled by 2**-64


def _parts(values):
    """(exact finite sum, exact sum of |finite|, finite count, special or None).

    ``special`` is what IEEE addition of the non-finite values gives: NaN for
    a NaN or both infinities, else the infinity; None without them.
    """
    total = Fraction(0)
    mag = Fraction(0)
    m = 0
    nan = pos = neg = False
    for v in values:
        v = float(v)
        if math.isnan(v):
            nan = True
        elif v == math.inf:
            pos = True
        elif v == -math.inf:
            neg = True
        else:
            f = Fraction(v)
            total += f
            mag += abs(f)
            m += 1
    if nan or (pos and neg):
        special = math.nan
    elif pos:
        special = math.inf
    elif neg:
        special = -math.inf
    else:
        special = None
    return total, mag, m, special


def _mean_bounds(total, mag, m, n):
    """Exact mean and its bound: the sum's bound / n, one rounding of the division."""
    e_sum = m * U * mag + m * TINY
    mean = total / n
    return mean, e_sum / n * (1 + U) + U * (abs(mean) + e_sum / n) + TINY


def span_bounds(row, i: int, j: int, length: int, reduce: str):
    """``(value, err)`` (Fractions) for span [i, j], or a float for a non-finite score."""
    n = j - i + 1
    total, mag, m, special = _parts(row[i : j + 1])
    if reduce == "sum":
        if special is not None:
            return special
        return total, m * U * mag + m * TINY
    n_out = length - n
    if reduce == "mean" or n_out == 0:
        if special is not None:
            return special / n
        return _mean_bounds(total, mag, m, n)
    o_total, o_mag, o_m, o_special = _parts(list(row[:i]) + list(row[j + 1 : length]))
    if special is not None or o_special is not None:
        return (0.0 if special is None else special) / n - (
            0.0 if o_special is None else o_special) / n_out
    mean_in, e_in = _mean_bounds(total, mag, m, n)
    # O = P + Q: one more rounding than a single sum of its o_m terms.
    mean_out, e_out = _mean_bounds(o_total, o_mag, o_m + 1, n_out)
    value = mean_in - mean_out
    return value, e_in + e_out + U * (abs(mean_in) + abs(mean_out) + e_in + e_out) + TINY


def _round(q: Fraction, dtype) -> float:
    """q rounded to float64 (+-inf beyond its range), then to dtype."""
    try:
        f = float(q)
    except OverflowError:
        f = math.inf if q > 0 else -math.inf
    with np.errstate(over="ignore"):
        return float(dtype(f))


def _check_value(got: float, expect, dtype, where: str) -> None:
    if isinstance(expect, float):  # non-finite
        if math.isnan(expect):
            assert math.isnan(got), f"{where}: {got!r}, expected NaN"
        else:
            assert got == expect, f"{where}: {got!r}, expected {expect!r}"
        return
    value, err = expect
    lo, hi = _round(value - err, dtype), _round(value + err, dtype)
    assert lo <= got <= hi, (f"{where}: {got!r} outside [{lo!r}, {hi!r}] "
                             f"(exact {float(value)!r})")


def check_band(out, x, reduce: str, min_len: int = 1, max_len: Optional[int] = None,
               lengths=None, dtype=np.float64) -> None:
    """Every cell of ``out`` (``span_scores``' band) within the bounds of the definition."""
    xs = _rows(x)
    out = _rows(out)
    B, T = xs.shape
    width = T if max_len is None else min(max_len, T)
    lens = _lengths(lengths, B, T)
    assert out.shape == (B, T, width)
    for b in range(B):
        for i in range(T):
            for d in range(width):
                j = i + d
                got = float(out[b, i, d])
                if d + 1 < min_len or j >= lens[b]:
                    assert got == -math.inf, f"invalid cell [{b}, {i}, {d}] = {got!r}"
                    continue
                _check_value(got, span_bounds(xs[b], i, j, lens[b], reduce), dtype,
                             f"{reduce} [{b}, {i}, {d}]")


def grad_bounds(grad_out, reduce: str, min_len: int = 1, lengths=None):
    """Per step: ``(value, err)`` for d(sum(grad_out * band)) / dx, or a float
    for a non-finite one, or None where the terms reach the float64 range (the
    documented overflow may then happen). Terms are g * coef, coef = 1/n (and
    -1/(L - n)) as float64, each product rounded once."""
    g = _rows(grad_out)
    B, T, width = g.shape
    lens = _lengths(lengths, B, T)
    out = [[(Fraction(0), Fraction(0))] * T for _ in range(B)]
    for b in range(B):
        L = lens[b]
        terms = [[] for _ in range(L)]
        for i in range(L):
            for d in range(width):
                j = i + d
                n = d + 1
                if n < min_len or j >= L:
                    continue
                for t in range(L):
                    inside = i <= t <= j
                    if reduce == "sum":
                        coef = 1.0 if inside else 0.0
                    elif reduce == "mean":
                        coef = 1.0 / n if inside else 0.0
                    elif L == n:
                        coef = 1.0 / n
                    else:
                        coef = 1.0 / n if inside else -1.0 / (L - n)
                    if coef != 0.0:
                        terms[t].append(float(g[b, i, d]) * coef)
        for t in range(L):
            finite = [v for v in terms[t] if math.isfinite(v)]
            total, mag, m, special = _parts(terms[t])
            # A product that overflowed is an infinite term: the kernel forms the
            # same product, so it is a term like any other. Finite terms that
            # reach the float64 range may overflow in the kernel's sums (the
            # documented overflow), to the infinity opposite an infinite term
            # too (inf + -inf: NaN), so only a NaN term still decides the value.
            overflow = mag * (1 + 2 * len(finite) * U) >= Fraction(np.finfo(np.float64).max) / 2
            if special is not None and (math.isnan(special) or not overflow):
                out[b][t] = special
            elif overflow:
                out[b][t] = None
            else:
                # each product rounded once, then a float64 sum of m terms
                out[b][t] = (total, (m + 1) * U * mag + m * TINY)
    return out


def check_grad(gx, grad_out, reduce: str, min_len: int = 1, lengths=None,
               dtype=np.float64) -> None:
    gxs = _rows(gx)
    bounds = grad_bounds(grad_out, reduce, min_len, lengths)
    B, T = gxs.shape
    lens = _lengths(lengths, B, T)
    for b in range(B):
        for t in range(T):
            got = float(gxs[b, t])
            if t >= lens[b]:
                assert got == 0.0, f"padding grad [{b}, {t}] = {got!r}"
                continue
            if bounds[b][t] is not None:
                _check_value(got, bounds[b][t], dtype, f"{reduce} grad [{b}, {t}]")
