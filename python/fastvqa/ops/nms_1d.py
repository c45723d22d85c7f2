# SPDX-License-Identifier: Apache-2.0
"""Temporal (1-D) non-maximum suppression, hard and soft, over ragged groups."""

from __future__ import annotations

import math
from typing import Any, Literal, NamedTuple

from fastvqa import _arrays, _checks
from fastvqa._ext import _C
from fastvqa.ops._eager import numpy_on_cpu_tensors
from fastvqa.ragged import Ragged


class NmsResult(NamedTuple):
    """What :func:`nms_1d` keeps, for every method: ragged by group, with the
    offsets second as in every ragged result (:class:`fastvqa.ragged.Ragged`).

    Example:
        >>> import numpy as np
        >>> spans = np.array([[0.0, 4.0], [1.0, 4.0], [8.0, 10.0], [8.0, 9.5]])
        >>> r = nms_1d(spans, np.array([0.9, 0.8, 0.7, 0.6]), iou_threshold=0.5,
        ...            offsets=np.array([0, 2, 4]))
        >>> [row.tolist() for row in r.ragged().rows()]
        [[0], [2]]
    """

    keep: Any     #: [K] int64 indices into the input spans, grouped, in selection order
    offsets: Any  #: [G + 1] int64: group g kept keep[offsets[g]:offsets[g + 1]]
    scores: Any   #: [K] the score of each kept span at selection (decayed for soft-NMS)

    def ragged(self) -> Ragged:
        """``Ragged(keep, offsets)``: the kept indices, one row per group."""
        return Ragged(self.keep, self.offsets)


@numpy_on_cpu_tensors(("spans", "scores"), ("offsets",))
def nms_1d(
    spans: Any,
    scores: Any,
    *,
    iou_threshold: float,
    method: Literal["hard", "linear", "gaussian"] = "hard",
    sigma: float = 0.5,
    offsets: Any = None,
    score_threshold: float = -math.inf,
    ties: Literal["start", "stable"] = "start",
) -> NmsResult:
    """Non-maximum suppression of temporal spans, per group.

    Spans are ``[start, end]`` in seconds (continuous ends, not step indices);
    two spans overlap by the textbook temporal IoU, the ``"iou"`` mode of
    :func:`fastvqa.ops.temporal_iou` (``len = max(end - start, 0)``, so a
    reversed span is empty and overlaps nothing), the same value bit for bit,
    infinite and huge endpoints included (``[0, inf]`` and ``[5, inf]`` have
    IoU 1, and no float32 length sum overflows). Suppression happens only
    between spans of the same group.

    Candidates are taken in a total order: higher score first, then the tie
    rule ``ties`` among equal scores (so CPU and CUDA agree exactly, ties
    included):

    - ``"start"`` (default): smaller start, then smaller end, then smaller
      index.
    - ``"stable"``: smaller index, i.e. input order, as a stable sort by
      descending score leaves it (Moment-DETR's and UniVTG's
      post-processing: Python's ``sorted(..., reverse=True)`` on the scores).
      It matters: on UniVTG's public QVHighlights val submission, NMS at 0.7
      keeps its R1@0.5 of 68.39 with ``"stable"`` and gives 68.06 with
      ``"start"`` (45 queries have tied top-two scores).

    - ``"hard"``: in that order, a span is kept unless its IoU with an already
      kept span of its group **exceeds** ``iou_threshold`` (strict ``>``, as
      ``torchvision.ops.nms``).
    - ``"linear"`` and ``"gaussian"``: soft-NMS (Bodla et al., 2017, the
      algorithm of mmcv's ``soft_nms``). Repeatedly take the remaining span
      with the best *current* score (same tie rule), then multiply the score
      of every other remaining span by ``1 - iou`` if ``iou > iou_threshold``
      (linear) or by ``exp(-iou**2 / sigma)`` (gaussian, which ignores
      ``iou_threshold``).

    With every method, a span whose score (for soft-NMS: current, decayed
    score) is below ``score_threshold`` is dropped; the default ``-inf``
    keeps them all, so soft-NMS then returns every non-NaN span, reordered.

    Args:
        spans: ``[N, 2]`` float spans ``[start, end]`` in seconds, NumPy
            array or torch tensor (CPU or CUDA); any strides.
        scores: ``[N]`` float scores, same kind, dtype and device.
        iou_threshold: IoU above which a kept span suppresses (hard) or decays
            (linear) another; compared exactly with the IoU in the compute dtype.
        method: ``"hard"``, ``"linear"`` or ``"gaussian"``.
        sigma: gaussian width (``> 0``).
        offsets: optional ``[G + 1]`` integer CSR offsets: group ``g`` holds
            spans ``offsets[g]:offsets[g + 1]``; they must start at 0, not
            decrease and end at ``N``. ``None`` is one group of all spans.
        score_threshold: spans scoring below it are dropped (see above).
        ties: the order among equal scores, ``"start"`` or ``"stable"``
            (see above); it also orders equal current scores in soft-NMS.

    Returns:
        :class:`NmsResult` ``(keep, offsets, scores)`` for every method, in
        the input's framework and on its device. ``keep`` is ``[K]`` int64
        indices into the input, grouped by group in order and, within a
        group, in selection order (for hard NMS: descending score with the tie
        rule above); ``offsets`` is ``[G + 1]`` int64 (group ``g``'s kept
        spans are ``keep[offsets[g]:offsets[g + 1]]``; ``[0, K]`` without
        ``offsets``). ``scores`` is ``[K]``, the score of each kept span at
        selection in the input float dtype: for hard NMS its input score, for
        soft-NMS the decayed one. ``N = 0`` and empty groups are legal and
        give empty results.

    NaN:
        A span with a NaN score is never kept (it ranks after every number).
        A NaN endpoint makes every IoU with that span NaN, which never exceeds
        a threshold and decays nothing: such a span suppresses nothing and is
        suppressed by nothing. A soft-NMS score that becomes NaN (``inf * 0``)
        drops the span.

    dtypes:
        float32 and float64 natively (mixed inputs promote to float64);
        integers are converted to float64 (NumPy) or the default float
        (torch); float16/bfloat16 torch tensors are computed in float32 and the
        kept scores cast back. Not differentiable: torch results never require
        grad. Under ``torch.compile`` the output length is a data-dependent
        (unbacked) size.

    Cost:
        CPU hard NMS sorts each group (O(n log n)) and then, once 64 spans
        are kept, finds the kept spans that overlap a candidate in buckets
        of equal width in time (the median span length): O(1) per bucket
        and per overlapping kept span, so O(N log N) in all when a span
        overlaps a bounded number of kept spans (constant density; a
        candidate overlapping many kept spans it does not suppress costs
        more). Spans much longer than the median go through a tree of span
        ends ordered by start instead (O(log n) per overlapping kept span).
        Soft-NMS is O(n^2) per group.

    CUDA:
        hard NMS uses the bitmask algorithm of torchvision/mmcv per group
        (64-wide tiles of the sorted spans, one 64-bit suppression word per
        span and tile, then the greedy pass over the words by one thread block
        per group, on the GPU); soft-NMS runs one thread per group. Both sync
        once to learn the output size.

    Example:
        >>> import numpy as np
        >>> spans = np.array([[0.0, 10.0], [1.0, 10.0], [20.0, 30.0]])
        >>> keep, offsets, scores = nms_1d(spans, np.array([0.9, 0.8, 0.7]), iou_threshold=0.5)
        >>> keep.tolist(), offsets.tolist(), scores.tolist()
        ([0, 2], [0, 2], [0.9, 0.7])
    """
    op = "nms_1d"
    method = _checks.string(method, op, "method")  # its values are checked in C++
    ties = _checks.string(ties, op, "ties")  # its values are checked in C++
    iou_threshold = _checks.real(iou_threshold, op, "iou_threshold")
    sigma = _checks.real(sigma, op, "sigma")
    score_threshold = _checks.real(score_threshold, op, "score_threshold")
    if _arrays.any_torch(spans, scores, offsets):
        _arrays.require_all_torch(op, spans=spans, scores=scores, offsets=offsets)
        from fastvqa.ops import _torch_nms_1d

        out = _torch_nms_1d.nms_1d(spans, scores, offsets, iou_threshold, method, sigma,
                                   score_threshold, ties)
    else:
        sp, sc = _arrays.numpy_common_float(op, spans=spans, scores=scores)
        off = None if offsets is None else _arrays.numpy_index(offsets, op, "offsets")
        out = _C.nms_1d(sp, sc, off, iou_threshold, method, sigma, score_threshold, ties, 0,
                        _arrays.numpy_alloc)
    return NmsResult(*out)

