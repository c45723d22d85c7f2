# SPDX-License-Identifier: Apache-2.0
"""The registry behind ``fastvqa eval`` and ``fastvqa baseline``.

Each benchmark module (``fastvqa/evaluation/<module>.py``) registers, at
import, the benchmarks it evaluates and the trivial baselines it can write:

- :func:`register_benchmark`: a name (``"nextgqa"``), its own command-line
  options, and ``evaluate(args) -> MetricResult``; optionally
  ``plot(result, args, path)``.
- :func:`register_baseline`: a (benchmark, name) pair, its options, and
  ``run(args) -> predictions`` (a JSON-ready object in the benchmark's own
  prediction format, which ``fastvqa eval`` reads back).

The common options (``--pred``, ``--gt``, ``--mode``, ``--json``,
``--per-question``, ``--plot`` for eval; ``--gt``, ``--out``, ``--seed`` for
baselines) are added by the command line, not by the modules.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

from fastvqa.metrics.result import MetricResult

# Modules that register benchmarks, imported when the command line needs them.
MODULES = ("nextgqa", "wildqa", "dvd", "sokbench", "qvhighlights")


class CommandError(Exception):
    """A user-facing failure of ``fastvqa eval``/``baseline``: printed as one
    line, exit status 2, no traceback."""


@dataclass
class Benchmark:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    evaluate: Callable[[argparse.Namespace], MetricResult]
    plot: Optional[Callable[[MetricResult, argparse.Namespace, str], None]] = None
    modes: tuple[str, ...] = ()
    default_mode: Optional[str] = None


@dataclass
class Baseline:
    benchmark: str
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], Any]


BENCHMARKS: dict[str, Benchmark] = {}
BASELINES: dict[tuple[str, str], Baseline] = {}


def register_benchmark(benchmark: Benchmark) -> Benchmark:
    if benchmark.name in BENCHMARKS:
        raise ValueError(f"benchmark {benchmark.name!r} registered twice")
    BENCHMARKS[benchmark.name] = benchmark
    return benchmark


def register_baseline(baseline: Baseline) -> Baseline:
    key = (baseline.benchmark, baseline.name)
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
