# SPDX-License-Identifier: Apache-2.0
"""Scores of every span of per-step scores (temporal attention, frame
similarities), and the best spans without building them all."""

from __future__ import annotations

from typing import Any, Literal, Optional

from fastvqa import _arrays, _checks
from fastvqa._ext import _C
from fastvqa.ops import _limits
from fastvqa.ops._eager import numpy_on_cpu_tensors
from fastvqa.ops.span_argmax import ScoredSpans

_SEMANTICS_DOC = """
    Spans are inclusive step pairs ``[i, j]`` (``n = j - i + 1`` steps). A span
    is valid when ``min_len <= n <= max_len`` and ``j < L``, ``L = lengths[b]``
    (steps at or after ``L`` are padding). With ``S`` the sum of ``x[b, i..j]``:

    - ``"sum"``: ``S``;
    - ``"mean"``: ``S / n``;
    - ``"contrast"``: ``S / n`` minus the mean of the row's other valid steps
      (``x[b, :i]`` and ``x[b, j+1:L]``, ``L - n`` of them); when the span
      covers the whole valid row (``n = L``) the outside mean is defined as 0,
      so the score is ``S / n``.

    Precision ("exact" here): every sum is made of its own terms only and
    computed in float64 whatever the input dtype, so a span's score depends
    on nothing but the steps inside it (and, for ``"contrast"``, the steps
    outside it); a ``finfo.min`` mask step or a 1e308 value elsewhere in the
    row changes nothing. ``S`` is summed from the span's last step to its
    first, ``x[i] + (x[i+1] + (... + x[j]))``; the outside sum is
    ``P + Q``, ``P`` the steps before the span summed first to last, ``Q`` the
    steps after it summed last to first. Each sum of ``m`` finite terms is
    thus within ``(m - 1) * 2**-53 * sum(|terms|)`` of the exact sum (the
    float64 summation bound; elements that cancel, such as ``[1e308, -1e308,
    5]``, can lose the small ones, as in any float64 sum), each division and
    subtraction rounds once more, and the score is cast to the output dtype
    once. Every span costs O(1) (one add per band cell). Overflow: a score is
    ``+-inf`` only when its own value is beyond the float64 range (or the
    output dtype's, at the cast): in rows whose finite ``|x|`` total reaches
    ``2**1022`` (float64 input only) a score whose partial sums overflow is
    recomputed in units of ``2**64``, so ``mean([1e308, 1e308]) = 1e308``
    while ``sum`` is ``inf``.

    Special values: non-finite values are counted apart (never added to a
    finite sum). A span's sum is NaN if the span holds a NaN (or both
    ``+inf`` and ``-inf``), ``+-inf`` if it holds one kind of infinity; so a
    NaN makes NaN exactly the spans that hold it. For ``"contrast"`` the
    outside counts too: a NaN in ``x[b, :L]`` also makes NaN every span that
    has it outside, i.e. every valid span of the row except the whole row
    (whose outside is empty); infinities inside and outside combine as IEEE
    arithmetic does (``inf - (-inf) = inf``, ``inf - inf = NaN``).

    dtypes: float32 and float64 natively; integers are converted to float64
    (NumPy) or the default float (torch); float16/bfloat16 torch tensors are
    computed in float32 and cast back. Inputs may be non-contiguous views;
    ``B = 0`` or ``T = 0`` give empty results without launching anything."""


@numpy_on_cpu_tensors(("x",), ("lengths",))
def span_scores(
    x: Any,
    *,
    reduce: Literal["sum", "mean", "contrast"],
    min_len: int = 1,
    max_len: Optional[int] = None,
    lengths: Any = None,
) -> Any:
    """The score of every span of every row, as a band.

    Args:
        x: ``[B, T]`` per-step scores (attention weights, similarities), NumPy
            array or torch tensor (CPU or CUDA).
        reduce: ``"sum"``, ``"mean"`` or ``"contrast"`` (see below).
        min_len: shortest span in steps (``>= 1``).
        max_len: longest span in steps (``>= min_len``); ``None`` for ``T``.
            The band is ``W = min(max_len, T)`` wide: no span is longer than
            its row, so a larger ``max_len`` (even ``2**70``) means no limit.
        lengths: optional ``[B]`` integer valid lengths in ``[0, T]``.

    Returns:
        ``[B, T, W]`` scores in the input's float dtype, same kind and
        device as ``x``: ``out[b, i, d]`` is the score of span ``[i, i + d]``.
        Invalid cells (``d + 1 < min_len``, ``i + d >= L``, ``i >= L``) are
        ``-inf``; a valid span can be ``-inf`` too (it holds a ``-inf`` step).

    Gradient:
        Differentiable with respect to ``x`` (torch): the backward is a
        compiled kernel, O(T * max_len) per row; invalid cells receive no
        gradient and steps at or after ``L`` get 0. A step's gradient is the
        sum of its own terms only, ``g[b, i, d] * coef`` over the valid spans
        whose score depends on ``x[b, t]`` (``coef = 1`` or ``1/n`` for spans
        holding ``t``, ``-1/(L - n)`` for contrast spans not holding it, as
        float64), in float64 and never as a difference of running totals: it
        is within ``m * 2**-53 * sum(|terms|)`` of their exact sum, a huge or
        non-finite ``grad_out`` reaches exactly the steps it is a term of (NaN
        if a NaN or both infinities are among them, else ``+-inf``), and a
        gradient overflows only when its own terms reach the float64 range.

    Example:
        >>> import numpy as np
        >>> band = span_scores(np.array([[1.0, 2.0, 3.0]]), reduce="sum", max_len=2)
        >>> band.tolist()  # band[0, i, d]: the span [i, i + d]
        [[[1.0, 3.0], [2.0, 5.0], [3.0, -inf]]]
    """
    op = "span_scores"
    reduce = _checks.string(reduce, op, "reduce")  # its values are checked in C++
    min_len, max_len = _limits.span_lengths(min_len, max_len, op)
    if _arrays.any_torch(x, lengths):
        _arrays.require_all_torch(op, x=x, lengths=lengths)
        from fastvqa.ops import _torch_span_scores

        return _torch_span_scores.span_scores(x, reduce, min_len, max_len, lengths)
    x_np = _arrays.numpy_float(x, op, "x")
    lens = None if lengths is None else _arrays.numpy_index(lengths, op, "lengths")
    return _C.span_scores(x_np, reduce, min_len, max_len, lens, 0, _arrays.numpy_alloc)


@numpy_on_cpu_tensors(("x",), ("lengths",))
def top_spans(
    x: Any,
    k: int,
    *,
    reduce: Literal["sum", "mean", "contrast"],
    min_len: int = 1,
    max_len: Optional[int] = None,
    lengths: Any = None,
    nms_iou: Optional[float] = None,
) -> ScoredSpans:
    """The ``k`` best spans of each row, without building the band in memory.

    Scores and validity are exactly those of :func:`span_scores` (so the result
    equals the top-``k`` of its band); each row is scanned once, O(L * max_len)
    with O(1) per span, keeping a sorted list of the best.

    Args:
        x: ``[B, T]`` per-step scores, NumPy array or torch tensor (CPU or CUDA).
        k: spans per row (``>= 1``).
        reduce: ``"sum"``, ``"mean"`` or ``"contrast"``.
        min_len: shortest span in steps (``>= 1``).
        max_len: longest span in steps (``>= min_len``); ``None`` for no limit.
        lengths: optional ``[B]`` integer valid lengths in ``[0, T]``.
        nms_iou: ``None`` for plain top-``k``; otherwise a threshold in
            ``[0, 1]`` for greedy non-maximum suppression: spans are walked in
            rank order and one is kept unless its IoU with an already kept span
            **exceeds** ``nms_iou`` (strict ``>``, as torchvision), until ``k``
            are kept. IoU is over inclusive index spans: length ``j - i + 1``,
            intersection of the index ranges.

    Returns:
        :class:`ScoredSpans` ``(spans, scores)``: ``spans`` is ``[B, k, 2]`` int64 inclusive
        ``(start, end)`` step indices, ``scores`` is ``[B, k]`` in the input
        float dtype, best first. Rows with fewer valid (or surviving) spans are
        filled with ``(-1, -1)`` and ``-inf``.

    Ties and special values:
        Spans are ordered by higher score (as cast to the compute dtype,
        float32 or float64; float16/bfloat16 inputs rank in float32), then
        smaller start, then smaller end: the order is total, so CPU and CUDA
        agree span for span. NaN spans are never returned; ``-inf`` spans are
        valid and rank last.

    NMS is exact: a first round takes the best ``max(4k, 32)`` spans and runs
    the greedy pass over them; if fewer than ``k`` survive and spans remain,
    the pass continues over all remaining spans in rank order (CPU: one sorted
    enumeration; CUDA: further rounds resuming after the last candidate), so
    the result is always the greedy NMS of the full ranked list.

    Not differentiable: torch results never require grad.

    Example:
        >>> import numpy as np
        >>> spans, scores = top_spans(np.array([[1.0, 2.0, 3.0]]), 2, reduce="mean")
        >>> spans.tolist(), scores.tolist()
        ([[[2, 2], [1, 2]]], [[3.0, 2.5]])
    """
    op = "top_spans"
    k = _limits.count(k, op, "k")
    reduce = _checks.string(reduce, op, "reduce")  # its values are checked in C++
    min_len, max_len = _limits.span_lengths(min_len, max_len, op)
    nms_iou = _checks.optional_real(nms_iou, op, "nms_iou")  # its range is checked in C++
    if _arrays.any_torch(x, lengths):
        _arrays.require_all_torch(op, x=x, lengths=lengths)
        from fastvqa.ops import _torch_span_scores

        return ScoredSpans(*_torch_span_scores.top_spans(x, k, reduce, min_len, max_len,
                                                         lengths, nms_iou))
    x_np = _arrays.numpy_float(x, op, "x")
    lens = None if lengths is None else _arrays.numpy_index(lengths, op, "lengths")
    return ScoredSpans(*_C.top_spans(x_np, k, reduce, min_len, max_len, lens, nms_iou, 0,
                                     _arrays.numpy_alloc))


span_scores.__doc__ += _SEMANTICS_DOC  # type: ignore[operator]
top_spans.__doc__ += _SEMANTICS_DOC  # type: ignore[operator]

