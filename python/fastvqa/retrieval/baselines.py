# SPDX-License-Identifier: Apache-2.0
"""Question-retrieval baselines: answer each test question with the answer of
the most similar training question.

- DVD "Q-retrieval": TF-IDF cosine (:class:`~fastvqa.retrieval.TfidfEncoder`
  fitted on the training questions).
- WildQA "Closest": a sentence encoder and an inner-product index
  (:class:`~fastvqa.retrieval.SentenceEncoder`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Union

import numpy as np


@dataclass
class RetrievalResult:
    """``answers[i]``: the predicted answer of test question i (the answer of
    its nearest training question); ``indices`` and ``scores`` (n_test, k):
    the k nearest training questions, nearest first (-1 / -inf when the
    training set has fewer than k)."""

    answers: list
    indices: np.ndarray
    scores: np.ndarray


def question_retrieval(train_questions: Sequence[str], train_answers: Sequence[Any],
                       test_questions: Sequence[str], encoder: Union[str, Any] = "tfidf",
                       k: int = 1) -> RetrievalResult:
    """Nearest-training-question baseline.

    Args:
        encoder: ``"tfidf"`` (a :class:`TfidfEncoder` fitted on the training
            questions; sparse search, never densified), ``"sentence"`` (the
            default :class:`SentenceEncoder`), or any object with
            ``encode(texts)``; dense vectors are searched with an exact
            inner-product :class:`Index` (cosine when the encoder normalises).
        k: neighbours returned in ``indices``/``scores`` (the answer comes
            from the first). Ties go to the earlier training question.

    A test question with no known term (TF-IDF: none of its words in the
    training vocabulary; any encoder: an all-zero vector) scores 0 against
    every training question, so its answer is just the first training
    question's: that is a :class:`~fastvqa.retrieval.RetrievalWarning`
    naming how many there are.

    Repeated strings are searched once (each distinct test question; with
    ``k=1`` also each distinct training question, as its first occurrence),
    which gives the same result as searching every copy and is much faster
    on templated benchmarks.
    """
    from fastvqa.retrieval.encoders import SentenceEncoder, TfidfEncoder, check_texts, zero_rows

    train_questions = check_texts(train_questions, "train_questions", "question_retrieval")
    test_questions = check_texts(test_questions, "test_questions", "question_retrieval")
    if len(train_answers) != len(train_questions):
        raise ValueError(f"question_retrieval: {len(train_answers)} answers for "
                         f"{len(train_questions)} training questions")
    if k < 1:
        raise ValueError(f"question_retrieval: k must be >= 1, got {k}")
    if encoder == "tfidf":
        encoder = TfidfEncoder(train_questions)  # IDF from every training question
    elif encoder == "sentence":
        encoder = SentenceEncoder()
    # Equal strings have equal vectors, hence equal results: search each
    # distinct test question once. With k == 1 the training side is
    # deduplicated too: of equal strings only the first occurrence can win a
    # tie, so this is exact (templated benchmarks such as DVD repeat most
    # questions). With k > 1 every training copy keeps its own slot.
    test_unique, test_of = _distinct(test_questions)
    if k == 1:
        bank, bank_of = _distinct(train_questions)
        bank_ids = np.unique(bank_of, return_index=True)[1]  # first index of each distinct
    else:
        bank, bank_ids = train_questions, np.arange(len(train_questions), dtype=np.int64)
    if isinstance(encoder, TfidfEncoder):
        queries = encoder.encode_sparse(test_unique)
        _warn_empty(test_questions, zero_rows(queries)[test_of])
        scores, idx = encoder.search(queries, encoder.encode_sparse(bank), k, warn=False)
    else:
        from fastvqa.retrieval.index import Index

        index = Index("ip", "flat", "cpu")
        index.add(encoder.encode(bank))
        queries = encoder.encode(test_unique)
        _warn_empty(test_questions, zero_rows(queries)[test_of])
        scores, idx = index.search(queries, k)
    idx = np.where(idx >= 0, bank_ids[np.maximum(idx, 0)], -1)[test_of]
    scores = scores[test_of]
    answers = [train_answers[i] if i >= 0 else None for i in idx[:, 0]]
    return RetrievalResult(answers, idx, scores)


def _warn_empty(test_questions: list[str], empty: np.ndarray) -> None:
    from fastvqa.retrieval.encoders import warn_zero_rows

    warn_zero_rows(test_questions, empty, "question_retrieval", "test questions",
                   "every score is 0, so the answer is just the first training question's",
                   stacklevel=4)


def _distinct(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """Distinct texts in order of first occurrence, and for each text the
    position of its distinct copy."""
    position: dict[str, int] = {}
    of = np.fromiter((position.setdefault(t, len(position)) for t in texts), dtype=np.int64,
                     count=len(texts))
    return list(position), of
