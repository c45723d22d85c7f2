# SPDX-License-Identifier: Apache-2.0
"""Exact top-k of the rows of a dense score matrix, ties by column index.

A full stable ``argsort`` of each row costs O(n log n) per row and dominates
the sparse TF-IDF search over a large bank. Here a lower bound of each row's
k-th largest score is read from a strided subset of the columns (the k-th
largest of a subset can only be smaller), every column at or above that bound
is gathered, and only those few candidates are sorted. Rows where too many
columns tie at the bound (e.g. a query with no known term scores 0 everywhere)
are finished one at a time with an exact partition.
"""

from __future__ import annotations

import numpy as np

# Columns sampled for the bound: expected candidates per row are about
# k * n / _SAMPLE, few enough to sort cheaply.
_SAMPLE = 4096
# Rows with more candidates than this are handled one by one.
_MAX_CANDIDATES = 8192


def top_k_rows(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest entries of each row of ``scores`` (r, n), largest
    first, equal scores in column order (smaller index first), exactly as a
    stable descending ``argsort`` would give them.

    Returns ``(values, indices)`` of shape (r, min(k, n)). NaN is not
    supported (the callers' scores are cosines of finite vectors).
    """
    r, n = scores.shape
    k = min(int(k), n)
    if k <= 0 or r == 0:
        return (np.zeros((r, max(k, 0)), dtype=scores.dtype),
                np.zeros((r, max(k, 0)), dtype=np.int64))
    if n <= 4 * _SAMPLE:
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(scores, order, axis=1), order.astype(np.int64)
    step = n // _SAMPLE
    sample = scores[:, ::step]
    bound = np.partition(sample, sample.shape[1] - k, axis=1)[:, sample.shape[1] - k]
    mask = scores >= bound[:, None]
    counts = mask.sum(axis=1)
    values = np.empty((r, k), dtype=scores.dtype)
    indices = np.empty((r, k), dtype=np.int64)
    few = counts <= _MAX_CANDIDATES
    if few.any():
        rows, cols = np.nonzero(mask[few])  # row-major: columns ascending within a row
        vals = scores[few][rows, cols]
        # Sort candidates by row, then descending score, then column.
        order = np.lexsort((cols, -vals, rows))
        starts = np.concatenate(([0], np.cumsum(counts[few])[:-1]))
        take = order[(starts[:, None] + np.arange(k)[None, :]).ravel()]
        values[few] = vals[take].reshape(-1, k)
        indices[few] = cols[take].reshape(-1, k)
    for i in np.flatnonzero(~few):
        row = scores[i]
        kth = np.partition(row, n - k)[n - k]
        above = np.flatnonzero(row > kth)
        tied = np.flatnonzero(row == kth)[:k - above.size]
        cand = np.concatenate((above, tied))
        order = np.lexsort((cand, -row[cand]))
        indices[i] = cand[order]
        values[i] = row[cand[order]]
    return values, indices
