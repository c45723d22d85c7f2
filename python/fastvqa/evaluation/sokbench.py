# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval sokbench`` and its random-answer baseline.

Prediction format (``--pred``): a JSON object mapping a question id (as
:func:`fastvqa.data.load_sokbench` makes them: ``"<type>_<i>"`` for the
released ``{type: [questions]}`` file, ``"0"`` for a single-question file) or
a record key (``"<video>_<question_id>"``) to the model's output, or a JSON
list of outputs in file order. An output is a 0-based option index (JSON
integer), free text (string: an option label is parsed, else the option with
the highest BLEU is taken; see
:func:`fastvqa.metrics.multiple_choice.multiple_choice_accuracy`), or ``null``
(missing, scored wrong).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import read_keyed_predictions
from fastvqa.evaluation import Baseline, Benchmark, register_baseline, register_benchmark
from fastvqa.metrics.result import MetricResult

_SMOOTHING = ("none",) + tuple(f"method{i}" for i in range(8))


def _read_predictions(path: str) -> Any:
    return read_keyed_predictions(
        path, lambda v: not isinstance(v, bool) and isinstance(v, (int, str)),
        container="{question_id: output} or a list of outputs in file order",
        value=lambda v: f"expected an option index (integer) or text, got {json.dumps(v)}")


def _add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index-base", type=int, choices=(0, 1), default=0,
                        help="how integers written in free text count options (default 0, as "
                             "right_choice; JSON integers are always 0-based indices)")
    parser.add_argument("--bleu-smoothing", choices=_SMOOTHING, default="none",
                        help="NLTK smoothing for the BLEU fallback (default none: NLTK's plain "
                             "sentence BLEU-4)")


def _evaluate(args: argparse.Namespace) -> MetricResult:
    from fastvqa.data.sokbench import load_sokbench
    from fastvqa.metrics.multiple_choice import multiple_choice_accuracy

    records = load_sokbench(args.gt)
    outputs = _read_predictions(args.pred)
    smoothing = None if args.bleu_smoothing == "none" else args.bleu_smoothing
    try:
        return multiple_choice_accuracy(outputs, records, index_base=args.index_base,
                                        bleu_smoothing=smoothing, benchmark="sokbench")
    except (TypeError, ValueError) as err:
        raise DataFormatError(args.pred, str(err)) from None


def _plot(result: MetricResult, args: argparse.Namespace, path: str) -> None:
    """Horizontal bars: overall, per question type, macro mean."""
    from fastvqa.evaluation.plots import plot_accuracy_bars

    names = list(result)
    plot_accuracy_bars(names, [result[n] for n in names], path, color="tab:green", chance=25.0,
                       title=f"SOK-Bench multiple choice: {result.info.get('evaluated', '?')} "
                             "questions")


def _add_random_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def _run_random(args: argparse.Namespace) -> dict[str, int]:
    from fastvqa.data.sokbench import load_sokbench

    rng = np.random.default_rng(args.seed)
    # 0-based option indices, keyed by question id (unique within a file).
    return {r.question_id: int(rng.integers(len(r.options))) for r in load_sokbench(args.gt)}


register_benchmark(Benchmark(
    name="sokbench",
    help="SOK-Bench multiple-choice accuracy, per question type (--gt: the question JSON; "
         "--pred: {question_id: option index or free text} or a list in file order)",
    add_arguments=_add_eval_arguments,
    evaluate=_evaluate,
    plot=_plot,
))
register_baseline(Baseline("sokbench", "random-answer",
                           "a seeded uniformly random option index (0-based) per question",
                           _add_random_arguments, _run_random))
