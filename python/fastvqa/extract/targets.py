# SPDX-License-Identifier: Apache-2.0
"""Training targets of one record over one video's feature steps, as
:class:`~fastvqa.extract.StoreDataset` gives them: spans as inclusive step
indices, as normalised (centre, width), and per-step saliency.

Step ``t`` covers ``[start[t], end[t])`` seconds (a store's times).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from fastvqa.errors import InputError

#: QVHighlights' clip length: clip ``k`` (``relevant_clip_ids``) is ``[2k, 2k + 2)`` s
CLIP_SECONDS = 2.0


def spans_to_steps(spans: Any, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``[G, 2]`` int64 inclusive ``(first, last)`` step indices of spans in seconds.

    Step ``t`` covers ``[start[t], end[t])`` (a store's times, ascending). A
    span ``[s, e]`` maps to the steps whose interval overlaps ``[s, e)``: the
    first step with ``end > s`` to the last step with ``start < e``; a span
    with ``e <= s`` maps to the step holding ``s``. A span that overlaps no
    step (outside the features, or NaN) gives ``(-1, -1)``, the padding that
    :meth:`fastvqa.nn.SpanHead.loss` skips.

    >>> spans_to_steps([[1.2, 2.6], [9.0, 9.5]], np.arange(6) / 2, np.arange(1, 7) / 2)
    array([[ 2,  5],
           [-1, -1]])
    """
    spans = np.asarray(spans, dtype=np.float64).reshape(-1, 2)
    s, e = spans[:, 0], spans[:, 1]
    first = np.searchsorted(end, s, side="right")
    last = np.where(e > s, np.searchsorted(start, e, side="left"),
                    np.searchsorted(start, s, side="right")) - 1
    ok = (first <= last) & (first < len(start)) & (last >= 0) & ~np.isnan(spans).any(axis=1)
    return np.where(ok[:, None], np.stack([first, last], axis=1), -1).astype(np.int64)


def spans_to_cw(spans: Any, duration: float) -> np.ndarray:
    """``[G, 2]`` float32 ``(centre, width)`` of spans in seconds, as
    fractions of ``duration``: each span is first clipped to ``[0,
    duration]``, so both lie in ``[0, 1]`` (Moment-DETR's targets).

    >>> spans_to_cw([[10.0, 30.0], [140.0, 160.0]], 150.0).tolist()
    [[0.13333334028720856, 0.13333334028720856], [0.9666666388511658, 0.06666667014360428]]
    """
    spans = np.clip(np.asarray(spans, dtype=np.float64).reshape(-1, 2), 0.0, duration)
    centre = (spans[:, 0] + spans[:, 1]) / 2 / duration
    width = (spans[:, 1] - spans[:, 0]) / duration
    return np.stack([centre, width], axis=1).astype(np.float32)


def clip_saliency(record: Any) -> Optional[tuple]:
    """``(clip ids [k] int64, scores [k] float64)`` of a record with per-clip
    saliency (QVHighlights' ``relevant_clip_ids`` and ``saliency_scores`` in
    ``extra``; each score the mean of the annotators' ratings, 0..4), else
    ``None``. Malformed fields are an :class:`~fastvqa.errors.InputError`
    naming the record.

    >>> from fastvqa.data import QARecord
    >>> r = QARecord("v", "7", extra={"relevant_clip_ids": [3, 4],
    ...                               "saliency_scores": [[4, 2, 3], [1, 1, 1]]})
    >>> clip_saliency(r)
    (array([3, 4]), array([3., 1.]))
    """
    extra = getattr(record, "extra", None) or {}
    ids, scores = extra.get("relevant_clip_ids"), extra.get("saliency_scores")
    if ids is None or scores is None:
        return None
    where = f"record {record.key!r}"
    if not isinstance(ids, list) or not isinstance(scores, list) or len(ids) != len(scores):
        raise InputError(f"{where}: relevant_clip_ids and saliency_scores must be lists of the "
                         "same length (one score list per clip)")
    if not all(type(i) is int and i >= 0 for i in ids):
        raise InputError(f"{where}: relevant_clip_ids must be whole numbers >= 0")
    means = []
    for s in scores:
        s = s if isinstance(s, list) else [s]
        if not s or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                            and math.isfinite(v) for v in s):
            raise InputError(f"{where}: saliency_scores must hold finite numbers, got {s!r}")
        means.append(sum(s) / len(s))
    return np.asarray(ids, dtype=np.int64), np.asarray(means, dtype=np.float64)


def saliency_steps(saliency: Optional[tuple], start: np.ndarray, end: np.ndarray,
                   clip_seconds: float = CLIP_SECONDS) -> tuple:
    """``(scores [T] float32, mask [T] bool)`` of :func:`clip_saliency`'s
    clips on the steps: step ``t`` takes the score of the clip holding its
    midpoint (clip ``floor(mid / clip_seconds)``), 0 where that clip is not
    listed (QVHighlights rates only the relevant clips; the others are not
    relevant). The mask is True on every step when there is saliency, all
    False (scores 0) when there is none.

    >>> saliency_steps((np.array([1]), np.array([3.0])), np.arange(4.0), np.arange(1.0, 5.0))
    (array([0., 0., 3., 3.], dtype=float32), array([ True,  True,  True,  True]))
    """
    n = len(start)
    if saliency is None:
        return np.zeros(n, np.float32), np.zeros(n, bool)
    ids, scores = saliency
    by_clip = dict(zip(ids.tolist(), scores.tolist()))
    clips = np.floor((np.asarray(start) + np.asarray(end)) / 2 / clip_seconds).astype(np.int64)
    return (np.array([by_clip.get(int(k), 0.0) for k in clips], np.float32), np.ones(n, bool))
