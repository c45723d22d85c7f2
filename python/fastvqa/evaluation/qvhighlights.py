# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval qvhighlights`` and its trivial baselines.

Evaluates a QVHighlights submission against the ground-truth JSON Lines
file with the official ``standalone_eval`` rules: moment retrieval
(:func:`fastvqa.metrics.moment_retrieval`) and, when the submission carries
``pred_saliency_scores``, highlight detection
(:func:`fastvqa.metrics.highlight_detection`: HL-min-{Fair,Good,VeryGood}
mAP and Hit1).

Files: ``--pred`` the submission (JSON Lines with ``qid`` and
``pred_relevant_windows`` ``[[start, end, score], ...]`` per line, optionally
``pred_saliency_scores`` (one per 2-s clip), or a JSON array of those
objects, which is what ``fastvqa baseline qvhighlights ...`` writes);
``--gt`` the ground truth JSON Lines (``qid``, ``query``, ``vid``,
``duration``, ``relevant_windows``, and for highlights ``relevant_clip_ids``
and ``saliency_scores``).

Odd windows: the official evaluation scores predicted windows that are
reversed (end < start) or lie partly outside ``[0, duration]`` on their raw
numbers; so does this one, and it says how many there are in
``info["warnings"]`` (counts in ``info["odd_spans"]``). ``--strict``
(``strict=True``) refuses such a submission instead.

From Python: :func:`evaluate` ``(gt=..., pred=..., max_pred_windows=10,
partial=False, strict=False)`` and the baselines :func:`full_video`,
:func:`centre_half`, :func:`random_span` ``(gt=..., seed=0)``.
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

import numpy as np

from fastvqa._argtypes import int_at_least
from fastvqa.data.benchmarks import load_benchmark
from fastvqa.errors import CommandError
from fastvqa.evaluation import (Baseline, Benchmark, add_question_columns, flag,
                                fraction_spans_warning, missing_warning, odd_spans,
                                odd_spans_warning, register_baseline,
                                register_benchmark, require_records)
from fastvqa.metrics.result import MetricResult

NAME = "qvhighlights"


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-pred-windows", type=int_at_least(0), default=10, metavar="N",
                        help="mAP keeps the first N windows of each query in file order, before "
                             "sorting by score (official: 10; 0 keeps all)")
    parser.add_argument("--partial", action="store_true",
                        help="evaluate the qids present in both files (the official script "
                             "requires the same qids: match_number=True)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse predicted windows that are reversed (end < start) or "
                             "outside [0, duration] (the official script scores them on the raw "
                             "numbers; by default so does fastvqa, with a warning)")


def _load(gt) -> list:
    # A folder is read for val: the test release has no windows to score.
    return load_benchmark(NAME, gt, "val")


def _ground_truth(path: str) -> tuple[list, dict[str, np.ndarray]]:
    from fastvqa.data.errors import DataFormatError

    records = _load(path)
    gt = {}
    for rec in records:
        if rec.spans.shape[0] == 0:
            raise DataFormatError(path, "no relevant_windows (the answer-less test release cannot "
                                  "be evaluated)", record=f"qid {rec.extra['qid']!r}",
                                  field="relevant_windows")
        gt[rec.question_id] = rec.spans
    return records, gt


def _odd_windows(records: list, predictions: dict[str, np.ndarray], pred_path, strict: bool
                 ) -> dict[str, int]:
    """:func:`fastvqa.evaluation.odd_spans` over the ground-truth queries'
    predicted windows (seconds, against each video's duration)."""
    return odd_spans([predictions.get(rec.question_id) for rec in records],
                     [rec.duration for rec in records], strict=strict, path=pred_path,
                     labels=[f"qid {rec.extra['qid']!r}" for rec in records],
                     field="pred_relevant_windows")


def _highlights(records: list, gt_path, pred_path, partial: bool) -> Optional[MetricResult]:
    """Highlight detection when the submission has ``pred_saliency_scores``
    (the official script looks at its first entry; here every evaluated
    entry must then have them). None without them."""
    from fastvqa.data.errors import DataFormatError
    from fastvqa.data.moment import load_qvhighlights_saliency
    from fastvqa.errors import InputError
    from fastvqa.metrics import clip_saliency, highlight_detection

    saliency = load_qvhighlights_saliency(pred_path)
    if not saliency:
        return None
    if not partial:
        lacking = [rec.extra["qid"] for rec in records if rec.question_id not in saliency]
        if lacking:
            raise DataFormatError(pred_path, f"{len(saliency)} entries have pred_saliency_scores "
                                  f"but {len(lacking)} ground-truth queries have none (e.g. qid "
                                  f"{lacking[0]!r}); --partial scores highlights on those that "
                                  "have them", field="pred_saliency_scores")
    tables = {}
    for rec in records:
        if not partial or rec.question_id in saliency:
            where = f"qid {rec.extra['qid']!r}"
            for field in ("relevant_clip_ids", "saliency_scores"):
                if field not in rec.extra:
                    raise DataFormatError(gt_path, "missing (the submission has "
                                          "pred_saliency_scores, so highlights are scored)",
                                          record=where, field=field)
            try:
                tables[rec.question_id] = clip_saliency(
                    rec.duration, rec.extra["relevant_clip_ids"], rec.extra["saliency_scores"],
                    key=rec.extra["qid"])
            except InputError as err:
                raise DataFormatError(gt_path, str(err), record=where,
                                      field="saliency_scores") from None
    try:
        return highlight_detection(saliency, tables, match_number=not partial)
    except InputError as err:
        # The ground truth was checked above; what is left is the qid check.
        raise DataFormatError(pred_path, f"{err} (pred_saliency_scores)",
                              field="qid") from None


def evaluate(*, gt, pred, max_pred_windows: int = 10, partial: bool = False,
             strict: bool = False) -> MetricResult:
    """QVHighlights moment retrieval and highlight detection with the
    official ``standalone_eval`` rules.

    Args:
        gt: the ground-truth JSON Lines file (or a JSON array of its objects).
        pred: the submission: JSON Lines with ``qid`` and
            ``pred_relevant_windows`` ``[[start, end, score], ...]``, or a JSON
            array of those objects (path).
        max_pred_windows: mAP keeps the first N windows of each query in file
            order, before sorting by score (official: 10; 0 keeps all).
        partial: evaluate the qids in both files (the official script
            requires the same qids).
        strict: refuse predicted windows that are reversed or reach
            outside ``[0, duration]`` (:class:`~fastvqa.data.DataFormatError`);
            by default they are scored on the raw numbers, as the official
            script does, and counted in ``info["odd_spans"]`` and
            ``info["warnings"]``.

    Returns a :class:`~fastvqa.metrics.MetricResult` named
    ``"qvhighlights"``: R1@0.5, R1@0.7, mAP@0.5, mAP@0.75, mAP (percent) and
    the length buckets in ``info["buckets"]``; with ``pred_saliency_scores``
    also ``HL-min-{Fair,Good,VeryGood}-{mAP,Hit1}`` (percent), their
    per-query columns (``HL-AP-<level>``, ``HL-Hit1-<level>``) and
    ``info["highlight"]``.
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
    flag("strict", strict)
    predictions = load_qvhighlights_submission(pred, allow_reversed=True)
    odd = _odd_windows(records, predictions, pred, strict)
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
    if odd["reversed"]:
        # The metric's own line says strict=True; the command line says --strict.
        result.info["warnings"] = [w.replace("strict=True", "--strict")
                                   for w in result.info.get("warnings", [])]
    # Reversed windows: the metric's line already says how they are scored.
    odd_spans_warning(result, odd, reversed_rule=None,
                      outside_rule="scored on the raw numbers")
    fraction_spans_warning(result, [predictions.get(rec.question_id) for rec in records],
                           [rec.duration for rec in records],
                           advice="multiply them by the video's duration")
    missing_warning(result, len(gt), result.info["missing"], what="ground-truth queries",
                    policy="--partial evaluates the queries in both files only (the "
                           "official script refuses such a submission)")
    hl = _highlights(records, gt_path, pred, partial)
    if hl is not None:
        _merge_highlights(result, hl)
    return result


def _merge_highlights(result: MetricResult, hl: MetricResult) -> None:
    """Adds the highlight metrics, their per-query columns (by key) and
    counts to the moment-retrieval result."""
    for name, value in hl.metrics.items():
        result.metrics[name] = value
        result.info["counts"][name] = hl.info["evaluated"]
    row = {k: i for i, k in enumerate(hl.per_question["key"])}
    keys = result.per_question["key"]
    for column, values in hl.per_question.items():
        if column in ("key", "n_pred"):
            continue
        name = column if column in ("n_clips", "top_clip") else f"HL-{column}"
        result.per_question[name] = [values[row[k]] if k in row else None for k in keys]
    result.info["highlight"] = {k: v for k, v in hl.info.items() if k != "warnings"}


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
    help="QVHighlights moment retrieval (R1@0.5/0.7, mAP@0.5/0.75, mAP) and, with "
         "pred_saliency_scores, highlight detection (HL-min-Fair/Good/VeryGood mAP, Hit1) with "
         "the official standalone_eval rules; --pred submission JSONL (or JSON list), --gt "
         "ground-truth JSONL",
    add_arguments=_add_arguments,
    evaluate=evaluate,
    plot=_plot,
))


# ----------------------------------------------------------------------------
# Baselines: one window per query, in the submission format
# ----------------------------------------------------------------------------


def _submission(records: list, windows: list[list[float]]) -> list[dict[str, Any]]:
    return [{"qid": rec.extra["qid"], "query": rec.question, "vid": rec.video_id,
             "pred_relevant_windows": [w]} for rec, w in zip(records, windows)]


def _records(gt) -> list:
    return require_records(_load(gt), gt, "queries")


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
