# SPDX-License-Identifier: Apache-2.0
"""The value every metric function returns: :class:`MetricResult`, and
:class:`BreakdownResult` for results with many breakdown entries."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from fastvqa.errors import InputError


class MetricResult(Mapping):
    """Named metric values plus per-question values.

    Behaves as a read-only mapping from the names the benchmark prints
    (``"Acc@GQA"``, ``"mIoU"``, ``"IoU-F1"``, ``"ROUGE-L"``, ``"R1@0.5"``...) to
    floats at full precision, on the scale the paper prints (percentages on
    0-100). Rounding happens only in :meth:`format_table`.

    Attributes:
        metric: the metric function that computed it, always its name in
            :mod:`fastvqa.metrics` (``"grounded_qa"``, ``"iou_f1"``,
            ``"rouge"``, ``"dvd_accuracy"``, ``"multiple_choice_accuracy"``,
            ``"moment_retrieval"``, ``"recall_at_n"``).
        benchmark: the benchmark evaluated (``"nextgqa"``, ``"wildqa-qa"``...,
            the names of ``fastvqa eval``), set by :mod:`fastvqa.evaluation`;
            None for a direct metric call.
        metrics: ordered name -> value.
        per_question: column name -> array (or list) with one entry per
            evaluated item, e.g. ``{"key": [...], "IoU": array, "IoP": array}``.
        info: how it was computed: mode, counts (evaluated, missing, skipped),
            thresholds, notes.
    """

    def __init__(
        self,
        metric: str,
        metrics: dict[str, float],
        per_question: dict[str, Any] | None = None,
        info: dict[str, Any] | None = None,
        *,
        benchmark: str | None = None,
    ):
        self.metric = metric
        self.benchmark = benchmark
        self.metrics = {k: float(v) for k, v in metrics.items()}
        self.per_question = dict(per_question or {})
        self.info = dict(info or {})

    # Mapping protocol -------------------------------------------------------
    def __getitem__(self, name: str) -> float:
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(
                f"{self.title}: no metric {name!r}; available: {', '.join(self.metrics)}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in self.metrics.items())
        return f"{type(self).__name__}({self.title}: {shown})"

    @property
    def title(self) -> str:
        """The table's heading: the benchmark when set, else the metric's name."""
        return self.benchmark or self.metric

    # Output -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: metric, benchmark, metrics (full precision; NaN as
        null), info."""
        return {
            "metric": self.metric,
            "benchmark": self.benchmark,
            "metrics": {k: _json_float(v) for k, v in self.metrics.items()},
            "info": _jsonable(self.info),
        }

    def format_table(self, decimals: int = 1) -> str:
        """A readable two-row table, rounded for display only. A value over
        no items (NaN) shows as ``n/a``, with ``(n=0)`` when
        ``info["counts"]`` says it had none."""
        if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
            raise InputError(f"format_table: decimals must be an integer >= 0, got {decimals!r}")
        names = list(self.metrics)
        values = [format_value(v, decimals, self.count(n)) for n, v in self.metrics.items()]
        widths = [max(len(n), len(v)) for n, v in zip(names, values)]
        head = "  ".join(n.rjust(w) for n, w in zip(names, widths))
        row = "  ".join(v.rjust(w) for v, w in zip(values, widths))
        lines = [self.title, head, row]
        for key in ("mode", "evaluated", "missing"):
            if key in self.info:
                lines.append(f"{key}: {self.info[key]}")
        return "\n".join(lines)

    def count(self, name: str) -> int | None:
        """How many items metric ``name`` is over (``info["counts"]``), or
        None when the result does not say."""
        counts = self.info.get("counts")
        if isinstance(counts, Mapping) and name in counts:
            return int(counts[name])
        return None

    def per_question_rows(self) -> list[dict[str, Any]]:
        cols = {k: list(np.asarray(v).tolist()) if isinstance(v, np.ndarray) else list(v)
                for k, v in self.per_question.items()}
        n = max((len(v) for v in cols.values()), default=0)
        return [{k: _jsonable(v[i]) for k, v in cols.items()} for i in range(n)]

    def write_per_question(self, path: str | Path, *, fmt: str | None = None) -> Path:
        """Writes per-question values as JSON Lines or CSV.

        Args:
            path: the file to create; it must not exist (refuses to overwrite).
            fmt: ``"jsonl"`` or ``"csv"``; default from ``path``'s suffix
                (``.csv``: CSV, anything else: JSON Lines).

        The file is written through a temporary name and appears, complete,
        only when writing succeeded (:mod:`fastvqa._outputs`); an existing
        ``path`` raises ``FileExistsError`` before any work, a bad ``fmt``
        :class:`fastvqa.errors.InputError` (a ``ValueError``).
        """
        path = Path(path)
        fmt = fmt or ("csv" if path.suffix.lower() == ".csv" else "jsonl")
        if fmt not in ("csv", "jsonl"):
            raise InputError(f"write_per_question: fmt must be 'csv' or 'jsonl', got {fmt!r}")
        from fastvqa._outputs import check_new, open_new

        check_new(path, "path")
        rows = self.per_question_rows()
        with open_new(path, "x", "path", newline="" if fmt == "csv" else None) as f:
            if fmt == "csv":
                writer = csv.DictWriter(f, fieldnames=list(self.per_question))
                writer.writeheader()
                for row in rows:
                    writer.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v
                                     for k, v in row.items()})
            else:
                for row in rows:
                    f.write(json.dumps(row) + "\n")
        return path


class BreakdownResult(MetricResult):
    """A :class:`MetricResult` whose readable table lists one metric per line
    with its item count (``info["counts"]``): a result with dozens of
    breakdown entries does not fit a two-row table. Used by the DVD and
    multiple-choice metrics."""

    def format_table(self, decimals: int = 1) -> str:
        width = max((len(n) for n in self.metrics), default=0)
        lines = [self.title]
        if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
            raise InputError(f"format_table: decimals must be an integer >= 0, got {decimals!r}")
        for name, value in self.metrics.items():
            count = self.count(name)
            if math.isnan(value):  # a group over nothing: never a number
                shown = "n/a (n=0)" if count == 0 else "n/a"
                lines.append(f"{name:<{width}}  {shown:>{decimals + 5}}"
                             + (f"  (n={count})" if count else ""))
                continue
            shown = f"{value:.{decimals}f}"
            lines.append(f"{name:<{width}}  {shown:>{decimals + 5}}"
                         + (f"  (n={count})" if count is not None else ""))
        for key in ("mode", "evaluated", "missing"):
            if key in self.info:
                lines.append(f"{key}: {self.info[key]}")
        # Counts that qualify the numbers, shown only when they are not zero.
        for key in ("out_of_answer_space", "unknown_keys", "bleu_fallbacks", "bleu_ties",
                    "out_of_range"):
            if self.info.get(key):
                lines.append(f"{key}: {self.info[key]}")
        return "\n".join(lines)


def mean_or_nan(values: np.ndarray) -> float:
    """The float64 mean of a 1-D array; NaN for an empty one (a mean over
    nothing is not a number)."""
    return float(np.mean(values, dtype=np.float64)) if values.size else float("nan")


def format_value(value: float, decimals: int, count: int | None = None) -> str:
    """One metric for a table: ``f"{value:.{decimals}f}"``; a NaN value (a
    metric over nothing) is ``n/a``, and ``n/a (n=0)`` when ``count`` is 0."""
    if math.isnan(value):
        return "n/a (n=0)" if count == 0 else "n/a"
    return f"{value:.{decimals}f}"


def _json_float(v: float) -> float | None:
    return None if math.isnan(v) else v


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        return _jsonable(x.item())
    if isinstance(x, float) and math.isnan(x):
        return None
    return x
