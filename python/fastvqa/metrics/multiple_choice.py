# SPDX-License-Identifier: Apache-2.0
"""Multiple-choice accuracy with SOK-Bench's rule for free-text outputs.

SOK-Bench (Wang et al., CVPR 2024, §4.1): "we need to parse an integer as the
choice taken by the model. If the parsing algorithm fails, we calculate the
BLEU score between model output and each choice candidate, picking the highest
one as the model's answer." The authors released no evaluation code
(csbobby/SOK-Bench holds only the data format), so the parsing forms, the
BLEU variant and the tie rule below are fastvqa's documented choices; the BLEU
settings used are recorded in ``info["bleu"]``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

import numpy as np

from fastvqa.errors import InputError, InputTypeError
from fastvqa.metrics._align import align_predictions
from fastvqa.metrics.base import Metric
from fastvqa.metrics.result import BreakdownResult, MetricResult
from fastvqa.parse.options import parse_option

_INT64 = np.iinfo(np.int64)


def parse_option_index(output: str, n_options: int, *, index_base: int = 0) -> Optional[int]:
    """The option index a free-text output names, or None when it names none:
    :func:`fastvqa.parse.parse_option` with ``rules="labels"`` (its
    :data:`~fastvqa.parse.options.LABEL_RULES`), with SOK-Bench's index base.

    Forms accepted, tried in this order (the first that matches wins):

    1. the whole output (stripped) is a label: an integer ``"2"``, ``"(2)"``,
       ``"[2]"``, ``"2."``, ``"2)"``; a capital letter ``"B"``, ``"(B)"``,
       ``"B."``, ``"B)"``, ``"B:"``; a lower-case letter in brackets ``"(b)"``;
    2. a label leading free text, followed by whitespace: ``"(B) The soup..."``,
       ``"[2] ..."``, ``"B. The soup..."``, ``"2) ..."``, ``"B: ..."``;
    3. an answer phrase anywhere (first occurrence): ``answer``, ``option`` or
       ``choice`` (any case), optionally ``is`` and ``:``/``-``, then a label
       (an integer, a capital letter, or a letter in brackets) followed by
       the end, whitespace or punctuation: ``"answer: 2"``,
       ``"The answer is (C)."``, ``"Option B"``.

    Integers are read with ``index_base``, **0-based by default** (0: ``"2"``
    is the third option, as SOK-Bench's 0-based ``right_choice``; 1: ``"2"``
    is the second, :func:`~fastvqa.parse.parse_option`'s default); letters
    are always A = 0. An integer out of range is still a parsed choice (it
    scores wrong); a letter beyond the options is not a label (form 3 then
    moves on). Integers embedded in free text ("add 2 cups") are not read.

    >>> parse_option_index("2", 4)  # 0-based: the third option
    2
    >>> parse_option_index("2", 4, index_base=1)  # as parse_option("2", 4).index
    1
    >>> parse_option_index("The answer is (C).", 4)
    2
    """
    return parse_option(output, n_options, index_base=index_base, rules="labels").index


def _as_int64(index: int) -> int:
    """An option index for the int64 prediction column: beyond its range (no
    option has such an index, so it scores wrong either way) it is the bound."""
    return min(max(index, int(_INT64.min)), int(_INT64.max))


def _bleu_scorer(weights: Sequence[float], smoothing: Optional[str]) -> Callable:
    try:
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    except ImportError as err:  # pragma: no cover - exercised only without nltk
        raise ImportError("BLEU (multiple_choice_accuracy's fallback, direct_answer) needs "
                          "nltk: pip install 'fastvqa[eval]'") from err
    smoothing_function = None
    if smoothing is not None:
        smoothing_function = getattr(SmoothingFunction(), smoothing, None)
        if smoothing_function is None or not smoothing.startswith("method"):
            raise InputError(f"multiple_choice_accuracy: bleu_smoothing must be None or one of "
                             f"nltk's 'method0'..'method7', got {smoothing!r}")
    weights = tuple(float(w) for w in weights)

    def score(hypothesis: list[str], reference: list[str]) -> float:
        # nltk warns when a higher-order n-gram has no match (the score is then
        # (near) zero); that is the documented outcome here, not a problem.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return float(sentence_bleu([reference], hypothesis, weights=weights,
                                       smoothing_function=smoothing_function))

    return score


def _gold(records_or_pair: Any) -> tuple[list, list[list[str]], list[int], Optional[list]]:
    """-> (records or None, options per item, answer index per item, types from records)."""
    if isinstance(records_or_pair, tuple) and len(records_or_pair) == 2:
        options, answers = records_or_pair
        options = [list(o) for o in options]
        answers = list(answers)
        if len(options) != len(answers):
            raise InputError(f"multiple_choice_accuracy: {len(options)} option lists for "
                             f"{len(answers)} answers")
        return None, options, answers, None
    records = list(records_or_pair)
    options = [list(r.options) for r in records]
    answers = [r.answer for r in records]
    types = None
    if records and all(r.extra.get("question_type") is not None for r in records):
        types = [r.extra["question_type"] for r in records]
    return records, options, answers, types


def multiple_choice_accuracy(
    preds: Any,
    target: Any,
    *,
    question_types: Optional[Sequence] = None,
    index_base: int = 0,
    bleu_weights: Sequence[float] = (0.25, 0.25, 0.25, 0.25),
    bleu_smoothing: Optional[str] = None,
    tokenize: Optional[Callable[[str], list[str]]] = None,
    parse_text: bool = True,
) -> MetricResult:
    """Multiple-choice accuracy (percent) with SOK-Bench's free-text rule.

    Args:
        preds: one model output per question: a mapping (``record.key`` or
            ``record.question_id`` -> output; records only) or a sequence in
            question order. An output is:

            - an ``int`` (or NumPy integer): the 0-based option index itself,
              as SOK-Bench's ``right_choice`` (``index_base`` does not apply);
            - a ``str``: an option index is parsed with
              :func:`parse_option_index` (``index_base`` applies to integers
              written in the text); when none is found, the option with the
              highest BLEU against the output is taken (SOK-Bench §4.1);
            - ``None`` (or absent from the mapping): missing, scored wrong.
        target: :class:`QARecord` list (``options``; ``answer`` = correct 0-based
            index; ``extra["question_type"]`` used for the breakdown when every
            record has one), or a pair ``(options, answers)``: option lists and
            correct 0-based indices.
        question_types: one label per question for the per-type breakdown
            (overrides the records' types).
        index_base: 0 or 1, for integers parsed from text.
        bleu_weights, bleu_smoothing: the BLEU of the fallback is NLTK's
            ``sentence_bleu(references=[option_tokens], hypothesis=output_tokens,
            weights=bleu_weights, smoothing_function=SmoothingFunction().<bleu_smoothing>)``;
            the defaults are NLTK's own (uniform 4-gram weights, no smoothing:
            Papineni et al.'s BLEU, which SOK-Bench cites). SOK-Bench does not
            say which variant it used. Without smoothing NLTK returns 0 when no
            unigram matches, and a tiny positive value (not 0) when only some
            higher order has no match, so lower-order overlap still ranks options.
        tokenize: text -> tokens for BLEU (default: ``str.split``, no
            lower-casing or punctuation splitting).
        parse_text: False: a ``str`` output goes straight to the BLEU
            fallback, unparsed (for text whose label parse already failed,
            as ``fastvqa eval sokbench --pred-text`` gives it).

    Ties in BLEU (e.g. an output sharing no word with any option, all scores 0)
    go to the first (lowest-index) of the tied options; ties are counted in
    ``info["bleu_ties"]``.

    Returns:
        :class:`MetricResult` with ``"Acc"`` (over all questions; micro) and,
        when types are known, ``"Acc/type=<t>"`` per type (in order of first
        appearance) and ``"Acc/macro"`` (unweighted mean of the per-type
        accuracies; SOK-Bench does not say how its "Overall" aggregates).
        ``per_question``: ``key``, ``output``, ``prediction`` (0-based index,
        -1 when missing; an index beyond int64, such as a 30-digit number in
        the text, is kept as the int64 bound: wrong, and counted in
        ``info["out_of_range"]``), ``answer``, ``correct``, ``method`` (``"index"``,
        ``"parsed"``, ``"bleu"``, ``"missing"``), ``bleu`` (best BLEU, NaN when
        not used), ``bleu_tie``, ``question_type``.

    Raises:
        TypeError: an output that is not int/str/None (bools and floats included).
        ValueError: mismatched lengths, an answer index outside its options,
            bad ``index_base`` or ``bleu_smoothing``, a mapping none of whose
            keys names a record.

        Both are :class:`fastvqa.errors.InputError` (the type errors also
        ``TypeError``): the caller's data or arguments. Any other exception
        is a fastvqa bug.
    """
    fn = "multiple_choice_accuracy"
    if index_base not in (0, 1):
        raise InputError(f"{fn}: index_base must be 0 or 1, got {index_base!r}")
    records, options, answers, record_types = _gold(target)
    n = len(options)
    if records is not None:
        raw, align_info = align_predictions(preds, records, fn, by_question_id=True)
        keys = [r.key for r in records]
    else:
        if isinstance(preds, Mapping):
            raise InputTypeError(f"{fn}: a mapping of outputs needs records (to know the keys); "
                                 "give a sequence in question order with (options, answers)")
        raw, align_info = align_predictions(preds, [None] * n, fn)
        keys = [str(i) for i in range(n)]
    types = list(question_types) if question_types is not None else record_types
    if types is not None and len(types) != n:
        raise InputError(f"{fn}: {len(types)} question types for {n} questions")
    for i, (opts, ans) in enumerate(zip(options, answers)):
        if isinstance(ans, (bool, np.bool_)) or not isinstance(ans, (int, np.integer)) \
                or not 0 <= int(ans) < len(opts):
            raise InputError(f"{fn}: question {keys[i]!r}: answer must be an option index in "
                             f"[0, {len(opts)}), got {ans!r}")

    split = tokenize if tokenize is not None else str.split
    scorer = None
    prediction = np.full(n, -1, dtype=np.int64)
    method: list[str] = []
    best_bleu = np.full(n, math.nan)
    tie = np.zeros(n, dtype=bool)
    for i, out in enumerate(raw):
        if isinstance(out, np.generic):
            out = out.item()
        if out is None:
            method.append("missing")
        elif isinstance(out, bool) or not isinstance(out, (int, str)):
            raise InputTypeError(f"{fn}: output for {keys[i]!r} must be an option index (int), "
                                 f"text (str) or None, got {type(out).__name__} {out!r}")
        elif isinstance(out, int):
            prediction[i] = _as_int64(out)
            method.append("index")
        else:
            parsed = (parse_option_index(out, len(options[i]), index_base=index_base)
                      if parse_text else None)
            if parsed is not None:
                prediction[i] = _as_int64(parsed)
                method.append("parsed")
            else:
                if scorer is None:
                    scorer = _bleu_scorer(bleu_weights, bleu_smoothing)
                hyp = split(out)
                scores = np.array([scorer(hyp, split(o)) for o in options[i]], dtype=np.float64)
                best = int(np.argmax(scores))  # argmax returns the first maximum
                prediction[i] = best
                best_bleu[i] = scores[best]
                tie[i] = int((scores == scores[best]).sum()) > 1
                method.append("bleu")
    answer_arr = np.asarray([int(a) for a in answers], dtype=np.int64)
    correct = prediction == answer_arr

    metrics: dict[str, float] = {"Acc": 100.0 * float(correct.mean()) if n else math.nan}
    counts: dict[str, int] = {"Acc": n}
    if types is not None and n:
        labels = [str(t) for t in types]
        per_type = []
        for label in dict.fromkeys(labels):
            mask = np.array([x == label for x in labels])
            acc = 100.0 * float(correct[mask].mean())
            metrics[f"Acc/type={label}"] = acc
            counts[f"Acc/type={label}"] = int(mask.sum())
            per_type.append(acc)
        metrics["Acc/macro"] = float(np.mean(per_type))
        counts["Acc/macro"] = len(per_type)

    methods = np.array(method, dtype=object)
    info = {
        "evaluated": n,
        "missing": int((methods == "missing").sum()),
        "index_outputs": int((methods == "index").sum()),
        "parsed": int((methods == "parsed").sum()),
        "bleu_fallbacks": int((methods == "bleu").sum()),
        "bleu_ties": int(tie.sum()),
        "out_of_range": int(sum(m != "missing" and not 0 <= p < len(o)
                                for m, p, o in zip(method, prediction, options))),
        "unknown_keys": align_info["unknown_keys"],
        "index_base": index_base,
        "bleu": {
            "implementation": "nltk.translate.bleu_score.sentence_bleu",
            "weights": [float(w) for w in bleu_weights],
            "smoothing": bleu_smoothing,
            "tokenize": ("str.split" if tokenize is None
                         else getattr(tokenize, "__name__", "custom")),
            "ties": "first (lowest-index) option",
        },
        "aggregation": {"Acc": "micro (over questions)", "Acc/macro": "mean over types"},
        "counts": counts,
    }
    per_question = {
        "key": keys,
        "output": [None if o is None else str(o.item() if isinstance(o, np.generic) else o)
                   for o in raw],
        "prediction": prediction,
        "answer": answer_arr,
        "correct": correct,
        "method": method,
        "bleu": best_bleu,
        "bleu_tie": tie,
        "question_type": list(types) if types is not None else [None] * n,
    }
    return BreakdownResult("multiple_choice_accuracy", metrics, per_question, info)


class MultipleChoiceAccuracy(Metric):
    """:func:`multiple_choice_accuracy` over batches:
    ``MultipleChoiceAccuracy(index_base=..., bleu_weights=..., ...)``, then
    ``update(preds, target, question_types=...)`` per batch (``target`` the
    batch's records or its ``(options, answers)`` pair, the same kind in every
    batch). ``compute()`` equals ``multiple_choice_accuracy`` on all batches
    concatenated. See :class:`fastvqa.metrics.Metric`."""

    function = "multiple_choice_accuracy"
    per_item = ("question_types",)
    composite_target = True
