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
    """
    from fastvqa.retrieval.encoders import SentenceEncoder, TfidfEncoder

    train_questions, test_questions = list(train_questions), list(test_questions)
    if len(train_answers) != len(train_questions):
        raise ValueError(f"question_retrieval: {len(train_answers)} answers for "
                         f"{len(train_questions)} training questions")
    if k < 1:
        raise ValueError(f"question_retrieval: k must be >= 1, got {k}")
    if encoder == "tfidf":
        encoder = TfidfEncoder(train_questions)
    elif encoder == "sentence":
        encoder = SentenceEncoder()
    if isinstance(encoder, TfidfEncoder):
        scores, idx = encoder.search(test_questions, encoder.encode_sparse(train_questions), k)
    else:
        from fastvqa.retrieval.index import Index

        index = Index("ip", "flat", "cpu")
        index.add(encoder.encode(train_questions))
        scores, idx = index.search(encoder.encode(test_questions), k)
    answers = [train_answers[i] if i >= 0 else None for i in idx[:, 0]]
    return RetrievalResult(answers, idx, scores)
