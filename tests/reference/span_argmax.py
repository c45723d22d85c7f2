# SPDX-License-Identifier: Apache-2.0
"""Plain-Python references for ``fastvqa.ops.span_argmax``.

Written from the documented contract only (not from the kernels):

* a span is an inclusive pair ``(i, j)`` with ``i <= j``, scored
  ``start[b, i] + end[b, j]``;
* it is valid when ``min_len <= j - i + 1 <= max_len`` (``max_len=None`` means
  no upper limit) and ``j < lengths[b]`` (``lengths=None`` means ``T``);
* a NaN start (end) score makes that step unusable as a start (end), and a span
  whose score is NaN is never returned; ``-inf`` spans are valid and rank last;
* spans are ordered by higher score, then smaller start, then smaller end;
* rows with fewer than ``topk`` valid spans are padded with ``(-1, -1)`` and
  ``-inf``.

``span_argmax_ref`` enumerates every ``(i, j)`` pair explicitly, O(T^2) per row.
``hf_style_best_span`` is the usual HuggingFace question-answering decoding
(outer product of probabilities, upper triangle, band for ``max_len``, flat
argmax) for one row, used to show that top-1 agrees with it.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np


def _as_float_rows(x, dtype) -> np.ndarray:
    """A NumPy copy of ``x`` (NumPy or torch, any device) in ``dtype``."""
    if hasattr(x, "detach"):  # torch tensor
        x = x.detach().to("cpu")
        if not x.dtype.is_floating_point:
            x = x.double()
        x = x.float() if x.dtype in _low_precision_torch_dtypes() else x
        x = x.numpy()
    return np.array(x, dtype=dtype, copy=True)


def _low_precision_torch_dtypes():
    import torch

    return (torch.float16, torch.bfloat16)


def span_argmax_ref(
    start,
    end,
    max_len: Optional[int] = None,
    min_len: int = 1,
    topk: int = 1,
    lengths=None,
    *,
    compute_dtype=np.float64,
) -> tuple[np.ndarray, np.ndarray]:
    """Reference top-k spans by explicit enumeration.

    Scores are summed in ``compute_dtype`` (``np.float64`` by default; pass
    ``np.float32`` to mirror the library's float32 arithmetic exactly) and
    returned as float64.

    Returns ``(spans, scores)``: ``spans`` is ``(B, topk, 2)`` int64 and
    ``scores`` is ``(B, topk)`` float64, best first, padded with ``(-1, -1)``
    and ``-inf``.
    """
    s = _as_float_rows(start, compute_dtype)
    e = _as_float_rows(end, compute_dtype)
    if s.ndim != 2 or s.shape != e.shape:
        raise ValueError(f"start and end must both be (B, T), got {s.shape} and {e.shape}")
    B, T = s.shape
    if lengths is None:
        lens = [T] * B
    else:
        if hasattr(lengths, "detach"):
            lengths = lengths.detach().to("cpu").numpy()
        lens = [int(v) for v in np.asarray(lengths).reshape(-1)]
        assert len(lens) == B

    spans = np.full((B, topk, 2), -1, dtype=np.int64)
    scores = np.full((B, topk), -np.inf, dtype=np.float64)
    for b in range(B):
        candidates = []
        for i in range(T):
            for j in range(i, T):
                length = j - i + 1
                if length < min_len:
                    continue
                if max_len is not None and length > max_len:
                    continue
                if j >= lens[b]:
                    continue
                si, ej = s[b, i], e[b, j]
                if math.isnan(si) or math.isnan(ej):
                    continue
                score = compute_dtype(si) + compute_dtype(ej)  # stays in compute_dtype
                if math.isnan(score):
                    continue
                candidates.append((float(score), i, j))
        # higher score first, then smaller start, then smaller end
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        for k, (score, i, j) in enumerate(candidates[:topk]):
            spans[b, k] = (i, j)
            scores[b, k] = score
    return spans, scores


def hf_style_best_span(start_logits, end_logits, max_len: Optional[int] = None):
    """The usual HuggingFace QA decoding of one row.

    softmax both logit vectors, take the outer product of the probabilities,
    keep the upper triangle (``i <= j``), band it to ``j - i + 1 <= max_len``
    with ``np.tril``, flatten and take ``argmax`` (the first maximum in
    row-major order, i.e. smaller start, then smaller end). Returns
    ``((i, j), log_prob)`` where ``log_prob`` is the log of the winning
    product.
    """
    start_logits = np.asarray(start_logits, dtype=np.float64)
    end_logits = np.asarray(end_logits, dtype=np.float64)
    p_start = np.exp(start_logits - start_logits.max())
    p_start /= p_start.sum()
    p_end = np.exp(end_logits - end_logits.max())
    p_end /= p_end.sum()
    outer = np.outer(p_start, p_end)  # outer[i, j] = P(start = i) * P(end = j)
    candidates = np.triu(outer)
    if max_len is not None:
        candidates = np.tril(candidates, max_len - 1)
    flat = int(np.argmax(candidates))
    i, j = np.unravel_index(flat, candidates.shape)
    return (int(i), int(j)), float(np.log(outer[i, j]))


def log_softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable log-softmax in float64."""
    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))
