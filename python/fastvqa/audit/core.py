# SPDX-License-Identifier: Apache-2.0
"""What a model can score on a benchmark without looking at the video.

:func:`audit` runs every check on a list of :class:`~fastvqa.data.QARecord`
(any loader's output, or options from :func:`fastvqa.retrieval.build_options`
through :func:`records_from_options`) and returns an :class:`AuditResult`.

Conventions (every check):

- accuracies are percentages (0-100) over the audited questions; each comes
  with its chance level (multiple choice: the mean of ``1 / n_options``; open
  answers: ``1 / D``, D the distinct answers of the source the guess is drawn
  from);
- answers are compared as :func:`fastvqa.retrieval.normalize_option` forms
  (casefolded, spaces collapsed, trailing punctuation dropped);
- frequency ties go to the answer seen first in the source, option ties to the
  lower option index;
- "source" is the training split when one is given, else the audited set
  itself (marked ``source="self"``: an upper bound, it has seen the answers).
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError

#: Cosine (TF-IDF, fitted on the training questions) at or above which a test
#: question counts as a near-duplicate of a training question.
DEFAULT_THRESHOLD = 0.9
#: Folds of the text baselines' cross-validation.
DEFAULT_FOLDS = 5
#: Neighbours the multiple-choice retrieval looks through for an answer that
#: is one of the question's options.
RETRIEVAL_NEIGHBOURS = 10
#: The question-only model's answer classes: the most frequent ones of each
#: training fold (the rest share one class that is never predicted), which
#: keeps a multinomial model over free-text answers small.
MAX_ANSWER_CLASSES = 50

# Words of one letter or digit count (options such as "2" or "a"): the text
# baselines' vectorizer; retrieval keeps scikit-learn's defaults (DVD's Q-retrieval).
_TOKENS = r"(?u)\b\w+\b"


class Score(NamedTuple):
    """One blind baseline: ``accuracy`` (percent; None when not computed, and
    ``note`` says why), ``std`` (percent, population std over folds, for
    cross-validated ones; else None), ``chance`` (percent), ``n`` questions
    scored, ``folds`` (cross-validated ones) and ``note``."""

    name: str
    accuracy: Optional[float]
    chance: Optional[float]
    n: int
    std: Optional[float] = None
    folds: Optional[int] = None
    note: str = ""


class PositionCheck(NamedTuple):
    """Where the correct option sits: ``counts[j]`` questions have it at
    position j, over the ``n`` questions with the most common option count
    ``n_options``; Pearson's chi-square against uniform (``chi2``, ``dof``,
    ``p_value``, as :func:`scipy.stats.chisquare`)."""

    n_options: int
    n: int
    counts: tuple
    chi2: float
    dof: int
    p_value: float


class LengthBias(NamedTuple):
    """Length in characters of each option (stripped). ``longest`` /
    ``shortest``: accuracy (percent) of picking the longest / shortest option
    (ties: the lower index); ``chance``: their chance (percent);
    ``mean_rank``: the correct option's mean length rank (1 = longest, ties
    share the mean of their ranks), ``chance_rank``: its value for a random
    option (mean of ``(n_options + 1) / 2``)."""

    n: int
    longest: float
    shortest: float
    chance: float
    mean_rank: float
    chance_rank: float


class Leakage(NamedTuple):
    """Test questions with a near-duplicate in the training split: ``exact``
    (equal :func:`fastvqa.retrieval.normalize_question` forms) and ``near``
    (exact, or TF-IDF cosine >= ``threshold`` to a training question; the
    encoder fitted on the training questions), as counts and percent of ``n``;
    ``examples``: up to 5 ``(test question, training question, cosine)``."""

    threshold: float
    n: int
    exact: int
    near: int
    exact_share: float
    near_share: float
    examples: tuple


class AuditResult(NamedTuple):
    """Everything :func:`audit` found. ``kind``: ``"multiple_choice"`` or
    ``"open"``; ``source``: ``"train"`` or ``"self"`` (see the module notes);
    ``scores``: the blind baselines in report order; ``position``, ``length``
    (multiple choice only) and ``leakage`` (with a training split only) are
    None where they do not apply; ``cv``: how the folds were made."""

    benchmark: Optional[str]
    kind: str
    n_questions: int
    n_train: Optional[int]
    source: str
    seed: int
    cv: str
    scores: tuple
    position: Optional[PositionCheck]
    length: Optional[LengthBias]
    leakage: Optional[Leakage]

    def score(self, name: str) -> Score:
        """The baseline called ``name``; KeyError if there is none."""
        for s in self.scores:
            if s.name == name:
                return s
        raise KeyError(f"no baseline {name!r}; have {[s.name for s in self.scores]}")

    def to_dict(self) -> dict:
        """JSON-ready (tuples as lists, NamedTuples as objects)."""
        def plain(x: Any) -> Any:
            if hasattr(x, "_asdict"):
                return {k: plain(v) for k, v in x._asdict().items()}
            if isinstance(x, (list, tuple)):
                return [plain(v) for v in x]
            if isinstance(x, np.generic):
                return x.item()
            return x

        return plain(self)


# ------------------------------------------------------------------ inputs


def _norm(text: Any) -> str:
    from fastvqa.retrieval.distractors import normalize_option

    return normalize_option(str(text))


def _kind(records: Sequence[Any], what: str) -> str:
    if not records:
        raise InputError(f"audit: {what} holds no questions; nothing to audit")
    kinds = set()
    for i, r in enumerate(records):
        if not hasattr(r, "options") or not hasattr(r, "answer"):
            raise InputError(f"audit: {what}[{i}] is a {type(r).__name__}, not a QARecord")
        if r.options:
            a = r.answer
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)) \
                    or not 0 <= a < len(r.options):
                raise InputError(f"audit: {what}[{i}] ({r.key}): the answer {a!r} is not an "
                                 f"option index in [0, {len(r.options)})")
            kinds.add("multiple_choice")
        else:
            if r.answer is None:
                raise InputError(f"audit: {what}[{i}] ({r.key}) has no answer")
            kinds.add("open")
    if len(kinds) > 1:
        raise InputError(f"audit: {what} mixes multiple-choice and open questions; audit each "
                         "kind separately")
    return kinds.pop()


def answer_text(record: Any) -> str:
    """The correct answer's text: the correct option, else the answer."""
    return str(record.options[record.answer]) if record.options else str(record.answer)


def records_from_options(option_set: Any, questions: Optional[Sequence[str]] = None,
                         video_ids: Optional[Sequence[str]] = None) -> list:
    """:class:`~fastvqa.data.QARecord` s from an
    :class:`~fastvqa.retrieval.OptionSet` (``build_options``' output) so a
    builder can audit its options before release. ``questions[i]`` /
    ``video_ids[i]``: item i's question and video (indexed by the input
    index, ``option_set.items``); absent ones are empty / ``"item<i>"``
    (each item its own video)."""
    from fastvqa.data.record import QARecord

    out = []
    for row, item in enumerate(np.asarray(option_set.items, dtype=np.int64).tolist()
                               or range(len(option_set.options))):
        q = "" if questions is None else str(questions[item])
        vid = f"item{item}" if video_ids is None else str(video_ids[item])
        out.append(QARecord(video_id=vid, question_id=str(item), question=q,
                            options=list(option_set.options[row]),
                            answer=int(option_set.answer[row])))
    return out


# ------------------------------------------------------------------ priors


def _most_frequent(texts: Sequence[str]) -> Optional[str]:
    """Highest count; ties to the first seen (Counter keeps insertion order)."""
    if not texts:
        return None
    counts = Counter(texts)
    top = max(counts.values())
    return next(t for t, c in counts.items() if c == top)


def _pick_by_counts(options: Sequence[str], counts: Counter, fallback: int) -> int:
    """The option whose normalised text has the highest count (ties: the lower
    index); ``fallback`` when none has been seen."""
    values = [counts.get(_norm(o), 0) for o in options]
    best = max(values)
    return values.index(best) if best > 0 else min(fallback, len(options) - 1)


def _index_prior(source: Sequence[Any]) -> int:
    """The most frequent correct option index (ties: the lower index)."""
    counts = np.bincount([int(r.answer) for r in source])
    return int(np.argmax(counts))


def _accuracy(pred: Sequence[Any], records: Sequence[Any], kind: str) -> float:
    if kind == "multiple_choice":
        hits = [p == r.answer for p, r in zip(pred, records)]
    else:
        hits = [p is not None and _norm(p) == _norm(r.answer) for p, r in zip(pred, records)]
    return 100.0 * float(np.mean(hits))


def _mc_chance(records: Sequence[Any]) -> float:
    return 100.0 * float(np.mean([1.0 / len(r.options) for r in records]))


def _open_chance(source: Sequence[Any]) -> float:
    return 100.0 / len({_norm(r.answer) for r in source})


def _chance(records, source, kind) -> float:
    return _mc_chance(records) if kind == "multiple_choice" else _open_chance(source)


def prior_predictions(records: Sequence[Any], source: Sequence[Any], kind: str,
                      by_type: bool = False) -> list:
    """Answer prior (``by_type``: per question type, types absent from
    ``source`` falling back to the overall prior). Multiple choice: the
    option whose text is the most frequent correct answer of ``source``
    (fallback: the most frequent correct index); open: the most frequent
    answer. Returns option indices / answer texts."""
    from fastvqa.evaluation import question_type

    def key(r):
        return question_type(r) if by_type else None

    groups: dict[Any, list] = {}
    for r in source:
        groups.setdefault(key(r), []).append(_norm(answer_text(r)))
    overall = [t for ts in groups.values() for t in ts] if by_type else groups[None]
    if kind == "open":
        best = {g: _most_frequent(ts) for g, ts in groups.items()}
        fallback = _most_frequent([_norm(answer_text(r)) for r in source])
        return [best.get(key(r), fallback) for r in records]
    index = _index_prior(source)
    counts = {g: Counter(ts) for g, ts in groups.items()}
    everything = Counter(overall)
    return [_pick_by_counts(r.options, counts.get(key(r), everything), index) for r in records]


# --------------------------------------------------------------- retrieval


def retrieval_predictions(records: Sequence[Any], train: Sequence[Any], kind: str):
    """The answer of the nearest training question (TF-IDF cosine,
    :func:`fastvqa.retrieval.question_retrieval`; ties: the earlier one).
    Multiple choice: the first of the :data:`RETRIEVAL_NEIGHBOURS` nearest
    whose answer is one of the question's options picks that option; with
    none, the most frequent training index. Returns ``(predictions, top
    cosine per question, nearest training index, fallbacks)``."""
    from fastvqa.retrieval import question_retrieval

    texts = [_norm(answer_text(r)) for r in train]
    k = 1 if kind == "open" else min(RETRIEVAL_NEIGHBOURS, len(train))
    found = question_retrieval([r.question for r in train], texts,
                               [r.question for r in records], "tfidf", k=k)
    top, nearest = found.scores[:, 0], found.indices[:, 0]
    if kind == "open":
        return list(found.answers), top, nearest, 0
    fallback, preds = _index_prior(train), []
    missed = 0
    for r, row in zip(records, found.indices):
        options = [_norm(o) for o in r.options]
        pick = next((options.index(texts[j]) for j in row if j >= 0 and texts[j] in options),
                    None)
        if pick is None:
            missed += 1
            pick = min(fallback, len(options) - 1)
        preds.append(pick)
    return preds, top, nearest, missed


def leakage(records: Sequence[Any], train: Sequence[Any], top: np.ndarray,
            nearest: np.ndarray, threshold: float) -> Leakage:
    """:class:`Leakage` from the retrieval's top cosine and nearest training
    question per test question, and exact normalised equality."""
    from fastvqa.retrieval.duplicates import normalize_question

    seen = {normalize_question(r.question) for r in train}
    exact = np.array([normalize_question(r.question) in seen for r in records])
    near = exact | (np.asarray(top) >= threshold)
    examples = tuple((records[i].question, train[int(nearest[i])].question,
                      round(float(top[i]), 4))
                     for i in np.flatnonzero(near)[:5] if nearest[i] >= 0)
    n = len(records)
    return Leakage(threshold, n, int(exact.sum()), int(near.sum()),
                   100.0 * float(exact.sum()) / n, 100.0 * float(near.sum()) / n, examples)


# ------------------------------------------------------ text baselines (CV)


def folds(records: Sequence[Any], k: int, seed: int):
    """``(splits, description)``: ``GroupKFold(k, shuffle=True,
    random_state=seed)`` by video when there are at least ``k`` videos (a
    video's questions never span folds); else ``KFold`` over questions, said
    so; ``splits`` None (with the reason) when there are fewer than ``k``
    questions."""
    from sklearn.model_selection import GroupKFold, KFold

    videos = [r.video_id for r in records]
    n_videos = len(set(videos))
    x = np.zeros((len(records), 1))
    if n_videos >= k:
        try:
            cv = GroupKFold(n_splits=k, shuffle=True, random_state=seed)
        except TypeError:  # before scikit-learn 1.6 GroupKFold could not shuffle
            raise ImportError("fastvqa audit's grouped folds need scikit-learn >= 1.6 "
                              "(GroupKFold with shuffle): pip install 'scikit-learn>=1.6'"
                              ) from None
        return (list(cv.split(x, groups=videos)),
                f"GroupKFold by video, k={k}, shuffled with seed {seed}")
    if len(records) >= k:
        cv = KFold(n_splits=k, shuffle=True, random_state=seed)
        return (list(cv.split(x)),
                f"KFold over questions, k={k}, seed {seed} (only {n_videos} video(s), fewer "
                f"than k: a video's questions span folds)")
    return None, f"not computed: {len(records)} question(s), fewer than k={k} folds"


def _tfidf(corpus: Sequence[str]):
    from fastvqa.retrieval.encoders import TfidfEncoder

    return TfidfEncoder(list(corpus), token_pattern=_TOKENS)


def _logistic():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=1000)


def option_only_predictions(train: Sequence[Any], test: Sequence[Any]) -> list:
    """Multiple choice, options alone: a logistic regression on the TF-IDF of
    each option's text (correct or not), fitted on ``train``; each ``test``
    question takes its highest-scoring option (ties: the lower index)."""
    texts = [o for r in train for o in r.options]
    labels = [int(j == r.answer) for r in train for j in range(len(r.options))]
    enc = _tfidf(texts)
    model = _logistic().fit(enc.encode_sparse(texts), labels)
    flat = [o for r in test for o in r.options]
    scores = model.decision_function(enc.encode_sparse(flat))
    preds, at = [], 0
    for r in test:
        preds.append(int(np.argmax(scores[at:at + len(r.options)])))
        at += len(r.options)
    return preds


def question_only_predictions(train: Sequence[Any], test: Sequence[Any], kind: str) -> list:
    """Question alone: a multinomial logistic regression from the question's
    TF-IDF to the (normalised) answer text, over the
    :data:`MAX_ANSWER_CLASSES` most frequent answers of ``train``. Open: the
    most probable answer; multiple choice: the option whose text is most
    probable (options never seen as answers cannot win; with none seen, the
    most frequent training index)."""
    answers = [_norm(answer_text(r)) for r in train]
    kept = [a for a, _ in Counter(answers).most_common(MAX_ANSWER_CLASSES)]
    rest = "\x00other"  # a label no normalised answer can be
    labels = [a if a in set(kept) else rest for a in answers]
    classes = sorted(set(labels))
    if len(classes) == 1:  # one answer in the whole fold: it is the prediction
        scores = np.zeros((len(test), 1))
    else:
        enc = _tfidf([r.question for r in train])
        model = _logistic().fit(enc.encode_sparse([r.question for r in train]), labels)
        classes = list(model.classes_)
        scores = model.predict_log_proba(enc.encode_sparse([r.question for r in test]))
    column = {c: j for j, c in enumerate(classes) if c != rest}
    if kind == "open":
        real = np.array([j for c, j in column.items()])
        if real.size == 0:
            return [None] * len(test)
        best = real[np.argmax(scores[:, real], axis=1)]
        return [classes[j] for j in best]
    fallback, preds = _index_prior(train), []
    for row, r in zip(scores, test):
        values = [row[column[_norm(o)]] if _norm(o) in column else -np.inf for o in r.options]
        preds.append(int(np.argmax(values)) if np.isfinite(max(values))
                     else min(fallback, len(r.options) - 1))
    return preds


def _cross_validated(name: str, records, kind, splits, description: str, predict,
                     bar=None) -> Score:
    """One cross-validated text baseline; ``bar`` (a
    :class:`fastvqa._progress.Progress`) counts a step per fold."""
    n = len(records)
    if splits is None:
        return Score(name, None, None, n, note=description)
    accs, chances = [], []
    for train_idx, test_idx in splits:
        if bar is not None and accs:
            bar.update(1)  # the previous fold is done
        tr = [records[i] for i in train_idx]
        te = [records[i] for i in test_idx]
        try:
            with warnings.catch_warnings():
                # Answer texts as classes: far more classes than a regression
                # check in scikit-learn expects, by design here.
                warnings.filterwarnings("ignore", "The number of unique classes is greater",
                                        UserWarning)
                preds = predict(tr, te)
        except InputError as err:  # e.g. a fold whose texts hold no word
            return Score(name, None, None, n, note=f"not computed: {err}")
        accs.append(_accuracy(preds, te, kind))
        chances.append(_chance(te, tr, kind))
    if bar is not None:
        bar.update(1)
    return Score(name, float(np.mean(accs)), float(np.mean(chances)), n,
                 std=float(np.std(accs)), folds=len(accs), note=description)


# ----------------------------------------------------------- option checks


def position_check(records: Sequence[Any]) -> Optional[PositionCheck]:
    """:class:`PositionCheck` over the questions with the most common option
    count (ties: the smaller count); None with fewer than 2 options."""
    from fastvqa.retrieval.options import position_balance

    sizes = Counter(len(r.options) for r in records)
    top = max(sizes.values())
    n_options = min(s for s, c in sizes.items() if c == top)
    if n_options < 2:
        return None
    answers = np.array([r.answer for r in records if len(r.options) == n_options],
                       dtype=np.int64)
    b = position_balance(answers, n_options)
    return PositionCheck(n_options, int(answers.size), tuple(int(c) for c in b.counts),
                         b.chi2, b.dof, b.p_value)


def length_bias(records: Sequence[Any]) -> LengthBias:
    """:class:`LengthBias` over every multiple-choice question."""
    longest, shortest, ranks, chance_rank = [], [], [], []
    for r in records:
        lengths = np.array([len(str(o).strip()) for o in r.options])
        longest.append(int(np.argmax(lengths)) == r.answer)
        shortest.append(int(np.argmin(lengths)) == r.answer)
        mine = lengths[r.answer]
        longer, equal = int((lengths > mine).sum()), int((lengths == mine).sum())
        ranks.append(1 + longer + (equal - 1) / 2)
        chance_rank.append((len(lengths) + 1) / 2)
    return LengthBias(len(records), 100.0 * float(np.mean(longest)),
                      100.0 * float(np.mean(shortest)), _mc_chance(records),
                      float(np.mean(ranks)), float(np.mean(chance_rank)))


# -------------------------------------------------------------------- audit


def audit(records: Sequence[Any], train: Optional[Sequence[Any]] = None, *,
          benchmark: Optional[str] = None, folds_k: int = DEFAULT_FOLDS, seed: int = 0,
          threshold: float = DEFAULT_THRESHOLD, progress: Optional[bool] = None) -> AuditResult:
    """Every blind check of ``records`` (see the module notes).

    Args:
        records: the audited questions (:class:`~fastvqa.data.QARecord`, all
            multiple choice or all open), or an
            :class:`~fastvqa.retrieval.OptionSet` (:func:`records_from_options`).
        train: the training split's records (same kind), or None: the priors
            then come from ``records`` themselves (``source="self"``), and
            retrieval and leakage are not computed.
        benchmark: a name for the report.
        folds_k: folds of the text baselines' cross-validation (>= 2).
        seed: seeds the fold assignment.
        threshold: cosine in (0, 1] of a near-duplicate (leakage).
        progress: a progress line on stderr, one step per check and per
            cross-validation fold: None (default) where stderr is a terminal,
            True always, False never (:func:`fastvqa._progress.show_progress`).

    Raises:
        InputError: no records, a record without an answer or with an answer
            outside its options, mixed kinds, train of another kind, bad
            ``folds_k`` / ``seed`` / ``threshold``.
    """
    if hasattr(records, "options") and hasattr(records, "answer") \
            and not hasattr(records, "question"):
        records = records_from_options(records)
    records = list(records)
    kind = _kind(records, "records")
    folds_k = _checks.integer(folds_k, "audit", "folds_k", minimum=2)
    seed = _checks.integer(seed, "audit", "seed", minimum=0)
    threshold = _checks.unit_interval(threshold, "audit", "threshold", positive=True)
    if train is not None:
        train = list(train)
        if _kind(train, "train") != kind:
            raise InputError(f"audit: the records are {kind.replace('_', ' ')} but train is not")
    from fastvqa._progress import Progress

    models = 2 if kind == "multiple_choice" else 1
    # Steps: the priors, retrieval (with train), each fold of each text model, the option checks.
    bar = Progress(2 + (train is not None) + models * folds_k, progress is not False,
                   desc="audit", unit="step", force=progress is True)
    with bar:
        return _audit(records, train, kind, benchmark, folds_k, seed, threshold, bar)


def _audit(records, train, kind, benchmark, folds_k, seed, threshold, bar) -> AuditResult:
    source = train if train is not None else records
    marked = "" if train is not None else "from the audited set itself (no --train)"
    chance = _chance(records, source, kind)
    n = len(records)
    scores = [Score("answer prior", _accuracy(prior_predictions(records, source, kind),
                                              records, kind), chance, n, note=marked)]
    if kind == "multiple_choice":
        index = _index_prior(source)
        preds = [min(index, len(r.options) - 1) for r in records]
        scores.append(Score("option-index prior", _accuracy(preds, records, kind), chance, n,
                            note=f"always option {index}" + (f"; {marked}" if marked else "")))
    from fastvqa.evaluation import question_type

    if any(question_type(r) is not None for r in records):
        preds = prior_predictions(records, source, kind, by_type=True)
        scores.append(Score("question-type prior", _accuracy(preds, records, kind), chance, n,
                            note=marked))
    else:
        scores.append(Score("question-type prior", None, None, n,
                            note="not computed: the records have no question type"))
    bar.update(1)
    leaked = None
    if train is not None:
        preds, top, nearest, missed = retrieval_predictions(records, train, kind)
        note = "TF-IDF nearest training question"
        if kind == "multiple_choice":
            note += (f"; {missed} question(s) found no neighbour answer among their options "
                     "in the 10 nearest (option-index prior used)")
        scores.append(Score("question retrieval", _accuracy(preds, records, kind),
                            _chance(records, train, kind), n, note=note))
        leaked = leakage(records, train, top, nearest, threshold)
        bar.update(1)
    else:
        scores.append(Score("question retrieval", None, None, n,
                            note="not computed: needs a training split (--train)"))
    splits, description = folds(records, folds_k, seed)
    if kind == "multiple_choice":
        scores.append(_cross_validated("option only (logistic regression)", records, kind,
                                       splits, description, option_only_predictions, bar))
    scores.append(_cross_validated("question only (logistic regression)", records, kind,
                                   splits, description,
                                   lambda tr, te: question_only_predictions(tr, te, kind), bar))
    position = length = None
    if kind == "multiple_choice":
        length = length_bias(records)
        scores.append(Score("longest option", length.longest, length.chance, n))
        scores.append(Score("shortest option", length.shortest, length.chance, n))
        position = position_check(records)
    bar.update(bar.total - bar.done)  # the option checks, and folds not run (too few questions)
    return AuditResult(benchmark, kind, n, None if train is None else len(train),
                       "train" if train is not None else "self", seed, description,
                       tuple(scores), position, length, leaked)
