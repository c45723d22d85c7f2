# SPDX-License-Identifier: Apache-2.0
"""Moment retrieval metrics: QVHighlights R1/mAP and R@n,IoU=m.

- :func:`moment_retrieval` reproduces the QVHighlights / Moment-DETR official
  ``standalone_eval/eval.py`` (``eval_moment_retrieval``): R1@t with the
  intersection over the *hull*, mAP@[0.5:0.05:0.95] with the *textbook* union,
  per-query ActivityNet-style AP, the length-bucket breakdown.
- :func:`recall_at_n` is the R@n,IoU=m of the ActivityNet Captions / Charades /
  TACoS literature: ``>=`` by default (VSLNet), ``rule="2dtan"`` for 2D-TAN's
  ``lib/core/eval.py`` (strict ``>``, NMS 0.5 before taking the top n).

All spans are ``[start, end]`` in seconds with continuous ends (not step
indices), ``start <= end``; :func:`moment_retrieval` also scores reversed
predicted windows (end < start) exactly as the official code does, unless
``strict=True``. See docs/anchors/eval.md §5.1, §5.2, §6.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Optional

import numpy as np

from fastvqa import _checks, ragged
from fastvqa.errors import InputError, InputTypeError
from fastvqa.metrics.base import Metric
from fastvqa.metrics.result import MetricResult
from fastvqa.ops import grounding_overlap, nms_1d, paired_temporal_iou

# The official script builds its thresholds as
# ``[float(f"{e:.2f}") for e in np.linspace(0.5, 0.95, 10)]``: parsing the
# two-decimal strings gives 0.65 exactly as Python writes it, not linspace's
# 0.6499999999999999, and an IoU of exactly 0.65 then counts.
QVH_THRESHOLDS: tuple[float, ...] = tuple(float(f"{e:.2f}") for e in np.linspace(0.5, 0.95, 10))

#: The official length buckets over ground-truth window length (seconds),
#: half-open ``(lo, hi]``; ``"full"`` (no filter) is always computed.
QVH_LENGTH_BUCKETS: dict[str, tuple[float, float]] = {
    "short": (0.0, 10.0),
    "middle": (10.0, 30.0),
    "long": (30.0, 150.0),
}

_RULES = {
    # name: (strict, nms_threshold)
    "2dtan": (True, 0.5),
    "vslnet": (False, None),
}


# ----------------------------------------------------------------------------
# Input handling
# ----------------------------------------------------------------------------


def _windows(x: Any, width: tuple[int, ...], what: str, key: str,
             allow_reversed: bool = False) -> np.ndarray:
    """One query's windows as a ``(n, w)`` float64 array, validated.

    ``width`` lists the accepted row lengths. A bare ``[start, end]`` (1-D, for
    ground truth) is read as one window. End < start is refused unless
    ``allow_reversed``.
    """
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputTypeError(
            f"{what} of query {key!r}: expected a list of "
            f"[start, end{', score' if 3 in width else ''}] windows ({err})") from None
    if arr.ndim == 1 and arr.shape[0] in width and 2 in width and 3 not in width:
        arr = arr.reshape(1, -1)
    if arr.ndim == 1 and arr.shape[0] == 0:
        arr = arr.reshape(0, width[0])
    if arr.ndim != 2 or arr.shape[1] not in width:
        cols = " or ".join(str(w) for w in width)
        raise InputError(f"{what} of query {key!r}: expected shape (n, {cols}), got {arr.shape}")
    if arr.shape[0] == 0:
        raise InputError(f"{what} of query {key!r}: no windows (the official evaluation "
                         f"needs at least one per query)")
    if not np.isfinite(arr).all():
        raise InputError(f"{what} of query {key!r}: windows must be finite numbers, "
                         f"got {arr.tolist()}")
    bad = np.flatnonzero(arr[:, 1] < arr[:, 0])
    if bad.size and not allow_reversed:
        raise InputError(f"{what} of query {key!r}: window {int(bad[0])} "
                         f"{arr[bad[0], :2].tolist()} has end < start")
    return arr


def _reversed_windows(preds: list, scored_as: str, refuse: str) -> tuple[list, dict, list]:
    """Per query, its predicted windows with end < start (``preds``: the
    ``(k, 2+)`` arrays); the ``info["reversed_windows"]`` counts and the
    warning line (none without such windows) saying how they were scored
    (``scored_as``) and which option refuses them (``refuse``)."""
    per_query = [int(np.count_nonzero(p[:, 1] < p[:, 0])) for p in preds]
    windows, queries = sum(per_query), sum(c > 0 for c in per_query)
    warnings = [f"{windows} predicted windows (in {queries} queries) have end < start; "
                f"{scored_as}; {refuse} refuses them"] if windows else []
    return per_query, {"windows": windows, "queries": queries}, warnings


def _pair_queries(predictions: Any, ground_truth: Any, match_number: bool
                  ) -> tuple[list[str], list[Any], list[Any], dict[str, Any]]:
    """Matches predictions to ground truth by key (mappings) or by position
    (sequences). Returns keys (prediction order), the two aligned lists and
    counts for ``info``."""
    pred_map = isinstance(predictions, Mapping)
    gt_map = isinstance(ground_truth, Mapping)
    if pred_map != gt_map:
        raise InputTypeError("preds and target must both be mappings (query id -> "
                             "windows) or both be sequences (aligned by position); got "
                             f"{type(predictions).__name__} and {type(ground_truth).__name__}")
    if not pred_map:
        for name, obj in (("preds", predictions), ("target", ground_truth)):
            if isinstance(obj, (str, bytes)) or not isinstance(obj, (Sequence, np.ndarray)):
                raise InputTypeError(f"{name} must be a mapping or a sequence of per-query "
                                     f"windows, got {type(obj).__name__}")
        if len(predictions) != len(ground_truth):
            raise InputError(f"preds has {len(predictions)} queries but target has "
                             f"{len(ground_truth)}; pass mappings keyed by query id to match them")
        keys = [str(i) for i in range(len(predictions))]
        return keys, list(predictions), list(ground_truth), {"evaluated": len(keys)}
    pred_keys = [str(k) for k in predictions]
    gt_keys = [str(k) for k in ground_truth]
    for name, ks in (("preds", pred_keys), ("target", gt_keys)):
        if len(set(ks)) != len(ks):
            dup = next(k for k in ks if ks.count(k) > 1)
            raise InputError(f"{name}: query id {dup!r} appears twice "
                             f"(ids are compared as strings)")
    pred_by = {str(k): v for k, v in predictions.items()}
    gt_by = {str(k): v for k, v in ground_truth.items()}
    missing = [k for k in gt_keys if k not in pred_by]
    extra = [k for k in pred_keys if k not in gt_by]
    if match_number and (missing or extra):
        # The official eval_submission asserts that the two qid sets are equal.
        raise InputError(
            "query ids of predictions and ground truth differ "
            f"({len(missing)} without a prediction, e.g. {missing[:3]}; {len(extra)} not in the "
            f"ground truth, e.g. {extra[:3]}); pass match_number=False to evaluate the shared "
            "ids only"
        )
    keys = [k for k in pred_keys if k in gt_by]
    info = {"evaluated": len(keys), "missing": len(missing), "skipped": len(extra)}
    return keys, [pred_by[k] for k in keys], [gt_by[k] for k in keys], info


# ----------------------------------------------------------------------------
# Shared kernels on CSR arrays
# ----------------------------------------------------------------------------


def _union_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Paired textbook IoU ``inter / (len_a + len_b - inter)`` as the official
    scripts compute it (Moment-DETR's ``compute_temporal_iou_batch_cross``,
    2D-TAN's ``nms``): same float64 operations as the compiled kernel, except
    that the official code has no zero guard, so two zero-length windows give
    0/0 = NaN where the kernel gives 0.

    A reversed ``a`` row (end < start; ``b`` is never reversed) is computed
    on the raw numbers as the official code does: its clipped intersection
    is 0 (``min(ends) - max(starts) <= a_end - a_start < 0``) and its union
    the raw ``len_a + len_b``, negative length included, so the IoU is 0, or
    0/0 = NaN where ``len_a = -len_b`` exactly (which the official AP then
    counts as a match: ``NaN < t`` is false). The kernel treats a reversed
    span as empty (0)."""
    iou = paired_temporal_iou(a, b, "iou")
    both_empty = (a[:, 1] == a[:, 0]) & (b[:, 1] == b[:, 0])
    reversed_a = a[:, 1] < a[:, 0]
    if both_empty.any() or reversed_a.any():
        iou = iou.copy()
        iou[both_empty] = np.nan
        raw_union = (a[:, 1] - a[:, 0]) + (b[:, 1] - b[:, 0])
        iou[reversed_a] = np.where(raw_union[reversed_a] == 0.0, np.nan, 0.0)
    return iou


def _hull_iou(pred: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """Paired ``max(0, inter) / (max(ends) - min(starts))``, 0 where the hull is 0
    (Moment-DETR's ``compute_temporal_iou_batch_paired``). The NExT-GQA kernel
    computes exactly this for one ground-truth window per row: a zero-length
    prediction has no intersection (IoU 0 both ways), a zero hull gives 0, and
    the signed intersection it divides is clamped at 0 afterwards, which gives
    the same value as clamping first. A reversed prediction has
    ``min(ends) - max(starts) < 0``, so the official value is 0 (the hull of
    a pair with a valid ground-truth window is >= 0); the kernel's signed
    NExT-GQA rule is not used for it."""
    n = pred.shape[0]
    iou, _ = grounding_overlap(pred, gt, np.arange(n + 1, dtype=np.int64))
    reversed_pred = pred[:, 1] < pred[:, 0]
    if reversed_pred.any():
        iou = np.where(reversed_pred, 0.0, iou)
    return iou


def _segment_first_argmax(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per non-empty segment, the global index of ``np.argmax`` of the segment:
    the first maximum, a NaN winning over everything (NumPy's rule)."""
    key = np.where(np.isnan(values), np.inf, values)
    starts = offsets[:-1]
    seg_max = np.maximum.reduceat(key, starts)
    is_max = key == np.repeat(seg_max, np.diff(offsets))
    idx = np.where(is_max, np.arange(values.shape[0]), values.shape[0])
    return np.minimum.reduceat(idx, starts)


def _pairs(p_off: np.ndarray, g_off: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All (prediction, ground-truth) index pairs within each query, grouped by
    prediction row (each row's ground truth in file order). Returns
    ``(pair_pred, pair_gt, pair_offsets)`` with ``pair_offsets`` ``(Kp + 1,)``."""
    p_query = ragged.segment_ids(p_off)
    g_count = np.diff(g_off)[p_query]
    pair_off = ragged.offsets_from_counts(g_count)
    pair_pred = np.repeat(np.arange(p_query.shape[0]), g_count)
    local = np.arange(pair_off[-1]) - np.repeat(pair_off[:-1], g_count)
    pair_gt = g_off[p_query][pair_pred] + local
    return pair_pred, pair_gt, pair_off


# ----------------------------------------------------------------------------
# QVHighlights R1 and mAP
# ----------------------------------------------------------------------------


def _r1_iou(pred: np.ndarray, p_off: np.ndarray, gt: np.ndarray, g_off: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """``compute_mr_r1``: the first predicted window (file order) of each query,
    the ground-truth window with the highest textbook IoU to it (``np.argmax``:
    first maximum, NaN wins), then the hull IoU of that pair."""
    first = pred[p_off[:-1], :2]
    g_count = np.diff(g_off)
    cross = _union_iou(np.repeat(first, g_count, axis=0), gt)
    chosen = _segment_first_argmax(cross, g_off)
    return _hull_iou(first, gt[chosen]), chosen - g_off[:-1]


def _sum_like_numpy(terms: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Row sums of the first ``count[r]`` entries of ``terms[r]``, each rounded
    exactly as ``np.sum`` of that 1-D list rounds it (the official code sums the
    AP terms with ``np.sum``, which switches to pairwise summation at 8 terms).
    Rows of equal length are summed together: NumPy reduces each row of a 2-D
    array with the same routine as a 1-D array."""
    out = np.zeros(terms.shape[0], dtype=np.float64)
    for n in np.unique(count):
        if n == 0:
            continue
        rows = np.flatnonzero(count == n)
        out[rows] = np.sum(terms[rows, :n], axis=1)
    return out


def _ap_per_query(pred: np.ndarray, p_off: np.ndarray, gt: np.ndarray, g_off: np.ndarray,
                  thresholds: np.ndarray) -> np.ndarray:
    """Per-query AP ``(Q, T)`` as Moment-DETR's
    ``compute_average_precision_detection`` computes it.

    ``pred`` rows must already be truncated (first N in file order). Per query:
    predictions sorted by score with a stable sort (ties keep file order); each
    prediction walks the ground truth in the order of
    ``np.argsort(tiou)[::-1]`` (descending IoU; NaN first; ties in NumPy's
    argsort order, reversed), stops with a false positive at the first IoU
    below the threshold, skips windows already matched at this threshold, and
    otherwise matches the first free one. AP is the VOC-2011 interpolated area:
    precision made monotone from the right, summed over the recall steps.
    """
    n_q = p_off.shape[0] - 1
    n_t = thresholds.shape[0]
    p_query = ragged.segment_ids(p_off)
    # Stable sort by descending score within each query (Python's list.sort
    # with key=-score in the official code): lexsort is stable.
    order = np.lexsort((-pred[:, 2], p_query))
    pred = pred[order]
    rank = np.arange(pred.shape[0]) - p_off[p_query]

    pair_pred, pair_gt, pair_off = _pairs(p_off, g_off)
    tiou = _union_iou(pred[pair_pred, :2], gt[pair_gt])
    # Position of each ground-truth window in the prediction's walk order. The
    # official code calls np.argsort on each prediction's IoU row; NumPy's
    # default sort is not stable (SIMD sorts from 4 elements on), so rows are
    # sorted here with the very same call, grouped by row length (NumPy sorts
    # each row of a 2-D array with the routine it uses for a 1-D array).
    g_count = np.diff(g_off)
    row_len = g_count[p_query]
    walk_pos = np.zeros(pair_pred.shape[0], dtype=np.int64)
    for g in np.unique(row_len):
        rows = np.flatnonzero(row_len == g)
        cols = pair_off[rows][:, None] + np.arange(g)
        desc = np.argsort(tiou[cols], axis=1)[:, ::-1]
        pos = np.empty_like(desc)
        np.put_along_axis(pos, desc, np.arange(g)[None, :].repeat(rows.shape[0], 0), axis=1)
        walk_pos[cols] = pos

    p_max = int(np.diff(p_off).max()) if n_q else 0
    g_max = int(g_count.max()) if n_q else 0
    # Dense (query, rank, gt) views; padding is invalid.
    iou_d = np.full((n_q, p_max, g_max), -np.inf)
    pos_d = np.full((n_q, p_max, g_max), np.iinfo(np.int64).max, dtype=np.int64)
    pair_q = p_query[pair_pred]
    pair_r = rank[pair_pred]
    pair_g = pair_gt - g_off[pair_q]
    iou_d[pair_q, pair_r, pair_g] = tiou
    pos_d[pair_q, pair_r, pair_g] = walk_pos
    valid = np.zeros((n_q, p_max), dtype=bool)
    valid[p_query, rank] = True
    gt_valid = np.arange(g_max)[None, :] < g_count[:, None]

    locked = np.zeros((n_q, n_t, g_max), dtype=bool)
    tp = np.zeros((n_q, n_t, p_max), dtype=bool)
    big = np.iinfo(np.int64).max
    q_idx = np.arange(n_q)[:, None]
    t_idx = np.arange(n_t)[None, :]
    for r in range(p_max):
        iou_r = iou_d[:, r, :]
        # "stop at the first IoU < t" + "skip locked" == the first unlocked
        # window, in walk order, among those whose IoU is not below t; NaN is
        # never below t, so a NaN IoU matches (as in the official code).
        ok = ~(iou_r[:, None, :] < thresholds[None, :, None])
        elig = ok & ~locked & gt_valid[:, None, :] & valid[:, r, None, None]
        key = np.where(elig, pos_d[:, r, None, :], big)
        j = np.argmin(key, axis=2)
        hit = elig.any(axis=2)
        locked[q_idx, t_idx, j] |= hit
        tp[:, :, r] = hit

    fp = valid[:, None, :] & ~tp
    tp_c = np.cumsum(tp, axis=2).astype(np.float64)
    fp_c = np.cumsum(fp, axis=2).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(valid[:, None, :], tp_c / (tp_c + fp_c), 0.0)
    recall = tp_c / g_count[:, None, None].astype(np.float64)
    # VOC 2011: mprecision = [0, p..., 0], mrecall = [0, r..., 1]; precision
    # made monotone from the right; sum (mrecall[i] - mrecall[i-1]) *
    # mprecision[i] over the i where recall changes. Padding rows repeat the
    # last recall (no step) and carry precision 0 (never raises a maximum).
    zeros = np.zeros((n_q, n_t, 1))
    mprec = np.concatenate([zeros, precision, zeros], axis=2)
    mprec = np.maximum.accumulate(mprec[:, :, ::-1], axis=2)[:, :, ::-1]
    n_pred = np.diff(p_off)
    last_recall = recall[np.arange(n_q), :, n_pred - 1] if n_q else np.zeros((0, n_t))
    recall = np.where(valid[:, None, :], recall, last_recall[:, :, None])
    mrec = np.concatenate([zeros, recall, np.ones((n_q, n_t, 1))], axis=2)
    step = mrec[:, :, 1:] != mrec[:, :, :-1]
    terms = (mrec[:, :, 1:] - mrec[:, :, :-1]) * mprec[:, :, 1:]
    # Compact each row's step terms to the front, in order, and sum them the
    # way np.sum does.
    flat_terms = terms.reshape(n_q * n_t, -1)
    flat_step = step.reshape(n_q * n_t, -1)
    front = np.argsort(~flat_step, axis=1, kind="stable")
    compact = np.take_along_axis(flat_terms, front, axis=1)
    ap = _sum_like_numpy(compact, flat_step.sum(axis=1))
    return ap.reshape(n_q, n_t)


def _qvh_core(pred: np.ndarray, p_off: np.ndarray, gt: np.ndarray, g_off: np.ndarray
              ) -> dict[str, Any]:
    thresholds = np.asarray(QVH_THRESHOLDS)
    n_q = p_off.shape[0] - 1
    if n_q == 0:
        # An empty bucket: the official np.mean over nothing gives NaN.
        nan = {str(t): math.nan for t in QVH_THRESHOLDS}
        return {"r1_iou": np.zeros(0), "chosen": np.zeros(0, dtype=np.int64),
                "ap": np.zeros((0, thresholds.shape[0])), "queries": 0,
                "R1": nan, "mAP": dict(nan), "average": math.nan}
    r1_iou, chosen = _r1_iou(pred, p_off, gt, g_off)
    ap = _ap_per_query(pred, p_off, gt, g_off, thresholds)
    out: dict[str, Any] = {"r1_iou": r1_iou, "chosen": chosen, "ap": ap, "queries": n_q}
    # Official: float(f"{np.mean(iou >= thd) * 100:.2f}"); we keep full precision.
    out["R1"] = {str(t): float(np.mean(r1_iou >= t) * 100) for t in QVH_THRESHOLDS}
    ap_thds = ap.mean(0)
    out["mAP"] = {str(t): float(100 * v) for t, v in zip(QVH_THRESHOLDS, ap_thds)}
    out["average"] = float(100 * np.mean(ap_thds))
    return out


def _bucket(pred: np.ndarray, p_off: np.ndarray, gt: np.ndarray, g_off: np.ndarray,
            lo: float, hi: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``get_data_by_range``: keep the ground-truth windows with
    ``lo < end - start <= hi``, drop queries left without one, keep all the
    predictions of the remaining queries."""
    length = gt[:, 1] - gt[:, 0]
    keep_w = (lo < length) & (length <= hi)
    g_query = ragged.segment_ids(g_off)
    n_q = g_off.shape[0] - 1
    counts = np.bincount(g_query[keep_w], minlength=n_q)
    keep_q = counts > 0
    new_g_off = ragged.offsets_from_counts(counts[keep_q])
    p_query = ragged.segment_ids(p_off)
    keep_p = keep_q[p_query]
    p_counts = np.diff(p_off)[keep_q]
    new_p_off = ragged.offsets_from_counts(p_counts)
    return pred[keep_p], new_p_off, gt[keep_w], new_g_off


def moment_retrieval(
    preds: Any,
    target: Any,
    *,
    max_pred_windows: Optional[int] = 10,
    length_buckets: Optional[Mapping[str, tuple[float, float]]] = QVH_LENGTH_BUCKETS,
    match_number: bool = True,
    strict: bool = False,
) -> MetricResult:
    """QVHighlights moment-retrieval metrics, exactly as the official
    ``standalone_eval/eval.py`` (jayleicn/moment_detr, ``eval_moment_retrieval``)
    computes them.

    Args:
        preds: per query, the predicted windows ``[[start, end, score],
            ...]`` (seconds; ``start <= end``; any order, the file order
            matters). Either a mapping ``query id -> windows`` or a sequence
            aligned with ``target``.
        target: per query, the relevant windows ``[[start, end], ...]``
            (seconds, at least one per query), same container kind as
            ``preds``. Mapping keys are compared as strings.
        max_pred_windows: keep only the first N windows of each query **in
            file order, before sorting by score** (official default 10; None
            keeps all). Only mAP uses the truncation; R1 uses the first window.
        length_buckets: name -> ``(lo, hi]`` bounds on ground-truth window
            length for the extra ``MR-<name>-mAP`` metrics (official: short
            (0, 10], middle (10, 30], long (30, 150]); None or ``{}`` to skip.
        match_number: the official check that predictions and ground truth
            hold the same query ids (ValueError otherwise). False evaluates
            the shared ids only, as ``match_number=False`` does.
        strict: refuse predicted windows with end < start (ValueError).
            By default they are scored as the official code scores them
            (see the edge cases below), and counted in
            ``info["reversed_windows"]`` with a line in ``info["warnings"]``.

    Returns:
        :class:`MetricResult` ``"moment_retrieval"`` with, in percent at full
        precision (the official script rounds to 2 decimals):

        - ``"R1@0.5"``, ``"R1@0.7"``: share of queries whose **first** window
          (file order, score ignored) has IoU >= t with the ground-truth
          window of highest IoU. The window is chosen by the textbook IoU
          (``np.argmax``: first maximum); the IoU compared with t is
          ``max(0, inter) / hull`` with ``hull = max(ends) - min(starts)``
          (0 when the hull is 0), as the official code computes it. Hull and
          union agree for overlapping windows but round differently: at an
          exact 0.5 boundary the two formulas can land on different sides.
        - ``"mAP@0.5"``, ``"mAP@0.75"``, ``"mAP"``: per-query average
          precision with the **textbook** union ``len_p + len_g - inter``,
          averaged over queries, at t = 0.5, 0.55, ..., 0.95 (``"mAP"`` is the
          mean over the ten). Per query: the first ``max_pred_windows``
          windows, stably sorted by descending score (ties keep file order);
          greedy one-to-one matching (each prediction takes the free
          ground-truth window of highest IoU if that IoU >= t, walking the
          windows in ``np.argsort(iou)[::-1]`` order; a window already matched
          is skipped, so a duplicate of a correct prediction is a false
          positive); VOC-2011 interpolated AP.
        - ``"MR-short-mAP"``, ``"MR-middle-mAP"``, ``"MR-long-mAP"`` (per
          ``length_buckets``): mAP on the queries that keep at least one
          ground-truth window with length in the bucket, against those
          windows only (all predictions kept). NaN for an empty bucket.

        ``per_question`` (evaluated queries, prediction order): ``key``,
        ``n_pred`` (after truncation), ``n_gt``, ``IoU`` (the R1 hull IoU,
        0-1), ``gt_index`` (the window R1 compared with), ``AP`` (mean over
        the ten thresholds, 0-1), ``AP@0.5``, ``AP@0.75``. ``info``: R1 and
        mAP at all ten thresholds, each bucket's counts and R1/mAP, counts.

    Edge cases (official behaviour kept): a NaN IoU (two zero-length windows,
    0/0 in the official code) wins the R1 argmax and counts as a match in AP
    (``NaN < t`` is false); the R1 IoU of that pair is 0 (zero hull). A
    reversed predicted window ``[s, e]``, ``e < s``, is computed on the raw
    numbers as there: R1 IoU 0; for AP its clipped intersection is 0 and its
    union ``(e - s) + len_gt``, so its IoU is 0 (a false positive), except
    where ``e - s = -len_gt`` exactly: 0/0 = NaN, a match. When a
    prediction has the same IoU with several ground-truth windows, AP walks
    them in the order ``np.argsort`` gives; NumPy's default sort is not stable
    (from 4 windows on it depends on the CPU's SIMD sort), so the official
    numbers themselves can differ between machines in such ties; this
    function makes the very same ``np.argsort`` call, so it agrees with the
    official script run with the same NumPy on the same machine. Per-query
    APs are bit-identical to the official ones (including its ``np.sum``
    rounding); the means over queries can differ in the last bit (the
    official script collects queries from a process pool in arbitrary order).

    Raises:
        TypeError: containers of the wrong kind, windows that are not numbers.
        ValueError: mismatched query ids (with ``match_number``), a query
            without predicted or ground-truth windows, ground-truth windows
            (or, with ``strict``, predicted ones) with end < start,
            non-finite values, ``max_pred_windows < 1``, bad buckets.

        Both are :class:`fastvqa.errors.InputError` (the type errors also
        ``TypeError``): the caller's data or arguments. Any other exception
        is a fastvqa bug.

    Example:
        >>> preds = {"q1": [[0, 10, 0.9], [20, 30, 0.5]], "q2": [[5, 8, 0.8]]}
        >>> target = {"q1": [[0, 8]], "q2": [[40, 50]]}
        >>> moment_retrieval(preds, target, length_buckets=None)
        MetricResult(moment_retrieval: R1@0.5=50, R1@0.7=50, mAP@0.5=50, mAP@0.75=50, mAP=35)
    """
    max_pred_windows = _checks.optional_integer(max_pred_windows, "moment_retrieval",
                                                "max_pred_windows", minimum=1)
    buckets = dict(length_buckets or {})
    for name, bounds in buckets.items():
        if name == "full" or len(tuple(bounds)) != 2 or not float(bounds[0]) < float(bounds[1]):
            raise InputError(f"length bucket {name!r}: expected (lo, hi) with lo < hi and a name "
                             f"other than 'full', got {bounds!r}")
    keys, pred_rows, gt_rows, counts = _pair_queries(preds, target, match_number)
    preds = [_windows(p, (3,), "predictions", k, allow_reversed=not strict)
             for k, p in zip(keys, pred_rows)]
    _, reversed_info, reversed_warnings = _reversed_windows(
        preds, "scored on the raw numbers as the official evaluation does (IoU 0, or 0/0 = NaN, "
        "a match, where end - start = -len(gt))", "strict=True")
    if max_pred_windows is not None:
        preds = [p[:max_pred_windows] for p in preds]
    gts = [_windows(g, (2,), "ground truth", k) for k, g in zip(keys, gt_rows)]
    pred, p_off = ragged.from_rows(preds, width=3)
    gt, g_off = ragged.from_rows(gts, width=2)

    full = _qvh_core(pred, p_off, gt, g_off)
    metrics = {
        "R1@0.5": full["R1"]["0.5"],
        "R1@0.7": full["R1"]["0.7"],
        "mAP@0.5": full["mAP"]["0.5"],
        "mAP@0.75": full["mAP"]["0.75"],
        "mAP": full["average"],
    }
    bucket_info: dict[str, Any] = {}
    for name, (lo, hi) in buckets.items():
        b_pred, b_poff, b_gt, b_goff = _bucket(pred, p_off, gt, g_off, float(lo), float(hi))
        res = _qvh_core(b_pred, b_poff, b_gt, b_goff)
        metrics[f"MR-{name}-mAP"] = res["average"]
        bucket_info[name] = {
            "range": [lo, hi], "queries": res["queries"],
            "share": 100.0 * res["queries"] / len(keys) if keys else math.nan,
            "mAP": res["average"], "mAP@0.5": res["mAP"]["0.5"], "mAP@0.75": res["mAP"]["0.75"],
            "R1@0.5": res["R1"]["0.5"], "R1@0.7": res["R1"]["0.7"],
        }
    ap = full["ap"]
    per_question = {
        "key": keys,
        "n_pred": np.diff(p_off),
        "n_gt": np.diff(g_off),
        "IoU": full["r1_iou"],
        "gt_index": full["chosen"],
        "AP": ap.mean(axis=1) if len(keys) else np.zeros(0),
        "AP@0.5": ap[:, 0],
        "AP@0.75": ap[:, 5],
    }
    info = {
        "mode": "qvhighlights (moment_detr standalone_eval)",
        **counts,
        "max_pred_windows": max_pred_windows,
        "thresholds": list(QVH_THRESHOLDS),
        "R1": full["R1"],
        "mAP_by_threshold": full["mAP"],
        "buckets": bucket_info,
        "note": "the official script prints these rounded to 2 decimals",
        "reversed_windows": reversed_info,
    }
    if reversed_warnings:
        info["warnings"] = reversed_warnings
    return MetricResult("moment_retrieval", metrics, per_question, info)


# ----------------------------------------------------------------------------
# R@n, IoU=m (2D-TAN, VSLNet)
# ----------------------------------------------------------------------------


def _nms_ragged(spans: np.ndarray, offsets: np.ndarray, threshold: float, top_k: int) -> np.ndarray:
    """2D-TAN's ``nms`` on every query at once: walk the candidates in the given
    order (assumed sorted by score), keep one, drop every later candidate whose
    textbook IoU with it is **not** ``<= threshold``, stop after ``top_k`` kept.
    Returns a boolean keep mask over ``spans``.

    That is :func:`fastvqa.ops.nms_1d` with equal scores and
    ``ties="stable"`` (input order; it suppresses at IoU ``> threshold``),
    except for one pair: two zero-length windows have IoU 0/0 = NaN there,
    which is not ``<= threshold``, so once a zero-length window is kept every
    later one of its query is dropped. A zero-length window overlaps no other
    window (IoU 0 either way), so the first one of each query is the only one
    NMS needs to see."""
    n = spans.shape[0]
    n_q = offsets.shape[0] - 1
    query = ragged.segment_ids(offsets)
    index = np.arange(n)
    zero = spans[:, 1] == spans[:, 0]
    first_zero = np.full(n_q, n, dtype=np.int64)
    np.minimum.at(first_zero, query[zero], index[zero])
    cand = np.flatnonzero(~zero | (index == first_zero[query]))
    cand_off = ragged.offsets_from_counts(np.bincount(query[cand], minlength=n_q))
    kept = nms_1d(spans[cand], np.zeros(cand.shape[0]), iou_threshold=threshold,
                  offsets=cand_off, ties="stable")
    # Equal scores: each query's kept windows come in input order; keep top_k.
    counts = np.diff(kept.offsets)
    rank = np.arange(kept.keep.shape[0]) - np.repeat(kept.offsets[:-1], counts)
    keep = np.zeros(n, dtype=bool)
    keep[cand[kept.keep[rank < top_k]]] = True
    return keep


def _nms_2dtan_definition(spans: np.ndarray, threshold: float, top_k: int) -> np.ndarray:
    """2D-TAN's ``nms`` on one query's ranked windows, as its definition reads
    (float64): keep the first, drop every later window whose overlap
    ``inter / (len_a + len_b - inter)`` is not ``<= threshold`` (0/0 = NaN is
    dropped), stop after ``top_k``. For queries with reversed windows, which
    :func:`fastvqa.ops.nms_1d` refuses. Returns the keep mask."""
    start, end = spans[:, 0], spans[:, 1]
    length = end - start
    keep = np.zeros(spans.shape[0], dtype=bool)
    order = np.arange(spans.shape[0])
    kept = 0
    while order.size and kept < top_k:
        i, rest = order[0], order[1:]
        keep[i] = True
        kept += 1
        inter = np.maximum(0.0, np.minimum(end[i], end[rest]) - np.maximum(start[i], start[rest]))
        with np.errstate(divide="ignore", invalid="ignore"):
            overlap = inter / (length[i] + length[rest] - inter)
        order = rest[overlap <= threshold]
    return keep


def recall_at_n(
    preds: Any,
    target: Any,
    *,
    n: Sequence[int] = (1, 5),
    iou_thresholds: Sequence[float] = (0.3, 0.5, 0.7),
    strict: bool = False,
    nms_threshold: Optional[float] = None,
    rule: Optional[Literal["2dtan", "vslnet"]] = None,
    sort_by_score: bool = False,
    match_number: bool = True,
    refuse_reversed: bool = False,
) -> MetricResult:
    """R@n,IoU=m: the share of queries where any of the top-n predicted windows
    has IoU with the ground truth at least m (percent).

    Args:
        preds: per query, a **ranked** list of windows ``[[start, end],
            ...]`` or ``[[start, end, score], ...]`` (best first; seconds).
            A mapping ``query id -> windows`` or a sequence aligned with
            ``ground_truth``.
        target: per query one window ``[start, end]`` (2D-TAN, VSLNet)
            or several ``[[start, end], ...]`` (a prediction's IoU is then its
            maximum over them).
        n: the ranks n (positive ints).
        iou_thresholds: the m values.
        strict: compare ``IoU > m`` (2D-TAN) instead of ``IoU >= m``
            (VSLNet and most others). At an IoU of exactly m the two differ.
        nms_threshold: when set, 2D-TAN's NMS runs first: walking the ranked
            list, a window is kept if its textbook IoU with every window kept
            before it is ``<= nms_threshold``; at most ``max(n)`` are kept.
            None: the top n of the list as given.
        rule: a named preset; ``"2dtan"`` = ``strict=True, nms_threshold=0.5``
            (microsoft/2D-TAN ``lib/core/eval.py`` with the ActivityNet config
            TIOU 0.3,0.5,0.7, RECALL 1,5); ``"vslnet"`` = ``>=``, no NMS.
            Combined with ``nms_threshold`` it raises.
        sort_by_score: stable-sort each query's windows by descending score
            (third column) first; otherwise the given order is the ranking.
        match_number: with mappings, require the same query ids (else
            evaluate the shared ones).
        refuse_reversed: refuse predicted windows with end < start
            (ValueError). By default they are scored as 2D-TAN and VSLNet
            score them, counted in ``info["reversed_windows"]`` with a line
            in ``info["warnings"]`` (below).

    Returns:
        :class:`MetricResult` ``"recall_at_n"`` with ``"R@{n},IoU={m}"`` for
        every n and m (percent, ``mean(hit) * 100``) and ``"mIoU"``: the mean
        IoU of the top-1 window (2D-TAN's and VSLNet's "mIoU"), percent.

    IoU is ``max(0, inter) / hull`` (``hull = max(ends) - min(starts)``), the
    formula of both 2D-TAN and VSLNet; it equals the textbook IoU whenever
    the windows overlap. Where the hull is 0 (a zero-length prediction on the
    same zero-length ground truth) 2D-TAN gives NaN (never a hit, but it
    poisons its mIoU) and VSLNet raises ZeroDivisionError; here it is 0.
    ``per_question``: ``key``, ``IoU`` (top-1, 0-1), one boolean column per
    (n, m).

    A reversed predicted window ``[s, e]``, ``e < s``, has a negative signed
    intersection with every window, so both formulas give it IoU 0 (2D-TAN
    NaN and VSLNet ZeroDivisionError where the hull is 0; here 0). In 2D-TAN's
    NMS its overlap with a window is ``0 / (len_a + len_b)`` with a negative
    ``len``: 0, and so kept, unless ``len_a + len_b == 0`` (0/0 = NaN, not
    ``<= threshold``: suppressed); queries holding a reversed window run that
    definition directly.

    Raises:
        TypeError / ValueError: bad containers, a query without predicted
            windows, non-finite values (or, with ``refuse_reversed``, windows
            with end < start), bad n or thresholds, an unknown rule; both
            :class:`fastvqa.errors.InputError`.

    Example:
        >>> preds = [[[0, 10], [20, 30]], [[5, 8], [40, 49]]]  # ranked, best first
        >>> recall_at_n(preds, [[0, 8], [40, 50]], n=(1, 2), iou_thresholds=(0.5,))
        MetricResult(recall_at_n: R@1,IoU=0.5=50, R@2,IoU=0.5=100, mIoU=40)
    """
    if rule is not None:
        if rule not in _RULES:
            raise InputError(f"unknown rule {rule!r}; expected one of {sorted(_RULES)}")
        if nms_threshold is not None:
            raise InputError(f"rule={rule!r} sets nms_threshold itself; pass one or the other")
        rule_strict, nms_threshold = _RULES[rule]
        if strict and not rule_strict:
            raise InputError(f"rule={rule!r} uses '>=', which contradicts strict=True")
        strict = rule_strict
    ns = [int(v) for v in n]
    if not ns or any(isinstance(v, bool) or int(v) != v or v < 1 for v in n):
        raise InputError(f"n must be positive integers, got {n!r}")
    ms = [float(m) for m in iou_thresholds]
    if not ms or any(not 0.0 <= m <= 1.0 for m in ms):
        raise InputError(f"iou_thresholds must be numbers in [0, 1], got {iou_thresholds!r}")
    if nms_threshold is not None:
        nms_threshold = _checks.unit_interval(nms_threshold, "recall_at_n", "nms_threshold")

    keys, pred_rows, gt_rows, counts = _pair_queries(preds, target, match_number)
    if not isinstance(refuse_reversed, bool):
        raise InputError(f"refuse_reversed: expected True or False, got {refuse_reversed!r}")
    preds = [_windows(p, (2, 3), "predictions", k, allow_reversed=not refuse_reversed)
             for k, p in zip(keys, pred_rows)]
    if sort_by_score:
        for k, p in zip(keys, preds):
            if p.shape[1] != 3:
                raise InputError(f"predictions of query {k!r}: sort_by_score needs "
                                 f"[start, end, score] windows")
        preds = [p[np.argsort(-p[:, 2], kind="stable")] for p in preds]
    preds = [p[:, :2] for p in preds]
    gts = [_windows(g, (2,), "ground truth", k) for k, g in zip(keys, gt_rows)]
    spans, p_off = ragged.from_rows(preds, width=2)
    gt, g_off = ragged.from_rows(gts, width=2)
    n_q = len(keys)
    top = max(ns)

    reversed_count, reversed_info, reversed_warnings = _reversed_windows(
        preds, "scored as 2D-TAN and VSLNet score them (IoU 0; in NMS they overlap nothing "
        "unless their lengths cancel)", "refuse_reversed=True")
    if nms_threshold is not None:
        keep = _nms_ragged(spans, p_off, float(nms_threshold), top)
        for q in np.flatnonzero(reversed_count):
            lo, hi = p_off[q], p_off[q + 1]
            keep[lo:hi] = _nms_2dtan_definition(spans[lo:hi], float(nms_threshold), top)
    else:
        keep = np.ones(spans.shape[0], dtype=bool)
    # Rank among the kept windows of the query; only the top max(n) matter.
    p_query = ragged.segment_ids(p_off)
    kept_before = np.cumsum(keep) - keep
    base = kept_before[p_off[:-1]] if n_q else np.zeros(0, dtype=np.int64)
    rank = kept_before - base[p_query]
    use = keep & (rank < top)
    cand = np.flatnonzero(use)
    c_query = p_query[cand]
    c_rank = rank[cand]
    # Each candidate against all its query's ground-truth windows: max hull IoU.
    g_count = np.diff(g_off)
    rows_gt = np.repeat(np.arange(cand.shape[0]), g_count[c_query])
    c_off = ragged.offsets_from_counts(g_count[c_query])
    local = np.arange(c_off[-1]) - np.repeat(c_off[:-1], g_count[c_query])
    flat_gt = gt[g_off[c_query][rows_gt] + local]
    iou, _ = grounding_overlap(spans[cand], flat_gt, c_off)

    metrics: dict[str, float] = {}
    per_question: dict[str, Any] = {"key": keys}
    top1 = np.zeros(n_q)
    top1[c_query[c_rank == 0]] = iou[c_rank == 0]
    per_question["IoU"] = top1
    for r in ns:
        for m in ms:
            passed = (iou > m) if strict else (iou >= m)
            hit_c = passed & (c_rank < r)
            hit = np.bincount(c_query[hit_c], minlength=n_q) > 0
            name = f"R@{r},IoU={m:g}"
            metrics[name] = float(np.mean(hit) * 100) if n_q else math.nan
            per_question[name] = hit
    metrics["mIoU"] = float(np.mean(top1) * 100) if n_q else math.nan
    info = {
        "mode": f"rule={rule}" if rule else ("strict '>'" if strict else "'>='"),
        **counts,
        "strict": strict,
        "nms_threshold": nms_threshold,
        "n": ns,
        "iou_thresholds": ms,
        "reversed_windows": reversed_info,
    }
    if reversed_warnings:
        info["warnings"] = reversed_warnings
    return MetricResult("recall_at_n", metrics, per_question, info)


class MomentRetrieval(Metric):
    """:func:`moment_retrieval` over batches: ``MomentRetrieval(max_pred_windows=...,
    length_buckets=..., match_number=...)``, then ``update(preds, target)``
    per batch (mappings by query id, or sequences, the same kind in every
    batch; a query id given twice is an error). ``compute()`` equals
    ``moment_retrieval`` on all batches concatenated (mAP is not a sum over
    batches: the state is the windows themselves). See
    :class:`fastvqa.metrics.Metric`.

    Example:
        >>> m = MomentRetrieval(length_buckets=None)
        >>> m.update({"q1": [[0, 10, 0.9], [20, 30, 0.5]]}, {"q1": [[0, 8]]})
        >>> m.update({"q2": [[5, 8, 0.8]]}, {"q2": [[40, 50]]})
        >>> m.compute()
        MetricResult(moment_retrieval: R1@0.5=50, R1@0.7=50, mAP@0.5=50, mAP@0.75=50, mAP=35)
    """

    function = "moment_retrieval"


class RecallAtN(Metric):
    """:func:`recall_at_n` over batches: ``RecallAtN(n=..., iou_thresholds=...,
    rule=..., ...)``, then ``update(preds, target)`` per batch; ``compute()``
    equals ``recall_at_n`` on all batches concatenated. See
    :class:`fastvqa.metrics.Metric`.

    Example:
        >>> m = RecallAtN(n=(1,), iou_thresholds=(0.5,))
        >>> m.update([[[0, 10]]], [[0, 8]])
        >>> m.update([[[5, 8]]], [[40, 50]])
        >>> m.compute()
        MetricResult(recall_at_n: R@1,IoU=0.5=50, mIoU=40)
    """

    function = "recall_at_n"
