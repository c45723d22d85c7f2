# SPDX-License-Identifier: Apache-2.0
"""The registry behind ``fastvqa eval`` and ``fastvqa baseline``.

Each benchmark module (``fastvqa/evaluation/<module>.py``) registers, at
import, the benchmarks it evaluates and the trivial baselines it can write:

- :func:`register_benchmark`: a name (``"nextgqa"``, one of
  :data:`fastvqa._argtypes.BENCHMARK_NAMES`, which every command shares), a
  ``task`` where the benchmark is evaluated in several ways (``"wildqa"``,
  ``"qa"``: ``fastvqa eval wildqa qa``), its own command-line options, and
  ``evaluate(args) -> MetricResult``; optionally ``plot(result, args, path)``.
- :func:`register_baseline`: a (benchmark[, task], name), its options,
  ``run(args) -> predictions`` (a JSON-ready object in the benchmark's own
  prediction format, which ``fastvqa eval`` reads back), and ``seeded=True``
  when ``run`` draws random numbers (only then is there a ``--seed``).

``evaluate`` checks every option before it scores (a bad ``--plot-video`` fails
before the table), refuses a score over nothing (no ground truth, or no
prediction matching it) with :class:`CommandError`, and puts what the user
should know about a score that stays official (e.g. questions left out, as
the official script leaves them out) into ``result.info["warnings"]``, which
the command line prints on stderr.

The common options (``--pred``, ``--gt``, ``--mode``, ``--json``,
``--per-question``, ``--plot`` for eval; ``--gt``, ``--out`` for baselines,
and ``--seed`` for those registered ``seeded=True``) are added by the command
line, not by the modules.
"""

from __future__ import annotations

import argparse
import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from fastvqa._argtypes import benchmark_choices
from fastvqa._lazy import lazy_exports
from fastvqa.errors import InputError
from fastvqa.metrics.result import MetricResult

# Modules that register benchmarks, imported when the command line needs them.
MODULES = ("nextgqa", "wildqa", "dvd", "sokbench", "qvhighlights")


class CommandError(InputError):
    """A mistake the user can fix (a bad option, an unusable file, nothing to
    score): :func:`fastvqa.cli.main` prints it as one line, ``fastvqa
    <command>: error: <message>``, and exits with status 2, no traceback.

    The command modules' validation error, of the :class:`fastvqa.errors.InputError`
    family (a ``ValueError``); see :mod:`fastvqa.errors` for the family
    (``VideoError``, ``IndexFileError``, ``DataFormatError``,
    :class:`fastvqa._outputs.OutputError`). ``main`` treats only that family,
    ``FileNotFoundError``/``IsADirectoryError``/``NotADirectoryError``/
    ``FileExistsError``/``PermissionError`` (a path) and an ``ImportError``
    whose message names the ``pip install`` that fixes it as the user's;
    anything else, a plain ``ValueError`` or ``TypeError`` from inside
    fastvqa included, is a bug and shows its traceback."""


@dataclass
class Benchmark:
    #: One of :data:`fastvqa._argtypes.BENCHMARK_NAMES`.
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    evaluate: Callable[[argparse.Namespace], MetricResult]
    plot: Optional[Callable[[MetricResult, argparse.Namespace, str], None]] = None
    modes: tuple[str, ...] = ()
    default_mode: Optional[str] = None
    #: ``--gt`` help: what the loader accepts (a file, or also a folder).
    gt_help: str = "ground-truth file"
    #: The task, for a benchmark evaluated in several ways (``fastvqa eval
    #: wildqa qa``); None for one.
    task: Optional[str] = None

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
    run: Callable[[argparse.Namespace], Any]
    #: ``--gt`` help; default: the benchmark's.
    gt_help: Optional[str] = None
    #: The benchmark's task (:attr:`Benchmark.task`), where it has several.
    task: Optional[str] = None
    #: Whether ``run`` draws random numbers: only then does the command line
    #: give it ``--seed`` (``args.seed``).
    seeded: bool = False

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
        try:
            importlib.import_module(f"fastvqa.evaluation.{module}")
        except ModuleNotFoundError as err:
            # Only a missing benchmark module itself is tolerated (work in
            # progress); a missing dependency inside one is a real error.
            if err.name != f"fastvqa.evaluation.{module}":
                raise


def require_records(records: list, gt: Any, what: str = "questions") -> list:
    """``records``, or :class:`CommandError` when there are none: a score over
    nothing is an error, not a table of NaN."""
    if not records:
        raise CommandError(f"{gt}: the ground truth holds no {what}; nothing to score")
    return records


def refuse_self_retrieval(train_option: str, train: Any, gt_option: str, gt: Any) -> None:
    """:class:`CommandError` when the ``train`` path a retrieval baseline
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
    raise CommandError(f"{train_option} {train} {how} {gt_option} {gt}: the {gt_option} "
                       f"questions would retrieve themselves (a score near 100%); give "
                       f"{train_option} a separate training split")


def missing_warning(result: MetricResult, total: int, missing: int, *, what: str,
                    policy: str) -> None:
    """Adds to ``result.info["warnings"]`` that ``missing`` of ``total``
    ground-truth items had no prediction, and what the official evaluation
    does with them (``policy``, e.g. ``"the official eval_ground.py skips
    them"``). Nothing when none is missing; :class:`CommandError` when all are
    (a score over no prediction)."""
    if missing and missing >= total:
        raise CommandError(f"none of the {total} {what} has a prediction (all entries are "
                           "null or match no ground-truth key); nothing to score")
    if missing:
        result.info.setdefault("warnings", []).append(
            f"{missing} of {total} {what} have no prediction; {policy}")


# ``fastvqa.evaluation.nextgqa`` etc. import (and so register) on first access.
__getattr__, __dir__ = lazy_exports(__name__, submodules=(*MODULES, "plots"))

__all__ = ["BASELINES", "BENCHMARKS", "MODULES", "Baseline", "Benchmark", "CommandError",
           "load_all", "missing_warning", "refuse_self_retrieval", "register_baseline",
           "register_benchmark", "require_records", *MODULES, "plots"]
