# SPDX-License-Identifier: Apache-2.0
"""Inside/outside (I/O) tag decoding: runs of inside steps as spans, and the
IO -> start/end conversion that lets :func:`fastvqa.ops.span_argmax` decode them."""

from __future__ import annotations

from typing import Any, NamedTuple

from fastvqa import _arrays, _checks
from fastvqa._ext import _C
from fastvqa.ops import _limits
from fastvqa.ops._eager import numpy_on_cpu_tensors
from fastvqa.ragged import Ragged


class RaggedSpans(NamedTuple):
    """Scored spans, ragged by row, with the offsets second as in every ragged
    result (:class:`fastvqa.ragged.Ragged`).

    Example:
        >>> import numpy as np
        >>> r = io_to_spans(np.array([[0.0, 0.5, 1.0, 0.0, 0.625]]))
        >>> r.spans.tolist(), r.offsets.tolist(), r.scores.tolist()
        ([[1, 2], [4, 4]], [0, 2], [0.75, 0.625])
        >>> r.ragged().row(0).tolist()
        [[1, 2], [4, 4]]
    """

    spans: Any    #: [S, 2] int64 inclusive (start, end) step indices, row after row
    offsets: Any  #: [B + 1] int64: row b's spans are spans[offsets[b]:offsets[b + 1]]
    scores: Any   #: [S] the score of each span, in the input float dtype

    def ragged(self) -> Ragged:
        """``Ragged(spans, offsets)``: the spans, one row per input row."""
        return Ragged(self.spans, self.offsets)


class StartEnd(NamedTuple):
    """Start and end scores for :func:`fastvqa.ops.span_argmax`.

    Example:
        >>> import numpy as np
        >>> start, end = io_to_start_end(np.array([[0.0, 1.0, 1.0, 0.0]]))
        >>> start.tolist(), end.tolist()
        ([[0.0, 1.0, 0.0, -1.0]], [[-1.0, 0.0, 1.0, 0.0]])
    """

    start: Any  #: [B, T] start scores
    end: Any    #: [B, T] end scores


@numpy_on_cpu_tensors(("probs",), ("lengths",))
def io_to_spans(
    probs: Any, *, threshold: float = 0.5, lengths: Any = None, min_len: int = 1
) -> RaggedSpans:
    """Maximal runs of inside steps as scored spans (WildQA's IO decoding).

    A step ``t < lengths[b]`` of row ``b`` is *inside* when ``probs[b, t] >=
    threshold`` (compared exactly, in float64). Every maximal run of inside
    steps ``[i, j]`` (both ends **inclusive** step indices) of at least
    ``min_len`` steps becomes a span scored by the mean probability over the
    run (summed left to right in float64, then rounded to the input dtype).
    To convert to seconds at one feature per second, as WildQA does, use
    ``[i, j + 1)``.

    Args:
        probs: ``[B, T]`` per-step inside probabilities (after the sigmoid),
            NumPy array or torch tensor (CPU or CUDA); any strides.
        threshold: inside when ``prob >= threshold``.
        lengths: optional ``[B]`` integer valid lengths in ``[0, T]``; steps at
            or after ``lengths[b]`` are padding and never inside (a run ends
            there).
        min_len: shortest run kept, in steps (``>= 1``).

    Returns:
        :class:`RaggedSpans` ``(spans, offsets, scores)`` in the input's
        framework and on its device: ``spans`` is ``[S, 2]`` int64 inclusive
        ``(start, end)`` step indices, ``offsets`` is ``[B + 1]`` int64 (row
        ``b``'s spans are ``spans[offsets[b]:offsets[b + 1]]``), ``scores`` is
        ``[S]`` in the input float dtype. Within a row, spans are
        ordered by higher score, then smaller start. Rows with no run (all
        outside, ``lengths[b] = 0``) contribute nothing; ``B = 0`` or ``T = 0``
        gives empty results.

    NaN:
        A NaN probability is never inside, so it splits a run. ``+inf`` is
        inside (the run's mean is then ``inf``); a run holding both ``+inf`` and
        ``-inf`` (only with ``threshold = -inf``) has a NaN score and ranks last.

    dtypes:
        float32 and float64 natively; integers are converted to float64
        (NumPy) or the default float (torch); float16/bfloat16 torch tensors
        are computed in float32 and the scores cast back. Not differentiable.
        Under ``torch.compile`` the number of spans is a data-dependent
        (unbacked) size.

    Example:
        >>> import numpy as np
        >>> spans, offsets, scores = io_to_spans(np.array([[0.0, 0.5, 1.0, 0.0, 0.625]]),
        ...                                      min_len=2)
        >>> spans.tolist(), offsets.tolist(), scores.tolist()
        ([[1, 2]], [0, 1], [0.75])
    """
    op = "io_to_spans"
    threshold = _checks.real(threshold, op, "threshold")
    min_len = min(_checks.integer(min_len, op, "min_len"), _limits.INT64_MAX)  # none longer
    if _arrays.any_torch(probs, lengths):
        _arrays.require_all_torch(op, probs=probs, lengths=lengths)
        from fastvqa.ops import _torch_io_tags

        spans, scores, offsets = _torch_io_tags.io_to_spans(probs, threshold, min_len, lengths)
    else:
        (p,) = _arrays.numpy_common_float(op, probs=probs)
        lens = None if lengths is None else _arrays.numpy_index(lengths, op, "lengths")
        spans, scores, offsets = _C.io_to_spans(p, threshold, min_len, lens, 0,
                                                _arrays.numpy_alloc)
    return RaggedSpans(spans, offsets, scores)


@numpy_on_cpu_tensors(("probs",), ("lengths",))
def io_to_start_end(probs: Any, *, lengths: Any = None) -> StartEnd:
    """Inside/outside probabilities to start/end scores for :func:`span_argmax`.

    The conversion of WildQA's IO baseline (wildqa.md §6.3 item 11), along
    time, for the valid steps ``t < L`` of a row with values ``v``
    (``L = lengths[b]``, or ``T``)::

        start[t] = v[t] - v[t - 1]  for t > 0,      start[0]     = v[0]
        end[t]   = v[t] - v[t + 1]  for t < L - 1,  end[L - 1]   = v[L - 1]

    A run of high probabilities then has a high start score at its first step
    and a high end score at its last, so ``span_argmax(start, end)`` (score
    ``start[i] + end[j]``) decodes it. Steps ``t >= L`` are padding and get NaN,
    which ``span_argmax`` treats as unusable, so decoding needs no ``lengths``.

    Args:
        probs: ``[B, T]`` per-step values (probabilities or logits; the map is
            linear), NumPy array or torch tensor (CPU or CUDA); any strides.
        lengths: optional ``[B]`` integer valid lengths in ``[0, T]``.

    Returns:
        :class:`StartEnd` ``(start, end)``: two ``[B, T]`` arrays in the input's framework, float
        dtype and device.

    NaN:
        A NaN value makes the start and end scores that read it NaN (at most
        its own step and its two neighbours).

    dtypes:
        float32 and float64 natively; integers are converted to float64
        (NumPy) or the default float (torch); float16/bfloat16 torch tensors
        are computed in float32 and the results cast back. Not differentiable:
        torch results never require grad.

    Example:
        >>> import numpy as np
        >>> from fastvqa.ops import span_argmax
        >>> se = io_to_start_end(np.array([[0.1, 0.9, 0.8, 0.1]]))
        >>> span_argmax(se.start, se.end).spans.tolist()
        [[1, 2]]
    """
    op = "io_to_start_end"
    if _arrays.any_torch(probs, lengths):
        _arrays.require_all_torch(op, probs=probs, lengths=lengths)
        from fastvqa.ops import _torch_io_tags

        return StartEnd(*_torch_io_tags.io_to_start_end(probs, lengths))
    (p,) = _arrays.numpy_common_float(op, probs=probs)
    lens = None if lengths is None else _arrays.numpy_index(lengths, op, "lengths")
    return StartEnd(*_C.io_to_start_end(p, lens, 0, _arrays.numpy_alloc))
