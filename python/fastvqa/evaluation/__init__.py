# SPDX-License-Identifier: Apache-2.0
"""Evaluation as a library, and the registry behind ``fastvqa eval`` and
``fastvqa baseline``.

Each benchmark module (``fastvqa/evaluation/<module>.py``) defines plain
keyword functions and registers them, at import:

- an evaluation ``evaluate(*, gt, pred, ...) -> MetricResult`` per benchmark
  (``nextgqa.evaluate``, ``nextgqa.evaluate_deveqa``, ``dvd.evaluate``,
  ``sokbench.evaluate``, ``wildqa.evaluate_evidence``, ``wildqa.evaluate_qa``,
  ``qvhighlights.evaluate``): ``gt`` and ``pred`` are paths, the other
  keywords the benchmark's options under the command-line option's name
  (``--max-pred-windows N`` is ``max_pred_windows=N``);
- baselines ``run(*, gt, ...) -> predictions`` (a JSON-ready object in the
  benchmark's own prediction format, which ``fastvqa eval`` reads back), with
  a ``seed`` keyword only where something is random (only those get
  ``--seed``);
- :func:`register_benchmark` / :func:`register_baseline`: a name (one of
  :data:`fastvqa.data.benchmarks.BENCHMARK_NAMES`, which every command shares), a
  ``task`` where the benchmark is evaluated in several ways (``"wildqa"``,
  ``"qa"``: ``fastvqa eval wildqa qa``), its command-line options and those
  functions.

:func:`evaluate` and :func:`run_baseline` reach them by benchmark name. The
command line only translates its parsed options into the functions'
keywords (:func:`keywords`: each keyword-only parameter takes the option of
its name), so the library and ``fastvqa eval`` give the same result.

An evaluation checks every option before it scores, refuses a score over
nothing (no ground truth, or no prediction matching it) with
:class:`~fastvqa.errors.CommandError`, and puts what the user should know about a score that
stays official (e.g. questions left out, as the official script leaves them
out) into ``result.info["warnings"]``, which the command line prints on
stderr.

The common options (``--pred``, ``--gt``, ``--mode``, ``--json``,
``--per-question``, ``--plot`` for eval; ``--gt``, ``--out`` for baselines,
and ``--seed`` for those whose ``run`` takes a ``seed``) are added by the command
line, not by the modules; so is ``--pred-text`` (raw model responses, exclusive
with ``--pred``; :mod:`fastvqa.evaluation.text_predictions`) for a benchmark
whose ``evaluate`` takes ``pred_text``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from fastvqa import _checks
from fastvqa import errors as _errors
from fastvqa.data.benchmarks import BENCHMARKS as _TABLE
from fastvqa.data.benchmarks import benchmark_choices
from fastvqa._digests import input_digests, sha256_file
from fastvqa._lazy import lazy_exports
from fastvqa.metrics.result import MetricResult

# Modules that register benchmarks, imported when the command line needs them
# (the benchmark registry's ``module`` column, each once).
MODULES = tuple(dict.fromkeys(b.module for b in _TABLE.values()))


@dataclass
class Benchmark:
    #: One of :data:`fastvqa.data.benchmarks.BENCHMARK_NAMES`.
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    #: ``evaluate(*, gt, pred, ...) -> MetricResult``, keyword-only.
    evaluate: Callable[..., MetricResult]
    #: ``plot(result, path, **options)``, options keyword-only.
    plot: Optional[Callable[..., None]] = None
    modes: tuple[str, ...] = ()
    default_mode: Optional[str] = None
    #: ``--gt`` help: what the loader accepts (a file, or also a folder);
    #: None: the benchmark registry's (:attr:`fastvqa.data.BenchmarkInfo.gt`).
    gt_help: Optional[str] = None
    #: The task, for a benchmark evaluated in several ways (``fastvqa eval
    #: wildqa qa``); None for one.
    task: Optional[str] = None

    #: ``check(*, plot, ...)``: command-line option checks that need no file
    #: (e.g. ``--plot-video`` without ``--plot``), run before any work.
    check: Optional[Callable[..., None]] = None
    #: The keywords of ``evaluate`` that name input files or folders (their
    #: sha256 goes into the ``--json`` run record).
    inputs: tuple[str, ...] = ("gt", "pred")

    @property
    def key(self) -> str:
        """The words after ``fastvqa eval``: ``"nextgqa"``, ``"wildqa qa"``."""
        return self.name if self.task is None else f"{self.name} {self.task}"


@dataclass
class Baseline:
    benchmark: str
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    #: ``run(*, gt, ...) -> predictions``, keyword-only.
    run: Callable[..., Any]
    #: ``--gt`` help; default: the benchmark's.
    gt_help: Optional[str] = None
    #: The benchmark's task (:attr:`Benchmark.task`), where it has several.
    task: Optional[str] = None
    @property
    def seeded(self) -> bool:
        """Whether ``run`` draws random numbers (it takes a ``seed`` keyword):
        only then does the command line give it ``--seed``."""
        return "seed" in inspect.signature(self.run).parameters

    @property
    def key(self) -> str:
        """The benchmark's :attr:`Benchmark.key` (``"wildqa qa"``)."""
        return self.benchmark if self.task is None else f"{self.benchmark} {self.task}"


BENCHMARKS: dict[str, Benchmark] = {}
BASELINES: dict[tuple[str, str], Baseline] = {}


def register_benchmark(benchmark: Benchmark) -> Benchmark:
    benchmark_choices((benchmark.name,))  # one of the names every command shares
    if benchmark.key in BENCHMARKS:
        raise ValueError(f"benchmark {benchmark.key!r} registered twice")
    if benchmark.gt_help is None:
        benchmark.gt_help = _TABLE[benchmark.name].gt
    BENCHMARKS[benchmark.key] = benchmark
    return benchmark


def register_baseline(baseline: Baseline) -> Baseline:
    benchmark_choices((baseline.benchmark,))
    key = (baseline.key, baseline.name)
    if key in BASELINES:
        raise ValueError(f"baseline {key} registered twice")
    BASELINES[key] = baseline
    return baseline


def load_all() -> None:
    """Imports every benchmark module (each registers itself once)."""
    for module in MODULES:
        importlib.import_module(f"fastvqa.evaluation.{module}")


def keywords(fn: Callable[..., Any], options: argparse.Namespace) -> dict[str, Any]:
    """The keywords ``fn`` takes, from the parsed command-line ``options``:
    each keyword-only parameter of ``fn`` that ``options`` has (``--max-pred-windows``
    is ``max_pred_windows``). The one translation from the command line to
    the library functions."""
    return {name: getattr(options, name)
            for name, param in inspect.signature(fn).parameters.items()
            if param.kind is inspect.Parameter.KEYWORD_ONLY and hasattr(options, name)}


#: Fields only ground-truth records hold (questions, gold spans and windows),
#: in every benchmark's annotation files; no prediction format has them.
_GT_FIELDS = frozenset(("question", "query", "location", "relevant_windows", "evidences"))


def _holds_gt_fields(value: Any, depth: int = 3) -> bool:
    """Whether ``value`` (a parsed JSON entry) holds a ground-truth field,
    looking through the first element of lists and every key of objects, at
    most ``depth`` levels down (bounded work on any input)."""
    if depth <= 0:
        return False
    if isinstance(value, dict):
        return bool(_GT_FIELDS & value.keys()) or any(
            _holds_gt_fields(v, depth - 1) for v in list(value.values())[:4])
    if isinstance(value, list) and value:
        return _holds_gt_fields(value[0], depth - 1)
    return False


def looks_like_ground_truth(path: Any) -> bool:
    """Whether ``path`` looks like a benchmark's annotation file rather than
    predictions: a folder, or a JSON / JSON Lines file whose first entry
    holds a question, query or gold-span field (:data:`_GT_FIELDS`). Reads
    the first entry only; False for anything unreadable."""
    from fastvqa.data.io import stream_json

    try:
        p = Path(path)
        if p.is_dir():
            return True
        with stream_json(p) as doc:  # JSON Lines: its first line is the document read
            # The first few entries: the keys of one record (a JSON Lines
            # line, SOK-Bench's one question) or the first records of a file.
            for n, (key, value) in enumerate(doc):
                if (doc.kind is dict and key in _GT_FIELDS) or _holds_gt_fields(value):
                    return True
                if n >= 8:
                    break
    except Exception:  # unreadable: no guess (the evaluation's own error stands)
        return False
    return False


def run_benchmark(benchmark: Benchmark, options: dict[str, Any]) -> MetricResult:
    """``benchmark.evaluate(**options)``; when it fails on the user's input
    and the ``pred`` file looks like ground truth
    (:func:`looks_like_ground_truth`), the error says so: ``--gt`` and
    ``--pred`` swapped (the ``gt`` file does not look like ground truth), or
    the ground truth given as the predictions. The files are sniffed only
    after a failure, so a good run reads nothing twice."""
    try:
        return benchmark.evaluate(**options)
    except (_errors.InputError, IsADirectoryError) as err:
        gt, pred = options.get("gt"), options.get("pred")
        if gt is None or pred is None or not looks_like_ground_truth(pred):
            raise
        if not looks_like_ground_truth(gt):
            raise _errors.CommandError(
                f"--gt {gt} looks like predictions and --pred {pred} like the ground truth: "
                f"are --gt and --pred swapped? ({err})") from None
        raise _errors.CommandError(
            f"--pred {pred} looks like ground truth (it holds question or gold-span fields), "
            f"not predictions ({err})") from None


def evaluate(benchmark: str, **options: Any) -> MetricResult:
    """Evaluates with the benchmark named ``benchmark`` (``"nextgqa"``,
    ``"deveqa"``, ``"wildqa evidence"``, ``"wildqa qa"``, ``"dvd"``,
    ``"sokbench"``, ``"qvhighlights"``): its ``evaluate(**options)``, e.g.
    ``evaluate("qvhighlights", gt="gt.jsonl", pred="sub.jsonl", partial=True)``.
    An unknown name is a :class:`~fastvqa.errors.CommandError` listing the known ones."""
    load_all()
    if benchmark not in BENCHMARKS:
        raise _errors.CommandError(f"no benchmark {benchmark!r}; known: {', '.join(sorted(BENCHMARKS))}")
    return run_benchmark(BENCHMARKS[benchmark], options)


def run_baseline(benchmark: str, name: str, **options: Any) -> Any:
    """The predictions of baseline ``name`` of ``benchmark``: its
    ``run(**options)``, e.g. ``run_baseline("nextgqa", "centre-half",
    gt="data/nextgqa")``; JSON-ready, in the format ``evaluate`` reads."""
    load_all()
    if (benchmark, name) not in BASELINES:
        known = ", ".join(f"{b} {n}" for b, n in sorted(BASELINES))
        raise _errors.CommandError(f"no baseline {name!r} for {benchmark!r}; known: {known}")
    return BASELINES[(benchmark, name)].run(**options)


def choice(option: str, value: Any, choices: tuple) -> Any:
    """``value`` when it is one of ``choices``, else :class:`~fastvqa.errors.CommandError`
    naming ``option`` and the choices (the library's check of what argparse
    checks on the command line): :func:`fastvqa._checks.choice`, option first.

    >>> choice("split", "train", ("test", "val"))
    Traceback (most recent call last):
    fastvqa.errors.CommandError: split: expected one of test, val, got 'train'
    """
    return _checks.choice(value, option, "", choices, error=_errors.CommandError)


def flag(option: str, value: Any) -> bool:
    """``value`` when it is ``True`` or ``False``, else
    :class:`~fastvqa.errors.CommandError` naming ``option`` (the library's
    check of a ``store_true`` option such as ``--strict``):
    :func:`fastvqa._checks.flag`, option first."""
    return _checks.flag(value, option, "", error=_errors.CommandError)


def require_records(records: list, gt: Any, what: str = "questions") -> list:
    """``records``, or :class:`~fastvqa.errors.CommandError` when there are none: a score over
    nothing is an error, not a table of NaN."""
    if not records:
        raise _errors.CommandError(f"{gt}: the ground truth holds no {what}; nothing to score")
    return records


def refuse_self_retrieval(train_option: str, train: Any, gt_option: str, gt: Any) -> None:
    """:class:`~fastvqa.errors.CommandError` when the ``train`` path a retrieval baseline
    searches is the ``gt`` path it answers (the same file or folder, by
    :func:`os.path.samefile`, links and ``..`` included) or a folder holding
    it, or lies inside the ``gt`` folder: each test question would find itself
    and score (close to) 100%. A path that does not exist is left to the
    loader to report."""
    a, b = Path(train).resolve(), Path(gt).resolve()
    if not (a.exists() and b.exists()):
        return
    if os.path.samefile(a, b):
        how = "is"
    elif a.is_dir() and b.is_relative_to(a):
        how = "holds"
    elif b.is_dir() and a.is_relative_to(b):
        how = "lies inside"
    else:
        return
    raise _errors.CommandError(f"{train_option} {train} {how} {gt_option} {gt}: the {gt_option} "
                       f"questions would retrieve themselves (a score near 100%); give "
                       f"{train_option} a separate training split")


def question_type(record: Any) -> Optional[str]:
    """A record's question type (its ``extra["question_type"]``, else
    ``extra["type"]``: NExT-GQA's ``CW``/``TN``...), or None where the
    benchmark has none."""
    for field in ("question_type", "type"):
        value = record.extra.get(field)
        if value is not None:
            return str(value)
    return None


def add_question_columns(result: MetricResult, *, prediction: Optional[list] = None,
                         ground_truth: list, question_type: Optional[list] = None) -> None:
    """Gives every per-question row of ``result`` the prediction, the ground
    truth and (where the benchmark has one) the question type, as columns
    ``"prediction"``, ``"ground_truth"`` and ``"question_type"``, one entry
    per row. A column the metric already wrote is kept (``prediction=None``
    leaves the metric's own); a ``question_type`` of all None adds no column."""
    if question_type is not None and all(t is None for t in question_type):
        question_type = None  # a benchmark without question types: no column
    columns = {"prediction": prediction, "ground_truth": ground_truth,
               "question_type": question_type}
    for name, values in columns.items():
        if values is not None and name not in result.per_question:
            result.per_question[name] = list(values)


def run_record(benchmark: Benchmark, options: argparse.Namespace, result: MetricResult,
               argv: Optional[list] = None) -> dict[str, Any]:
    """How a result was made, for the ``--json`` output: ``fastvqa_version``,
    ``mode`` (the result's ``info["mode"]``: the rules it was scored by, the
    ``--mode`` given where the benchmark has one; else None), ``command`` (``["fastvqa", *argv]``, or None) and ``inputs``
    (:func:`input_digests` of the benchmark's input options). No timestamp:
    two runs on the same files give the same record."""
    from fastvqa import __version__

    return {
        "fastvqa_version": __version__,
        "mode": result.info.get("mode"),
        "command": None if argv is None else ["fastvqa", *map(str, argv)],
        "inputs": input_digests({name: getattr(options, name, None)
                                 for name in benchmark.inputs}),
    }


def missing_warning(result: MetricResult, total: int, missing: int, *, what: str,
                    policy: str) -> None:
    """Adds to ``result.info["warnings"]`` that ``missing`` of ``total``
    ground-truth items had no prediction, and what the official evaluation
    does with them (``policy``, e.g. ``"the official eval_ground.py skips
    them"``). Nothing when none is missing; :class:`~fastvqa.errors.CommandError` when all are
    (a score over no prediction)."""
    if missing and missing >= total:
        raise _errors.CommandError(f"none of the {total} {what} has a prediction (all entries are "
                           "null or match no ground-truth key); nothing to score")
    if missing:
        result.info.setdefault("warnings", []).append(
            f"{missing} of {total} {what} have no prediction; {policy}")


def odd_spans(spans: list, limits: list, *, strict: bool, path: Any, labels: list,
              field: str, unit: str = " s") -> dict[str, int]:
    """Counts the predicted spans an official evaluation scores on their raw
    numbers although they look wrong: reversed (``end < start``) or reaching
    outside ``[0, limit]`` (the video, in the prediction's unit).

    Args:
        spans: per item, its predicted spans as an ``(k, 2+)`` array (start and
            end first), or None (no prediction).
        limits: per item, the video's length in the spans' unit, or None
            (unknown: only reversal is checked).
        strict: raise on the first odd span instead of counting it.
        path, labels, field, unit: for the error: the prediction file, each
            item's label (e.g. its question key), the field name, the unit
            written after the video's length.

    Returns ``{"reversed", "outside_video", "items"}``: span counts and the
    number of items with at least one odd span. With ``strict`` the first odd
    span (items in order, spans in file order) is a
    :class:`~fastvqa.data.DataFormatError` naming it."""
    import numpy as np

    from fastvqa.data.errors import DataFormatError

    counts = {"reversed": 0, "outside_video": 0, "items": 0}
    for windows, limit, label in zip(spans, limits, labels):
        if windows is None or len(windows) == 0:
            continue
        ends = np.asarray(windows, dtype=np.float64).reshape(len(windows), -1)[:, :2]
        reversed_w = ends[:, 1] < ends[:, 0]
        outside = np.zeros_like(reversed_w)
        if limit is not None and np.isfinite(limit):
            outside = (ends.min(axis=1) < 0.0) | (ends.max(axis=1) > limit)
        if strict and (reversed_w.any() or outside.any()):
            i = int(np.flatnonzero(reversed_w | outside)[0])
            what = ("has end < start" if reversed_w[i] else
                    f"reaches outside the video [0, {limit:g}]{unit}")
            row = np.asarray(windows[i], dtype=np.float64).tolist()
            raise DataFormatError(path, f"span {i} {row} {what} (--strict refuses "
                                  "it; without it, it is scored as the official evaluation "
                                  "scores it)", record=label, field=field)
        counts["reversed"] += int(reversed_w.sum())
        counts["outside_video"] += int(outside.sum())
        counts["items"] += bool(reversed_w.any() or outside.any())
    return counts


def odd_spans_warning(result: MetricResult, counts: dict[str, int], *,
                      reversed_rule: Optional[str],
                      outside_rule: str = "scored on the raw numbers, unclamped") -> None:
    """Stores :func:`odd_spans`' ``counts`` in ``result.info["odd_spans"]``
    and adds a warning line per kind present, saying how the official
    evaluation scores it (``reversed_rule``, ``outside_rule``) and that
    ``--strict`` refuses it. ``reversed_rule=None``: no line for reversed
    spans (the metric already wrote one)."""
    result.info["odd_spans"] = dict(counts)
    official = ", as the official evaluation does (--strict refuses them)"
    lines = []
    n = counts["reversed"]
    if n and reversed_rule is not None:
        lines.append(f"{n} predicted span{'s have' if n != 1 else ' has'} end < start; "
                     f"{reversed_rule}{official}")
    n = counts["outside_video"]
    if n:
        lines.append(f"{n} predicted span{'s reach' if n != 1 else ' reaches'} outside "
                     f"[0, duration] of their video; {outside_rule}{official}")
    if lines:
        result.info.setdefault("warnings", []).extend(lines)


def fraction_spans_warning(result: MetricResult, spans: list, durations: list, *,
                           advice: str) -> None:
    """Adds to ``result.info["warnings"]`` that every predicted span lies in
    ``[0, 1]`` while a predicted video is longer than 1 s: almost surely
    fractions of the video scored as seconds (a silently tiny score).

    Args:
        spans: per item, its predicted spans as an ``(k, 2+)`` array (start
            and end first), or None (no prediction).
        durations: per item, its video's length in seconds, or None.
        advice: what to do, e.g. ``"pass --normalized"``.
    """
    import numpy as np

    low, high, longest = np.inf, -np.inf, 0.0
    for windows, duration in zip(spans, durations):
        if windows is None or len(windows) == 0:
            continue
        ends = np.asarray(windows, dtype=np.float64).reshape(len(windows), -1)[:, :2]
        if np.isnan(ends).all():
            continue
        low, high = min(low, float(np.nanmin(ends))), max(high, float(np.nanmax(ends)))
        if duration is not None and np.isfinite(duration):
            longest = max(longest, float(duration))
    if low >= 0.0 and high <= 1.0 and longest > 1.0:
        result.info.setdefault("warnings", []).append(
            f"every predicted span lies in [0, 1] while the videos are up to {longest:g} s "
            f"long: spans are scored as seconds; if these are fractions of the video, {advice}")


# ``fastvqa.evaluation.nextgqa`` etc. import (and so register) on first access.
__getattr__, __dir__ = lazy_exports(__name__, submodules=(*MODULES, "plots"))

__all__ = ["BASELINES", "BENCHMARKS", "MODULES", "Baseline", "Benchmark",
           "add_question_columns", "choice", "evaluate", "flag", "fraction_spans_warning",
           "input_digests", "keywords",
           "load_all", "looks_like_ground_truth", "missing_warning", "odd_spans",
           "odd_spans_warning", "question_type",
           "refuse_self_retrieval", "register_baseline", "register_benchmark", "require_records",
           "run_baseline", "run_benchmark", "run_record", "sha256_file", *MODULES, "plots"]
