# SPDX-License-Identifier: Apache-2.0
"""A small nearest-neighbour index over FAISS.

Scores: ``metric="ip"`` gives inner products (larger is nearer, rows sorted by
descending score); ``metric="l2"`` gives *squared* Euclidean distances (smaller
is nearer, ascending), as FAISS does. Equal scores are ordered by id, smaller
id first. Where the bank holds fewer than ``k`` vectors, the missing columns
have id ``-1`` and score ``-inf`` (ip) or ``+inf`` (l2).

GPU: FAISS is only asked for a GPU when ``faiss.get_num_gpus() > 0``. This is a
check, never a ``try``/``except``: some FAISS GPU calls abort the whole process
on a machine without a GPU instead of raising.
"""

from __future__ import annotations

import hashlib
import io
import json
import warnings
from pathlib import Path
from typing import Any, Literal, Optional, Union

import numpy as np

from fastvqa import _checks
from fastvqa._device import Device, parse_device
from fastvqa.errors import InputError

METRICS = ("ip", "l2")
KINDS = ("flat", "ivf", "hnsw")
_FORMAT = "fastvqa-index-1"


def _faiss():
    try:
        import faiss
    except ImportError as err:
        raise ImportError("fastvqa.retrieval.Index needs FAISS: pip install 'fastvqa[faiss]' "
                          "(or 'fastvqa[faiss-gpu]' for the GPU build)") from err
    return faiss


# Below this many multiply-adds (queries x bank x dim, ~2 ms on one core) a
# FAISS search runs on one thread: FAISS's OpenMP team (its own runtime) would
# cost more in waking and barriers than it saves, many times more when the
# cores are shared with other processes (a descheduled thread stalls the rest).
_FAISS_ONE_THREAD_WORK = 1 << 23


def _faiss_search(index: Any, q: np.ndarray, k: int, n: int):
    """``index.search(q, k)``; small searches on one FAISS thread. The thread
    count is FAISS's OpenMP setting of the calling thread, restored after."""
    if q.shape[0] * n * q.shape[1] >= _FAISS_ONE_THREAD_WORK:
        return index.search(q, k)
    faiss = _faiss()
    threads = faiss.omp_get_max_threads()
    if threads <= 1:
        return index.search(q, k)
    faiss.omp_set_num_threads(1)
    try:
        return index.search(q, k)
    finally:
        faiss.omp_set_num_threads(threads)


# From this many multiply-adds (~0.25 s on one core) an exact CPU search is
# split by bank rows into slices that one-threaded FAISS searches take in turn
# (_sliced_search), instead of one FAISS call on its OpenMP team: with the
# cores shared (DataLoader workers, other jobs), a team waits at every GEMM
# block for its slowest thread, while a thread that falls behind here only
# takes fewer slices.
_SLICED_WORK = 1 << 30
#: the fewest bank rows of a slice (smaller slices would cost more in calls)
_MIN_SLICE_ROWS = 4096


def _flat_bank(index: Any, n: int, d: int) -> Optional[np.ndarray]:
    """The float32 ``(n, d)`` vectors of a CPU ``IndexFlat`` (a view of FAISS's
    storage, no copy), else ``None``."""
    faiss = _faiss()
    if type(index) not in (faiss.IndexFlatIP, faiss.IndexFlatL2) or index.ntotal != n:
        return None
    return faiss.rev_swig_ptr(index.get_xb(), n * d).reshape(n, d)


def _sliced_search(bank: np.ndarray, q: np.ndarray, k: int, kk: int, metric: str,
                   threads: int):
    """``(d, rows, settled)``: each slice's best ``kk`` (all of a smaller
    slice), side by side, unsorted across slices; ``settled`` says whether they
    hold every bank row that is in the top ``k`` or ties with the ``k``-th,
    which holds when each partly returned slice's last (worst) score is
    strictly worse than the ``k``-th best of all. Each worker thread runs FAISS
    on one OpenMP thread (its own ICV; the caller's setting is untouched)."""
    from concurrent.futures import ThreadPoolExecutor

    faiss = _faiss()
    n = bank.shape[0]
    count = max(1, min(4 * threads, n // _MIN_SLICE_ROWS))
    bounds = np.linspace(0, n, count + 1).astype(np.int64)
    fm = faiss.METRIC_INNER_PRODUCT if metric == "ip" else faiss.METRIC_L2

    def one(s: int):
        faiss.omp_set_num_threads(1)
        a, b = int(bounds[s]), int(bounds[s + 1])
        take = min(kk, b - a)
        d, rows = faiss.knn(q, bank[a:b], take, metric=fm)
        return d, rows + a, take == b - a

    with ThreadPoolExecutor(max_workers=min(threads, count)) as pool:
        parts = list(pool.map(one, range(count)))
    d = np.concatenate([p[0] for p in parts], axis=1)
    rows = np.concatenate([p[1] for p in parts], axis=1)
    sign = -1.0 if metric == "ip" else 1.0  # key: smaller is nearer
    kth = np.partition(sign * d, k - 1, axis=1)[:, k - 1]
    settled = all(whole or bool((sign * pd[:, -1] > kth).all()) for pd, _, whole in parts)
    return d, rows, settled


# From this many multiply-adds an exact CPU search over a float32 flat bank
# goes through the bfloat16 screen (fastvqa.retrieval._screen: same result,
# exact scores) where torch runs bfloat16 GEMMs natively: measured 1.6-2x
# the sliced FAISS search at 100,000 x 384, 1,000 queries, k=10, idle. Up to
# _SCREEN_MAX_K neighbours (its re-rank grows with k).
_SCREEN_WORK = 1 << 30
_SCREEN_MAX_K = 256
# l2 goes through it too: its norms enter the bfloat16 GEMM as exact pieces
# and the bank is centred, so its bound is as tight as ip's (and its scores,
# sums of squared differences, have no cancellation, unlike FAISS's).
_SCREEN_METRICS = ("ip", "l2")


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _as_matrix(name: str, x: Any, dim: Optional[int]) -> np.ndarray:
    """A C-contiguous float32 (n, d) NumPy copy/view of NumPy or torch input."""
    if _is_torch(x):
        x = x.detach().to("cpu").numpy()
    a = np.asarray(x)
    if a.ndim == 1 and a.size == 0 and dim is not None:
        a = a.reshape(0, dim)
    if a.ndim != 2:
        raise ValueError(f"Index: {name} must be a 2-D (n, d) array, got shape {a.shape}")
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise TypeError(f"Index: {name} must be numeric, got dtype {a.dtype}")
    if dim is not None and a.shape[1] != dim:
        raise ValueError(f"Index: {name} has dimension {a.shape[1]}, the index has {dim}")
    a = np.ascontiguousarray(a, dtype=np.float32)
    if not np.isfinite(a).all():
        raise ValueError(f"Index: {name} contains NaN or infinite values")
    return a


class Index:
    """Exact (``kind="flat"``, default) or approximate nearest-neighbour search.

    Args:
        metric: ``"ip"`` (inner product; cosine on L2-normalised vectors) or
            ``"l2"`` (squared Euclidean distance).
        kind: ``"flat"`` exact; ``"ivf"`` (inverted lists, ``nlist`` cells,
            ``nprobe`` searched; trained on the first :meth:`add`, which must
            bring at least ``nlist`` vectors); ``"hnsw"`` (graph, ``m`` links).
        device: fastvqa's one device vocabulary: ``None`` or ``"auto"``
            (the GPU when FAISS reports one, else the CPU), ``"cpu"``,
            ``"cuda"`` (GPU 0), ``"cuda:K"`` or a ``torch.device`` (a
            RuntimeError when FAISS reports no GPU, or fewer than K + 1).
        fp16: store vectors as float16 (GPU flat index; on the CPU a
            float16 scalar-quantizer index, still exhaustive).
        nlist, nprobe: IVF parameters. m: HNSW links per node.

    The dimension is fixed by the first :meth:`add`. Ids are int64, given or
    running from 0 (continuing after the largest id so far).

    >>> bank = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    >>> index = Index(metric="l2", device="cpu").add(bank)
    >>> index
    Index(metric='l2', kind='flat', device='cpu', dim=8, size=4)
    >>> scores, ids = index.search(bank, k=5)  # each vector is its own nearest
    >>> ids[:, 0], ids[:, 4]  # only 4 vectors: the 5th neighbour is missing (-1)
    (array([0, 1, 2, 3]), array([-1, -1, -1, -1]))
    """

    def __init__(self, metric: Literal["ip", "l2"] = "ip",
                 kind: Literal["flat", "ivf", "hnsw"] = "flat", device: Any = "auto", *,
                 fp16: bool = False, nlist: int = 1024, nprobe: int = 16, m: int = 32):
        _checks.choice(metric, "Index", "metric", METRICS)
        _checks.choice(kind, "Index", "kind", KINDS)
        parsed = parse_device(device)
        faiss = _faiss()
        n_gpus = faiss.get_num_gpus()
        if parsed is not None and parsed.is_cuda and parsed.ordinal >= n_gpus:
            seen = "no GPU" if n_gpus == 0 else f"only {n_gpus} GPU(s)"
            raise RuntimeError(f"Index(device={str(parsed)!r}): FAISS reports {seen} "
                               "(faiss.get_num_gpus(); 0: a CPU-only FAISS build, or no visible "
                               "device); use device='cpu' or 'auto', or install "
                               "'fastvqa[faiss-gpu]' on a machine with a GPU")
        if parsed is None:
            parsed = Device("cuda") if n_gpus > 0 else Device("cpu")
        self.metric, self.kind = metric, kind
        self._device = parsed
        #: ``"cpu"``, ``"cuda"`` or ``"cuda:K"``: where the index lives
        self.device = str(parsed)
        self.fp16, self.nlist, self.nprobe, self.m = bool(fp16), int(nlist), int(nprobe), int(m)
        self.dim: Optional[int] = None
        self._index = None  # the FAISS index, holding rows 0..n-1
        self._ids = np.zeros(0, dtype=np.int64)  # row -> caller's id
        self._gpu_res = None
        self._screen = None  # bfloat16 copy of the bank for large exact searches

    # ------------------------------------------------------------------ build
    def _new_faiss_index(self, d: int):
        faiss = _faiss()
        fm = faiss.METRIC_INNER_PRODUCT if self.metric == "ip" else faiss.METRIC_L2
        if self.kind == "flat":
            if self.fp16 and not self._device.is_cuda:
                idx = faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_fp16, fm)
            else:
                idx = faiss.IndexFlatIP(d) if self.metric == "ip" else faiss.IndexFlatL2(d)
        elif self.kind == "ivf":
            quant = faiss.IndexFlatIP(d) if self.metric == "ip" else faiss.IndexFlatL2(d)
            idx = faiss.IndexIVFFlat(quant, d, self.nlist, fm)
            idx.nprobe = self.nprobe
        else:
            idx = faiss.IndexHNSWFlat(d, self.m, fm)
        return self._to_device(idx)

    def _to_device(self, idx):
        if not self._device.is_cuda:
            return idx
        faiss = _faiss()
        # Only reached when faiss.get_num_gpus() > 0 (checked in __init__/load).
        if self._gpu_res is None:
            self._gpu_res = faiss.StandardGpuResources()
        if self.kind == "hnsw":
            return idx  # FAISS has no GPU HNSW; it stays on the CPU
        co = faiss.GpuClonerOptions()
        co.useFloat16 = self.fp16
        return faiss.index_cpu_to_gpu(self._gpu_res, self._device.ordinal, idx, co)

    def _cpu_index(self):
        if self._device.is_cuda and self.kind != "hnsw":
            return _faiss().index_gpu_to_cpu(self._index)
        return self._index

    def add(self, vectors: Any, ids: Any = None) -> "Index":
        """Add (n, d) vectors (NumPy or torch; copied to float32) with int64
        ``ids`` (default: running numbers after the largest id so far).

        >>> bank = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
        >>> index = Index("ip", device="cpu").add(bank[:2], ids=[10, 20]).add(bank[2:])
        >>> len(index), index.search(bank[3:], k=1)[1]
        (4, array([[22]]))
        """
        x = _as_matrix("vectors", vectors, self.dim)
        n = x.shape[0]
        if ids is None:
            start = int(self._ids.max()) + 1 if self._ids.size else 0
            new_ids = np.arange(start, start + n, dtype=np.int64)
        else:
            if _is_torch(ids):
                ids = ids.detach().to("cpu").numpy()
            new_ids = np.asarray(ids)
            if new_ids.shape != (n,) or not (np.issubdtype(new_ids.dtype, np.integer) or n == 0):
                raise ValueError(f"Index.add: ids must be {n} integers, got shape "
                                 f"{new_ids.shape} dtype {new_ids.dtype}")
            new_ids = new_ids.astype(np.int64)
            if (new_ids < 0).any():
                raise ValueError("Index.add: ids must be >= 0 (-1 marks 'no neighbour')")
        if n == 0:
            if self.dim is None and x.shape[1] > 0:
                self.dim = x.shape[1]
            return self
        if self._index is None:
            self.dim = x.shape[1]
            self._index = self._new_faiss_index(self.dim)
        if not self._index.is_trained:
            self._index.train(x)
        self._index.add(x)
        self._ids = np.concatenate([self._ids, new_ids])
        self._screen = None
        return self

    def __len__(self) -> int:
        return int(self._ids.size)

    def __repr__(self) -> str:
        return (f"Index(metric={self.metric!r}, kind={self.kind!r}, device={self.device!r}, "
                f"dim={self.dim}, size={len(self)})")

    # ----------------------------------------------------------------- search
    def search(self, queries: Any, k: int):
        """The ``k`` nearest bank vectors of each query row.

        Returns ``(scores, ids)`` of shape (n_queries, k): float32 and int64
        NumPy arrays, or torch tensors on the queries' device when the queries
        are a torch tensor. Ties are ordered by id (smaller first); missing
        neighbours are id -1 with score -inf (ip) / +inf (l2).

        >>> bank = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
        >>> scores, ids = Index("l2", device="cpu").add(bank).search(bank[[2]], k=1)
        >>> ids, scores.dtype
        (array([[2]]), dtype('float32'))
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"Index.search: k must be a non-negative integer, got {k!r}")
        k = int(k)
        torch_device = queries.device if _is_torch(queries) else None
        q = _as_matrix("queries", queries, self.dim)
        nq, n = q.shape[0], len(self)
        fill = -np.inf if self.metric == "ip" else np.inf
        scores = np.full((nq, k), fill, dtype=np.float32)
        ids = np.full((nq, k), -1, dtype=np.int64)
        kk = min(k, n)
        if kk > 0 and nq > 0:
            s, i = self._search_sorted(q, kk)
            scores[:, :kk], ids[:, :kk] = s, i
        if torch_device is not None:
            import torch

            return (torch.from_numpy(scores).to(torch_device),
                    torch.from_numpy(ids).to(torch_device))
        return scores, ids

    def _search_sorted(self, q: np.ndarray, k: int):
        """FAISS search, then order equal scores by id. FAISS does not promise
        an order among equal scores (faiss-cpu 1.15.1 flat IP returns 100 equal
        vectors' top 5 as rows 4, 3, 2, 1, 0; flat L2 as 0..4), nor which of
        several equal-score vectors it keeps at the k-th place, so we
        ask for a margin of extra neighbours, widening it while the last one
        still ties with the k-th. A large exact CPU search goes by bank slices
        (:func:`_sliced_search`), widened while a slice's last score is not
        strictly worse than the k-th."""
        n = len(self)
        found = self._screened(q, k)
        if found is not None:
            return found
        kk = min(n, k + 8)
        bank, threads = None, 1
        if self.kind == "flat" and not self._device.is_cuda and not self.fp16 \
                and q.shape[0] * n * q.shape[1] >= _SLICED_WORK:
            threads = _faiss().omp_get_max_threads()
            bank = _flat_bank(self._index, n, q.shape[1]) if threads > 1 else None
        while True:
            if bank is not None:
                d, rows, settled = _sliced_search(bank, q, k, kk, self.metric, threads)
                if settled or kk == n:
                    break
            else:
                d, rows = _faiss_search(self._index, q, kk, n)
                if kk == n or self.kind != "flat":
                    break
                # Rows whose k-th score still ties with the last returned one.
                if not (d[:, k - 1] == d[:, kk - 1]).any():
                    break
            kk = min(n, kk * 2)
        valid = rows >= 0
        ids = np.where(valid, self._ids[np.where(valid, rows, 0)], -1)
        fill = -np.inf if self.metric == "ip" else np.inf
        d = np.where(valid, d, fill).astype(np.float32)
        key = -d if self.metric == "ip" else d
        # Sort by score, then by id (invalid rows last: their score is the fill).
        big = np.iinfo(np.int64).max
        order = np.lexsort((np.where(valid, ids, big), key), axis=-1)[:, :k]
        return (np.take_along_axis(d, order, axis=1), np.take_along_axis(ids, order, axis=1))

    def _screened(self, q: np.ndarray, k: int):
        """``(scores, ids)`` by the bfloat16 screen and exact re-rank
        (:mod:`fastvqa.retrieval._screen`) for a large exact CPU search, or
        ``None`` (not that kind of search, no native bfloat16 GEMM, or the
        screen would keep too many pairs)."""
        n = len(self)
        if self.kind != "flat" or self._device.is_cuda or self.fp16 or k > _SCREEN_MAX_K \
                or self.metric not in _SCREEN_METRICS \
                or q.shape[0] * n * q.shape[1] < _SCREEN_WORK:
            return None
        from fastvqa.retrieval import _screen

        if not _screen.available():
            return None
        bank = _flat_bank(self._index, n, q.shape[1])
        if bank is None:
            return None
        if self._screen is None:
            self._screen = _screen.Screen(bank, self.metric)
        found = _screen.search(self._screen, bank, q, k, self._ids)
        if found is None:
            return None
        d, rows = found
        return d, self._ids[rows]

    # -------------------------------------------------------------- save/load
    def save(self, path: Union[str, Path]) -> Path:
        """Write the index to one file (``.npz``); refuses to overwrite.

        The file holds the settings, the ids and the FAISS blob, with the
        blob's sha256 (checked by :meth:`load`). It is written through a
        temporary name and linked into place when complete, so a failure
        leaves no partial file (:mod:`fastvqa._outputs`). An existing
        ``path`` raises ``FileExistsError`` before any work.

        >>> import tempfile
        >>> bank = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     print(Index("l2", device="cpu").add(bank).save(Path(d, "bank.npz")).name)
        bank.npz
        """
        from fastvqa._outputs import check_new, write_new

        path = check_new(path, "path")
        blob = np.zeros(0, dtype=np.uint8)
        if self._index is not None:
            blob = np.asarray(_faiss().serialize_index(self._cpu_index()), dtype=np.uint8)
        meta = {"format": _FORMAT, "metric": self.metric, "kind": self.kind, "fp16": self.fp16,
                "nlist": self.nlist, "nprobe": self.nprobe, "m": self.m, "dim": self.dim,
                "count": len(self), "sha256": hashlib.sha256(blob.tobytes()).hexdigest()}
        buf = io.BytesIO()
        np.savez(buf, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                 index=blob, ids=self._ids)
        return write_new(path, buf.getvalue())

    @classmethod
    def load(cls, path: Union[str, Path], device: Any = "auto") -> "Index":
        """Read an index written by :meth:`save`.

        The file is checked before FAISS sees any of it: its layout, every
        setting (type and range), the ids (int64, >= 0, one per vector) and
        the FAISS blob's sha256 against the one stored at save time; a flat
        index's blob must also have exactly the size its dimension and count
        imply. Anything wrong raises :class:`IndexFileError` (a ValueError)
        naming the file and the problem. A file from fastvqa before 0.2,
        which stored no checksum, still loads, with a
        :class:`~fastvqa.retrieval.RetrievalWarning` (re-save it to add one);
        its flat blob is size-checked all the same, other kinds are not.

        >>> import tempfile
        >>> bank = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = Index("l2", device="cpu").add(bank).save(Path(d, "bank.npz"))
        ...     print(Index.load(path, device="cpu"))
        Index(metric='l2', kind='flat', device='cpu', dim=8, size=4)
        """
        from fastvqa.retrieval.encoders import RetrievalWarning

        path = Path(path)
        meta, blob, ids = _read_index_file(path)
        self = cls(meta["metric"], meta["kind"], device, fp16=meta["fp16"],
                   nlist=meta["nlist"], nprobe=meta["nprobe"], m=meta["m"])
        self.dim = meta["dim"]
        self._ids = ids
        if "sha256" not in meta:
            warnings.warn(f"{path}: written by an older fastvqa, without a checksum: its FAISS "
                          "data cannot be verified (save it again to add one)",
                          RetrievalWarning, stacklevel=2)
        if blob.size:
            try:
                raw = _faiss().deserialize_index(blob)
            except RuntimeError as err:
                first = str(err).strip().splitlines()[0] if str(err).strip() else "no detail"
                raise IndexFileError(f"{path}: damaged index file: FAISS cannot read it "
                                     f"({first})") from None
            if raw.d != self.dim or raw.ntotal != ids.size:
                raise IndexFileError(f"{path}: damaged index file: FAISS data holds {raw.ntotal} "
                                     f"vectors of dimension {raw.d}, the settings say "
                                     f"{ids.size} of dimension {self.dim}")
            self._index = self._to_device(raw)
        return self


class IndexFileError(InputError):
    """An index file (or index folder) that is not what fastvqa wrote: a
    damaged, truncated or foreign file. The message names the path. An
    :class:`fastvqa.errors.InputError` (so a ``ValueError``).

    >>> err = IndexFileError("bank.npz: damaged index file: not a readable .npz")
    >>> isinstance(err, ValueError), str(err)
    (True, 'bank.npz: damaged index file: not a readable .npz')
    """


#: Settings of an index file and the checks each must pass.
_INTS = {"nlist": 1, "nprobe": 1, "m": 1}
# Flat FAISS blob: fourcc, d (int32), ntotal, two unused int64, is_trained
# (uint8), metric (int32), then the codes as a std::vector (uint64 size + floats).
_FLAT_HEADER = 45
_FLAT_FOURCC = {"ip": b"IxFI", "l2": b"IxF2"}


def _read_index_file(path: Path) -> tuple[dict, np.ndarray, np.ndarray]:
    """(settings, FAISS blob, ids) of an index file, all checked (see
    :meth:`Index.load`); IndexFileError otherwise."""
    import zipfile

    def bad(why: str) -> IndexFileError:
        return IndexFileError(f"{path}: damaged index file: {why}")

    if not path.exists():
        raise FileNotFoundError(f"{path}: no such index file")
    if not path.is_file():
        raise IndexFileError(f"{path}: not an index file (a folder or a special file)")
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as z:
            missing = [k for k in ("meta", "index", "ids") if k not in z.files]
            if missing:
                raise bad(f"no {', '.join(missing)} entry")
            raw_meta, blob, ids = z["meta"], z["index"], z["ids"]
    except IndexFileError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise bad(f"not a readable .npz ({type(err).__name__}: {err})") from None
    try:
        if raw_meta.dtype != np.uint8 or raw_meta.ndim != 1:
            raise ValueError("not bytes")
        meta = json.loads(raw_meta.tobytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise bad("its settings are not JSON") from None
    if not isinstance(meta, dict):
        raise bad("its settings are not a JSON object")
    if meta.get("format") != _FORMAT:
        raise IndexFileError(f"{path}: not a fastvqa index (format {meta.get('format')!r}, "
                             f"expected {_FORMAT!r})")
    for key in ("metric", "kind", "fp16", "nlist", "nprobe", "m", "dim"):
        if key not in meta:
            raise bad(f"setting {key!r} is missing")
    for key, choices in (("metric", METRICS), ("kind", KINDS)):
        # the name carries bad()'s prefix: the message reads as bad()'s do
        _checks.choice(meta[key], "", f"{path}: damaged index file: {key}", choices,
                       error=IndexFileError)
    if not isinstance(meta["fp16"], bool):
        raise bad(f"fp16 must be true or false, got {meta['fp16']!r}")
    for key, low in _INTS.items():
        v = meta[key]
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 1 << 24:
            raise bad(f"{key} must be an integer in [{low}, 2^24], got {v!r}")
    dim = meta["dim"]
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)
                            or not 1 <= dim <= 1 << 20):
        raise bad(f"dim must be null or an integer in [1, 2^20], got {dim!r}")
    if ids.ndim != 1 or (ids.size and ids.dtype != np.int64):
        raise bad(f"ids must be a 1-D int64 array, got shape {ids.shape} dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    if ids.size and int(ids.min()) < 0:
        raise bad("an id is negative")
    if "count" in meta and meta["count"] != ids.size:
        raise bad(f"{ids.size} ids, the settings say {meta['count']!r} vectors")
    if blob.ndim != 1 or (blob.size and blob.dtype != np.uint8):
        raise bad(f"the FAISS data is not bytes (shape {blob.shape}, dtype {blob.dtype})")
    blob = blob.astype(np.uint8)
    if (blob.size > 0) != (ids.size > 0):
        raise bad(f"{ids.size} ids but {'no' if blob.size == 0 else 'some'} FAISS data")
    if blob.size and dim is None:
        raise bad("FAISS data but no dimension")
    if "sha256" in meta:
        if not isinstance(meta["sha256"], str):
            raise bad(f"sha256 must be a string, got {meta['sha256']!r}")
        digest = hashlib.sha256(blob.tobytes()).hexdigest()
        if digest != meta["sha256"]:
            raise bad(f"the FAISS data's checksum is {digest[:12]}..., the file says "
                      f"{meta['sha256'][:12]}... (the file was changed or damaged)")
    if blob.size and meta["kind"] == "flat" and not meta["fp16"]:
        _check_flat_blob(blob, meta["metric"], dim, ids.size, bad)
    return meta, blob, ids


def _check_flat_blob(blob: np.ndarray, metric: str, dim: int, n: int, bad) -> None:
    """The header of a flat float32 FAISS blob agrees with ``dim``, ``n`` and
    the blob's size (so FAISS allocates only what the file holds)."""
    head = blob[:_FLAT_HEADER].tobytes()
    want = _FLAT_HEADER + 4 * n * dim
    if len(head) < _FLAT_HEADER or head[:4] != _FLAT_FOURCC[metric]:
        raise bad(f"the FAISS data is not a flat {metric} index")
    d = int.from_bytes(head[4:8], "little", signed=True)
    ntotal = int.from_bytes(head[8:16], "little", signed=True)
    codes = int.from_bytes(head[37:45], "little", signed=False)
    if (d, ntotal, codes, blob.size) != (dim, n, n * dim, want):
        raise bad(f"the FAISS data's header (dimension {d}, {ntotal} vectors, {codes} values, "
                  f"{blob.size} bytes) does not match the settings (dimension {dim}, {n} "
                  f"vectors, {want} bytes)")
