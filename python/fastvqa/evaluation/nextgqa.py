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

Baselines (``fastvqa baseline nextgqa|deveqa NAME``) write the same formats:
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
from typing import Any, Callable, Optional

import numpy as np

from fastvqa.data.answers import INVALID_ANSWER, NO_ANSWER
from fastvqa.data.errors import DataFormatError
from fastvqa.data.record import QARecord, spans_to_csr
from fastvqa.evaluation import (Baseline, Benchmark, CommandError, missing_warning,
                                register_baseline, register_benchmark, require_records)
from fastvqa.metrics.result import MetricResult

DEFAULT_BINS = {"nextgqa": "0,30,60,90,inf", "deveqa": "0,60,120,inf"}


# ------------------------------------------------------------------- options


def _add_common(p: argparse.ArgumentParser, bench: str) -> None:
    p.add_argument("--qa", metavar="FILE",
                   help='QA predictions {"<video_id>_<qid>": {"prediction": k, "answer": k_true}}; '
                        "adds Acc@QA and Acc@GQA")
    p.add_argument("--normalized", action="store_true",
                   help="predicted spans are fractions of the video: seconds = "
                        "np.round(x * duration, 1), as the official gs=True")
    p.add_argument("--plot-video", metavar="VIDEO_ID",
                   help="with --plot: draw this video's predicted vs ground-truth spans instead "
                        "of the summary")
    p.add_argument("--length-bins", metavar="EDGES", default=DEFAULT_BINS[bench],
                   help="video-length bin edges in seconds for the plot "
                        "(bins are [a, b))")


def _add_nextgqa_args(p: argparse.ArgumentParser) -> None:
    _add_common(p, "nextgqa")
    p.add_argument("--split", choices=("test", "val"), default="test",
                   help="which gsub_<split>.json / <split>.csv of the --gt folder")


def _add_deveqa_gt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schema", choices=("auto", "devi", "release"), default="auto",
                   help="layout of the --gt records (auto: detected)")
    p.add_argument("--durations", metavar="FILE",
                   help="JSON {video_id: seconds} for records without a duration")


def _add_deveqa_args(p: argparse.ArgumentParser) -> None:
    _add_common(p, "deveqa")
    _add_deveqa_gt_args(p)


def _add_nextgqa_baseline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", choices=("test", "val"), default="test",
                   help="which split of the --gt folder")


# ------------------------------------------------------------------- loading


def _load_gt(args: argparse.Namespace, bench: str) -> list[QARecord]:
    if bench == "nextgqa":
        from fastvqa.data.nextgqa import load_nextgqa

        return load_nextgqa(args.gt, split=args.split)
    from fastvqa.data.deveqa import load_deveqa

    return load_deveqa(args.gt, schema=args.schema, durations=args.durations)


def _load_predictions(args: argparse.Namespace, bench: str):
    """``(spans {id: (s, e) or None}, answers {id: (prediction, answer or None)} or None)``."""
    from fastvqa.data.nextgqa import read_grounding_predictions, read_qa_predictions

    if bench == "nextgqa":
        spans: dict[str, Any] = read_grounding_predictions(args.pred)
        inline: dict[str, int] = {}
    else:
        from fastvqa.data.deveqa import read_deveqa_predictions

        spans, inline = read_deveqa_predictions(args.pred)
    if args.qa:
        qa = read_qa_predictions(args.qa)
        answers = {k: (v["prediction"], v["answer"]) for k, v in qa.items()}
    elif inline:
        answers = {k: (v, None) for k, v in inline.items()}
    else:
        answers = None
    return spans, answers


def _lookup(table: dict[str, Any], rec: QARecord, by_qid: bool) -> Optional[str]:
    """The id under which ``rec`` appears in a prediction table: its key
    ``"<video_id>_<qid>"``, or (DeVE-QA, whose DeVi files key by qid) its qid."""
    if rec.key in table:
        return rec.key
    if by_qid and rec.question_id in table:
        return rec.question_id
    return None


# ------------------------------------------------------------------- scoring


def _score(records: list[QARecord], spans: dict[str, Any], answers: Optional[dict[str, Any]],
           *, mode: str, normalized: bool, benchmark: str, args: argparse.Namespace,
           by_qid: bool) -> MetricResult:
    from fastvqa.metrics.grounding import grounded_qa

    n = len(records)
    pred = np.full((n, 2), np.nan)
    durations = np.full(n, np.nan)
    used_spans: set[str] = set()
    for i, rec in enumerate(records):
        if rec.duration is not None:
            durations[i] = rec.duration
        ident = _lookup(spans, rec, by_qid)
        if ident is not None:
            used_spans.add(ident)
            if spans[ident] is not None:
                pred[i] = spans[ident]
        if normalized and ident is not None and rec.duration is None:
            raise DataFormatError(args.gt, "no duration to scale the normalised prediction "
                                  "(pass --durations)", record=rec.key, field="duration")
    gt, offsets = spans_to_csr([rec.spans for rec in records])

    pred_answers = gt_answers = None
    disagree = 0
    used_answers: set[str] = set()
    if answers is not None:
        pred_answers = np.full(n, NO_ANSWER, dtype=np.int64)
        gt_answers = np.zeros(n, dtype=np.int64)
        qa_path = args.qa or args.pred
        for i, rec in enumerate(records):
            ident = _lookup(answers, rec, by_qid)
            if ident is None:
                if mode == "nextgqa" and not np.isnan(pred[i, 0]):
                    raise DataFormatError(
                        qa_path, f"no answer prediction for a question that has a span "
                        f"prediction in {Path(args.pred).name} (the official evaluator needs "
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

    from fastvqa.errors import InputError

    try:
        result = grounded_qa(pred, (gt, offsets), pred_answers=pred_answers,
                             gt_answers=gt_answers, mode=mode, durations=durations,
                             normalized=normalized, keys=[rec.key for rec in records])
    except InputError as err:  # e.g. several gold segments under --mode deveqa-repo
        raise CommandError(str(err)) from None
    if not used_spans:
        example = next(iter(spans))
        split = f" (wrong --split? this is {args.split})" if benchmark == "nextgqa" else ""
        raise CommandError(f"{args.pred}: no prediction key matches a ground-truth question "
                           f"(e.g. {example!r}; questions are keyed like {records[0].key!r})"
                           + split)
    if np.isnan(pred[:, 0]).all():
        raise CommandError(f"{args.pred}: no ground-truth question has a span prediction "
                           f"(the {len(used_spans)} matching entries have no span); nothing "
                           "to score")
    if answers is not None and answers and not used_answers:
        example = next(iter(answers))
        raise CommandError(f"{args.qa or args.pred}: no answer key matches a ground-truth "
                           f"question (e.g. {example!r}; questions are keyed like "
                           f"{records[0].key!r})")
    info = dict(result.info)
    info.update({
        "gt": str(args.gt),
        "pred": str(args.pred),
        "qa": None if not args.qa else str(args.qa),
        "unmatched_predictions": len(spans) - len(used_spans),  # used_spans <= keys
    })
    if answers is not None:
        info["unmatched_answers"] = len(answers) - len(used_answers)
        # The official script takes the gold answer from the QA file; say when it
        # disagrees with the annotation file, without changing the rule.
        info["qa_answers_differing_from_gt"] = disagree
    out = MetricResult(result.metric, dict(result.metrics), result.per_question, info,
                       benchmark=benchmark)
    policy = ("the official eval_ground.py skips them: the grounding scores are over the "
              f"{info['evaluated']} predicted questions" if mode == "nextgqa"
              else "they count as zero, as in the DeVE-QA repository's evaluation")
    missing_warning(out, n, info["missing"], what="questions", policy=policy)
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


def _evaluate(bench: str) -> Callable[[argparse.Namespace], MetricResult]:
    def evaluate(args: argparse.Namespace) -> MetricResult:
        if getattr(args, "plot_video", None) and not args.plot:
            raise CommandError("--plot-video needs --plot FILE.png")
        _parse_edges(args.length_bins)  # a bad value fails before any work
        records = require_records(_load_gt(args, bench), args.gt)
        if args.plot_video and not any(r.video_id == args.plot_video for r in records):
            raise CommandError(f"--plot-video: no video {args.plot_video!r} in {args.gt}")
        spans, answers = _load_predictions(args, bench)
        if not spans:
            raise CommandError(f"{args.pred}: holds no predictions; nothing to score")
        if args.normalized:
            _check_normalized(spans, args.pred)
        mode = getattr(args, "mode", None) or "nextgqa"
        result = _score(records, spans, answers, mode=mode, normalized=args.normalized,
                        benchmark=bench, args=args, by_qid=bench == "deveqa")
        if bench == "nextgqa":
            result.info["split"] = args.split
        # For --plot-video: the files already read, not read a second time.
        result._inputs = (records, spans)
        return result

    return evaluate


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


def _plot(bench: str) -> Callable[[MetricResult, argparse.Namespace, str], None]:
    def plot(result: MetricResult, args: argparse.Namespace, path: str) -> None:
        from fastvqa.evaluation import plots

        if not args.plot_video:
            plots.plot_grounding_summary(result, path, length_edges=_parse_edges(args.length_bins))
            return
        all_records, spans = result._inputs
        records = [r for r in all_records if r.video_id == args.plot_video]
        by_key = {k: i for i, k in enumerate(result.per_question.get("key", []))}
        rows = []
        for rec in records:
            ident = _lookup(spans, rec, bench == "deveqa")
            pred = spans[ident] if ident is not None else None
            if pred is not None and args.normalized and rec.duration is not None:
                pred = tuple(np.round(np.asarray(pred) * rec.duration, 1).tolist())
            row = {"label": f"q{rec.question_id}", "gt": rec.spans, "pred": pred}
            i = by_key.get(rec.key)
            if i is not None:
                row["IoU"] = float(result.per_question["IoU"][i])
                row["IoP"] = float(result.per_question["IoP"][i])
            rows.append(row)
        plots.plot_video_timeline(args.plot_video, rows, path, duration=records[0].duration)

    return plot


# ----------------------------------------------------------------- baselines


def _baseline_records(args: argparse.Namespace) -> list[QARecord]:
    return require_records(_load_gt(args, args.benchmark), args.gt)


def _need_duration(rec: QARecord, args: argparse.Namespace) -> float:
    if rec.duration is None:
        raise DataFormatError(args.gt, "no video duration (pass --durations)", record=rec.key,
                              field="duration")
    return rec.duration


def _full_video(args: argparse.Namespace) -> dict[str, list[float]]:
    return {r.key: [0.0, _need_duration(r, args)] for r in _baseline_records(args)}


def _centre_half(args: argparse.Namespace) -> dict[str, list[float]]:
    out = {}
    for r in _baseline_records(args):
        d = _need_duration(r, args)
        out[r.key] = [0.25 * d, 0.75 * d]
    return out


def _random_span(args: argparse.Namespace) -> dict[str, list[float]]:
    rng = random.Random(args.seed)
    out = {}
    for r in _baseline_records(args):
        d = _need_duration(r, args)
        out[r.key] = sorted([round(rng.uniform(0, d), 1), round(rng.uniform(0, d), 1)])
    return out


def _random_answer(args: argparse.Namespace) -> dict[str, dict[str, int]]:
    rng = random.Random(args.seed)
    out = {}
    for r in _baseline_records(args):
        if not r.options or not isinstance(r.answer, int):
            where = f"{args.gt} has no options/answers" + (
                f" (the folder needs {args.split}.csv)" if args.benchmark == "nextgqa" else "")
            raise CommandError(f"random-answer: {where}; question {r.key}")
        out[r.key] = {"prediction": rng.randrange(len(r.options)), "answer": r.answer}
    return out


_BASELINES = (
    ("full-video", "predict the whole video [0, duration] for every question", _full_video),
    ("centre-half", "predict the centre half [duration/4, 3*duration/4]", _centre_half),
    ("random-span", "a random span: two round(uniform(0, duration), 1) draws, sorted "
                    "(Python random.Random(--seed), questions in file order)", _random_span),
    ("random-answer", "a QA file with a uniformly random option per question "
                      "(random.Random(--seed)); evaluate with --qa", _random_answer),
)


# -------------------------------------------------------------- registration

register_benchmark(Benchmark(
    name="nextgqa",
    help="NExT-GQA grounded QA (official eval_ground.py rules): Acc@QA, Acc@GQA, mIoP, "
         "IoP@0.3/0.5, mIoU, IoU@0.3/0.5",
    add_arguments=_add_nextgqa_args,
    evaluate=_evaluate("nextgqa"),
    plot=_plot("nextgqa"),
    gt_help="a folder with gsub_<split>.json (and <split>.csv), or a gsub JSON alone",
))
register_benchmark(Benchmark(
    name="deveqa",
    help="DeVE-QA grounded QA: NExT-GQA protocol (default, as the paper) or the DeVE-QA "
         "repository's rules (--mode deveqa-repo)",
    add_arguments=_add_deveqa_args,
    evaluate=_evaluate("deveqa"),
    plot=_plot("deveqa"),
    modes=("nextgqa", "deveqa-repo"),
    default_mode="nextgqa",
    gt_help="a DeVE-QA annotation file (a JSON list, a JSON object {qid: record} or .jsonl)",
))
for _bench, _extra_args in (("nextgqa", _add_nextgqa_baseline_args),
                            ("deveqa", _add_deveqa_gt_args)):
    for _name, _help, _run in _BASELINES:
        register_baseline(Baseline(benchmark=_bench, name=_name, help=_help,
                                   add_arguments=_extra_args, run=_run,
                                   seeded=_run in (_random_span, _random_answer)))
