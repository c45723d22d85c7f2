# SPDX-License-Identifier: Apache-2.0
"""Open-ended answers: ROUGE-1/2/L against reference answers after WildQA's
answer normalisation (MichiganNLP/In-the-wild-QA, ``src/src/metrics.py`` and
``src/src/model.py``).

Scale: the WildQA paper prints ROUGE as a percentage (Table 5: "Random 2.5",
"Human 18.37"), so the dataset-level values are on the 0-100 scale;
per-question values stay on the 0-1 scale of a single F-measure.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from fastvqa.errors import InputError, InputTypeError
from fastvqa.metrics._align import one_per_question, records_of
from fastvqa.metrics.base import Metric
from fastvqa.metrics.result import MetricResult, mean_or_nan

REFERENCE_MODES = ("primary", "max")

_ROUGE_KEYS = (("ROUGE-1", "rouge1"), ("ROUGE-2", "rouge2"), ("ROUGE-L", "rougeL"))
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


# --------------------------------------------------------------------------
# Answers: normalisation and ROUGE
# --------------------------------------------------------------------------


def normalize_answer(answer: str) -> str:
    """WildQA's answer normalisation (``normalize_answer`` in the official
    ``metrics.py``), applied to predictions and references before every answer
    metric: lower-case, delete every character of ``string.punctuation``, then
    delete the whole words ``a``, ``an``, ``the`` (regex ``\\b(?:a|an|the)\\b``).
    Whitespace is not collapsed (the tokenizers split on it anyway).

    >>> normalize_answer("The U.S. Army's tanks!")
    ' us armys tanks'
    """
    if not isinstance(answer, str):
        raise InputTypeError(f"normalize_answer: expected a string, got {type(answer).__name__}")
    return _ARTICLES.sub("", answer.lower().translate(_PUNCTUATION))


def rouge(
    preds: Sequence[str],
    target: Sequence[Any],
    *,
    references_mode: Literal["primary", "max"] = "primary",
    use_stemmer: bool = False,
) -> MetricResult:
    """WildQA answer ROUGE-1, ROUGE-2 and ROUGE-L F-measure, macro-averaged.

    Args:
        preds: N predicted answer strings.
        target: N entries, each a reference string or a non-empty list of
            reference strings whose first item is the primary (Phase-1) answer
            (fastvqa's loader gives ``[answer] + alter_answers`` as
            ``QARecord.extra["answers"]``); or the N records themselves
            (``load_wildqa``/``load_benchmark``), whose ``extra["answers"]``
            are taken (``preds`` in record order, as WildQA's files are).
        references_mode: ``"primary"`` (default) scores against the first
            reference only: this is how the official training code (and so
            every model and simple-baseline row of the paper's Tables 4 and 7)
            computed ROUGE. ``"max"`` takes, per metric independently, the best
            F-measure over all references (what the human-agreement analysis
            did; fastvqa does it per metric itself rather than through
            torchmetrics' order-dependent ``accumulate="best"``).
        use_stemmer: Porter stemming of tokens longer than 3 characters
            (rouge-score's option). Off in the official model evaluation.

    Returns:
        :class:`MetricResult` ``"rouge"`` with ``"ROUGE-1"``,
        ``"ROUGE-2"``, ``"ROUGE-L"`` = 100 x the mean per-question F-measure
        (the paper's percent scale; ``nan`` when N = 0); ``per_question``
        columns ``index`` and the three F-measures on 0-1.

    Both texts pass through :func:`normalize_answer`, then the rouge-score
    tokenizer (lower-case, every run of characters outside ``[a-z0-9]`` becomes
    a space, split on whitespace), which is the tokenisation of the
    torchmetrics 0.8 ``ROUGEScore`` the official code used. ROUGE-N F is
    ``2PR / (P + R)`` over clipped n-gram counts, ROUGE-L the sentence-level LCS
    F (``rougeL``, not ``rougeLsum``); an empty side scores 0. Per-question
    values are float64; torchmetrics averaged float32 values, which can differ
    below the 6th significant digit.

    Requires ``rouge-score`` (``pip install 'fastvqa[eval]'``); it needs no
    NLTK data at run time. A bad ``references_mode``, lengths that differ or
    an entry that is not a string raise :class:`fastvqa.errors.InputError`
    (a ``ValueError``; for a wrong type also a ``TypeError``).

    Example:
        >>> rouge(["a red car", "two dogs"], ["the red car", "three cats"])
        MetricResult(rouge: ROUGE-1=50, ROUGE-2=50, ROUGE-L=50)
        >>> rouge(["two dogs"], [["three cats", "two dogs"]], references_mode="max")
        MetricResult(rouge: ROUGE-1=100, ROUGE-2=100, ROUGE-L=100)
    """
    if references_mode not in REFERENCE_MODES:
        raise InputError(f"rouge: references_mode must be 'primary' or 'max', "
                         f"got {references_mode!r}")
    preds = _strings("preds", preds)
    records = records_of(target)
    if records is not None:
        target = [r.extra.get("answers", r.answer) for r in records]
    refs = _reference_lists(target, len(preds))
    try:
        from rouge_score import rouge_scorer
    except ImportError as err:
        raise ImportError("rouge() needs the rouge-score package: pip install 'fastvqa[eval]' "
                          "(or pip install rouge-score)") from err
    scorer = rouge_scorer.RougeScorer([k for _, k in _ROUGE_KEYS], use_stemmer=use_stemmer)
    n = len(preds)
    scores = np.zeros((len(_ROUGE_KEYS), n))
    for i, (pred, ref_list) in enumerate(zip(preds, refs)):
        used = ref_list[:1] if references_mode == "primary" else ref_list
        norm_pred = normalize_answer(pred)
        for ref in used:
            # rouge-score's argument order is (target, prediction).
            s = scorer.score(normalize_answer(ref), norm_pred)
            for j, (_, key) in enumerate(_ROUGE_KEYS):
                scores[j, i] = max(scores[j, i], s[key].fmeasure)
    metrics = {name: 100.0 * mean_or_nan(scores[j]) for j, (name, _) in enumerate(_ROUGE_KEYS)}
    per_question: dict[str, Any] = {"index": np.arange(n)}
    for j, (name, _) in enumerate(_ROUGE_KEYS):
        per_question[name] = scores[j]
    info = {
        "references": references_mode,
        "use_stemmer": use_stemmer,
        "evaluated": n,
        "normalisation": "lower-case, strip string.punctuation, drop a/an/the",
        "scale": "ROUGE in percent (0-100); per-question F on 0-1",
    }
    return MetricResult("rouge", metrics, per_question, info)


def _strings(name: str, values: Any) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InputTypeError(f"rouge: {name} must be a list of strings, "
                             f"got {type(values).__name__}")
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise InputTypeError(f"rouge: {name}[{i}] must be a string, got {type(v).__name__}")
    return list(values)


def _reference_lists(references: Any, n: int) -> list[list[str]]:
    one_per_question(references, n, "rouge", "target", "reference (or list of references)")
    out = []
    for i, r in enumerate(references):
        if isinstance(r, str):
            out.append([r])
            continue
        if not isinstance(r, Sequence) or len(r) == 0:
            raise InputError(f"rouge: target[{i}] must be a string or a non-empty list "
                             f"of strings, got {r!r}")
        for j, s in enumerate(r):
            if not isinstance(s, str):
                raise InputTypeError(f"rouge: target[{i}][{j}] must be a string, "
                                     f"got {type(s).__name__}")
        out.append(list(r))
    return out


class Rouge(Metric):
    """:func:`rouge` over batches: ``Rouge(references_mode=...,
    use_stemmer=...)``, then ``update(preds, target)`` per batch;
    ``compute()`` equals ``rouge`` on all batches concatenated. See
    :class:`fastvqa.metrics.Metric`.

    Example:
        >>> m = Rouge()
        >>> m.update(["a red car"], ["the red car"])
        >>> m.update(["two dogs"], ["three cats"])
        >>> m.compute()
        MetricResult(rouge: ROUGE-1=50, ROUGE-2=50, ROUGE-L=50)
    """

    function = "rouge"


# --------------------------------------------------------------------------
# Human agreement: leave one annotator out
# --------------------------------------------------------------------------

HUMAN_ANNOTATORS = ("phase2", "all")


def human_agreement(
    answers: Sequence[Sequence[str]],
    *,
    annotators: Literal["phase2", "all"] = "phase2",
    use_stemmer: bool = False,
) -> MetricResult:
    """WildQA's human row, leave one annotator out: each annotator's answer
    scored against the other annotators' answers of the same question with
    :func:`rouge` (WildQA normalisation, best F-measure over the references,
    per metric).

    Args:
        answers: N lists, each ``[phase1_answer, *phase2_answers]``
            (``QARecord.extra["answers"]``).
        annotators: ``"phase2"`` (default; the repository's
            ``cal_human_performance.ipynb``): each Phase-2 answer is scored
            against the Phase-1 answer and the other Phase-2 answers; ``"all"``:
            the Phase-1 answer is scored in turn too, against the Phase-2 ones.
        use_stemmer: as :func:`rouge`.

    A question's value is the mean over its scored answers; the dataset value
    the mean over questions with at least one scored answer (a question with
    a single answer has no one to agree with and is left out, counted in
    ``info["skipped"]``). The notebook averaged per annotator (worker) first,
    and used py-rouge (stemming, 665-byte cut); the public files do not say
    which worker wrote which Phase-2 answer, so this is the per-question mean,
    and it does not reproduce the paper's Table 4 human row (40.8 / 18.1 /
    36.3), which the notebook itself does not reproduce either.

    Returns:
        :class:`MetricResult` ``"human_agreement"`` with ``"ROUGE-1"``,
        ``"ROUGE-2"``, ``"ROUGE-L"`` (percent); ``per_question``: ``index``,
        ``scored`` (answers scored) and the three values (0-1, NaN when
        skipped).

    Example:
        >>> answers = [["a red car", "the red car", "a blue car"], ["two dogs"]]  # 2nd: skipped
        >>> human_agreement(answers)
        MetricResult(human_agreement: ROUGE-1=75, ROUGE-2=50, ROUGE-L=75)
    """
    if annotators not in HUMAN_ANNOTATORS:
        raise InputError(f"human_agreement: annotators must be 'phase2' or 'all', "
                         f"got {annotators!r}")
    lists = _reference_lists(answers, len(answers))
    first = 0 if annotators == "all" else 1
    flat_pred, flat_refs, owner = [], [], []
    for q, answer_list in enumerate(lists):
        if len(answer_list) < 2:
            continue
        for j in range(first, len(answer_list)):
            flat_pred.append(answer_list[j])
            flat_refs.append(answer_list[:j] + answer_list[j + 1:])
            owner.append(q)
    scored = rouge(flat_pred, flat_refs, references_mode="max", use_stemmer=use_stemmer) \
        if flat_pred else None
    n = len(lists)
    owner_arr = np.asarray(owner, dtype=np.int64)
    count = np.bincount(owner_arr, minlength=n)
    per_question: dict[str, Any] = {"index": np.arange(n), "scored": count}
    metrics = {}
    kept = count > 0
    for name, _ in _ROUGE_KEYS:
        values = np.full(n, np.nan)
        if scored is not None:
            sums = np.bincount(owner_arr, weights=scored.per_question[name], minlength=n)
            values[kept] = sums[kept] / count[kept]
        per_question[name] = values
        metrics[name] = 100.0 * mean_or_nan(values[kept])
    info = {
        "annotators": annotators,
        "use_stemmer": use_stemmer,
        "evaluated": int(kept.sum()),
        "skipped": int((~kept).sum()),
        "answers_scored": len(flat_pred),
        "aggregation": "mean over a question's scored answers, then over questions",
        "scale": "ROUGE in percent (0-100); per-question values on 0-1",
    }
    return MetricResult("human_agreement", metrics, per_question, info)
