# SPDX-License-Identifier: Apache-2.0
"""Temporal IoU family: pairwise, paired, and the NExT-GQA ragged overlap."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from fastvqa import _arrays, _checks
from fastvqa._ext import _C
from fastvqa.ops._eager import numpy_on_cpu_tensors


class Overlap(NamedTuple):
    """Per-prediction best overlaps from :func:`grounding_overlap`.

    Example:
        >>> import numpy as np
        >>> o = grounding_overlap(np.array([[0.0, 4.0]]), np.array([[2.0, 6.0]]), [0, 1])
        >>> o.iou.tolist(), o.iop.tolist()
        ([0.3333333333333333], [0.5])
    """

    iou: Any  #: [N] best IoU of each prediction over its ground truth
    iop: Any  #: [N] best IoP (intersection over the prediction), taken independently

_MODES_DOC = """
    Spans are ``[start, end]`` in seconds (any unit, as long as both inputs share
    it); ends are continuous, not step indices. With ``len(x) = max(end - start, 0)``
    (a reversed span is empty), ``inter = max(min(a_end, b_end) - max(a_start,
    b_start), 0)`` and ``union = len(a) + len(b) - inter``, the modes are:

    - ``"iou"``: ``inter / union``;
    - ``"iop"``: ``inter / len(a)``, intersection over the prediction (``a``);
    - ``"iog"``: ``inter / len(b)``, intersection over the ground truth (``b``);
    - ``"giou"``: generalised IoU ``iou - (hull - union) / hull`` with
      ``hull = max(a_end, b_end) - min(a_start, b_start)`` from the raw
      endpoints, in ``[-1, 1]``; for training losses.

    Degenerate cases: a zero denominator gives 0 (two zero-length spans, a
    zero-length ``a`` under ``"iop"``; ``"giou"`` with ``hull <= 0`` equals
    ``"iou"``). Touching spans have IoU 0. A NaN endpoint in either span gives NaN.
    Use :func:`grounding_overlap` for NExT-GQA's zero-length prediction rule.

    Extreme and infinite endpoints (every mode, CPU and CUDA alike, and
    :func:`grounding_overlap` too):

    - Finite endpoints never overflow: when an endpoint of a pair reaches
      ``2**1020`` in magnitude (``2**124`` in float32), that pair is computed
      with its endpoints scaled by 1/4, which is exact, so lengths such as
      ``1e308 - (-1e308)`` no longer overflow (identical spans
      ``[-1e308, 1e308]`` have IoU 1). Smaller endpoints take the plain
      formulas, bit for bit as before.
    - ``+inf`` and ``-inf`` are the limit of one huge value ``L -> inf`` (``L``
      and ``-L``, the same ``L`` for every infinite endpoint of the pair); each
      ratio is its limit, which always exists. So ``[-inf, inf]`` against
      itself has IoU 1, ``[0, inf]`` against ``[5, inf]`` IoU 1, ``[-inf, inf]``
      against ``[0, inf]`` IoU and IoP 0.5 and IoG 1, and a finite span against
      an infinite one IoU 0 (IoP 1 when it lies inside). IoU, IoP, IoG and GIoU
      of a pair always describe the same limit, so they stay consistent.

    dtypes: float32 and float64 are computed natively (mixed inputs promote to
    float64); integers are converted to float64 (NumPy) or the default float
    (torch); float16/bfloat16 torch tensors are computed in float32 and the
    result is cast back. Not differentiable yet: torch results never require
    grad."""


@numpy_on_cpu_tensors(("a", "b"), blockers=("out",))
def temporal_iou(a: Any, b: Any, mode: Literal["iou", "iop", "iog", "giou"] = "iou", *,
                 out: Any = None) -> Any:
    """Pairwise temporal overlap between every span of ``a`` and every span of ``b``.

    Args:
        a: ``[N, 2]`` spans (predictions), NumPy array or torch tensor.
        b: ``[M, 2]`` spans (ground truth), same kind and device as ``a``.
        mode: ``"iou"``, ``"iop"``, ``"iog"`` or ``"giou"``.
        out: optional preallocated result, written once and returned (no
            allocation, no page faults on a fresh buffer): a NumPy array for
            NumPy inputs, a torch tensor on the inputs' device for torch
            inputs; shape ``(N, M)``, the result dtype, C-contiguous,
            writeable, sharing no memory with ``a`` or ``b``, and (torch) not
            requiring grad. Anything else raises ValueError/TypeError before
            it is written.

    Returns:
        ``[N, M]`` overlaps, same kind and device as the inputs (``out``
        itself when given); ``result[i, j]`` compares ``a[i]`` with ``b[j]``.
        ``N = 0`` or ``M = 0`` gives an empty array without launching anything.

    Example:
        >>> import numpy as np
        >>> a = np.array([[0.0, 10.0], [5.0, 15.0]])
        >>> b = np.array([[0.0, 5.0], [0.0, 20.0]])
        >>> temporal_iou(a, b).tolist(), temporal_iou(a, b, "iop").tolist()
        ([[0.5, 0.5], [0.0, 0.5]], [[0.5, 1.0], [0.0, 1.0]])
    """
    return _overlap(a, b, mode, paired=False, out=out)


@numpy_on_cpu_tensors(("a", "b"), blockers=("out",))
def paired_temporal_iou(a: Any, b: Any, mode: Literal["iou", "iop", "iog", "giou"] = "iou",
                        *, out: Any = None) -> Any:
    """Elementwise temporal overlap: ``out[i] = overlap(a[i], b[i])``.

    Args:
        a: ``[N, 2]`` spans (predictions).
        b: ``[N, 2]`` spans (ground truth), same kind and device as ``a``.
        mode: ``"iou"``, ``"iop"``, ``"iog"`` or ``"giou"``.
        out: optional preallocated ``(N,)`` result, written once and returned;
            the same rules as :func:`temporal_iou`'s ``out``.

    Returns:
        ``[N]`` overlaps, same kind and device as the inputs (``out`` itself
        when given).

    Example:
        >>> import numpy as np
        >>> a = np.array([[0.0, 10.0], [5.0, 15.0]])
        >>> paired_temporal_iou(a, np.array([[0.0, 5.0], [20.0, 30.0]])).tolist()
        [0.5, 0.0]
        >>> paired_temporal_iou(a, np.array([[0.0, 5.0], [20.0, 30.0]]), "giou").tolist()
        [0.5, -0.2]
    """
    return _overlap(a, b, mode, paired=True, out=out)


temporal_iou.__doc__ += _MODES_DOC  # type: ignore[operator]
paired_temporal_iou.__doc__ += _MODES_DOC  # type: ignore[operator]


def _overlap(a: Any, b: Any, mode: str, paired: bool, out: Any = None) -> Any:
    op = "paired_temporal_iou" if paired else "temporal_iou"
    mode = _checks.string(mode, op, "mode")  # its values are checked in C++
    if _arrays.any_torch(a, b):
        _arrays.require_all_torch(op, a=a, b=b)
        from fastvqa.ops import _torch_temporal_iou

        if out is not None:
            return _torch_temporal_iou.temporal_iou_out(a, b, mode, paired, out)
        return _torch_temporal_iou.temporal_iou(a, b, mode, paired)
    a_np, b_np = _arrays.numpy_common_float(op, a=a, b=b)
    if out is None:
        return _C.temporal_iou(a_np, b_np, mode, paired, 0, _arrays.numpy_alloc)

    # The kernel asks for its output once, after its own checks of the inputs
    # (so a bad a or b is named first): ``out``, checked against that request.
    def use_out(shape, _dtype):
        return _arrays.numpy_out(out, op, tuple(shape), a_np.dtype, a=a_np, b=b_np)

    return _C.temporal_iou(a_np, b_np, mode, paired, 0, use_out, True)


@numpy_on_cpu_tensors(("pred", "gt"), ("gt_offsets",))
def grounding_overlap(pred: Any, gt: Any, gt_offsets: Any) -> Overlap:
    """Per-prediction IoU and IoP against a ragged set of ground-truth spans,
    exactly as the official NExT-GQA evaluator computes them.

    Args:
        pred: ``[N, 2]`` predicted spans ``[start, end]`` in seconds.
        gt: ``[K, 2]`` ground-truth spans of all predictions, concatenated row
            by row.
        gt_offsets: ``[N + 1]`` integer CSR offsets: the ground truth of
            prediction ``i`` is ``gt[gt_offsets[i]:gt_offsets[i + 1]]``. Must start
            at 0, be non-decreasing and end at ``K``; rows may be empty.

    Returns:
        :class:`Overlap` ``(iou, iop)``, each ``[N]``, same kind and device as ``pred``: the
        maximum over the row's ground truth, taken independently for IoU and IoP
        (they may come from different segments), starting from 0.

    Semantics (per prediction ``p`` and ground-truth segment ``g``):

    - zero-length prediction (``p_start == p_end``): IoU 0, and IoP 1 if
      ``g_start <= p_start <= g_end`` (inclusive) else 0;
    - otherwise ``inter = min(p_end, g_end) - max(p_start, g_start)`` (signed),
      ``hull = max(p_end, g_end) - min(p_start, g_start)``; IoU is
      ``inter / hull`` (0 if ``hull <= 0``) and IoP ``inter / (p_end - p_start)``
      (0 if ``p_end < p_start``). The hull, not ``len + len - inter``, is the
      denominator, as in the official code: the two agree for overlapping spans
      but round differently at exact 0.5 boundaries.
    - negative values (disjoint or reversed spans) lose to the starting 0, so a
      reversed prediction scores 0; an empty row scores 0.
    - NaN in the prediction, or in any of its ground-truth spans, gives NaN
      (the metrics layer uses a NaN prediction row for "no prediction").
    - Endpoints from ``2**1020`` in magnitude and ``+-inf`` follow the rule of
      :func:`temporal_iou` (exact 1/4 scaling; ``+-inf`` as the limit ``+-L``),
      so ``[-1e308, 1e308]`` against itself has IoU and IoP 1, where the
      official Python code overflows to ``inf / inf`` and scores 0. A
      zero-length prediction ``[inf, inf]`` is the point ``L``.

    Values are computed in the inputs' dtype (float64 reproduces the official
    Python evaluator bit for bit). Not differentiable: torch results never
    require grad.

    Example:
        >>> import numpy as np
        >>> pred = np.array([[0.0, 4.0], [3.0, 3.0]])  # the second: zero length
        >>> gt = np.array([[2.0, 6.0], [0.0, 5.0]])   # one segment per prediction
        >>> iou, iop = grounding_overlap(pred, gt, np.array([0, 1, 2]))
        >>> iou.tolist(), iop.tolist()
        ([0.3333333333333333, 0.0], [0.5, 1.0])
    """
    op = "grounding_overlap"
    if _arrays.any_torch(pred, gt, gt_offsets):
        _arrays.require_all_torch(op, pred=pred, gt=gt, gt_offsets=gt_offsets)
        from fastvqa.ops import _torch_temporal_iou

        return Overlap(*_torch_temporal_iou.grounding_overlap(pred, gt, gt_offsets))
    pred_np, gt_np = _arrays.numpy_common_float(op, pred=pred, gt=gt)
    offsets = _arrays.numpy_index(gt_offsets, op, "gt_offsets")
    return Overlap(*_C.grounding_overlap(pred_np, gt_np, offsets, 0, _arrays.numpy_alloc))


class GroundingScan(NamedTuple):
    """:func:`grounding_scan`'s result (for fastvqa.metrics.grounded_qa).

    Example:
        >>> import numpy as np
        >>> s = grounding_scan(np.array([[0.0, 4.0]]), np.array([[2.0, 6.0]]), [0, 1], [0.3])
        >>> s.iop.tolist(), s.counts.tolist(), s.n_answered
        ([0.5], [1, 1], 0)
    """

    iou: Any  #: [N] float64, as grounding_overlap (NaN for a "no prediction" row)
    iop: Any  #: [N] float64
    missing: Any  #: [N] bool, the prediction row is two NaNs
    counts: Any  #: [2 T] int64: rows with IoU >= t per threshold, then with IoP >= t
    bad_pred: int  #: first prediction row neither finite nor two NaNs, or -1
    bad_gt: int  #: first ground-truth row that is not finite, or -1
    sum_iou: float  #: IoU summed over the rows with a span, in NumPy's pairwise order
    sum_iop: float  #: the same for IoP
    answered: Any = None  #: [N] bool, pred_answers != no_answer (with answers)
    correct: Any = None  #: [N] bool, answered and right (with answers)
    n_answered: int = 0
    n_correct: int = 0
    n_gqa: int = 0  #: right answers with IoP >= gqa_iop
    unanswered: int = -1  #: first row with a span and no answer, or -1
    bad_gt_answer: int = -1  #: first negative gold answer, or -1


def grounding_scan(pred: Any, gt: Any, gt_offsets: Any, thresholds: Any,
                   pred_answers: Any = None, gt_answers: Any = None, *, no_answer: int = -1,
                   gqa_iop: float = 0.5) -> GroundingScan:
    """:func:`grounding_overlap` on float64 NumPy spans, together with what
    the grounded-QA metric reads next, in the same pass over the rows: which
    rows are "no prediction" (two NaNs), the first invalid prediction and
    ground-truth rows (for the metric's error), the threshold counts (``>=``;
    NaN counts nowhere), the answer flags and counts, and the IoU/IoP sums
    over the rows with a span prediction, added in NumPy's pairwise order (as
    ``iou[~missing].sum()`` adds them; :func:`numpy_order_sums` says whether
    this NumPy adds that way). The overlaps are grounding_overlap's bit for
    bit, and nothing depends on the number of threads.

    ``pred`` ``(N, 2)`` and ``gt`` ``(K, 2)`` float64, ``gt_offsets``
    ``(N + 1,)`` int64 (checked here), ``thresholds`` ``(T,)`` floats,
    ``pred_answers``/``gt_answers`` ``(N,)`` int64 or both None.

    >>> import numpy as np
    >>> s = grounding_scan(np.array([[0.0, 5.0], [np.nan, np.nan]]),
    ...                    np.array([[0.0, 10.0], [2.0, 3.0]]), np.array([0, 1, 2]), [0.5])
    >>> float(s.iou[0]), bool(s.missing[1]), s.counts.tolist(), s.bad_pred, s.sum_iou
    (0.5, True, [1, 1], -1, 0.5)
    """
    offsets = _arrays.numpy_index(gt_offsets, "grounded_qa", "gt_offsets")
    return GroundingScan(**_C._grounding_scan(pred, gt, offsets, thresholds, pred_answers,
                                              gt_answers, no_answer, gqa_iop))


_numpy_order: Any = None


def numpy_order_sums() -> bool:
    """Whether fastvqa's compiled pairwise sum adds float64 values exactly as
    this process's NumPy ``np.add.reduce`` does (checked once, on arrays of
    sizes around every block boundary of the algorithm, masked and not).

    Example:
        >>> numpy_order_sums() in (True, False)
        True
    """
    global _numpy_order
    if _numpy_order is None:
        import numpy as np

        ok = True
        for n in (*range(0, 18), 63, 127, 128, 129, 136, 255, 256, 257, 1000, 8193, 20011):
            i = np.arange(n)
            # Full mantissas over six decades: any other order rounds differently.
            x = np.sin(i * 1.7) * 10.0 ** (i % 7 - 3)
            skip = i % 10 == 3
            ok &= (_C._pairwise_sum(x, None) == np.add.reduce(x)
                   and _C._pairwise_sum(x, skip) == x[~skip].sum())
        _numpy_order = bool(ok)
    return _numpy_order
