# SPDX-License-Identifier: Apache-2.0
"""Start/end span decoding."""

from __future__ import annotations

import operator
from typing import Any, NamedTuple, Optional

from fastvqa import _arrays
from fastvqa._ext import _C


class ScoredSpans(NamedTuple):
    """The best spans of each row and their scores, best first
    (:func:`span_argmax`, :func:`fastvqa.ops.top_spans`)."""

    spans: Any   #: [..., 2] int64 inclusive (start, end) step indices, (-1, -1) padding
    scores: Any  #: [...] their scores in the input float dtype, -inf padding


def span_argmax(
    start: Any,
    end: Any,
    *,
    max_len: Optional[int] = None,
    min_len: int = 1,
    topk: int = 1,
    lengths: Any = None,
) -> ScoredSpans:
    """The best start/end spans of each row.

    A span is a pair of step indices ``(i, j)`` with ``i <= j``, both ends
    **inclusive**, scored ``start[b, i] + end[b, j]`` (pass logits or
    log-probabilities; with ``log`` of probabilities this is the usual "outer
    product, upper triangle, band, top-k" decoding). It is valid when
    ``min_len <= j - i + 1 <= max_len`` and ``j < lengths[b]``.

    Args:
        start: ``[B, T]`` start scores, NumPy array or torch tensor.
        end: ``[B, T]`` end scores, same kind, shape and device.
        max_len: longest span in steps (``>= min_len``); ``None`` for no limit.
        min_len: shortest span in steps (``>= 1``).
        topk: spans per row (``>= 1``).
        lengths: optional ``[B]`` integer valid lengths in ``[0, T]``; steps at
            or after ``lengths[b]`` are padding and never part of a span.

    Returns:
        :class:`ScoredSpans` ``(spans, scores)``: ``spans`` is ``[B, topk, 2]`` int64 inclusive
        ``(start, end)`` step indices, ``scores`` is ``[B, topk]`` in the input
        float dtype, best first. Rows with fewer valid spans than ``topk`` are
        filled with ``(-1, -1)`` and ``-inf``.

    Ties and special values:
        Spans are ordered by higher score, then smaller start, then smaller end;
        the order is total, so CPU and CUDA return identical spans. A NaN start
        (end) score makes that step unusable as a start (end); a span whose score
        is NaN is never returned. ``-inf`` scores are valid (they rank last).
        ``+inf`` inputs are outside the contract.

    Cost:
        top-1 runs in O(T) per row (a sliding-window maximum of the start
        scores), never building the ``T x T`` matrix; top-k is exact and skips
        every end whose best span cannot enter the current top-k.

    dtypes:
        float32 and float64 natively (mixed inputs promote to float64);
        integers are converted to float64 (NumPy) or the default float (torch);
        float16/bfloat16 torch tensors are computed in float32 and the scores
        cast back. Not differentiable: torch results never require grad.
    """
    op = "span_argmax"
    max_len = _optional_int(max_len, op, "max_len")
    min_len = _int(min_len, op, "min_len")
    topk = _int(topk, op, "topk")
    if _arrays.any_torch(start, end, lengths):
        _arrays.require_all_torch(op, start=start, end=end, lengths=lengths)
        from fastvqa.ops import _torch

        return ScoredSpans(*_torch.span_argmax(start, end, max_len, min_len, topk, lengths))
    s, e = _arrays.numpy_common_float(op, start=start, end=end)
    lens = None if lengths is None else _arrays.numpy_index(lengths, op, "lengths")
    spans, scores = _C.span_argmax(s, e, max_len, min_len, topk, lens, 0, _arrays.numpy_alloc)
    return ScoredSpans(spans, scores)


def _int(value: Any, op: str, name: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be an integer, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an integer, got {type(value).__name__}") from None


def _optional_int(value: Any, op: str, name: str) -> Optional[int]:
    return None if value is None else _int(value, op, name)
