# SPDX-License-Identifier: Apache-2.0
"""Scoring a grounding model during training with the benchmark's exact
metrics (the stateful classes of :mod:`fastvqa.metrics`, whose ``compute()``
equals ``fastvqa eval``'s one-shot functions and whose ``sync()`` joins the
shares of every ``torch.distributed`` rank).

Per benchmark (:data:`METRICS`):

- ``qvhighlights``: :class:`~fastvqa.metrics.MomentRetrieval` (R1@0.5,
  R1@0.7, mAP...) on the ranked decoded windows, and
  :class:`~fastvqa.metrics.HighlightDetection` on the predicted saliency per
  2-s clip (the largest saliency of the feature steps overlapping the clip)
  where the records carry saliency scores;
- ``nextgqa``: :class:`~fastvqa.metrics.GroundedQA` (mIoU, IoU@0.5, mIoP,
  IoP@0.5) on the top-1 window;
- ``wildqa``: :class:`~fastvqa.metrics.IoUF1` on the windows whose score is
  at least 0.5 (the top one when none is);
- every other benchmark: :class:`~fastvqa.metrics.RecallAtN` (R@1 and R@5
  at IoU 0.3 / 0.5 / 0.7, and mIoU of the top-1 window).

A query for which the model decodes no window (an I/O tagger that tags
nothing) is scored as a miss: one zero-length window at 0 s.

The headline metric (:data:`HEADLINE`) picks the best checkpoint unless the
config names another.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from fastvqa.errors import InputError

#: The metric a run's best checkpoint is chosen by, per benchmark.
HEADLINE = {"qvhighlights": "R1@0.5", "nextgqa": "IoU@0.5", "wildqa": "IoU-F1"}
DEFAULT_HEADLINE = "R@1,IoU=0.5"
#: Windows kept per query for the moment metrics (QVHighlights' 10).
MAX_WINDOWS = 10


def headline(benchmark: str) -> str:
    """The key of :data:`HEADLINE` for ``benchmark`` (R@1,IoU=0.5 otherwise)."""
    return HEADLINE.get(benchmark, DEFAULT_HEADLINE)


class Scorer:
    """The benchmark's metrics over one evaluation pass: :meth:`update` with
    each batch's decoded moments, :meth:`compute` at the end (``sync``: join
    the shares of every rank first; a collective, every rank calls it)."""

    def __init__(self, benchmark: str):
        from fastvqa import metrics as M

        self.benchmark = benchmark
        if benchmark == "qvhighlights":
            self.metrics = {"moments": M.MomentRetrieval(), "highlights": M.HighlightDetection()}
        elif benchmark == "nextgqa":
            self.metrics = {"grounding": M.GroundedQA()}
        elif benchmark == "wildqa":
            self.metrics = {"evidence": M.IoUF1()}
        else:
            self.metrics = {"moments": M.RecallAtN(n=(1, 5), iou_thresholds=(0.3, 0.5, 0.7))}

    def update(self, decoded: Sequence[Any], records: Sequence[Any],
               saliency: Optional[Any] = None, start: Optional[Any] = None,
               end: Optional[Any] = None) -> None:
        """One batch: ``decoded`` (per record, spans ``[K, 2]`` seconds and
        ``scores`` ``[K]``, best first: :class:`fastvqa.nn.DecodedMoments`),
        the batch's records, and, for highlights, the predicted saliency
        ``[B, T]`` with the steps' ``start``/``end`` ``[B, T]`` seconds."""
        windows = [_windows(d) for d in decoded]
        # a query with no decoded window is a miss, not a hole in the metric
        ranked = [w if len(w) else np.zeros((1, 3)) for w in windows]
        ids = [str(r.question_id) for r in records]
        gold = [np.asarray(r.spans, dtype=np.float64).reshape(-1, 2) for r in records]
        b = self.benchmark
        if b == "qvhighlights":
            self._update("moments", {i: w[:MAX_WINDOWS].tolist() for i, w in zip(ids, ranked)},
                         {i: g.tolist() for i, g in zip(ids, gold)})
            if saliency is not None:
                self._highlights(ids, records, saliency, start, end)
        elif b == "nextgqa":
            self._update("grounding", np.stack([_top(w) for w in windows]), gold)
        elif b == "wildqa":
            self._update("evidence", [_confident(w).tolist() for w in windows],
                         [g.tolist() for g in gold])
        else:
            self._update("moments", [w[:, :2].tolist() for w in ranked],
                         [g.tolist() for g in gold])

    def _update(self, name: str, preds: Any, target: Any) -> None:
        self.metrics[name].update(preds, target)

    def _highlights(self, ids, records, saliency, start, end) -> None:
        from fastvqa.metrics.highlight import clip_saliency

        sal = np.asarray(saliency, dtype=np.float64)
        st, en = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
        preds, target = {}, {}
        for b, (qid, r) in enumerate(zip(ids, records)):
            extra = r.extra or {}
            if "saliency_scores" not in extra or r.duration is None:
                continue
            table = clip_saliency(r.duration, extra.get("relevant_clip_ids", []),
                                  extra["saliency_scores"], key=qid)
            valid = ~np.isnan(st[b])
            preds[qid] = clip_scores(sal[b][valid], st[b][valid], en[b][valid], len(table))
            target[qid] = table
        if preds:
            self._update("highlights", preds, target)

    def compute(self, *, sync: bool = False) -> dict:
        """Every metric's values as one flat ``{key: float}`` (percent, as
        ``fastvqa eval`` prints them, at full precision)."""
        out: dict = {}
        for metric in self.metrics.values():
            if sync:
                metric = metric.sync()
            if not metric._batches:   # nothing in it on any rank (no saliency labels)
                continue
            out.update({k: float(v) for k, v in metric.compute().items()})
        if not out:
            raise InputError("evaluation: nothing was scored (an empty validation set?)")
        return out


def clip_scores(saliency: np.ndarray, start: np.ndarray, end: np.ndarray, n_clips: int,
                clip_seconds: float = 2.0) -> list:
    """Per 2-s clip ``c`` (seconds ``[2c, 2c + 2)``), the largest saliency of
    the steps overlapping it; a clip no step overlaps takes the nearest
    step's (steps ``[start, end)`` seconds).

    >>> clip_scores(np.array([0.1, 0.9, 0.3]), np.array([0., 1., 3.]),
    ...             np.array([1., 3., 5.]), 3)
    [0.9, 0.9, 0.3]
    """
    out = []
    mid = (start + end) / 2
    for c in range(n_clips):
        lo, hi = c * clip_seconds, (c + 1) * clip_seconds
        hit = (start < hi) & (end > lo)
        if hit.any():
            out.append(float(saliency[hit].max()))
        else:
            out.append(float(saliency[int(np.argmin(np.abs(mid - (lo + hi) / 2)))]))
    return out


def _windows(decoded: Any) -> np.ndarray:
    spans = np.asarray(decoded.spans.detach().cpu(), dtype=np.float64).reshape(-1, 2)
    scores = np.asarray(decoded.scores.detach().cpu(), dtype=np.float64).reshape(-1, 1)
    return np.concatenate([spans, scores], axis=1)


def _top(windows: np.ndarray) -> np.ndarray:
    return windows[0, :2] if len(windows) else np.array([0.0, 0.0])


def _confident(windows: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    keep = windows[windows[:, 2] >= threshold, :2]
    return keep if len(keep) else windows[:1, :2]


__all__ = ["DEFAULT_HEADLINE", "HEADLINE", "MAX_WINDOWS", "Scorer", "clip_scores", "headline"]
