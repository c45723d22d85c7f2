# SPDX-License-Identifier: Apache-2.0
"""Exact and near-duplicate questions, and unique-question counts (DVD Table 1).

- :func:`normalize_question`: the normal form used for "normalised" equality.
- :func:`duplicate_groups`: groups of indices of duplicate questions, exact
  (string equality, by hashing) or near (cosine >= threshold under an encoder,
  single-linkage).
- :func:`unique_question_count` / :func:`unique_counts_by_split`: the
  "# unique questions" columns.

Near-duplicate search compares every pair of distinct questions, ``chunk``
rows at a time: memory is O(n + chunk x n_distinct), never an n x n matrix;
time is O(n_distinct^2) similarity products.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional, Sequence, Union

import numpy as np

from fastvqa import _checks
from fastvqa.retrieval.encoders import check_texts

#: Characters :func:`normalize_question` strips from the end of a question.
TRAILING_PUNCTUATION = ".?!,;:\u2026\u3002\uff1f\uff01"

EXACT_MODES = ("normalized", "raw")

# Similarity cells computed per chunk (chunk rows x n_distinct columns, float32).
_CHUNK_CELLS = 1 << 24


def normalize_question(text: str) -> str:
    """The normal form of a question for "normalised" equality.

    Exactly: ``str.casefold()``; every run of whitespace (``str.split()``'s
    definition) becomes one space and leading/trailing whitespace goes; then
    trailing characters from :data:`TRAILING_PUNCTUATION` (``. ? ! , ; :``,
    the ellipsis, and the ideographic full stop, full-width ``?`` and ``!``)
    and spaces are stripped, repeatedly, so ``"What is it ?!"`` and
    ``"what  is it"`` both become ``"what is it"``. Leading and inner
    punctuation is kept. A question made only of punctuation becomes ``""``.

    >>> normalize_question("What  is it ?!"), normalize_question("?!")
    ('what is it', '')
    """
    if not isinstance(text, str):
        raise TypeError(f"normalize_question: expected a string, got {type(text).__name__}")
    return " ".join(text.casefold().split()).rstrip(TRAILING_PUNCTUATION + " ")


def _check_threshold(threshold: Any, who: str) -> Optional[float]:
    if threshold is None:
        return None
    return _checks.unit_interval(threshold, who, "threshold (a cosine)", positive=True)


def _exact_labels(questions: list[str], exact: str, who: str) -> tuple[np.ndarray, list[int]]:
    """Label per question (0.. in order of first occurrence) of its exact key,
    and the index of each label's first occurrence."""
    _checks.choice(exact, who, "exact", EXACT_MODES)
    key = normalize_question if exact == "normalized" else (lambda q: q)
    first: dict[str, int] = {}
    labels = np.empty(len(questions), dtype=np.int64)
    reps: list[int] = []
    for i, q in enumerate(questions):
        label = first.setdefault(key(q), len(reps))
        if label == len(reps):
            reps.append(i)
        labels[i] = label
    return labels, reps


def _similarity_chunks(texts: list[str], encoder: Any, corpus: list[str]):
    """Yield (start, cosine block (rows, len(texts)) float32) over all rows.

    TF-IDF (fitted on ``corpus``) stays sparse; only a block of ``rows``
    columns of it is densified at a time; a dense encoder's rows are L2-normalised (zero rows stay
    zero: cosine 0 with everything)."""
    from fastvqa.retrieval.encoders import (SentenceEncoder, TfidfEncoder,
                                            sparse_similarity_blocks, unit_rows, zero_rows)

    n = len(texts)
    chunk = max(1, _CHUNK_CELLS // max(n, 1))
    if encoder == "tfidf":
        encoder = TfidfEncoder(corpus)
    elif encoder == "sentence":
        encoder = SentenceEncoder()
    if isinstance(encoder, TfidfEncoder):
        x = encoder.encode_sparse(texts)
        _warn_empty(texts, zero_rows(x))
        rows = max(1, min(chunk, _CHUNK_CELLS // max(x.shape[1], 1)))
        yield from sparse_similarity_blocks(x, x, rows=rows)
        return
    if not hasattr(encoder, "encode"):
        raise TypeError("duplicate_groups: encoder must be 'tfidf', 'sentence' or an object "
                        f"with encode(texts), got {type(encoder).__name__}")
    x = np.asarray(encoder.encode(texts), dtype=np.float32)
    if x.ndim != 2 or x.shape[0] != n:
        raise ValueError(f"duplicate_groups: the encoder returned shape {x.shape} for {n} texts")
    if not np.isfinite(x).all():
        raise ValueError("duplicate_groups: the encoder returned NaN or infinite values")
    _warn_empty(texts, zero_rows(x))
    x = unit_rows(x)
    for s in range(0, n, chunk):
        yield s, x[s:s + chunk] @ x.T


def _warn_empty(texts: list[str], empty: np.ndarray) -> None:
    from fastvqa.retrieval.encoders import warn_zero_rows

    warn_zero_rows(texts, empty, "duplicate_groups", "distinct questions",
                   "the cosine to every question is 0, so only exact duplicates can share "
                   "the group", stacklevel=6)


def _near_components(texts: list[str], threshold: float, encoder: Any,
                     corpus: list[str], progress: Optional[bool] = None) -> np.ndarray:
    """Connected-component label of each text over the pairs with cosine >=
    threshold. Each block's pairs are merged into the labels at once (a
    sparse graph over the current labels, scipy's connected_components), so
    no pair list outlives its block."""
    from fastvqa._progress import Progress

    n = len(texts)
    comp = np.arange(n, dtype=np.int64)
    bar = Progress(n, progress is not False, desc="comparing questions", unit="question",
                   force=progress is True)
    with bar:
        for s, sim in _similarity_chunks(texts, encoder, corpus):
            comp = _merge_block(comp, s, sim, threshold)
            bar.update(len(sim))
    return comp


def _merge_block(comp: np.ndarray, s: int, sim: np.ndarray, threshold: float) -> np.ndarray:
    """``comp`` with the pairs of one similarity block (rows ``s..``) merged."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = comp.size
    rows, cols = np.nonzero(sim >= threshold)
    a, b = comp[rows + s], comp[cols]
    keep = a != b
    if not keep.any():
        return comp
    graph = coo_matrix((np.ones(int(keep.sum()), dtype=np.int8), (a[keep], b[keep])),
                       shape=(n, n))
    _, merged = connected_components(graph, directed=False)
    return merged[comp].astype(np.int64)


def _group_labels(questions: list[str], threshold: Optional[float], encoder: Any,
                  exact: str, who: str, progress: Optional[bool] = None) -> np.ndarray:
    labels, reps = _exact_labels(questions, exact, who)
    if threshold is None or len(reps) < 2:
        return labels
    comp = _near_components([questions[i] for i in reps], threshold, encoder, questions,
                            progress)
    return comp[labels]


def _groups_from_labels(labels: np.ndarray, include_singletons: bool) -> list[list[int]]:
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels.tolist()):
        groups.setdefault(label, []).append(i)  # dict order = order of first index
    return [g for g in groups.values() if include_singletons or len(g) > 1]


def duplicate_groups(questions: Sequence[str], threshold: Optional[float] = None, *,
                     encoder: Union[str, Any] = "tfidf",
                     exact: Literal["normalized", "raw"] = "normalized",
                     include_singletons: bool = False,
                     progress: Optional[bool] = None) -> list[list[int]]:
    """Groups of duplicate questions, as lists of indices into ``questions``.

    Args:
        questions: n strings.
        threshold: None: exact duplicates only (string equality under
            ``exact``, found by hashing). A number in (0, 1]: near-duplicates,
            questions whose cosine similarity under ``encoder`` is >=
            ``threshold``. Groups are the connected components of that
            relation (single-linkage, transitive: if a~b and b~c then a, b, c
            share a group even when cos(a, c) < threshold). Exact duplicates
            under ``exact`` are always in one group, whatever the encoder
            says (e.g. two questions with no known TF-IDF term).
        encoder: ``"tfidf"`` (a :class:`TfidfEncoder` fitted on all
            ``questions``; searched sparsely), ``"sentence"`` (the default
            :class:`SentenceEncoder`), or an object with ``encode(texts) ->
            (n, d)``; dense vectors are L2-normalised here, so any encoder
            gives cosines. Only used when ``threshold`` is given.
        exact: ``"normalized"`` (:func:`normalize_question` equality) or
            ``"raw"`` (the strings as given).
        include_singletons: also return one-question groups (then every index
            is in exactly one group).
        progress: a bar over the comparisons (None: only when stderr is a
            terminal; True: always; False: never).

    Returns:
        Groups, each sorted ascending, ordered by their first (smallest)
        index. Every pair of similarities is examined (no neighbour cap);
        memory stays O(n x chunk), see the module notes.

    A question with no known term (TF-IDF: none of its words of two or more
    letters in the vocabulary; any encoder: an all-zero vector) has cosine 0
    with every question: it joins a group only by exact equality, and a
    :class:`~fastvqa.retrieval.RetrievalWarning` says how many there are.

    >>> qs = ["What is it?", "what is it", "Who came?", "What is it ?!", "Where?"]
    >>> duplicate_groups(qs), duplicate_groups(qs, exact="raw")
    ([[0, 1, 3]], [])
    >>> duplicate_groups(qs, include_singletons=True)
    [[0, 1, 3], [2], [4]]
    """
    who = "duplicate_groups"
    qs = check_texts(questions, "questions", who)
    t = _check_threshold(threshold, who)
    return _groups_from_labels(_group_labels(qs, t, encoder, exact, who, progress),
                               include_singletons)


@dataclass(frozen=True)
class UniqueCounts:
    """``total``: questions; ``unique_exact``: distinct strings as given;
    ``unique_normalized``: distinct :func:`normalize_question` forms;
    ``unique_near``: near-duplicate groups including singletons (None
    without a threshold).

    >>> UniqueCounts(total=5, unique_exact=5, unique_normalized=3)
    UniqueCounts(total=5, unique_exact=5, unique_normalized=3, unique_near=None)
    """

    total: int
    unique_exact: int
    unique_normalized: int
    unique_near: Optional[int] = None


def unique_question_count(questions: Sequence[str], threshold: Optional[float] = None, *,
                          encoder: Union[str, Any] = "tfidf",
                          exact: Literal["normalized", "raw"] = "normalized",
                          progress: Optional[bool] = None) -> UniqueCounts:
    """DVD Table 1's "# unique questions", exact and normalised, and (with
    ``threshold``) the number of near-duplicate groups counted as in
    :func:`duplicate_groups` (``encoder``, ``exact``, ``progress`` as there).

    >>> unique_question_count(["What is it?", "what is it", "Who came?"])
    UniqueCounts(total=3, unique_exact=3, unique_normalized=2, unique_near=None)
    """
    who = "unique_question_count"
    qs = check_texts(questions, "questions", who)
    t = _check_threshold(threshold, who)
    near = None
    if t is not None:
        near = len(np.unique(_group_labels(qs, t, encoder, exact, who, progress)))
    return UniqueCounts(total=len(qs), unique_exact=len(set(qs)),
                        unique_normalized=len({normalize_question(q) for q in qs}),
                        unique_near=near)


def unique_counts_by_split(splits: Mapping[str, Sequence[str]],
                           threshold: Optional[float] = None, *,
                           encoder: Union[str, Any] = "tfidf",
                           exact: Literal["normalized", "raw"] = "normalized"
                           ) -> dict[str, UniqueCounts]:
    """:func:`unique_question_count` per split, plus ``"total"`` over all
    splits together. The per-split unique counts can sum to more than the
    total's (DVD: 659,891 vs 620,739), since a question may recur across
    splits; count the union with ``"total"``, never by adding splits.
    A split named ``"total"`` is refused.

    >>> counts = unique_counts_by_split({"train": ["Why?", "How?"], "val": ["why", "When?"]})
    >>> {name: c.unique_normalized for name, c in counts.items()}
    {'train': 2, 'val': 2, 'total': 3}
    """
    if "total" in splits:
        raise ValueError("unique_counts_by_split: 'total' is reserved for the union of splits")
    out = {name: unique_question_count(qs, threshold, encoder=encoder, exact=exact)
           for name, qs in splits.items()}
    union = [q for qs in splits.values() for q in check_texts(qs, "questions", "unique_counts_by_split")]
    out["total"] = unique_question_count(union, threshold, encoder=encoder, exact=exact)
    return out
