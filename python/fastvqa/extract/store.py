# SPDX-License-Identifier: Apache-2.0
"""The feature store: one folder, one safetensors file per video.

Layout::

    STORE/store.json                       format, recipe (and its hash), model
    STORE/features/<video id>.safetensors  features [n, D], start [n], end [n]
    STORE/failed/<video id>.json           a video that could not be used, and why

Why safetensors: each video is one self-contained file (arrays plus a JSON
header), so a finished video is one atomic step, the unit of resumption, and a
store is its files (shards written into one folder, or copied together, are
the same store); it is read without pickle, memory-mapped and lazily, from
NumPy or torch; and it is the format every model hub already reads.
``features`` is in the recipe's dtype, ``start``/``end`` are float64 seconds
from the video's first frame (end exclusive). The header's metadata field
``fastvqa`` holds the video's record (JSON): id, source path relative to the
videos folder, source sha256 and size, recipe hash, model, shape, dtype and
``status: "ok"``; a failure file holds the same fields with ``status:
"failed"`` and the error. Records hold no times or host names, so two runs
of the same recipe, model and videos write the same bytes.

Every file is written through a temporary name and linked into place when
complete (:func:`fastvqa._outputs.write_new`), never over an existing one; a
run killed at any point leaves at most temporaries (``.*.part``), which the
next run of those videos removes. :meth:`FeatureStore.manifest` lists every
record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Optional

import numpy as np

from fastvqa.errors import InputError

FORMAT = "fastvqa-store-1"
_META_KEY = "fastvqa"


class StoreError(InputError):
    """A store that cannot be used: not a store, another recipe or model, a
    damaged file. The message names the store and the problem."""


def _safetensors():
    try:
        import safetensors.numpy as st
    except ImportError:
        raise InputError("the feature store needs safetensors: pip install "
                         "'fastvqa[extract]'") from None
    return st


class VideoFeatures(NamedTuple):
    """One video of a store: ``features`` ``[n, D]`` (the recipe's dtype),
    ``start``/``end`` ``[n]`` float64 seconds (end exclusive), its record."""

    features: np.ndarray
    start: np.ndarray
    end: np.ndarray
    record: dict


def _check_id(video: str) -> str:
    parts = video.split("/")
    if not video or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise InputError(f"video id {video!r} cannot name a store file (empty, '.', '..', or "
                         "starting with a dot)")
    return video


class FeatureStore:
    """A store folder (module doc). ``FeatureStore(path)`` opens an existing
    one; :meth:`create` makes or reopens one for a recipe and model."""

    def __init__(self, path: Any):
        self.path = Path(path)
        head = self.path / "store.json"
        if not head.is_file():
            raise StoreError(f"{self.path} is not a fastvqa feature store (no store.json)")
        try:
            self.header = json.loads(head.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise StoreError(f"{head}: unreadable ({err})") from None
        if not isinstance(self.header, dict) or self.header.get("format") != FORMAT:
            raise StoreError(f"{head}: not a {FORMAT} store header")

    @classmethod
    def create(cls, path: Any, header: dict) -> "FeatureStore":
        """The store at ``path`` for ``header`` (format, recipe, recipe_hash,
        model, model_sha256): made when ``path`` does not exist (or is an empty
        folder), reopened when it holds a store of the same recipe hash and
        model; anything else raises :class:`StoreError` and touches nothing."""
        from fastvqa._outputs import OutputExistsError, write_new

        path = Path(path)
        header = {"format": FORMAT, **header}
        if path.exists() and not path.is_dir():
            raise StoreError(f"{path} exists and is not a folder")
        if path.is_dir() and not (path / "store.json").exists() and any(path.iterdir()):
            raise StoreError(f"{path} is a folder that is not empty and holds no store.json; "
                             "refusing to write into it")
        text = json.dumps(header, sort_keys=True, indent=1) + "\n"
        try:
            write_new(path / "store.json", text, "store header")
        except OutputExistsError:
            pass  # made earlier, or by another shard just now: compare below
        store = cls(path)
        for key, what in (("recipe_hash", "recipe"), ("model", "model"),
                          ("model_sha256", "model weights")):
            if store.header.get(key) != header.get(key):
                raise StoreError(
                    f"{path} was made by another {what} ({key} {store.header.get(key)!r}, "
                    f"this run {header.get(key)!r}); use a new --out, or the store's own")
        return store

    # --------------------------------------------------------------- paths
    def features_path(self, video: str) -> Path:
        return self.path / "features" / f"{_check_id(video)}.safetensors"

    def failure_path(self, video: str) -> Path:
        return self.path / "failed" / f"{_check_id(video)}.json"

    def remove_partials(self, videos: Iterable[str]) -> int:
        """Remove the temporaries a killed run left for ``videos``
        (``.<file name>.<12 hex>.part`` beside each video's features or
        failure file, the staged-write names of :mod:`fastvqa._outputs`);
        returns how many. Only the given videos' names are touched, so a shard
        never removes what another shard writing into the same store has in
        flight (shards hold disjoint videos)."""
        from fastvqa._outputs import leftover_temporaries

        count = 0
        for video in videos:
            for final in (self.features_path(video), self.failure_path(video)):
                for tmp in leftover_temporaries(final):
                    tmp.unlink()
                    count += 1
        return count

    # ---------------------------------------------------------------- write
    def write(self, video: str, features: np.ndarray, start: np.ndarray, end: np.ndarray,
              record: dict) -> Path:
        """Write one video's arrays and record (``status`` is set to ``"ok"``)
        as a new file; a leftover failure record of that video is removed after."""
        from fastvqa._outputs import write_new

        st = _safetensors()
        record = {**record, "video": video, "status": "ok", "shape": list(features.shape),
                  "dtype": str(features.dtype)}
        meta = {_META_KEY: json.dumps(record, sort_keys=True, separators=(",", ":"))}
        blob = st.save({"features": np.ascontiguousarray(features),
                        "start": np.ascontiguousarray(start, dtype=np.float64),
                        "end": np.ascontiguousarray(end, dtype=np.float64)}, metadata=meta)
        out = write_new(self.features_path(video), blob, "features")
        failed = self.failure_path(video)
        if failed.exists():
            failed.unlink()
        return out

    def write_failure(self, video: str, record: dict, error: str) -> Path:
        """Record that ``video`` could not be used, and why (replaces an older
        failure record of it: a retry's error is the one that counts)."""
        from fastvqa._outputs import write_new

        path = self.failure_path(video)
        if path.exists():
            path.unlink()
        record = {**record, "video": video, "status": "failed", "error": error}
        return write_new(path, json.dumps(record, sort_keys=True, indent=1) + "\n", "failure")

    # ----------------------------------------------------------------- read
    def record(self, video: str) -> Optional[dict]:
        """The record of ``video``: its features file's (status ok), else its
        failure's, else ``None``. A features file that cannot be parsed raises
        :class:`StoreError` (it was not written by this store)."""
        path = self.features_path(video)
        if path.is_file():
            return self._header_record(path)
        failed = self.failure_path(video)
        if failed.is_file():
            try:
                return json.loads(failed.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
                raise StoreError(f"{failed}: unreadable ({err})") from None
        return None

    def _header_record(self, path: Path) -> dict:
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="numpy") as f:
                meta = f.metadata() or {}
            return json.loads(meta[_META_KEY])
        except Exception as err:  # safetensors raises its own error types
            raise StoreError(f"{path}: not a readable store file ({err})") from None

    def _ids(self, sub: str, suffix: str) -> list:
        root = self.path / sub
        if not root.is_dir():
            return []
        ids = []
        for p in root.rglob(f"*{suffix}"):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and not any(part.startswith(".") for part in rel.split("/")):
                ids.append(rel[:-len(suffix)])
        return sorted(ids)

    def videos(self) -> list:
        """The ids of the videos with features, sorted."""
        return self._ids("features", ".safetensors")

    def failures(self) -> dict:
        """``{video id: failure record}`` of the videos that failed (and have
        no features since), sorted by id."""
        done = set(self.videos())
        return {v: self.record(v) for v in self._ids("failed", ".json") if v not in done}

    def load(self, video: str) -> VideoFeatures:
        """One video's arrays and record (:class:`VideoFeatures`)."""
        path = self.features_path(video)
        if not path.is_file():
            raise StoreError(f"{self.path}: no features for video {video!r}")
        arrays = _safetensors().load_file(str(path))
        return VideoFeatures(arrays["features"], arrays["start"], arrays["end"],
                             self._header_record(path))

    def manifest(self) -> list:
        """Every record, ok and failed, sorted by video id."""
        records = [self._header_record(self.features_path(v)) for v in self.videos()]
        records += list(self.failures().values())
        return sorted(records, key=lambda r: r["video"])

    def info(self) -> dict:
        """A summary: recipe, model, counts, features, failures, bytes on disk."""
        videos = self.videos()
        items = 0
        shape = None
        for v in videos:
            rec = self._header_record(self.features_path(v))
            items += rec["shape"][0]
            shape = shape or rec["shape"][1:]
        size = sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())
        failures = self.failures()
        return {"store": str(self.path), "recipe": self.header.get("recipe", {}).get("name"),
                "recipe_hash": self.header.get("recipe_hash"), "model": self.header.get("model"),
                "videos": len(videos), "failed": len(failures), "features": items,
                "feature_shape": shape, "dtype": self.header.get("recipe", {}).get("dtype"),
                "bytes": size, "failures": {v: r.get("error") for v, r in failures.items()}}
