# SPDX-License-Identifier: Apache-2.0
"""Highlight detection: QVHighlights HL-mAP and HL-Hit1.

:func:`highlight_detection` reproduces ``eval_highlight`` of the official
QVHighlights / Moment-DETR ``standalone_eval/eval.py`` (jayleicn/moment_detr):
per-clip saliency scores from 3 annotators (0-4) are binarised at the
"Fair" (>= 2), "Good" (>= 3) and "VeryGood" (>= 4) levels, and a
submission's one saliency score per clip is judged by

- ``HL-min-<level>-Hit1``: is the clip with the top predicted score
  positive for at least one annotator;
- ``HL-min-<level>-mAP``: the average precision of the predicted scores
  against each annotator's binary labels, averaged over annotators and
  queries.

"min" is the minimum saliency score of a positive clip, as in the official
names. See docs/anchors/eval.md §5.1.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from fastvqa.errors import InputError, InputTypeError
from fastvqa.metrics.base import Metric
from fastvqa.metrics.result import MetricResult

#: The official levels: name -> minimum saliency score (0-4) of a positive clip.
QVH_SALIENCY_LEVELS: dict[str, int] = {"Fair": 2, "Good": 3, "VeryGood": 4}

#: QVHighlights clips are 2 seconds long.
QVH_CLIP_SECONDS = 2.0


def clip_saliency(duration: float, relevant_clip_ids: Any, saliency_scores: Any, *,
                  clip_seconds: float = QVH_CLIP_SECONDS, key: str = "?") -> np.ndarray:
    """The full-video ``(int(duration / clip_seconds), A)`` float64 saliency
    table of one query, as the official ``mk_gt_scores`` builds it: row ``c``
    holds the ``A`` annotators' scores of clip ``c`` (clip ``c`` covers
    seconds ``[c * clip_seconds, (c + 1) * clip_seconds)``), 0 for clips not
    in ``relevant_clip_ids``. A clip id listed twice keeps its last scores
    (NumPy's fancy assignment).

    Raises :class:`~fastvqa.errors.InputError` for a video shorter than one
    clip, clip ids that are not integers in ``[0, n_clips)`` (the official
    code crashes on those past the end, and reads negative ones from the
    end), and scores that are not a ``(len(relevant_clip_ids), A)`` table of
    finite numbers with ``A >= 1``.

    Example:
        >>> # an 8-s video (four 2-s clips); clips 1 and 2 scored by two annotators
        >>> clip_saliency(8.0, [1, 2], [[4, 2], [1, 3]]).tolist()
        [[0.0, 0.0], [4.0, 2.0], [1.0, 3.0], [0.0, 0.0]]
    """
    n_clips = int(float(duration) / clip_seconds)
    if n_clips < 1:
        raise InputError(f"query {key!r}: duration {duration!r} s is shorter than one "
                         f"{clip_seconds:g}-s clip; there is no clip to score")
    ids = np.asarray(relevant_clip_ids)
    if ids.size == 0:
        ids = ids.reshape(0).astype(np.int64)
    if ids.ndim != 1 or not (np.issubdtype(ids.dtype, np.integer) or ids.size == 0):
        raise InputError(f"query {key!r}: relevant_clip_ids must be a list of integers, got "
                         f"{relevant_clip_ids!r}")
    if ids.size and (ids.min() < 0 or ids.max() >= n_clips):
        raise InputError(f"query {key!r}: relevant_clip_ids must lie in [0, {n_clips}) (the "
                         f"{n_clips} clips of a {duration!r}-s video), got {ids.tolist()}")
    try:
        scores = np.asarray(saliency_scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"query {key!r}: saliency_scores must be a table of numbers, one row "
                         f"per relevant clip, got {saliency_scores!r}") from None
    if scores.size == 0 and ids.size == 0:
        scores = scores.reshape(0, 3)
    if scores.ndim != 2 or scores.shape[0] != ids.size or scores.shape[1] < 1 \
            or not np.isfinite(scores).all():
        raise InputError(f"query {key!r}: saliency_scores must hold one row of annotator "
                         f"scores per relevant clip ({ids.size} rows), finite numbers, got "
                         f"shape {scores.shape}")
    table = np.zeros((n_clips, scores.shape[1]), dtype=np.float64)
    table[ids] = scores
    return table


def _finite(x: Any, key: str, ndim: int) -> np.ndarray:
    """One query's predicted scores (``ndim`` 1: one per clip) or saliency
    table (``ndim`` 2: clips x annotators) as float64, non-empty and finite
    (sklearn's precision_recall_curve, the official AP, refuses NaN and
    infinities)."""
    what = ("predicted saliency", "a list of numbers, one per clip") if ndim == 1 else \
        ("saliency", "a (clips, annotators) table of numbers")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputTypeError(f"{what[0]} of query {key!r}: expected {what[1]}, got "
                             f"{x!r}") from None
    if arr.ndim != ndim or 0 in arr.shape or not np.isfinite(arr).all():
        raise InputError(f"{what[0]} of query {key!r}: expected {what[1]}, non-empty and "
                         f"finite, got shape {arr.shape}")
    return arr


def _fit_length(scores: np.ndarray, n_clips: int) -> np.ndarray:
    """``compute_ap_from_tuple``: cut the prediction to the video's clips, or
    pad it with zeros."""
    if scores.shape[0] >= n_clips:
        return scores[:n_clips]
    out = np.zeros(n_clips, dtype=np.float64)
    out[:scores.shape[0]] = scores
    return out


def _average_precision(labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Per row of ``labels`` (``(R, n)`` 0/1), the official ``get_ap`` of
    ``scores`` (``(n,)``): sklearn's precision-recall curve (one point per
    distinct score, from the highest), precision made monotone (each point
    takes the best precision at its recall or higher), then the plain mean of
    that precision over the points where recall grows; 0 for a row without
    positives, 1 for a row without negatives."""
    n = scores.shape[0]
    order = np.argsort(-scores, kind="stable")
    s = scores[order]
    # The last position of each run of equal scores: one curve point per run.
    last = np.flatnonzero(np.append(s[1:] != s[:-1], True))
    tp = np.cumsum(labels[:, order], axis=1)[:, last]
    positives = tp[:, -1]
    precision = tp / (last + 1).astype(np.float64)
    best = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
    grows = np.diff(np.concatenate([np.zeros((tp.shape[0], 1)), tp], axis=1), axis=1) != 0
    out = np.empty(labels.shape[0], dtype=np.float64)
    for r in range(labels.shape[0]):
        if positives[r] == 0:
            out[r] = 0.0
        elif positives[r] == n:
            out[r] = 1.0
        else:
            # np.mean of the selected points, as the official code (sklearn
            # lists them from the lowest score; reversed here to match).
            out[r] = np.mean(best[r, grows[r]][::-1])
    return out


def highlight_detection(
    preds: Any,
    target: Any,
    *,
    levels: Optional[dict[str, float]] = None,
    match_number: bool = True,
) -> MetricResult:
    """QVHighlights highlight detection exactly as the official
    ``standalone_eval/eval.py`` (``eval_highlight``) computes it.

    Args:
        preds: per query, the predicted saliency ``[s_0, s_1, ...]``: one
            finite score per clip, clip ``c`` covering seconds ``[2c, 2c +
            2)``. A mapping ``query id -> scores`` or a sequence aligned with
            ``target``.
        target: per query, the full-video ``(n_clips, A)`` table of the
            ``A`` annotators' saliency scores (0-4; 0 for clips outside the
            relevant ones), as :func:`clip_saliency` builds it from a
            QVHighlights record (``n_clips = int(duration / 2)``). Same
            container kind as ``preds``; mapping keys compared as strings.
        levels: name -> minimum score of a positive clip (official: Fair 2,
            Good 3, VeryGood 4).
        match_number: require the same query ids (official); False evaluates
            the shared ones.

    Returns:
        :class:`MetricResult` ``"highlight_detection"`` with, for each level
        in percent at full precision (the official script rounds to 2
        decimals): ``"HL-min-<level>-mAP"`` and ``"HL-min-<level>-Hit1"``.

        - Hit1: the clip of the highest predicted score (``np.argmax``: the
          first one on ties) is a hit when at least one annotator's score for
          it is >= the level (the max over annotators); a top clip past the
          end of the video is a miss. Mean over queries.
        - mAP: the prediction is cut to ``n_clips`` scores or padded with
          zeros; for each annotator, the average precision of the scores
          against that annotator's binary labels (sklearn's
          ``precision_recall_curve``, one point per *distinct* score, so a
          run of tied scores is one point; the precision made monotone from
          the low-recall side; the plain mean of it over the points where
          recall grows). An annotator with no positive clip gives AP 0, one
          with only positive clips AP 1. Mean over annotators and queries.

        ``per_question``: ``key``, ``n_clips``, ``n_pred`` (scores given),
        ``top_clip``, and per level ``AP-<level>`` (mean over annotators,
        0-1) and ``Hit1-<level>`` (bool). ``info``: counts, the levels, the
        number of predictions cut or padded.

    Raises:
        TypeError / ValueError (:class:`fastvqa.errors.InputError`): bad
        containers, mismatched query ids (with ``match_number``), empty or
        non-finite scores, tables that are not ``(clips, annotators)``
        finite numbers, tables with different annotator counts, bad levels.

    Example:
        >>> table = clip_saliency(8.0, [1, 2], [[4, 2], [1, 3]])
        >>> highlight_detection([[0.1, 0.9, 0.5, 0.0]], [table], levels={"Good": 3})
        MetricResult(highlight_detection: HL-min-Good-mAP=75, HL-min-Good-Hit1=100)
    """
    from fastvqa.metrics.moment import _pair_queries

    levels = dict(QVH_SALIENCY_LEVELS if levels is None else levels)
    if not levels or any(not isinstance(v, (int, float)) or isinstance(v, bool)
                         or not math.isfinite(v) for v in levels.values()):
        raise InputError(f"levels must map names to finite minimum scores, got {levels!r}")
    keys, pred_rows, gt_rows, counts = _pair_queries(preds, target, match_number)
    scores = [_finite(p, k, 1) for k, p in zip(keys, pred_rows)]
    tables = [_finite(g, k, 2) for k, g in zip(keys, gt_rows)]
    annotators = {t.shape[1] for t in tables}
    if len(annotators) > 1:
        raise InputError(f"saliency tables have different numbers of annotators "
                         f"{sorted(annotators)}; the official mean needs the same number")
    n_q = len(keys)
    names = list(levels)
    thresholds = np.array([float(levels[name]) for name in names])
    n_a = annotators.pop() if annotators else 1
    ap = np.zeros((len(names), n_q, n_a))
    hit = np.zeros((len(names), n_q), dtype=bool)
    top = np.zeros(n_q, dtype=np.int64)
    cut = padded = 0
    for q, (s, table) in enumerate(zip(scores, tables)):
        n_clips = table.shape[0]
        cut += s.shape[0] > n_clips
        padded += s.shape[0] < n_clips
        positive = table[None, :, :] >= thresholds[:, None, None]  # (L, clips, A)
        top[q] = int(np.argmax(s))
        if top[q] < n_clips:
            hit[:, q] = positive[:, top[q], :].any(axis=1)
        labels = positive.transpose(0, 2, 1).reshape(-1, n_clips).astype(np.float64)
        ap[:, q, :] = _average_precision(labels, _fit_length(s, n_clips)).reshape(len(names), n_a)

    metrics: dict[str, float] = {}
    per_question: dict[str, Any] = {
        "key": keys,
        "n_clips": np.array([t.shape[0] for t in tables], dtype=np.int64),
        "n_pred": np.array([s.shape[0] for s in scores], dtype=np.int64),
        "top_clip": top,
    }
    for i, name in enumerate(names):
        # Official: np.mean over the (queries, annotators) array, np.mean of
        # the per-query max for Hit1; x100, then rounded to 2 decimals there.
        metrics[f"HL-min-{name}-mAP"] = float(100 * np.mean(ap[i])) if n_q else math.nan
        metrics[f"HL-min-{name}-Hit1"] = float(100 * np.mean(hit[i])) if n_q else math.nan
        per_question[f"AP-{name}"] = ap[i].mean(axis=1)
        per_question[f"Hit1-{name}"] = hit[i]
    info = {
        "mode": "qvhighlights (moment_detr standalone_eval eval_highlight)",
        **counts,
        "levels": levels,
        "annotators": n_a,
        "predictions_cut": int(cut),
        "predictions_padded": int(padded),
        "note": "the official script prints these rounded to 2 decimals",
    }
    return MetricResult("highlight_detection", metrics, per_question, info)


class HighlightDetection(Metric):
    """:func:`highlight_detection` over batches: ``HighlightDetection(levels=...,
    match_number=...)``, then ``update(preds, target)`` per batch;
    ``compute()`` equals ``highlight_detection`` on all batches concatenated.
    See :class:`fastvqa.metrics.Metric`.

    Example:
        >>> table = clip_saliency(8.0, [1, 2], [[4, 2], [1, 3]])
        >>> m = HighlightDetection(levels={"Good": 3})
        >>> m.update({"q1": [0.1, 0.9, 0.5, 0.0]}, {"q1": table})
        >>> m.update({"q2": [0.9, 0.1, 0.5, 0.0]}, {"q2": table})
        >>> m.compute()
        MetricResult(highlight_detection: HL-min-Good-mAP=58.33, HL-min-Good-Hit1=50)
    """

    function = "highlight_detection"
