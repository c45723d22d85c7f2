# SPDX-License-Identifier: Apache-2.0
"""Exact flat top-k by a bfloat16 screen with a certified bound, then an exact re-rank.

A float32 GEMM over the whole bank is most of an exact search. Here the bank
and the queries are rounded to bfloat16 once, a bfloat16 GEMM (AMX / AVX-512
BF16 through torch's oneDNN: about 3x the float32 rate on CPUs that have
it) scores every pair approximately, and only the pairs that a proven error
bound cannot rule out are scored again, exactly, in float64.

Key (larger is nearer): ip ranks by ``K = q.x``. l2 ranks by ``K = q'.x' -
|x'|^2 / 2 = (|q'|^2 - |q - x|^2) / 2`` with ``q' = q - c``, ``x' = x - c``
and ``c`` the bank's mean (l2 does not change under a shift, and centring
keeps an offset bank's vectors, and so the bound, small). The GEMM multiplies
``(q'~, 1, 1, 1)`` by ``(x'~, -h1, -h2, -h3)``, where ``h1 + h2 + h3 + r =
|x'|^2 / 2`` are bfloat16 pieces (``r`` about ``2^-24`` of it): the products
are exact, so the norm costs nothing in the bound beyond ``r`` (a single
rounded ``|x|^2`` column would add ``2^-9 |x|^2``).

Bound, per query and pair (``~`` = bfloat16 rounding, ``v`` the GEMM's
bfloat16 output, ``u = 2^-24``, ``D`` the GEMM's inner size):
``|K - v| <= 2^-8 |v| + E``, ``E = e_q max|x'| + |q'~| max|x' - x'~| + max|r|
+ 2 (D + 2) u (|q'~| max|x'~| + 1.01 max h) + tiny``: ``e_q = |q' - q'~|``
and the next two terms are the input roundings (Cauchy-Schwarz), ``2^-8 |v|``
the rounding of the output (round to nearest even), the ``u`` term the float32
accumulation of exact products in any order, and ``tiny`` the subnormals that
the hardware flushes (inputs, products, sums, output; each below ``2^-126``).
Both ``lo(v) = v - 2^-8|v| - E`` and ``hi(v) = v + 2^-8|v| + E`` grow with
``v``. If ``t`` is a row's k-th largest ``v``, the true k-th key is at least
``lo(t)``; a pair whose float32 score can tie with or beat the k-th's has
``K >= lo(t) - 2 delta`` (``delta``: half the float32 rounding of a score,
``2^-24`` of its largest possible size), so every pair with ``hi(v) >= lo(t)
- 2 delta`` is re-ranked, exactly in float64, and each score rounded to float32
once: the result is that of a float64 brute force.

The result: each neighbour's float32 score is the float64 score rounded once
(a plain float32 GEMM, FAISS's included, may differ from it in the last
bits), ranked by that score, equal scores by id (smaller first).
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

import numpy as np

from fastvqa.ragged import offsets_from_counts

# Bank rows per GEMM tile: a (queries x rows) bfloat16 tile stays in cache
# while it is compared with the row thresholds.
_TILE_ROWS = 4096
# Column blocks of a tile reduced by an element-wise maximum before the test.
_GROUPS = 16
# Give up (the caller searches in float32) when the screen keeps more than
# this many pairs per query: a bank whose norms vary wildly makes the bound
# loose and the re-rank would cost more than it saves.
_MAX_KEPT_PER_QUERY = 2048
# Above this the float32/bfloat16 arithmetic could overflow.
_MAX_MAGNITUDE = 1e30
# Relative rounding of the bfloat16 output (8 significant bits, nearest even).
_RHO = 2.0 ** -8
# The smallest normal float32 / bfloat16: below it the GEMM flushes to zero.
_TINY = 2.0 ** -126
# float64 rounding in the bookkeeping (norms, sums of d squares), with room.
_W = 1 + 1e-9


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether torch is installed and its CPU GEMM runs bfloat16 natively."""
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def _bf16(x: np.ndarray) -> np.ndarray:
    """float64 values of ``x`` (float64) rounded to bfloat16 (torch: through
    float32, to nearest even); values below the smallest normal become 0, as
    the GEMM would read them."""
    import torch

    b = torch.from_numpy(np.ascontiguousarray(x)).to(torch.bfloat16).float().numpy()
    b = b.astype(np.float64)
    b[np.abs(b) < _TINY] = 0.0
    return b


class Screen:
    """The bfloat16 copy of a float32 bank (``(n, d)``, rows = FAISS rows) with
    the per-row maxima the bound needs. Built once per bank (``metric``
    ``"ip"`` or ``"l2"``); costs ``2 d`` bytes per row (``2 (d + 3)`` for l2)."""

    def __init__(self, bank: np.ndarray, metric: str):
        import torch

        self.metric, self.n, self.d = metric, bank.shape[0], bank.shape[1]
        d, l2 = self.d, metric == "l2"
        self.extra = 3 if l2 else 0  # the -|x'|^2/2 pieces
        self.centre = np.zeros(d)
        if l2 and self.n:
            self.centre = bank.mean(axis=0, dtype=np.float64).astype(np.float32).astype(np.float64)
        self.xb = torch.empty((self.n, d + self.extra), dtype=torch.bfloat16)
        # Maxima over rows of |x'|^2, |x' - x'~|^2, |x'~|^2, the largest
        # |element| the GEMM reads, |r| and h = |x'|^2 / 2.
        m = np.zeros(6)
        for r0 in range(0, self.n, 8192):
            x = bank[r0:r0 + 8192].astype(np.float64) - self.centre
            n2 = np.einsum("ij,ij->i", x, x)
            head = _bf16(x)
            res = x - head  # exact: head is within 2^-8 of x (Sterbenz)
            cols, part = [head], [n2.max(), np.einsum("ij,ij->i", res, res).max(),
                                  np.einsum("ij,ij->i", head, head).max(),
                                  float(np.abs(head).max()), 0.0, 0.0]
            if l2:
                h = n2 / 2
                r = h
                for _ in range(3):  # r - p is exact: p is r rounded (or 0)
                    p = _bf16(r)
                    cols.append(-p[:, None])
                    r = r - p
                part[3] = max(part[3], float(np.abs(h).max()) * 1.01)
                part[4], part[5] = float(np.abs(r).max()), float(h.max())
            self.xb[r0:r0 + 8192] = torch.from_numpy(np.concatenate(cols, axis=1)).to(
                torch.bfloat16)  # exact: every column holds bfloat16 values
            m = np.maximum(m, part)
        self.max_norm, self.max_resid, self.max_norm_q = np.sqrt(m[:3]) * _W
        # x' is float64 x - c, off by up to 2^-53 of each element: widen.
        self.max_resid += 2.0 ** -52 * self.max_norm
        self.max_abs, self.max_h = m[3], m[5] * _W
        # |r|, plus the float64 sum |x'|^2 and the rounding of x' (relative).
        self.norm_err = m[4] + self.max_h * (d + 8) * 2.0 ** -52
        self.sane = bool(np.isfinite(m).all() and m[0] < _MAX_MAGNITUDE)


def search(screen: Screen, bank: np.ndarray, q: np.ndarray, k: int,
           ids: np.ndarray) -> Optional[tuple]:
    """``(scores, rows)`` (nq, k), float32 and int64, sorted (nearest first,
    equal scores by ``ids[row]``), exactly as described in the module docstring; or
    ``None`` when the screen would not pay (the caller then searches in
    float32). Needs ``1 <= k <= n``."""
    if not screen.sane:
        return None
    nq, l2 = q.shape[0], screen.metric == "l2"
    prepared = bound(screen, q)
    if prepared is None:
        return None
    qb, err, two_delta = prepared

    def floor_of(t: np.ndarray) -> np.ndarray:
        """The least screen value that can still matter, per query, given a
        lower bound ``t`` of its k-th largest screen value: ``hi(v) >=
        lo(t) - 2 delta``, solved for ``v`` (lowered for float64 rounding)."""
        need = t - _RHO * np.abs(t) - 2 * err - two_delta
        v = np.where(need >= 0, need / (1 + _RHO), need / (1 - _RHO))
        return v - 1e-12 * (np.abs(t) + 2 * err + two_delta)

    first = _keep(screen, qb, floor_of, k, nq)
    if first is None:
        return None
    qi, rows, vals = first
    # The row's true k-th screen value is among the kept pairs.
    t = _kth_per_row(qi, vals, k, nq)
    sel = vals >= floor_of(t)[qi]
    qi, rows = qi[sel], rows[sel]
    # Exact scores in float64 (l2 as a sum of squared differences: no
    # cancellation), then rounded to float32 once.
    q64 = q.astype(np.float64)
    xs = bank[rows].astype(np.float64)
    if l2:
        diff = xs - q64[qi]
        exact = np.einsum("ij,ij->i", diff, diff)
    else:
        exact = np.einsum("ij,ij->i", xs, q64[qi])
    s32 = exact.astype(np.float32)
    key32 = s32 if l2 else -s32
    order = np.lexsort((ids[rows], key32, qi))
    starts = offsets_from_counts(np.bincount(qi, minlength=nq))[:-1]
    take = order[(starts[:, None] + np.arange(k)[None, :]).ravel()]
    return s32[take].reshape(nq, k), rows[take].reshape(nq, k).astype(np.int64)


def bound(screen: Screen, q: np.ndarray) -> Optional[tuple]:
    """``(qb, err, two_delta)`` for float32 queries ``q`` (nq, d): the GEMM's
    bfloat16 query matrix, ``E`` of the module docstring per query (so
    ``|K - v| <= 2^-8 |v| + err`` for every pair), and ``2 delta`` per query;
    ``None`` when the queries are too large for float32 arithmetic."""
    import torch

    nq, d, l2 = q.shape[0], screen.d, screen.metric == "l2"
    qc = q.astype(np.float64) - screen.centre  # q' (= q for ip)
    qn2 = np.einsum("ij,ij->i", qc, qc)
    if qn2.max(initial=0.0) >= _MAX_MAGNITUDE:
        return None
    qback = _bf16(qc)
    cols = [qback] + [np.ones((nq, 1))] * screen.extra
    qb = torch.from_numpy(np.concatenate(cols, axis=1)).to(torch.bfloat16)  # exact
    e_q = np.sqrt(((qc - qback) ** 2).sum(axis=1)) * _W + 2.0 ** -52 * np.sqrt(qn2)
    qbn = np.sqrt((qback ** 2).sum(axis=1)) * _W  # |q'~|
    dd, u = d + screen.extra, 2.0 ** -24
    mag = qbn * screen.max_norm_q + 1.01 * screen.max_h  # sum of |products|
    err = (e_q * screen.max_norm + qbn * screen.max_resid + screen.norm_err
           + 2 * (dd + 2) * u * mag * (1 + 4 * dd * u)
           + (dd + 2) * 4 * _TINY * (1 + screen.max_abs + np.abs(qback).max(initial=1.0)))
    err *= _W
    # The largest |score| (ip: |q.x|; l2: |q - x|^2), for the float32 rounding
    # of the re-ranked score: two scores that round to one float32 differ by
    # at most 2^-23 of it, plus the float64 sums' error, (d + 4) 2^-53 of it
    # each (l2's key is half the distance: room to spare).
    qn = np.sqrt(qn2) * _W
    top = (qn + screen.max_norm) ** 2 if l2 else qn * screen.max_norm
    two_delta = (2.0 ** -23 + (d + 4) * 2.0 ** -51) * top * (1 + 1e-6) + 2.0 ** -140
    return qb, err, two_delta


def _bf16_floor(x: np.ndarray) -> np.ndarray:
    """Sortable int16 keys (see :func:`_keys`) of the largest bfloat16 values
    ``<= x`` (float64, finite)."""
    x32 = x.astype(np.float32)
    x32 = np.where(x32.astype(np.float64) > x, np.nextafter(x32, np.float32(-np.inf)), x32)
    bits = x32.view(np.int32)
    # Dropping the low 16 bits rounds toward zero: down for x >= 0; for x < 0
    # with bits dropped, one bfloat16 further down.
    key = _keys((bits >> 16).astype(np.int16))
    key = key - ((bits < 0) & ((bits & 0xFFFF) != 0)).astype(np.int16)
    return key - np.int16(1)  # one value lower: -0 (key -1) sorts below +0 (key 0)


def _values(bits: np.ndarray) -> np.ndarray:
    """float32 values of bfloat16 bit patterns (int16)."""
    return (bits.astype(np.int32) << 16).view(np.float32)


def _keys(b: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (int16) to int16 keys in the order of the values
    (-0 and +0 apart, which only widens a ``>=`` test by one value); its own
    inverse."""
    return b ^ ((b >> 15) & np.int16(0x7FFF))


def _keep(screen: Screen, qb, floor_of: Callable, k: int, nq: int):
    """Every (query, row, screen value) whose screen value is at least the
    query's floor, ``floor_of(t)`` where ``t`` is a lower bound of the row's
    k-th largest screen value: the k-th largest of the first tile, raised
    every few tiles to the k-th largest kept so far (both are k-th largest
    values of a subset of the row, so never above the row's own). ``None``
    when more than the cap are kept.

    A tile's (queries, rows) bfloat16 values are compared without converting
    them: when every floor is > 0, as int16 bit patterns (positive bfloat16
    values order as their bits, all negative ones fall below); when every
    floor is < 0, as uint16 bit patterns, reversed (negative values order
    backwards from 0x8000 up, all positive ones fall below); else as
    order-preserving int16 keys (a pass more). The element-wise extreme over
    ``_GROUPS`` column blocks is compared first, so only the few (query,
    column) pairs that can hold a hit are looked at one by one."""
    import torch

    cap = _MAX_KEPT_PER_QUERY * nq
    out_q, out_r, out_v, kept = [], [], [], 0
    first = max(_TILE_ROWS, k)
    bounds = [0] + list(range(first, screen.n, _TILE_ROWS)) + [screen.n]
    thr, mode = None, "keys"
    for step, (r0, r1) in enumerate(zip(bounds[:-1], bounds[1:])):
        xt = screen.xb[r0:r1].T
        width = r1 - r0
        if step & (step - 1) == 0:  # steps 0, 1, 2, 4, 8, ...
            if step == 0:
                bits = (qb @ xt).view(torch.int16).numpy()
                kth = np.partition(_keys(bits), width - k, axis=1)[:, width - k]
                t = _values(_keys(kth)).astype(np.float64)
            else:
                t = _kth_per_row(np.concatenate(out_q), np.concatenate(out_v), k, nq)
            floor = floor_of(t)
            key = _bf16_floor(floor)
            mode = "pos" if (floor > 0).all() else "neg" if (floor < 0).all() else "keys"
            # pos / neg: the floor's bit pattern (_keys is its own inverse).
            thr = (key if mode == "keys" else _keys(key))[:, None]
            if mode == "neg":
                thr = thr.view(np.uint16)
        groups = _GROUPS if width % _GROUPS == 0 else 1
        if step > 0:
            bits = (qb @ xt).view(torch.int16).numpy()
        if mode == "neg":
            keys = bits.view(np.uint16)
            top = keys.reshape(nq, groups, width // groups).min(axis=1)
            i, c = np.nonzero(top <= thr)
        else:
            keys = bits if mode == "pos" else _keys(bits)
            top = keys.reshape(nq, groups, width // groups).max(axis=1)
            i, c = np.nonzero(top >= thr)
        if not i.size:
            continue
        cols = (c[:, None] + (width // groups) * np.arange(groups)[None, :]).ravel()
        rows_i = np.repeat(i, groups)
        if mode == "neg":
            hit = keys[rows_i, cols] <= thr[rows_i, 0]
        else:
            hit = keys[rows_i, cols] >= thr[rows_i, 0]
        i, j = rows_i[hit], cols[hit]
        kept += i.size
        if kept > cap:
            return None
        out_q.append(i)
        out_r.append(j + r0)
        out_v.append(_values(bits[i, j]).astype(np.float64))
    qi = np.concatenate(out_q)
    rows = np.concatenate(out_r).astype(np.int64)
    vals = np.concatenate(out_v)
    return qi, rows, vals


def _kth_per_row(qi: np.ndarray, vals: np.ndarray, k: int, nq: int) -> np.ndarray:
    """The k-th largest of ``vals`` within each query (every query has >= k):
    values laid out one row per query (padded with -inf), then partitioned."""
    order = np.argsort(qi, kind="stable")
    counts = np.bincount(qi, minlength=nq)
    starts = offsets_from_counts(counts)[:-1]
    sq = qi[order]
    grid = np.full((nq, int(counts.max())), -np.inf)
    grid[sq, np.arange(sq.size) - starts[sq]] = vals[order]
    w = grid.shape[1]
    return np.partition(grid, w - k, axis=1)[:, w - k]
