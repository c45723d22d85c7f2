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

import io
import json
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

METRICS = ("ip", "l2")
KINDS = ("flat", "ivf", "hnsw")
DEVICES = ("auto", "cpu", "cuda")
_FORMAT = "fastvqa-index-1"


def _faiss():
    try:
        import faiss
    except ImportError as err:
        raise ImportError("fastvqa.retrieval.Index needs FAISS: pip install 'fastvqa[faiss]' "
                          "(or 'fastvqa[faiss-gpu]' for the GPU build)") from err
    return faiss


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
        device: ``"auto"`` (the GPU when FAISS reports one, else the CPU),
            ``"cpu"`` or ``"cuda"`` (a RuntimeError when FAISS reports no GPU).
        fp16: store vectors as float16 (GPU flat index; on the CPU a
            float16 scalar-quantizer index, still exhaustive).
        nlist, nprobe: IVF parameters. m: HNSW links per node.

    The dimension is fixed by the first :meth:`add`. Ids are int64, given or
    running from 0 (continuing after the largest id so far).
    """

    def __init__(self, metric: str = "ip", kind: str = "flat", device: str = "auto", *,
                 fp16: bool = False, nlist: int = 1024, nprobe: int = 16, m: int = 32):
        if metric not in METRICS:
            raise ValueError(f"Index: metric must be one of {METRICS}, got {metric!r}")
        if kind not in KINDS:
            raise ValueError(f"Index: kind must be one of {KINDS}, got {kind!r}")
        if device not in DEVICES:
            raise ValueError(f"Index: device must be one of {DEVICES}, got {device!r}")
        faiss = _faiss()
        n_gpus = faiss.get_num_gpus()
        if device == "cuda" and n_gpus == 0:
            raise RuntimeError("Index(device='cuda'): FAISS reports no GPU (faiss.get_num_gpus() "
                               "== 0: a CPU-only FAISS build, or no visible device); use "
                               "device='cpu' or 'auto', or install 'fastvqa[faiss-gpu]' on a "
                               "machine with a GPU")
        self.metric, self.kind = metric, kind
        self.device = "cuda" if (device == "cuda" or (device == "auto" and n_gpus > 0)) else "cpu"
        self.fp16, self.nlist, self.nprobe, self.m = bool(fp16), int(nlist), int(nprobe), int(m)
        self.dim: Optional[int] = None
        self._index = None  # the FAISS index, holding rows 0..n-1
        self._ids = np.zeros(0, dtype=np.int64)  # row -> caller's id
        self._gpu_res = None

    # ------------------------------------------------------------------ build
    def _new_faiss_index(self, d: int):
        faiss = _faiss()
        fm = faiss.METRIC_INNER_PRODUCT if self.metric == "ip" else faiss.METRIC_L2
        if self.kind == "flat":
            if self.fp16 and self.device == "cpu":
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
        if self.device != "cuda":
            return idx
        faiss = _faiss()
        # Only reached when faiss.get_num_gpus() > 0 (checked in __init__/load).
        if self._gpu_res is None:
            self._gpu_res = faiss.StandardGpuResources()
        if self.kind == "hnsw":
            return idx  # FAISS has no GPU HNSW; it stays on the CPU
        co = faiss.GpuClonerOptions()
        co.useFloat16 = self.fp16
        return faiss.index_cpu_to_gpu(self._gpu_res, 0, idx, co)

    def _cpu_index(self):
        if self.device == "cuda" and self.kind != "hnsw":
            return _faiss().index_gpu_to_cpu(self._index)
        return self._index

    def add(self, vectors: Any, ids: Any = None) -> "Index":
        """Add (n, d) vectors (NumPy or torch; copied to float32) with int64
        ``ids`` (default: running numbers after the largest id so far)."""
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
        still ties with the k-th."""
        n = len(self)
        kk = min(n, k + 8)
        while True:
            d, rows = self._index.search(q, kk)
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

    # -------------------------------------------------------------- save/load
    def save(self, path: Union[str, Path]) -> Path:
        """Write the index to one file (``.npz``); refuses to overwrite."""
        path = Path(path)
        if path.exists():
            raise FileExistsError(f"{path} exists; refusing to overwrite it (choose another path)")
        meta = {"format": _FORMAT, "metric": self.metric, "kind": self.kind, "fp16": self.fp16,
                "nlist": self.nlist, "nprobe": self.nprobe, "m": self.m, "dim": self.dim}
        blob = np.zeros(0, dtype=np.uint8)
        if self._index is not None:
            blob = np.asarray(_faiss().serialize_index(self._cpu_index()), dtype=np.uint8)
        buf = io.BytesIO()
        np.savez(buf, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                 index=blob, ids=self._ids)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "xb") as f:  # "x": fail rather than overwrite, also in a race
            f.write(buf.getvalue())
        return path

    @classmethod
    def load(cls, path: Union[str, Path], device: str = "auto") -> "Index":
        """Read an index written by :meth:`save`."""
        with np.load(Path(path), allow_pickle=False) as z:
            meta = json.loads(z["meta"].tobytes().decode())
            blob, ids = z["index"], z["ids"]
        if meta.get("format") != _FORMAT:
            raise ValueError(f"{path}: not a fastvqa index (format {meta.get('format')!r})")
        self = cls(meta["metric"], meta["kind"], device, fp16=meta["fp16"],
                   nlist=meta["nlist"], nprobe=meta["nprobe"], m=meta["m"])
        self.dim = meta["dim"]
        self._ids = ids.astype(np.int64)
        if blob.size:
            self._index = self._to_device(_faiss().deserialize_index(blob))
        return self
