# SPDX-License-Identifier: Apache-2.0
"""Plain-Python references for ``fastvqa.ops.io_to_spans`` and
``io_to_start_end``, written from their specification (WildQA's IO decoding,
wildqa.md §6.3 item 11): explicit loops over every step of every row."""

from __future__ import annotations

import math

import numpy as np


def io_to_spans_ref(probs, threshold=0.5, lengths=None, min_len=1, dtype=np.float64):
    """``(spans [S, 2], scores [S] float64 of dtype-rounded means, row_offsets [B + 1])``."""
    p = np.asarray(probs, dtype=np.float64)
    B, T = p.shape
    spans, scores, offsets = [], [], [0]
    for b in range(B):
        L = T if lengths is None else int(lengths[b])
        runs = []
        t = 0
        while t < L:
            if not p[b, t] >= threshold:  # NaN is never inside
                t += 1
                continue
            i = t
            total = 0.0
            while t < L and p[b, t] >= threshold:
                total += float(p[b, t])
                t += 1
            if t - i >= min_len:
                mean = float(np.dtype(dtype).type(total / (t - i)))
                runs.append((mean, i, t - 1))
        # Higher score first (NaN last), then smaller start.
        runs.sort(key=lambda r: ((1, 0.0) if math.isnan(r[0]) else (0, -r[0]), r[1]))
        for mean, i, j in runs:
            spans.append((i, j))
            scores.append(mean)
        offsets.append(len(spans))
    return (
        np.array(spans, dtype=np.int64).reshape(-1, 2),
        np.array(scores, dtype=np.float64),
        np.array(offsets, dtype=np.int64),
    )


def io_to_start_end_ref(probs, lengths=None, dtype=np.float64):
    """WildQA's IO -> SE conversion per valid step; NaN on padding steps."""
    v = np.asarray(probs, dtype=dtype)
    B, T = v.shape
    start = np.full((B, T), np.nan, dtype=dtype)
    end = np.full((B, T), np.nan, dtype=dtype)
    with np.errstate(all="ignore"):
        for b in range(B):
            L = T if lengths is None else int(lengths[b])
            for t in range(L):
                start[b, t] = v[b, t] if t == 0 else v[b, t] - v[b, t - 1]
                end[b, t] = v[b, t] if t == L - 1 else v[b, t] - v[b, t + 1]
    return start, end
