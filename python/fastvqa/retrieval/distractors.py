# SPDX-License-Identifier: Apache-2.0
"""Distractor (wrong option) mining from the answers of similar questions.

:class:`DistractorMiner` indexes a bank of question-answer pairs once and
mines distractors for many questions in one batched search: the answers of
each question's most similar bank questions are the candidates; candidates
equal to the correct answer, or whose answer cosine to it reaches ``tau``
(paraphrases), are dropped; the rest are chosen greedily, MMR-style, trading
question similarity against redundancy with the distractors already chosen.
This is the "top-10 similar questions" step of DeVE-QA (deveqa.md §1.2 and
§8.4). Assembling options from several pools is :mod:`fastvqa.retrieval.options`.

Answers are compared after :func:`normalize_option` (casefold, strip, collapse
spaces, strip trailing punctuation).
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence, Union

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.retrieval.encoders import check_texts, unit_rows

QUESTION_KEYS = ("full", "first3")
_SPACES = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[\s.,;:!?]+$")
# Questions mined per block: bounds the memory of the per-question cosine
# matrices (block x m x m) and of the dense answer vectors gathered.
_BLOCK = 2048


def normalize_option(text: str) -> str:
    """The form in which two options count as the same answer: casefolded,
    stripped, runs of whitespace collapsed to one space, trailing
    ``. , ; : ! ?`` removed.

    >>> normalize_option("  The  Red cube. ")
    'the red cube'
    """
    if not isinstance(text, str):
        raise TypeError(f"normalize_option: expected a string, got {type(text).__name__}")
    return _TRAILING_PUNCT.sub("", _SPACES.sub(" ", text.casefold()).strip())


def index_key(question: str, rule: str) -> str:
    """The text a question is indexed by: the whole question (``"full"``) or
    its first three whitespace-separated words (``"first3"``, the DeVE-QA
    paper's rule: they name the question type and the subject)."""
    if rule == "full":
        return question
    return " ".join(question.split()[:3])


class DistractorMiner:
    """Index a bank of question-answer pairs once; mine distractors for many
    questions (:meth:`mine`).

    Args:
        bank_questions, bank_answers: N questions and their answers (strings).
        encoder: ``"tfidf"`` (scikit-learn TF-IDF; questions searched
            sparsely, never densified; answers compared with a second TF-IDF
            fitted on the distinct bank answers), ``"sentence"`` (the default
            :class:`~fastvqa.retrieval.SentenceEncoder`), or any object with
            ``encode(texts) -> (n, d)``. Dense vectors are L2-normalised here,
            so every similarity is a cosine; questions are searched with an
            exact inner-product :class:`~fastvqa.retrieval.Index`.
        question_key: ``"full"`` (the whole question) or ``"first3"`` (its
            first three words, :func:`index_key`).
        n_neighbours: similar bank questions whose answers are candidates.
    """

    def __init__(self, bank_questions: Sequence[str], bank_answers: Sequence[str], *,
                 encoder: Union[str, Any] = "tfidf", question_key: str = "full",
                 n_neighbours: int = 10):
        questions = check_texts(bank_questions, "bank_questions", "DistractorMiner")
        answers = check_texts(bank_answers, "bank_answers", "DistractorMiner")
        if len(questions) != len(answers):
            raise ValueError(f"DistractorMiner: {len(answers)} bank answers for "
                             f"{len(questions)} bank questions")
        _checks.choice(question_key, "DistractorMiner", "question_key", QUESTION_KEYS)
        n_neighbours = _checks.integer(n_neighbours, "DistractorMiner", "n_neighbours",
                                       minimum=1)
        if isinstance(encoder, str) and encoder not in ("tfidf", "sentence"):
            raise InputError(f"DistractorMiner: encoder must be 'tfidf', 'sentence' or an "
                             f"object with encode(texts), got {encoder!r}")
        if not isinstance(encoder, str) and not callable(getattr(encoder, "encode", None)):
            raise TypeError("DistractorMiner: encoder must have an encode(texts) method")
        self.question_key, self.n_neighbours = question_key, int(n_neighbours)
        self.bank_questions, self.bank_answers = questions, answers
        self._bank_keys = [index_key(q, question_key) for q in questions]
        self._bank_qnorm = [normalize_option(q) for q in questions]
        # Distinct answers (by normalised text), first bank occurrence kept.
        norm = [normalize_option(a) for a in answers]
        first: dict[str, int] = {}
        self._answer_id = np.array([first.setdefault(t, len(first)) for t in norm],
                                   dtype=np.int64)
        self._answer_lookup = first  # normalised answer -> distinct id, for mine()
        self._distinct_text = [""] * len(first)
        for a, i in zip(answers, self._answer_id):
            if not self._distinct_text[i]:
                self._distinct_text[i] = a.strip()
        # The neighbours are distinct (question, answer) pairs, each at its
        # first bank entry: templated banks repeat pairs thousands of times,
        # and copies would only fill the n_neighbours slots with one answer
        # (and make the search width, hence memory, grow with the copies).
        pairs: dict[tuple[str, int], int] = {}
        self._pair_of = np.array([pairs.setdefault((q, int(a)), len(pairs))
                                  for q, a in zip(self._bank_qnorm, self._answer_id)],
                                 dtype=np.int64)
        first_entry = np.full(len(pairs), len(questions), dtype=np.int64)
        np.minimum.at(first_entry, self._pair_of, np.arange(len(questions)))
        self._pair_qnorm = np.array([self._bank_qnorm[i] for i in first_entry], dtype=object)
        self._pair_answer = self._answer_id[first_entry]
        self._pair_keys = [self._bank_keys[i] for i in first_entry]
        self._build_encoders(encoder)

    # ------------------------------------------------------------ encoding
    def _build_encoders(self, encoder: Union[str, Any]) -> None:
        from fastvqa.retrieval.encoders import SentenceEncoder, TfidfEncoder

        if encoder == "sentence":
            encoder = SentenceEncoder()
        self._sparse = encoder == "tfidf"
        if self._sparse:
            # IDF from every bank question; only the distinct pairs are searched.
            self._qenc = TfidfEncoder(self._bank_keys) if self._bank_keys else None
            self._qbank = self._qenc.encode_sparse(self._pair_keys) if self._qenc else None
            # Single-character tokens count in answers ("3", "a dog" vs "2").
            self._aenc = (TfidfEncoder(self._distinct_text, token_pattern=r"(?u)\b\w+\b")
                          if self._distinct_text else None)
            self._abank = self._aenc.encode_sparse(self._distinct_text) if self._aenc else None
            return
        from fastvqa.retrieval.index import Index

        self._encoder = encoder
        self._qindex = Index("ip", "flat", "cpu")
        if self._bank_keys:
            self._qindex.add(unit_rows(encoder.encode(self._pair_keys)))
            self._abank = unit_rows(encoder.encode(self._distinct_text))
        else:
            self._abank = None

    def _encode_keys(self, keys: list[str]):
        """Question keys as the search wants them: CSR rows (TF-IDF) or unit
        dense rows."""
        if self._sparse:
            return self._qenc.encode_sparse(keys)
        return unit_rows(self._encoder.encode(keys))

    def _search(self, qvecs, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, pair indices) (n, k) of encoded question keys, cosine,
        descending, ties by pair index (= by first bank entry)."""
        if self._sparse:
            return self._qenc.search(qvecs, self._qbank, k, warn=False)
        return self._qindex.search(qvecs, k)

    def _encode_answers(self, texts: list[str]):
        if self._sparse:
            return self._aenc.encode_sparse(texts)
        return unit_rows(self._encoder.encode(texts))

    def _row_cosines(self, a, a_rows: np.ndarray, b, b_rows: np.ndarray) -> np.ndarray:
        """cos(a[a_rows[i]], b[b_rows[i]]) for every i (rows are unit or zero)."""
        if a_rows.size == 0:
            return np.zeros(0, dtype=np.float64)
        if self._sparse:
            prod = a[a_rows].multiply(b[b_rows])
            return np.asarray(prod.sum(axis=1), dtype=np.float64).ravel()
        return np.einsum("ij,ij->i", a[a_rows], b[b_rows], dtype=np.float64)

    # --------------------------------------------------------------- mining
    def mine(self, questions: Sequence[str], answers: Sequence[str], k: int = 3, *,
             exclude_similar_to_answer: float = 0.8, diversity: float = 0.5,
             exclude_ids: Optional[Sequence[int]] = None,
             progress: Optional[bool] = None) -> list[list[str]]:
        """Up to ``k`` distractors for each (question, correct answer).

        The bank is searched as its distinct (question, answer) pairs (both
        normalised), each at its first bank entry, so that repeated pairs
        count once. For question i: its ``n_neighbours`` most similar pairs
        (cosine, ties by first bank entry), not counting itself: the pair of
        bank entry ``exclude_ids[i]`` (its own bank index, or -1 for none) and
        the pair with its own question and answer.
        Their answers, deduplicated by normalised text (each keeps its most
        similar question's score), are the candidates. Dropped: a candidate
        equal to the correct answer, or with answer cosine >= ``tau``
        (``exclude_similar_to_answer``) to it. Then greedily, k times: the
        candidate with the largest ``(1 - diversity) * question_similarity -
        diversity * max cosine to the distractors already chosen`` (0 before
        the first), never one with cosine >= ``tau`` to a chosen one; equal
        scores go to the more similar question, then the earlier bank entry.

        Returns one list per question, best first: the distractors' text as
        first written in the bank (stripped). A list is shorter than ``k``
        when the candidates run out; it is never padded.

        A question whose key has no known term (TF-IDF: none of its words in
        the bank's vocabulary; any encoder: an all-zero vector) is equally
        similar (0) to every bank question, so its candidates are just the
        first bank pairs': a :class:`~fastvqa.retrieval.RetrievalWarning`
        says how many there are. ``progress``: a bar over the questions
        (None: only when stderr is a terminal; True: always; False: never).
        """
        questions = check_texts(questions, "questions", "DistractorMiner.mine")
        answers = check_texts(answers, "answers", "DistractorMiner.mine")
        if len(questions) != len(answers):
            raise ValueError(f"mine: {len(answers)} answers for {len(questions)} questions")
        k = _checks.integer(k, "mine", "k", minimum=0)
        tau = _checks.unit_interval(exclude_similar_to_answer, "mine",
                                    "exclude_similar_to_answer (tau)")
        diversity = _checks.unit_interval(diversity, "mine", "diversity")
        n = len(questions)
        own = np.full(n, -1, dtype=np.int64)
        if exclude_ids is not None:
            own = np.array([-1 if e is None else e for e in exclude_ids])
            if own.shape != (n,) or not (np.issubdtype(own.dtype, np.integer) or n == 0):
                raise ValueError(f"mine: exclude_ids must be {n} integers (-1 for none)")
            own = own.astype(np.int64)
            if (own >= len(self.bank_questions)).any():
                raise ValueError("mine: exclude_ids holds an index past the bank's end")
        if n == 0 or k == 0 or not self.bank_questions:
            return [[] for _ in range(n)]
        # At most n_neighbours candidates exist: a larger k changes nothing
        # (lists are never padded) but would size the work arrays.
        k = min(int(k), self.n_neighbours)
        from fastvqa._progress import Progress
        from fastvqa.retrieval.encoders import warn_zero_rows, zero_rows

        # Everything is encoded once, up front (one encoder run, one bar),
        # and then mined block by block.
        keys = [index_key(q, self.question_key) for q in questions]
        qvecs = self._encode_keys(keys)
        warn_zero_rows(questions, zero_rows(qvecs), "DistractorMiner.mine", "questions",
                       "every bank question is equally similar (0), so the candidates are "
                       "just the first bank answers")
        avecs = self._encode_answers(answers)
        out: list[list[str]] = []
        with Progress(n, progress is not False, desc="mining distractors", unit="question",
                      force=progress is True) as bar:
            for s in range(0, n, _BLOCK):
                out.extend(self._mine_block(questions[s:s + _BLOCK], answers[s:s + _BLOCK],
                                            own[s:s + _BLOCK], int(k), tau, diversity,
                                            qvecs[s:s + _BLOCK], avecs[s:s + _BLOCK]))
                bar.update(min(_BLOCK, n - s))
        return out

    def _mine_block(self, questions, answers, own, k, tau, diversity, qvecs,
                    correct_vecs) -> list[list[str]]:
        n_pairs, m = len(self._pair_keys), self.n_neighbours
        nq = len(questions)
        # Two extra neighbours cover the excluded "self" pairs: the pair of
        # the given bank id and the pair (question, correct answer).
        sim, idx = self._search(qvecs, min(n_pairs, m + 2))
        valid = idx >= 0
        safe = np.where(valid, idx, 0)
        # Self: the given bank id's pair, or the same normalised question and answer.
        own_pair = np.where(own >= 0, self._pair_of[np.maximum(own, 0)], -1)
        qnorm = np.array([normalize_option(q) for q in questions], dtype=object)
        anorm = [normalize_option(a) for a in answers]
        correct_id = np.array([self._answer_lookup.get(t, -1) for t in anorm], dtype=np.int64)
        same_pair = (self._pair_qnorm[safe] == qnorm[:, None]) & \
            (self._pair_answer[safe] == correct_id[:, None]) & (correct_id[:, None] >= 0)
        keep = valid & (safe != own_pair[:, None]) & ~same_pair
        # First m kept neighbours per row, in rank order.
        keep &= np.cumsum(keep, axis=1) <= m
        cand = np.where(keep, self._pair_answer[safe], -1)
        # Deduplicate by answer, keeping the first (most similar) occurrence;
        # drop the correct answer itself.
        earlier = np.tril(np.ones((cand.shape[1],) * 2, dtype=bool), -1)
        dup = ((cand[:, :, None] == cand[:, None, :]) & earlier).any(axis=2)
        live = keep & ~dup & (cand != correct_id[:, None])
        # Compact each row: live candidates first, rank order kept.
        order = np.argsort(~live, axis=1, kind="stable")
        cand = np.take_along_axis(np.where(live, cand, -1), order, axis=1)
        qsim = np.take_along_axis(sim.astype(np.float64), order, axis=1)
        live = cand >= 0
        width = int(live.sum(axis=1).max(initial=0))
        if width == 0:
            return [[] for _ in range(nq)]
        cand, qsim, live = cand[:, :width], qsim[:, :width], live[:, :width]
        rows_c, cols_c = np.nonzero(live)
        cand_ids = cand[rows_c, cols_c]
        # Answer cosine of each candidate to the correct answer.
        to_correct = np.zeros((nq, width), dtype=np.float64)
        to_correct[rows_c, cols_c] = self._row_cosines(self._abank, cand_ids,
                                                       correct_vecs, rows_c)
        live &= to_correct < tau
        # Cosines among each row's candidates: (nq, width, width).
        gram = np.zeros((nq, width, width), dtype=np.float64)
        r, i, j = np.nonzero(live[:, :, None] & live[:, None, :])
        upper = i < j
        r, i, j = r[upper], i[upper], j[upper]
        cos = self._row_cosines(self._abank, cand[r, i], self._abank, cand[r, j])
        gram[r, i, j] = cos
        gram[r, j, i] = cos
        return self._select(cand, qsim, live, gram, k, tau, diversity)

    def _select(self, cand, qsim, live, gram, k, tau, diversity) -> list[list[str]]:
        """Greedy MMR selection for all rows at once; argmax takes the first
        (rank-order) candidate among equal scores."""
        nq = cand.shape[0]
        rows = np.arange(nq)
        redundancy = np.zeros(cand.shape, dtype=np.float64)  # max cos to chosen
        chosen = np.full((nq, k), -1, dtype=np.int64)
        for step in range(k):
            score = (1.0 - diversity) * qsim - diversity * redundancy
            score = np.where(live, score, -np.inf)
            best = np.argmax(score, axis=1)
            found = live[rows, best]
            if not found.any():
                break
            chosen[found, step] = cand[found, best[found]]
            picked = gram[rows, best]  # (nq, width): cos of each candidate to the pick
            first = redundancy if step > 0 else np.full(cand.shape, -np.inf)
            redundancy = np.where(found[:, None], np.maximum(first, picked), redundancy)
            live = live & ~(found[:, None] & ((picked >= tau)
                                               | (np.arange(cand.shape[1]) == best[:, None])))
        text = self._distinct_text
        return [[text[c] for c in row if c >= 0] for row in chosen]


def mine_distractors(question: Union[str, Sequence[str]], answer: Union[str, Sequence[str]],
                     bank_questions: Sequence[str], bank_answers: Sequence[str], k: int = 3, *,
                     exclude_similar_to_answer: float = 0.8, diversity: float = 0.5,
                     encoder: Union[str, Any] = "tfidf", n_neighbours: int = 10,
                     question_key: str = "full") -> Union[list[str], list[list[str]]]:
    """Distractors for one question (``question`` and ``answer`` strings:
    returns a list of strings) or many (lists: returns a list of lists),
    mined from the bank with a :class:`DistractorMiner` (see
    :meth:`DistractorMiner.mine` for the rules). The question itself is
    excluded from the bank when it appears there with the same answer.
    """
    single = isinstance(question, str)
    if single != isinstance(answer, str):
        raise TypeError("mine_distractors: question and answer must both be strings or both "
                        "be lists")
    miner = DistractorMiner(bank_questions, bank_answers, encoder=encoder,
                            question_key=question_key, n_neighbours=n_neighbours)
    qs, ans = ([question], [answer]) if single else (question, answer)
    out = miner.mine(qs, ans, k, exclude_similar_to_answer=exclude_similar_to_answer,
                     diversity=diversity)
    return out[0] if single else out
