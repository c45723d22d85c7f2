# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval dvd`` and the DVD baselines of the paper's §4.1.

Prediction format (``--pred``): a JSON object ``{record_key: answer}`` with
keys as :func:`fastvqa.data.load_dvd` makes them
(``"<split>-<image>_<dialogue>_<turn>"``, e.g.
``"all_actions-CLEVR_new_000002_0_3"``, dialogue and turn 0-based), or a JSON
list of answers in ground-truth order (files in sorted path order, dialogues
and turns in file order). An answer is one of the 40 DVD answer strings
(``"2"``, ``"True"``, ``"flying,rotating"``, ``"spl"`` ...); JSON numbers and
booleans are compared as ``str(value)``, as the official code does (``2`` ->
``"2"``, ``true`` -> ``"True"``); ``null`` or an absent key is a missing
prediction (scored wrong).

From Python: :func:`evaluate` ``(gt=..., pred=..., all_or_references=False)``,
and the baselines as :func:`answer_prior`, :func:`qtype_random`,
:func:`qtype_frequent` and :func:`q_retrieval`, with the command line's
options as keywords.

Baselines (``fastvqa baseline dvd NAME``), each writing that format:

- ``answer-prior``: every turn gets the most frequent answer of ``--train``
  (default: the ``--gt`` file itself);
- ``qtype-random``: per question sub-type (``--by type`` for types), a
  seeded uniform draw from that group's answer space (``--answer-set
  analytic``: the sub-space the paper's data types define; ``observed``: the
  distinct answers of that group in ``--train``);
- ``qtype-frequent``: per sub-type (or type), the most frequent answer of that
  group in ``--train``;
- ``q-retrieval``: the paper's Q-retrieval (TF-IDF): each turn gets the
  answer of the ``--train`` question (``--train`` required) nearest under
  TF-IDF cosine (scikit-learn ``TfidfVectorizer`` defaults, fitted on the
  training questions; the current question only, no history). Ties, frequent
  with templated questions, go to the earliest training question (files in
  sorted path order, dialogues and turns in file order). ``--dedupe`` first
  keeps one copy of each distinct training question string (at its first
  position), answered with its most frequent answer (ties: official answer
  order); the IDF is then fitted on the distinct questions (the paper counts
  360,334 distinct of 615,510 training questions and does not say which it
  used).

Sub-type is the default granularity because the official code's
``answer_by_question_type`` groups answers by sub-type, and the paper's
Q-type (Random) numbers match uniform draws over sub-type answer spaces.
Frequency ties go to the answer listed first in the official 40-answer order;
a group absent from ``--train`` falls back to the overall most frequent answer
(``qtype-frequent``) or to its analytic answer space (``qtype-random``).
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

import numpy as np

from fastvqa.data.benchmarks import load_benchmark
from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import read_keyed_predictions
from fastvqa.errors import CommandError
from fastvqa.evaluation import (Baseline, Benchmark, add_question_columns, choice,
                                missing_warning,
                                refuse_self_retrieval, register_baseline, register_benchmark,
                                require_records)
from fastvqa.metrics.result import MetricResult


def _read_predictions(path: str) -> Any:
    return read_keyed_predictions(
        path, lambda v: isinstance(v, (str, int, float, bool)),
        container="{record_key: answer} or a list of answers in ground-truth order",
        value=lambda v: f"expected an answer string, got {type(v).__name__}",
        types=(str, int, float, bool))


def _breakdown_names(text: str) -> tuple[str, ...]:
    """``--by contained,length`` -> the names (``all``: every one)."""
    from fastvqa.metrics.dialogue import EXTRA_BREAKDOWNS

    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in (*EXTRA_BREAKDOWNS, "all")]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {', '.join(EXTRA_BREAKDOWNS)} or all, "
            f"got {text!r}")
    return names


def _add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all-or-references", action="store_true",
                        help="object-reference-distance breakdown over all long-term references "
                             "(default: only those the video alone cannot resolve, as the paper)")
    parser.add_argument("--by", type=_breakdown_names, metavar="LIST",
                        help="extra breakdowns, comma-separated: contained (number of contained "
                             "objects the question mentions), length (interval length as a share "
                             "of the video input, 10%% bins), relation (cross-turn temporal "
                             "relation, overall and per question type), or all")
    parser.add_argument("--all-lengths", action="store_true",
                        help="--by length over all turns (default: only those the whole video "
                             "cannot answer, as the paper's Fig. 7)")
    parser.add_argument("--all-relations", action="store_true",
                        help="--by relation over all before/after/during turns (default: only "
                             "those whose previous interval gives another answer, as Fig. 8)")


def _load(gt) -> list:
    return require_records(load_benchmark("dvd", gt), gt, "dialogue turns")


def evaluate(*, gt, pred, all_or_references: bool = False, by=None, all_lengths: bool = False,
             all_relations: bool = False) -> MetricResult:
    """DVD dialogue accuracy, as the official code scores it.

    Args:
        gt: a DVD dialogue JSON file or a folder of them (path;
            :func:`fastvqa.data.load_dvd`).
        pred: ``{record_key: answer}`` or a list of answers in ground-truth
            order (path); a missing answer is scored wrong.
        all_or_references: the object-reference-distance breakdown over all
            long-term references (default: only those the video alone cannot
            resolve, as the paper).
        by: extra breakdowns (``"contained"``, ``"length"``, ``"relation"``
            or ``"all"``; :func:`fastvqa.metrics.dvd_accuracy`'s ``by``);
            None: none of them.
        all_lengths / all_relations: those breakdowns over every turn rather
            than only the ones the paper keeps (``effective_length_only`` /
            ``effective_relation_only`` false).

    Returns a :class:`~fastvqa.metrics.MetricResult` named ``"dvd"`` (Acc
    and its breakdowns, percent). Raises :class:`~fastvqa.errors.CommandError`
    or :class:`~fastvqa.data.DataFormatError` (``ValueError``) for unusable
    files.
    """
    from fastvqa.metrics.dialogue import dvd_accuracy

    records = _load(gt)
    predictions = _read_predictions(pred)
    if not predictions:
        raise CommandError(f"{pred}: holds no predictions; nothing to score")
    from fastvqa.errors import InputError

    try:
        result = dvd_accuracy(predictions, records,
                              effective_or_only=not all_or_references, by=by or (),
                              effective_length_only=not all_lengths,
                              effective_relation_only=not all_relations)
    except InputError as err:  # the metric's checks of the user's data; not its bugs
        raise DataFormatError(pred, str(err)) from None
    result.benchmark = "dvd"
    add_question_columns(result, ground_truth=result.per_question["answer"])
    missing_warning(result, len(records), result.info["missing"], what="turns",
                    policy="they are scored as wrong answers (Acc is over all turns)")
    return result


def _plot(result: MetricResult, path: str) -> None:
    """Horizontal bars: overall, per type, per interval type, transferability."""
    from fastvqa.evaluation.plots import plot_accuracy_bars

    names = [n for n in result if n == "Acc" or n.startswith(("Acc/type=", "Acc/interval=",
                                                               "Transfer/"))]
    plot_accuracy_bars(names, [result[n] for n in names], path,
                       counts=[result.count(n) for n in names],
                       title=f"DVD: {result.info.get('evaluated', '?')} turns")


def _train_and_gt(train, gt) -> tuple[list, list]:
    """The ``train`` records (default: the ``gt`` ones) and the ``gt``
    records; the ground truth is read once when it is both."""
    records = _load(train or gt)
    return records, (_load(gt) if train else records)


def _most_frequent(answers: list[str]) -> str:
    from fastvqa.metrics.dialogue import DVD_ANSWERS

    counts = Counter(answers)
    rank = {a: i for i, a in enumerate(DVD_ANSWERS)}
    # Highest count; ties to the official answer order (answers outside the
    # 40-answer space after it, alphabetically).
    return min(counts, key=lambda a: (-counts[a], rank.get(a, len(rank)), a))


def _group_field(by: str) -> str:
    return "question_subtype" if choice("by", by, ("subtype", "type")) == "subtype" \
        else "question_type"


def _add_train(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train", metavar="PATH",
                        help="dialogue file or folder to take answer statistics from "
                             "(default: the --gt data)")


def _add_by(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--by", choices=("subtype", "type"), default="subtype",
                        help="question granularity (subtype as the official "
                             "answer_by_question_type)")


def answer_prior(*, gt, train=None) -> dict[str, str]:
    """``answer-prior``: ``{record_key: answer}``, the most frequent answer of
    ``train`` (path; default: ``gt`` itself) for every turn of ``gt``."""
    train_records, gt_records = _train_and_gt(train, gt)
    answer = _most_frequent([str(r.answer) for r in train_records])
    return {r.key: answer for r in gt_records}


def _add_random_arguments(parser: argparse.ArgumentParser) -> None:
    _add_by(parser)
    parser.add_argument("--answer-set", choices=("analytic", "observed"), default="analytic",
                        help="answers to draw from: the group's answer sub-space (analytic) "
                             "or the distinct answers the group has in --train")
    _add_train(parser)


def qtype_random(*, gt, by: str = "subtype", answer_set: str = "analytic", train=None,
                 seed: int = 0) -> dict[str, str]:
    """``qtype-random``: per question sub-type (``by="type"``: type), a
    uniform draw of ``np.random.default_rng(seed)`` from the group's answer
    space (``answer_set="analytic"``: the sub-space the paper's data types
    define; ``"observed"``: the group's distinct answers in ``train``,
    default ``gt``)."""
    from fastvqa.metrics.dialogue import DVD_ANSWERS, answer_subspace

    field = _group_field(by)
    observed: dict[str, list[str]] = {}
    if choice("answer_set", answer_set, ("analytic", "observed")) == "observed":
        train_records, gt_records = _train_and_gt(train, gt)
        rank = {a: i for i, a in enumerate(DVD_ANSWERS)}
        seen: dict[str, set] = {}
        for r in train_records:
            seen.setdefault(r.extra[field], set()).add(str(r.answer))
        observed = {g: sorted(s, key=lambda a: (rank.get(a, len(rank)), a))
                    for g, s in seen.items()}
    else:
        gt_records = _load(gt)
    rng = np.random.default_rng(seed)
    out = {}
    for r in gt_records:
        group = r.extra[field]
        space = observed.get(group) or answer_subspace(group)
        out[r.key] = space[int(rng.integers(len(space)))]
    return out


def _add_frequent_arguments(parser: argparse.ArgumentParser) -> None:
    _add_by(parser)
    _add_train(parser)


def qtype_frequent(*, gt, by: str = "subtype", train=None) -> dict[str, str]:
    """``qtype-frequent``: per sub-type (``by="type"``: type), the most
    frequent answer of that group in ``train`` (default ``gt``); a group
    absent from ``train`` gets the overall most frequent answer."""
    field = _group_field(by)
    train_records, gt_records = _train_and_gt(train, gt)
    by_group: dict[str, list[str]] = {}
    for r in train_records:
        by_group.setdefault(r.extra[field], []).append(str(r.answer))
    best = {g: _most_frequent(a) for g, a in by_group.items()}
    fallback = _most_frequent([str(r.answer) for r in train_records])
    return {r.key: best.get(r.extra[field], fallback) for r in gt_records}


def _add_retrieval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train", metavar="PATH", required=True,
                        help="dialogue file or folder whose questions are searched (required: "
                             "searching the --gt turns would return their own answers)")
    parser.add_argument("--dedupe", action="store_true",
                        help="keep one copy of each distinct training question, answered with "
                             "its most frequent answer")


def _distinct_questions(questions: list[str], answers: list[str]) -> tuple[list, list]:
    """One entry per distinct question string, at its first position, with its
    most frequent answer (:func:`_most_frequent`'s tie rule)."""
    by_question: dict[str, list[str]] = {}
    for q, a in zip(questions, answers):
        by_question.setdefault(q, []).append(a)
    return list(by_question), [_most_frequent(a) for a in by_question.values()]


def q_retrieval(*, gt, train, dedupe: bool = False) -> dict[str, str]:
    """``q-retrieval``: each turn of ``gt`` gets the answer of the ``train``
    question (path, required, not ``gt``) nearest under TF-IDF cosine (ties:
    the earliest); ``dedupe``: one copy of each distinct training question,
    with its most frequent answer."""
    from fastvqa.retrieval import question_retrieval

    refuse_self_retrieval("--train", train, "--gt", gt)
    train_records = load_benchmark("dvd", train)
    if not train_records:
        raise CommandError(f"--train {train} holds no dialogue turns")
    questions = [r.question for r in train_records]
    answers = [str(r.answer) for r in train_records]
    if dedupe:
        questions, answers = _distinct_questions(questions, answers)
    test = _load(gt)
    found = question_retrieval(questions, answers, [r.question for r in test], "tfidf")
    return {r.key: answer for r, answer in zip(test, found.answers)}


register_benchmark(Benchmark(
    name="dvd",
    help="DVD dialogue accuracy over the 40 answers, by question type/sub-type, interval type, "
         "topic transfer, turn and object-reference distance; --by adds containment, relative "
         "interval length and temporal relation (--gt: a dialogue JSON file or a "
         "folder of them; --pred: {record_key: answer} or a list in ground-truth order)",
    add_arguments=_add_eval_arguments,
    evaluate=evaluate,
    plot=_plot,
))
register_baseline(Baseline("dvd", "answer-prior",
                           "the most frequent answer of --train (default --gt) for every turn",
                           _add_train, answer_prior))
register_baseline(Baseline("dvd", "qtype-random",
                           "a seeded random answer from each question sub-type's (or type's) "
                           "answer set", _add_random_arguments, qtype_random))
register_baseline(Baseline("dvd", "qtype-frequent",
                           "the most frequent answer of each question sub-type (or type) in "
                           "--train (default --gt)", _add_frequent_arguments, qtype_frequent))
register_baseline(Baseline("dvd", "q-retrieval",
                           "the answer of the TF-IDF-nearest --train question (ties: the "
                           "earliest), as the paper's Q-retrieval", _add_retrieval_arguments,
                           q_retrieval))
