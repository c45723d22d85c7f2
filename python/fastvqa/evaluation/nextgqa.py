# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval nextgqa|deveqa`` and their trivial baselines.

``nextgqa`` reads the official submission files and scores them as the
official ``eval_ground.py`` does (:func:`fastvqa.metrics.grounded_qa`, mode
``"nextgqa"``):

- ``--gt``: a folder with ``gsub_<split>.json`` (and ``<split>.csv``, needed
  only by the random-answer baseline), or a gsub JSON alone;
- ``--pred``: the grounding file ``{"<video_id>_<qid>": [start, end]}`` in
  seconds (``--normalized``: fractions of the video);
- ``--qa``: the QA file ``{"<video_id>_<qid>": {"prediction": k, "answer":
  k_true}}``. As in the official script the gold answer is the file's
  ``"answer"`` (an entry without one takes the csv's); every question with a
  span prediction needs an entry.

``deveqa`` reads a DeVE-QA annotation file (:func:`fastvqa.data.load_deveqa`)
and either the NExT-GQA-style files above or the DeVi repository's JSON Lines
predictions (``{"qid", "answer", "span"}``), with ``--mode nextgqa`` (the
paper's protocol, default) or ``--mode deveqa-repo``.

From Python: :func:`evaluate` (``nextgqa``) and :func:`evaluate_deveqa`, with
the command line's options as keywords (``--plot-video`` and
``--length-bins`` belong to the plot only)::

    from fastvqa.evaluation import nextgqa
    result = nextgqa.evaluate(gt="data/nextgqa", pred="ground.json", qa="qa.json")

Baselines (``fastvqa baseline nextgqa|deveqa NAME``; in Python
:func:`full_video`, :func:`centre_half`, :func:`random_span`,
:func:`random_answer` and their ``deveqa_`` forms) write the same formats:
``full-video`` ``[0, duration]``, ``centre-half`` ``[d/4, 3d/4]``,
``random-span`` (Python ``random.Random(seed)``; per question in file order,
two ``round(uniform(0, duration), 1)`` draws, sorted), all grounding files;
``random-answer`` writes a QA file ``{key: {"prediction":
randrange(n_options), "answer": true index}}`` with ``random.Random(seed)``.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path
from typing import Any, Optional

import numpy as np

from fastvqa._argtypes import int_in_range
from fastvqa.data.answers import INVALID_ANSWER, NO_ANSWER
from fastvqa.data.benchmarks import BENCHMARKS as _TABLE, load_benchmark, split_help
from fastvqa.data.errors import DataFormatError
from fastvqa.data.record import QARecord, spans_to_csr
from fastvqa.errors import CommandError
from fastvqa.evaluation import (Baseline, Benchmark, add_question_columns, choice, flag,
                                fraction_spans_warning, missing_warning, odd_spans,
                                odd_spans_warning, question_type,
                                register_baseline, register_benchmark, require_records)
from fastvqa.metrics._align import record_key
from fastvqa.metrics.result import MetricResult

DEFAULT_BINS = {"nextgqa": "0,30,60,90,inf", "deveqa": "0,60,120,inf"}


# ------------------------------------------------------------------- options


SPLITS = _TABLE["nextgqa"].splits


def _add_common(p: argparse.ArgumentParser, bench: str) -> None:
    p.add_argument("--qa", metavar="FILE",
                   help='QA predictions {"<video_id>_<qid>": {"prediction": k, "answer": k_true}}; '
                        "adds Acc@QA and Acc@GQA")
    p.add_argument("--normalized", action="store_true",
                   help="predicted spans are fractions of the video: seconds = "
                        "np.round(x * duration, 1), as the official gs=True")
    p.add_argument("--index-base", type=int_in_range(0, 1), default=1, metavar="{0,1}",
                   help="with --pred-text: how option numbers in the responses count "
                        "(1: '1' is the first option; 0: '0' is)")
    p.add_argument("--plot-video", metavar="VIDEO_ID",
                   help="with --plot: draw this video's predicted vs ground-truth spans instead "
                        "of the summary")
    p.add_argument("--strict", action="store_true",
                   help="refuse predicted spans that are reversed (end < start) or reach outside "
                        "[0, duration] (the official evaluation scores them; by default so does "
                        "fastvqa, with a warning)")
    p.add_argument("--length-bins", metavar="EDGES", default=DEFAULT_BINS[bench],
                   help="video-length bin edges in seconds for the plot "
                        "(bins are [a, b))")


def _add_nextgqa_args(p: argparse.ArgumentParser) -> None:
    _add_common(p, "nextgqa")
    p.add_argument("--split", choices=SPLITS, default="test",
                   help=split_help(("nextgqa",), "the --gt folder"))


def _add_deveqa_gt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schema", choices=("auto", "devi", "release"), default="auto",
                   help="layout of the --gt records (auto: detected)")
    p.add_argument("--durations", metavar="FILE",
                   help="JSON {video_id: seconds} for records without a duration")


def _add_deveqa_args(p: argparse.ArgumentParser) -> None:
    _add_common(p, "deveqa")
    _add_deveqa_gt_args(p)


def _add_nextgqa_baseline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", choices=SPLITS, default="test",
                   help=split_help(("nextgqa",), "the --gt folder"))


# ------------------------------------------------------------------- loading



def _load_gt(gt, bench: str, *, split: str = "test", schema: str = "auto",
             durations=None) -> list[QARecord]:
    if bench == "nextgqa":
        return require_records(load_benchmark("nextgqa", gt, choice("split", split, SPLITS)),
                               gt)
    return require_records(load_benchmark("deveqa", gt, schema=schema, durations=durations), gt)


def _load_predictions(pred, qa, bench: str):
    """``(spans {id: (s, e) or None}, answers {id: (prediction, answer or None)} or None)``."""
    from fastvqa.data.nextgqa import read_grounding_predictions, read_qa_predictions

    if bench == "nextgqa":
        spans: dict[str, Any] = read_grounding_predictions(pred)
        inline: dict[str, int] = {}
    else:
        from fastvqa.data.deveqa import read_deveqa_predictions

        spans, inline = read_deveqa_predictions(pred)
    if qa:
        table = read_qa_predictions(qa)
        answers = {k: (v["prediction"], v["answer"]) for k, v in table.items()}
    elif inline:
        answers = {k: (v, None) for k, v in inline.items()}
    else:
        answers = None
    return spans, answers


# ------------------------------------------------------------------- scoring


def _score(records: list[QARecord], spans: dict[str, Any], answers: Optional[dict[str, Any]],
           *, mode: str, normalized: bool, benchmark: str, gt, pred, qa, split: Optional[str],
           by_qid: bool, strict: bool = False) -> MetricResult:
    from fastvqa.metrics.grounding import grounded_qa

    n = len(records)
    pred_spans = np.full((n, 2), np.nan)
    durations = np.full(n, np.nan)
    used_spans: set[str] = set()
    predicted: list = []  # each question's prediction as the file gives it
    for i, rec in enumerate(records):
        if rec.duration is not None:
            durations[i] = rec.duration
        ident = record_key(spans, rec, by_qid)
        predicted.append(None if ident is None else spans[ident])
        if ident is not None:
            used_spans.add(ident)
            if spans[ident] is not None:
                pred_spans[i] = spans[ident]
        if normalized and ident is not None and rec.duration is None:
            raise DataFormatError(gt, "no duration to scale the normalised prediction "
                                  "(pass --durations)", record=rec.key, field="duration")
    gt_spans, offsets = spans_to_csr([rec.spans for rec in records])
    # Normalised spans are fractions of the video: its length is 1.
    odd = odd_spans([None if np.isnan(s[0]) else s[None] for s in pred_spans],
                    [1.0 if normalized else d for d in durations], strict=strict, path=pred,
                    labels=[rec.key for rec in records], field="span",
                    unit="" if normalized else " s")

    pred_answers = gt_answers = None
    disagree = 0
    used_answers: set[str] = set()
    answered: list = [None] * n  # (prediction, gold) where the question has an answer entry
    if answers is not None:
        pred_answers = np.full(n, NO_ANSWER, dtype=np.int64)
        gt_answers = np.zeros(n, dtype=np.int64)
        qa_path = qa or pred
        for i, rec in enumerate(records):
            ident = record_key(answers, rec, by_qid)
            if ident is None:
                if mode == "nextgqa" and not np.isnan(pred_spans[i, 0]):
                    raise DataFormatError(
                        qa_path, f"no answer prediction for a question that has a span "
                        f"prediction in {Path(pred).name} (the official evaluator needs "
                        "both: Acc@GQA)", record=rec.key)
                continue
            used_answers.add(ident)
            prediction, answer = answers[ident]
            truth = rec.answer if isinstance(rec.answer, int) else None
            if answer is None:
                if truth is None:
                    raise DataFormatError(qa_path, "no gold answer here or in the ground truth "
                                          "(give the csv with the gsub file)",
                                          record=ident, field="answer")
                answer = truth
            elif truth is not None and answer != truth:
                disagree += 1
            # A negative prediction is an answer that matches no option: wrong,
            # but answered (NO_ANSWER is reserved for "no QA entry").
            pred_answers[i] = prediction if prediction >= 0 else INVALID_ANSWER
            gt_answers[i] = answer
            answered[i] = (prediction, answer)

    from fastvqa.errors import InputError

    try:
        result = grounded_qa(pred_spans, (gt_spans, offsets), pred_answers=pred_answers,
                             gt_answers=gt_answers, mode=mode, durations=durations,
                             normalized=normalized, keys=[rec.key for rec in records])
    except InputError as err:  # e.g. several gold segments under --mode deveqa-repo
        raise CommandError(str(err)) from None
    if not used_spans:
        example = next(iter(spans))
        hint = f" (wrong --split? this is {split})" if benchmark == "nextgqa" else ""
        raise CommandError(f"{pred}: no prediction key matches a ground-truth question "
                           f"(e.g. {example!r}; questions are keyed like {records[0].key!r})"
                           + hint)
    if np.isnan(pred_spans[:, 0]).all():
        raise CommandError(f"{pred}: no ground-truth question has a span prediction "
                           f"(the {len(used_spans)} matching entries have no span); nothing "
                           "to score")
    if answers is not None and answers and not used_answers:
        example = next(iter(answers))
        raise CommandError(f"{qa or pred}: no answer key matches a ground-truth "
                           f"question (e.g. {example!r}; questions are keyed like "
                           f"{records[0].key!r})")
    info = dict(result.info)
    info.update({
        "gt": str(gt),
        "pred": str(pred),
        "qa": None if not qa else str(qa),
        "unmatched_predictions": len(spans) - len(used_spans),  # used_spans <= keys
    })
    if answers is not None:
        info["unmatched_answers"] = len(answers) - len(used_answers)
        # The official script takes the gold answer from the QA file; say when it
        # disagrees with the annotation file, without changing the rule.
        info["qa_answers_differing_from_gt"] = disagree
    out = MetricResult(result.metric, dict(result.metrics), result.per_question, info,
                       benchmark=benchmark)
    add_question_columns(out, prediction=predicted, ground_truth=[r.spans for r in records],
                         question_type=[question_type(r) for r in records])
    if answers is not None:
        out.per_question["predicted_answer"] = [a and a[0] for a in answered]
        out.per_question["answer"] = [a and a[1] for a in answered]
    policy = ("the official eval_ground.py skips them: the grounding scores are over the "
              f"{info['evaluated']} predicted questions" if mode == "nextgqa"
              else "they count as zero, as in the DeVE-QA repository's evaluation")
    missing_warning(out, n, info["missing"], what="questions", policy=policy)
    if mode == "nextgqa":
        odd_spans_warning(out, odd, reversed_rule="they score IoU = IoP = 0")
    else:
        odd_spans_warning(out, odd, reversed_rule="each is made [start, start] (zero length: "
                          "IoU = IoP = 0)", outside_rule="starts below 0 are raised to 0, ends "
                          "are not clamped")
    return out


def _check_normalized(spans: dict[str, Any], path: str) -> None:
    """``--normalized`` spans are fractions of the video: the first value
    above 1 (in file order) is an error naming its key; seconds given with
    ``--normalized`` would be multiplied by the duration."""
    for key, span in spans.items():
        if span is not None and (span[0] > 1.0 or span[1] > 1.0):
            value = float(span[0] if span[0] > 1.0 else span[1])
            raise DataFormatError(path, f"--normalized: {value!r} is above 1 (normalised spans "
                                  "are fractions of the video, in [0, 1]; for seconds leave out "
                                  "--normalized)", record=key, field="span")


def _evaluate(bench: str, records: list[QARecord], *, gt, pred, qa, normalized: bool,
              mode: str, split: Optional[str], pred_text=None, pred_fps=None,
              index_base: int = 1, strict: bool = False) -> MetricResult:
    from fastvqa.evaluation import text_predictions

    text_predictions.one_source(pred, pred_text)
    tally = None
    if pred_text is not None:
        if qa:
            raise CommandError("--qa: with --pred-text the answers come from the responses")
        spans, answers, tally = text_predictions.grounded_predictions(
            pred_text, records, by_qid=bench == "deveqa", fps=pred_fps,
            normalized=bool(normalized), index_base=choice("index_base", index_base, (0, 1)),
            gt=gt)
        source, scaled = pred_text, False  # the parse gives seconds
    else:
        spans, answers = _load_predictions(pred, qa, bench)
        if not spans:
            raise CommandError(f"{pred}: holds no predictions; nothing to score")
        if normalized:
            _check_normalized(spans, pred)
        source, scaled = pred, bool(normalized)
    result = _score(records, spans, answers, mode=mode, normalized=scaled,
                    benchmark=bench, gt=gt, pred=source, qa=qa, split=split,
                    by_qid=bench == "deveqa", strict=flag("strict", strict))
    if not normalized:
        found = [record_key(spans, rec, bench == "deveqa") for rec in records]
        fraction_spans_warning(
            result, [None if k is None or spans[k] is None else [spans[k]] for k in found],
            [rec.duration for rec in records],
            advice="pass --normalized (as the official gs=True: seconds = x * duration)")
    if tally is not None:
        tally.report(result, bench, pred_text, multi_span_responses=tally.multi_span,
                     normalized=bool(normalized))
    if split is not None:
        result.info["split"] = split
    # For a plot of one video: the files already read, not read a second time.
    result._inputs = (records, spans)
    return result


def evaluate(*, gt, pred=None, qa=None, split: str = "test", normalized: bool = False,
             pred_text=None, pred_fps=None, index_base: int = 1,
             strict: bool = False) -> MetricResult:
    """NExT-GQA as the official ``eval_ground.py`` scores it.

    Args:
        gt: a folder with ``gsub_<split>.json`` (and ``<split>.csv``), or a
            gsub JSON alone (path).
        pred: the grounding file ``{"<video_id>_<qid>": [start, end]}``, in
            seconds (path).
        qa: the QA file ``{"<video_id>_<qid>": {"prediction": k, "answer":
            k_true}}`` (path; adds Acc@QA and Acc@GQA), or None.
        split: ``"test"`` or ``"val"``: which files of a ``gt`` folder.
        normalized: ``pred`` spans are fractions of the video (seconds =
            ``np.round(x * duration, 1)``, the official ``gs=True``); with
            ``pred_text``, bare numbers in the responses are fractions
            (seconds = ``x * duration``, unrounded).
        pred_text: instead of ``pred`` (and ``qa``): raw responses, JSON
            Lines ``{"key", "response"}``, parsed by :mod:`fastvqa.parse`
            (:mod:`fastvqa.evaluation.text_predictions`); the gold answers
            then come from the ground truth's csv.
        pred_fps: with ``pred_text``: frames per second of frame indices.
        index_base: with ``pred_text``: option numbers in responses are
            1-based (1, default) or 0-based (0).
        strict: refuse a predicted span that is reversed (end < start) or
            reaches outside ``[0, duration]`` (a
            :class:`~fastvqa.data.DataFormatError` naming it). By default
            such spans are scored as the official script scores them (raw
            numbers; a reversed span has IoU = IoP = 0), counted in
            ``info["odd_spans"]`` and named in ``info["warnings"]``.

    Returns:
        A :class:`~fastvqa.metrics.MetricResult` named ``"nextgqa"``: Acc@QA,
        Acc@GQA (with ``qa``), mIoP, IoP@0.3/0.5, mIoU, IoU@0.3/0.5 in
        percent; per question ``key``, ``IoU``, ``IoP`` (and the answers).
        Questions without a prediction are skipped, as the official script
        does, and named in ``info["warnings"]``.

    Raises :class:`~fastvqa.errors.CommandError` (nothing to score) and
    :class:`~fastvqa.data.DataFormatError` (a malformed file), both
    ``ValueError``.
    """
    records = _load_gt(gt, "nextgqa", split=split)
    return _evaluate("nextgqa", records, gt=gt, pred=pred, qa=qa, normalized=normalized,
                     mode="nextgqa", split=split, pred_text=pred_text, pred_fps=pred_fps,
                     index_base=index_base, strict=strict)


def evaluate_deveqa(*, gt, pred=None, qa=None, mode: str = "nextgqa", schema: str = "auto",
                    durations=None, normalized: bool = False, pred_text=None, pred_fps=None,
                    index_base: int = 1, strict: bool = False) -> MetricResult:
    """DeVE-QA grounded QA.

    Args:
        gt: a DeVE-QA annotation file (:func:`fastvqa.data.load_deveqa`:
            a JSON list, a JSON object ``{qid: record}`` or JSON Lines).
        pred: the NExT-GQA-style grounding file, or the DeVi repository's JSON
            Lines predictions ``{"qid", "answer", "span"}`` (path).
        qa: a NExT-GQA-style QA file (path), or None.
        mode: ``"nextgqa"`` (the paper's protocol, default) or
            ``"deveqa-repo"`` (the DeVE-QA repository's rules: missing = 0,
            single segment).
        schema: ``"auto"``, ``"devi"`` or ``"release"``: the layout of ``gt``.
        durations: a JSON file ``{video_id: seconds}`` for records without a
            duration, or None.
        normalized, pred_text, pred_fps, index_base, strict: as in
            :func:`evaluate` (a ``pred_text`` line is keyed by ``"qid"`` or
            ``"key"``; under ``"deveqa-repo"`` a reversed span is made
            ``[start, start]`` and a start below 0 raised to 0, as that
            repository does, with the same warning).

    Returns a :class:`~fastvqa.metrics.MetricResult` named ``"deveqa"`` with
    :func:`evaluate`'s metrics; raises as :func:`evaluate`.
    """
    records = _load_gt(gt, "deveqa", schema=schema, durations=durations)
    return _evaluate("deveqa", records, gt=gt, pred=pred, qa=qa, normalized=normalized,
                     mode=choice("mode", mode, ("nextgqa", "deveqa-repo")), split=None,
                     pred_text=pred_text, pred_fps=pred_fps, index_base=index_base,
                     strict=strict)


# ---------------------------------------------------------------------- plot


def _parse_edges(text: str) -> list[float]:
    try:
        edges = [float(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise CommandError(f"--length-bins: expected comma-separated numbers, got {text!r}") \
            from None
    if len(edges) < 2 or any(math.isnan(e) for e in edges) or \
            any(b <= a for a, b in zip(edges, edges[1:])):
        raise CommandError(f"--length-bins: need at least two increasing edges, got {text!r}")
    return edges


def _check(*, plot=None, plot_video=None, length_bins: str = DEFAULT_BINS["nextgqa"]) -> None:
    """The plot options, checked before any file is read."""
    if plot_video and not plot:
        raise CommandError("--plot-video needs --plot FILE.png")
    _parse_edges(length_bins)


def _plot(bench: str):
    def plot(result: MetricResult, path: str, *, plot_video: Optional[str] = None,
             length_bins: str = DEFAULT_BINS[bench]) -> None:
        """The summary plot, or (``plot_video``) one video's predicted and
        ground-truth spans; ``length_bins``: comma-separated bin edges in
        seconds."""
        from fastvqa.evaluation import plots

        if not plot_video:
            plots.plot_grounding_summary(result, path, length_edges=_parse_edges(length_bins))
            return
        all_records, spans = result._inputs
        records = [r for r in all_records if r.video_id == plot_video]
        if not records:
            raise CommandError(f"--plot-video: no video {plot_video!r} in {result.info['gt']}")
        normalized = result.info.get("normalized", False)
        by_key = {k: i for i, k in enumerate(result.per_question.get("key", []))}
        rows = []
        for rec in records:
            ident = record_key(spans, rec, bench == "deveqa")
            pred = spans[ident] if ident is not None else None
            if pred is not None and normalized and rec.duration is not None:
                pred = tuple(np.round(np.asarray(pred) * rec.duration, 1).tolist())
            row = {"label": f"q{rec.question_id}", "gt": rec.spans, "pred": pred}
            i = by_key.get(rec.key)
            if i is not None:
                row["IoU"] = float(result.per_question["IoU"][i])
                row["IoP"] = float(result.per_question["IoP"][i])
            rows.append(row)
        plots.plot_video_timeline(plot_video, rows, path, duration=records[0].duration)

    return plot


# ----------------------------------------------------------------- baselines


def _need_duration(rec: QARecord, gt) -> float:
    if rec.duration is None:
        raise DataFormatError(gt, "no video duration (pass --durations)", record=rec.key,
                              field="duration")
    return rec.duration


def _full_video(records: list[QARecord], gt) -> dict[str, list[float]]:
    return {r.key: [0.0, _need_duration(r, gt)] for r in records}


def _centre_half(records: list[QARecord], gt) -> dict[str, list[float]]:
    out = {}
    for r in records:
        d = _need_duration(r, gt)
        out[r.key] = [0.25 * d, 0.75 * d]
    return out


def _random_span(records: list[QARecord], gt, seed: int) -> dict[str, list[float]]:
    rng = random.Random(seed)
    out = {}
    for r in records:
        d = _need_duration(r, gt)
        out[r.key] = sorted([round(rng.uniform(0, d), 1), round(rng.uniform(0, d), 1)])
    return out


def _random_answer(records: list[QARecord], gt, seed: int, hint: str) -> dict[str, dict]:
    rng = random.Random(seed)
    out = {}
    for r in records:
        if not r.options or not isinstance(r.answer, int):
            raise CommandError(f"random-answer: {gt} has no options/answers{hint}; "
                               f"question {r.key}")
        out[r.key] = {"prediction": rng.randrange(len(r.options)), "answer": r.answer}
    return out


def full_video(*, gt, split: str = "test") -> dict[str, list[float]]:
    """NExT-GQA ``full-video``: ``{key: [0, duration]}`` for every question of
    ``gt`` (as :func:`evaluate` reads it)."""
    return _full_video(_load_gt(gt, "nextgqa", split=split), gt)


def centre_half(*, gt, split: str = "test") -> dict[str, list[float]]:
    """NExT-GQA ``centre-half``: ``{key: [duration/4, 3*duration/4]}``."""
    return _centre_half(_load_gt(gt, "nextgqa", split=split), gt)


def random_span(*, gt, split: str = "test", seed: int = 0) -> dict[str, list[float]]:
    """NExT-GQA ``random-span``: per question in file order two
    ``round(uniform(0, duration), 1)`` draws of ``random.Random(seed)``, sorted."""
    return _random_span(_load_gt(gt, "nextgqa", split=split), gt, seed)


def random_answer(*, gt, split: str = "test", seed: int = 0) -> dict[str, dict[str, int]]:
    """NExT-GQA ``random-answer``: a QA file ``{key: {"prediction":
    randrange(n_options), "answer": true index}}`` (``random.Random(seed)``);
    the ``gt`` folder needs ``<split>.csv``."""
    return _random_answer(_load_gt(gt, "nextgqa", split=split), gt, seed,
                          f" (the folder needs {split}.csv)")


def deveqa_full_video(*, gt, schema: str = "auto", durations=None) -> dict[str, list[float]]:
    """DeVE-QA ``full-video`` (``gt``, ``schema``, ``durations`` as
    :func:`evaluate_deveqa` reads them)."""
    return _full_video(_load_gt(gt, "deveqa", schema=schema, durations=durations), gt)


def deveqa_centre_half(*, gt, schema: str = "auto", durations=None) -> dict[str, list[float]]:
    """DeVE-QA ``centre-half``."""
    return _centre_half(_load_gt(gt, "deveqa", schema=schema, durations=durations), gt)


def deveqa_random_span(*, gt, schema: str = "auto", durations=None,
                       seed: int = 0) -> dict[str, list[float]]:
    """DeVE-QA ``random-span`` (as :func:`random_span`)."""
    return _random_span(_load_gt(gt, "deveqa", schema=schema, durations=durations), gt, seed)


def deveqa_random_answer(*, gt, schema: str = "auto", durations=None,
                         seed: int = 0) -> dict[str, dict[str, int]]:
    """DeVE-QA ``random-answer`` (as :func:`random_answer`)."""
    return _random_answer(_load_gt(gt, "deveqa", schema=schema, durations=durations), gt,
                          seed, "")


_BASELINES = (
    ("full-video", "predict the whole video [0, duration] for every question",
     full_video, deveqa_full_video),
    ("centre-half", "predict the centre half [duration/4, 3*duration/4]",
     centre_half, deveqa_centre_half),
    ("random-span", "a random span: two round(uniform(0, duration), 1) draws, sorted "
                    "(Python random.Random(--seed), questions in file order)",
     random_span, deveqa_random_span),
    ("random-answer", "a QA file with a uniformly random option per question "
                      "(random.Random(--seed)); evaluate with --qa",
     random_answer, deveqa_random_answer),
)


# -------------------------------------------------------------- registration

register_benchmark(Benchmark(
    name="nextgqa",
    help="NExT-GQA grounded QA (official eval_ground.py rules): Acc@QA, Acc@GQA, mIoP, "
         "IoP@0.3/0.5, mIoU, IoU@0.3/0.5",
    add_arguments=_add_nextgqa_args,
    evaluate=evaluate,
    plot=_plot("nextgqa"),
    check=_check,
    inputs=("gt", "pred", "qa", "pred_text"),
))
register_benchmark(Benchmark(
    name="deveqa",
    help="DeVE-QA grounded QA: NExT-GQA protocol (default, as the paper) or the DeVE-QA "
         "repository's rules (--mode deveqa-repo)",
    add_arguments=_add_deveqa_args,
    evaluate=evaluate_deveqa,
    plot=_plot("deveqa"),
    check=_check,
    inputs=("gt", "pred", "qa", "durations", "pred_text"),
    modes=("nextgqa", "deveqa-repo"),
    default_mode="nextgqa",
))
for _name, _help, _nextgqa_run, _deveqa_run in _BASELINES:
    register_baseline(Baseline(benchmark="nextgqa", name=_name, help=_help,
                               add_arguments=_add_nextgqa_baseline_args, run=_nextgqa_run))
    register_baseline(Baseline(benchmark="deveqa", name=_name, help=_help,
                               add_arguments=_add_deveqa_gt_args, run=_deveqa_run))
