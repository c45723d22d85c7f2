# SPDX-License-Identifier: Apache-2.0
"""Start/end span decoding."""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple, Optional

import numpy as np

from fastvqa import _arrays
from fastvqa._ext import _C
from fastvqa.ops import _limits
from fastvqa.ops._eager import numpy_on_cpu_tensors


class ScoredSpans(NamedTuple):
    """The best spans of each row and their scores, best first
    (:func:`span_argmax`, :func:`fastvqa.ops.top_spans`).

    Example:
        >>> import numpy as np
        >>> best = span_argmax(np.array([[0.0, 2.0, 1.0]]), np.array([[0.0, 1.0, 3.0]]), k=2)
        >>> best.spans.tolist(), best.scores.tolist()
        ([[[1, 2], [2, 2]]], [[5.0, 4.0]])
    """

    spans: Any   #: [..., 2] int64 inclusive (start, end) step indices, (-1, -1) padding
    scores: Any  #: [...] their scores in the input float dtype, -inf padding


@numpy_on_cpu_tensors(("start", "end"), ("lengths",))
def span_argmax(
    start: Any,
    end: Any,
    *,
    max_len: Optional[int] = None,
    min_len: int = 1,
    k: Optional[int] = None,
    lengths: Any = None,
) -> ScoredSpans:
    """The best start/end spans of each row.

    A span is a pair of step indices ``(i, j)`` with ``i <= j``, both ends
    **inclusive**, scored ``start[b, i] + end[b, j]`` (pass logits or
    log-probabilities; with ``log`` of probabilities this is the usual "outer
    product, upper triangle, band, top-k" decoding). It is valid when
    ``min_len <= j - i + 1 <= max_len`` and ``j < lengths[b]``.

    Args:
        start: ``[B, T]`` start scores, NumPy array or torch tensor; or ``[T]``,
            a single row (then ``end`` is ``[T]`` too and the result has no
            batch axis).
        end: ``[B, T]`` end scores, same kind, shape and device.
        max_len: longest span in steps (``>= min_len``); ``None`` for no limit.
        min_len: shortest span in steps (``>= 1``).
        k: ``None`` for the best span of each row (top-1, no ``k`` axis in
            the result), or the number of spans per row (``>= 1``; a ``k``
            axis, even for ``k = 1``).
        lengths: optional ``[B]`` integer valid lengths in ``[0, T]`` (for a
            single row: an integer or a one-element array); steps at or after
            ``lengths[b]`` are padding and never part of a span.

    Returns:
        :class:`ScoredSpans` ``(spans, scores)``, best first: ``spans`` int64
        inclusive ``(start, end)`` step indices and ``scores`` in the input
        float dtype, shaped

        ================  ===============  ============
        input, ``k``      ``spans``        ``scores``
        ================  ===============  ============
        ``[B, T]``, None  ``[B, 2]``       ``[B]``
        ``[B, T]``, int   ``[B, k, 2]``    ``[B, k]``
        ``[T]``, None     ``[2]``          ``[]`` (0-d)
        ``[T]``, int      ``[k, 2]``       ``[k]``
        ================  ===============  ============

        A row with fewer valid spans than asked for (e.g. ``lengths[b] = 0``)
        is filled with ``(-1, -1)`` and ``-inf``.

    Ties and special values:
        Spans are ordered by higher score, then smaller start, then smaller end;
        the order is total, so CPU and CUDA return identical spans. A NaN start
        (end) score makes that step unusable as a start (end); a span whose score
        is NaN (``+inf + -inf``) is never returned, while the other spans of
        that end or start still are. ``-inf`` scores are valid (they rank
        last), ``+inf`` ones rank first.

    Cost:
        top-1 runs in O(T log max_len) vectorised sweeps per row (window
        maxima of the start scores), never building the ``T x T`` matrix. On
        CPU, top-k is an exact best-first search, O(T log max_len + k log T)
        per row (a sparse table of window maxima; only the ends whose best
        span reaches the k-th best end's are searched), so a longer
        ``max_len`` barely costs more; on CUDA it scans every window.

    dtypes:
        float32 and float64 natively (mixed inputs promote to float64);
        integers are converted to float64 (NumPy) or the default float (torch);
        float16/bfloat16 torch tensors are computed in float32 and the scores
        cast back. Not differentiable: torch results never require grad.

    Example:
        >>> import numpy as np
        >>> start = np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]])
        >>> end = np.array([[0.0, 1.0, 3.0], [0.0, 0.0, 1.0]])
        >>> spans, scores = span_argmax(start, end, max_len=2)
        >>> spans.tolist(), scores.tolist()
        ([[1, 2], [0, 0]], [5.0, 3.0])
    """
    op = "span_argmax"
    min_len, max_len = _limits.span_lengths(min_len, max_len, op)
    topk = 1 if k is None else _limits.count(k, op, "k")
    torch_in = _arrays.any_torch(start, end, lengths)
    if not torch_in:  # converted once, to their common float dtype
        start, end = _arrays.numpy_common_float(op, start=start, end=end)
    single = start.ndim == 1 and end.ndim == 1
    if single:  # one row: a batch of one, the batch axis dropped again below
        start, end = start[None], end[None]
        if _arrays.is_torch(lengths):
            lengths = lengths.reshape(1)
        elif torch_in and isinstance(lengths, numbers.Integral) and not isinstance(lengths, bool):
            import torch  # a plain integer length of a torch row: a tensor beside the row

            lengths = torch.tensor([int(lengths)], device=start.device)
        elif lengths is not None:
            lengths = np.reshape(lengths, (1,))
    if torch_in:
        _arrays.require_all_torch(op, start=start, end=end, lengths=lengths)
        from fastvqa.ops import _torch_span_argmax

        spans, scores = _torch_span_argmax.span_argmax(start, end, max_len, min_len, topk,
                                                       lengths)
    else:
        lens = None if lengths is None else _arrays.numpy_index(lengths, op, "lengths")
        spans, scores = _C.span_argmax(start, end, max_len, min_len, topk, lens, 0,
                                       _arrays.numpy_alloc)
    if k is None:
        spans, scores = spans[:, 0], scores[:, 0]
    if single:
        spans, scores = spans[0], scores[0, ...]  # [0, ...]: a 0-d array, not a scalar
    return ScoredSpans(spans, scores)

