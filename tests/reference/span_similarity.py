# SPDX-License-Identifier: Apache-2.0
"""Loop reference for span_similarity, float64, written from the spec: every
span enumerated, each pooled directly (no prefix sums)."""

from __future__ import annotations

import math

import numpy as np


def cosine(x: np.ndarray, y: np.ndarray, eps: float) -> float:
    """torch.nn.functional.cosine_similarity: each norm clamped at eps."""
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
    W = T if max_len is None else max_len
    out = np.full((B, T, W), -np.inf)
    for b in range(B):
        length = T if lengths is None else int(lengths[b])
        for i in range(T):
            for d in range(W):
                n, j = d + 1, i + d
                if min_len <= n <= W and j < length:
                    out[b, i, d] = span_value(frames[b], query[b], i, j, pool, eps)
    return out
