# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval qvhighlights`` and its trivial baselines.

Evaluates a QVHighlights moment-retrieval submission against the
ground-truth JSON Lines file with the official ``standalone_eval`` rules
(:func:`fastvqa.metrics.moment_retrieval`). Highlight detection (saliency
Hit@1 / mAP) is not computed.

Files: ``--pred`` the submission (JSON Lines with ``qid`` and
``pred_relevant_windows`` ``[[start, end, score], ...]`` per line, or a JSON
array of those objects, which is what ``fastvqa baseline qvhighlights ...``
writes); ``--gt`` the ground truth JSON Lines (``qid``, ``query``, ``vid``,
``duration``, ``relevant_windows``).

From Python: :func:`evaluate` ``(gt=..., pred=..., max_pred_windows=10,
partial=False)`` and the baselines :func:`full_video`, :func:`centre_half`,
:func:`random_span` ``(gt=..., seed=0)``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from fastvqa._argtypes import int_at_least
from fastvqa.errors import CommandError
from fastvqa.evaluation import (Baseline, Benchmark, add_question_columns, missing_warning,
                                register_baseline, register_benchmark, require_records)
from fastvqa.metrics.result import MetricResult

NAME = "qvhighlights"


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-pred-windows", type=int_at_least(0), default=10, metavar="N",
                        help="mAP keeps the first N windows of each query in file order, before "
                             "sorting by score (official: 10; 0 keeps all)")
    parser.add_argument("--partial", action="store_true",
                        help="evaluate the qids present in both files (the official script "
                             "requires the same qids: match_number=True)")


def _ground_truth(path: str) -> tuple[list, dict[str, np.ndarray]]:
    from fastvqa.data.errors import DataFormatError
    from fastvqa.data.moment import load_qvhighlights

    records = load_qvhighlights(path)
    gt = {}
    for rec in records:
        if rec.spans.shape[0] == 0:
            raise DataFormatError(path, "no relevant_windows (the answer-less test release cannot "
                                  "be evaluated)", record=f"qid {rec.extra['qid']!r}",
                                  field="relevant_windows")
        gt[rec.question_id] = rec.spans
    return records, gt


def evaluate(*, gt, pred, max_pred_windows: int = 10, partial: bool = False) -> MetricResult:
    """QVHighlights moment retrieval with the official ``standalone_eval`` rules.

    Args:
        gt: the ground-truth JSON Lines file (or a JSON array of its objects).
        pred: the submission: JSON Lines with ``qid`` and
            ``pred_relevant_windows`` ``[[start, end, score], ...]``, or a JSON
            array of those objects (path).
        max_pred_windows: mAP keeps the first N windows of each query in file
            order, before sorting by score (official: 10; 0 keeps all).
        partial: evaluate the qids in both files (the official script
            requires the same qids).

    Returns a :class:`~fastvqa.metrics.MetricResult` named
    ``"qvhighlights"``: R1@0.5, R1@0.7, mAP@0.5, mAP@0.75, mAP (percent) and
    the length buckets in ``info["buckets"]``.
    """
    from fastvqa.data.moment import load_qvhighlights_submission
    from fastvqa.metrics import moment_retrieval

    from fastvqa.data.errors import DataFormatError

    if isinstance(max_pred_windows, bool) or not isinstance(max_pred_windows, int) \
            or max_pred_windows < 0:
        raise CommandError(f"max_pred_windows: expected an integer >= 0, got "
                           f"{max_pred_windows!r}")
    gt_path = gt
    records, gt = _ground_truth(gt_path)
    require_records(records, gt_path, "queries")
    predictions = load_qvhighlights_submission(pred)
    if partial and not set(predictions) & set(gt):
        example = next(iter(predictions), None)
        raise CommandError(f"{pred}: no prediction qid matches a ground-truth query (e.g. "
                           f"{example!r}; ground-truth qids are like {records[0].question_id!r})")
    from fastvqa.errors import InputError

    try:
        result = moment_retrieval(predictions, gt,
                                  max_pred_windows=max_pred_windows or None,
                                  match_number=not partial)
        result.benchmark = "qvhighlights"
    except InputError as err:
        # Both files were validated by their loaders; what is left is the
        # official qid check (the submission does not cover the ground truth).
        # Any other error is a fastvqa bug and keeps its traceback.
        raise DataFormatError(pred, str(err), field="qid") from None
    keys = result.per_question["key"]
    add_question_columns(result, prediction=[predictions.get(k) for k in keys],
                         ground_truth=[gt[k] for k in keys])
    n = result.info["evaluated"]
    counts = {name: n for name in result.metrics}
    for name, bucket in result.info.get("buckets", {}).items():
        counts[f"MR-{name}-mAP"] = bucket["queries"]
    result.info["counts"] = counts
    missing_warning(result, len(gt), result.info["missing"], what="ground-truth queries",
                    policy="--partial evaluates the queries in both files only (the "
                           "official script refuses such a submission)")
    return result


def _plot(result: MetricResult, path: str) -> None:
    """Two panels: the distribution of the top-1 window's IoU (the R1 IoU)
    with the 0.5 / 0.7 thresholds, and mAP by ground-truth window length."""
    try:
        # The object API on an Agg canvas: no pyplot state, no global backend change.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'fastvqa[plot]'") from None

    iou = np.asarray(result.per_question["IoU"], dtype=np.float64)
    fig = Figure(figsize=(10, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.hist(iou, bins=np.linspace(0.0, 1.0, 21), color="tab:blue", edgecolor="white")
    for t, style in ((0.5, "--"), (0.7, ":")):
        ax1.axvline(t, color="tab:red", linestyle=style, linewidth=1,
                    label=f"R1@{t} = {result[f'R1@{t}']:.1f}%")
    ax1.legend(loc="upper right", fontsize=8)
    ax1.set_xlabel("IoU of the first predicted window (hull)")
    ax1.set_ylabel("queries")
    ax1.set_title(f"top-1 IoU, {len(iou)} queries")
    names, values, counts = [], [], []
    for name, bucket in result.info.get("buckets", {}).items():
        lo, hi = bucket["range"]
        names.append(f"{name}\n({lo:g}, {hi:g}] s")
        values.append(bucket["mAP"])
        counts.append(bucket["queries"])
    names.append("full")
    values.append(result["mAP"])
    counts.append(len(iou))
    heights = [0.0 if np.isnan(v) else v for v in values]
    bars = ax2.bar(names, heights, color="tab:green")
    for bar, v, c in zip(bars, values, counts):
        ax2.text(bar.get_x() + bar.get_width() / 2, bar.get_height(),
                 f"{v:.1f}\nn={c}" if not np.isnan(v) else
                 ("n/a (n=0)" if c == 0 else f"n/a\nn={c}"),
                 ha="center", va="bottom", fontsize=8)
    ax2.set_ylabel("mAP@[0.5:0.95] (%)")
    ax2.set_ylim(0, max(100.0, max(heights) * 1.15))
    ax2.set_title("mAP by ground-truth window length")
    fig.tight_layout()
    from fastvqa.evaluation.plots import save_png

    save_png(fig, path)


register_benchmark(Benchmark(
    name=NAME,
    help="QVHighlights moment retrieval (R1@0.5/0.7, mAP@0.5/0.75, mAP) with the official "
         "standalone_eval rules; --pred submission JSONL (or JSON list), --gt ground-truth JSONL",
    add_arguments=_add_arguments,
    evaluate=evaluate,
    plot=_plot,
    gt_help="the QVHighlights ground-truth JSON Lines file (or a JSON array of its objects)",
))


# ----------------------------------------------------------------------------
# Baselines: one window per query, in the submission format
# ----------------------------------------------------------------------------


def _submission(records: list, windows: list[list[float]]) -> list[dict[str, Any]]:
    return [{"qid": rec.extra["qid"], "query": rec.question, "vid": rec.video_id,
             "pred_relevant_windows": [w]} for rec, w in zip(records, windows)]


def _records(gt) -> list:
    from fastvqa.data.moment import load_qvhighlights

    return require_records(load_qvhighlights(gt), gt, "queries")


def full_video(*, gt) -> list[dict[str, Any]]:
    """``full-video``: one window ``[0, duration, 1.0]`` per query of ``gt``
    (a JSON-ready submission list)."""
    records = _records(gt)
    return _submission(records, [[0.0, rec.duration, 1.0] for rec in records])


def centre_half(*, gt) -> list[dict[str, Any]]:
    """``centre-half``: one window ``[duration/4, 3*duration/4, 1.0]`` per query."""
    records = _records(gt)
    return _submission(records, [[rec.duration / 4, rec.duration * 3 / 4, 1.0] for rec in records])


def random_span(*, gt, seed: int = 0) -> list[dict[str, Any]]:
    """``random``: one window per query, its ends two sorted
    ``np.random.default_rng(seed).uniform(0, 1)`` draws times the duration."""
    records = _records(gt)
    rng = np.random.default_rng(seed)
    ends = rng.uniform(0.0, 1.0, size=(len(records), 2))
    ends.sort(axis=1)
    return _submission(records, [[float(a * rec.duration), float(b * rec.duration), 1.0]
                                 for rec, (a, b) in zip(records, ends)])


def _no_options(parser: argparse.ArgumentParser) -> None:
    return None


register_baseline(Baseline(NAME, "full-video", "one window [0, duration] per query",
                           _no_options, full_video))
register_baseline(Baseline(NAME, "centre-half", "one window [duration/4, 3*duration/4] per query",
                           _no_options, centre_half))
register_baseline(Baseline(NAME, "random",
                           "one uniformly random window per query (seeded by --seed)",
                           _no_options, random_span))
