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
of the same recipe, model and videos write the same bytes. A features record
also holds ``data_sha256``: sha256 of the ``features``, ``start`` and ``end``
bytes, in that order (C order, as stored).

A *query store* (header ``"kind": "text"``, :mod:`fastvqa.extract.text`) is
the same folder with one entry per benchmark record instead of per video:
its ids are record ids, its ``start``/``end`` token positions, and its
header names the video recipe it pairs with (``pair``).

Nothing read is trusted. Every file's record is checked on read (its shape,
and that its recipe hash, model and video id are this store's): a file of
another store, copied or merged in, is *foreign* (:class:`ForeignFileError`),
one that cannot be parsed or whose data do not match their checksum is
*damaged* (:class:`DamagedFileError`); both name the file. Deciding what is
already done reads only each file's header (cheap, every run); :meth:`load`
also verifies the checksum (sha256 runs at about 1 GB/s, a fraction of the
read itself, so every load verifies); :meth:`verify` (``fastvqa store verify``)
checks every file. :meth:`quarantine` moves a bad file aside, under
``STORE/quarantine/``, never deleting it.

Long video ids: a file name keeps within 255 bytes (NAME_MAX) together with
its temporary name; an id whose name would not is stored under a shortened
name ending in ``~`` and 16 hex digits of the id's sha256 (the record keeps
the full id).

Every file is written through a temporary name and linked into place when
complete (:func:`fastvqa._outputs.write_new`), never over an existing one; a
run killed at any point leaves at most temporaries (``.*.part``), which the
next run of those videos removes. :meth:`FeatureStore.manifest` lists every
record.
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Optional

import numpy as np

from fastvqa.errors import InputError

FORMAT = "fastvqa-store-1"
_META_KEY = "fastvqa"
#: the longest file name most file systems take, in bytes
NAME_MAX = 255
#: what a temporary name adds to its final name (``.<name>.<12 hex>.part``,
#: :mod:`fastvqa._outputs`)
_TEMP_EXTRA = 19
_HASHED = re.compile(r"~[0-9a-f]{16}$")
#: the recipe fields a message shows to tell two recipes apart
_KEY_FIELDS = ("sampler", "size", "crop", "text", "output", "model", "layer", "max_tokens",
               "dtype", "batch", "pair")


class StoreError(InputError):
    """A store that cannot be used: not a store, another recipe or model, a
    damaged file. The message names the store and the problem."""


class BadFileError(StoreError):
    """One file of a store that does not belong in it; ``path`` is the file."""

    kind = "bad"

    def __init__(self, path: Path, message: str):
        super().__init__(message)
        self.path = Path(path)


class DamagedFileError(BadFileError):
    """A store file that cannot be parsed, or whose data fail their checksum."""

    kind = "damaged"


class ForeignFileError(BadFileError):
    """A well-formed store file of another recipe, model or video."""

    kind = "foreign"


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
    parts = video.split("/") if isinstance(video, str) else [""]
    if not video or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise InputError(f"video id {video!r} cannot name a store file (empty, '.', '..', or "
                         "starting with a dot)")
    return video


def _file_name(component: str, suffix: str) -> str:
    """The file name of an id's last component: itself plus ``suffix`` when
    that and its temporary name fit in :data:`NAME_MAX` bytes, else a
    shortened prefix, ``~`` and 16 hex of the component's sha256."""
    name = component + suffix
    if len(name.encode("utf-8", "surrogatepass")) + _TEMP_EXTRA <= NAME_MAX:
        return name
    raw = component.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).hexdigest()[:16]
    budget = NAME_MAX - _TEMP_EXTRA - len(suffix) - 17
    head = raw[:budget].decode("utf-8", "ignore")  # never half a character
    return f"{head}~{digest}{suffix}"


def data_sha256(features: np.ndarray, start: np.ndarray, end: np.ndarray) -> str:
    """sha256 (hex) of the three arrays' bytes in C order, as a file stores them."""
    h = hashlib.sha256()
    for a in (features, start, end):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def describe_recipe(recipe: Any, recipe_hash: Any = None) -> str:
    """One phrase naming a recipe for a message: its name, the fields that
    tell recipes apart, and the start of its hash (``recipe`` is the recipe's
    dict, or only its name as a file's record holds it)."""
    if isinstance(recipe, dict):
        name = recipe.get("name")
        fields = ", ".join(f"{k} {_short(recipe[k])}" for k in _KEY_FIELDS
                           if recipe.get(k) is not None)
    else:
        name, fields = recipe, ""
    tail = f"sha256 {str(recipe_hash)[:12]}" if recipe_hash else "no hash"
    return f"{name} ({fields}; {tail})" if fields else f"{name} ({tail})"


def _short(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value):
        return value[:12]  # a paired recipe's hash
    return json.dumps(value) if isinstance(value, list) else str(value)


def _loads(text: str, where: Path) -> Any:
    """JSON from a store file; any parse failure (deep nesting included) is
    a :class:`DamagedFileError` naming ``where``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise DamagedFileError(where, f"{where}: damaged: JSON nested too deeply") from None
    except ValueError as err:
        raise DamagedFileError(where, f"{where}: damaged: not JSON ({err})") from None


class FeatureStore:
    """A store folder (module doc). ``FeatureStore(path)`` opens an existing
    one; :meth:`create` makes or reopens one for a recipe and model."""

    def __init__(self, path: Any):
        self.path = Path(path)
        self._verified: dict = {}   # file -> (inode, size, mtime) whose checksum held
        head = self.path / "store.json"
        if not head.is_file():
            raise StoreError(f"{self.path} is not a fastvqa feature store (no store.json)")
        try:
            text = head.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise StoreError(f"{head}: unreadable ({err})") from None
        self.header = _loads(text, head)
        if not isinstance(self.header, dict) or self.header.get("format") != FORMAT:
            raise StoreError(f"{head}: not a {FORMAT} store header")
        recipe = self.header.get("recipe")
        if not isinstance(recipe, dict) or not isinstance(recipe.get("name"), str) \
                or not isinstance(self.header.get("recipe_hash"), str) \
                or not isinstance(self.header.get("model"), (str, type(None))):
            raise StoreError(f"{head}: damaged: its recipe must be an object with a name, "
                             "beside a recipe_hash and a model (edited by hand?)")

    @property
    def kind(self) -> str:
        """``"video"`` (per-video features) or ``"text"`` (a query store:
        per-record text features, :mod:`fastvqa.extract.text`)."""
        return "text" if self.header.get("kind") == "text" else "video"

    @classmethod
    def create(cls, path: Any, header: dict) -> "FeatureStore":
        """The store at ``path`` for ``header`` (format, recipe, recipe_hash,
        model, model_sha256, weights): made when ``path`` does not exist (or
        is an empty folder), reopened when it holds a store of the same recipe
        hash and model; anything else raises :class:`StoreError` and touches
        nothing. Safe from several processes at once: the header appears
        whole (a link), the first one wins, and an identical one is reopened."""
        from fastvqa._outputs import OutputExistsError, write_new

        path = Path(path)
        header = {"format": FORMAT, **header}
        if path.exists() and not path.is_dir():
            raise StoreError(f"{path} exists and is not a folder")
        # One listing decides: another process may link store.json into place
        # between two looks (so "no store.json" then "a stranger's file" is a
        # race), and its header temporary (.store.json.<hex>.part) is no
        # stranger's file: that process is creating this same store right now.
        names = {p.name for p in path.iterdir()} if path.is_dir() else set()
        if "store.json" not in names and any(
                not re.fullmatch(r"\.store\.json\.[0-9a-f]{12}\.part", name) for name in names):
            raise StoreError(f"{path} is a folder that is not empty and holds no store.json; "
                             "refusing to write into it")
        text = json.dumps(header, sort_keys=True, indent=1) + "\n"
        try:
            write_new(path / "store.json", text, "store header")
        except OutputExistsError:
            pass  # made earlier, or by another shard just now: compare below
        except OSError as err:
            raise StoreError(f"cannot write {path / 'store.json'}: {err.strerror or err}") \
                from None
        store = cls(path)
        if store.header.get("recipe_hash") != header.get("recipe_hash"):
            raise StoreError(
                f"{path} was made by another recipe, "
                f"{describe_recipe(store.header['recipe'], store.header['recipe_hash'])}; "
                f"this run's is {describe_recipe(header.get('recipe'), header.get('recipe_hash'))}"
                "; use a new --out, or the store's own recipe")
        for key, what in (("model", "model"), ("model_sha256", "model weights")):
            if store.header.get(key) != header.get(key):
                raise StoreError(
                    f"{path} was made by another {what} ({key} {store.header.get(key)!r}, "
                    f"this run {header.get(key)!r}); use a new --out, or the store's own")
        return store

    # --------------------------------------------------------------- paths
    def _path(self, sub: str, video: str, suffix: str) -> Path:
        parts = _check_id(video).split("/")
        return self.path.joinpath(sub, *parts[:-1], _file_name(parts[-1], suffix))

    def features_path(self, video: str) -> Path:
        return self._path("features", video, ".safetensors")

    def failure_path(self, video: str) -> Path:
        return self._path("failed", video, ".json")

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

    def quarantine(self, path: Any) -> Path:
        """Move the store file ``path`` aside to ``STORE/quarantine/<its
        relative path>`` (never over another file: ``.1``, ``.2``... are
        appended), for a rerun to write that video again; returns where."""
        from fastvqa._outputs import _rename_no_replace

        path = Path(path)
        rel = path.relative_to(self.path)
        target = self.path / "quarantine" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        for k in range(1000):
            dest = target if k == 0 else target.with_name(f"{target.name}.{k}")
            try:
                _rename_no_replace(path, dest)
                return dest
            except FileExistsError:
                continue
        raise StoreError(f"{target.parent}: 1000 quarantined copies of {rel}; clean it up")

    # ---------------------------------------------------------------- write
    def _write(self, path: Path, data: Any, what: str) -> Path:
        from fastvqa._outputs import write_new

        try:
            return write_new(path, data, what)
        except FileExistsError:
            raise
        except OSError as err:  # a full disk, a quota, a read-only mount
            raise StoreError(f"cannot write {path}: {err.strerror or err}; nothing of it was "
                             "left, run again once that is fixed") from None

    def write(self, video: str, features: np.ndarray, start: np.ndarray, end: np.ndarray,
              record: dict) -> Path:
        """Write one video's arrays and record (``status`` is set to ``"ok"``,
        ``data_sha256`` to the arrays' checksum) as a new file; a leftover
        failure record of that video is removed after."""
        st = _safetensors()
        arrays = {"features": np.ascontiguousarray(features),
                  "start": np.ascontiguousarray(start, dtype=np.float64),
                  "end": np.ascontiguousarray(end, dtype=np.float64)}
        record = {**record, "video": video, "status": "ok", "shape": list(features.shape),
                  "dtype": str(features.dtype),
                  "data_sha256": data_sha256(arrays["features"], arrays["start"],
                                             arrays["end"])}
        meta = {_META_KEY: json.dumps(record, sort_keys=True, separators=(",", ":"))}
        blob = st.save(arrays, metadata=meta)
        out = self._write(self.features_path(video), blob, "features")
        failed = self.failure_path(video)
        if failed.exists():
            failed.unlink()
        return out

    def write_failure(self, video: str, record: dict, error: str) -> Path:
        """Record that ``video`` could not be used, and why (replaces an older
        failure record of it: a retry's error is the one that counts)."""
        path = self.failure_path(video)
        if path.exists():
            path.unlink()
        record = {**record, "video": video, "status": "failed", "error": error}
        return self._write(path, json.dumps(record, sort_keys=True, indent=1) + "\n", "failure")

    # ----------------------------------------------------------------- read
    def record(self, video: str) -> Optional[dict]:
        """The record of ``video``: its features file's (status ok), else its
        failure's, else ``None``, checked (module doc): a file that cannot be
        parsed raises :class:`DamagedFileError`, one of another recipe, model
        or video :class:`ForeignFileError`, each naming the file."""
        path = self.features_path(video)
        if path.is_file():
            return self._header_record(path, video)
        failed = self.failure_path(video)
        if failed.is_file():
            return self._failure_record(failed, video)
        return None

    def _failure_record(self, path: Path, video: Optional[str]) -> dict:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise DamagedFileError(path, f"{path}: damaged: unreadable ({err})") from None
        rec = _loads(text, path)
        if not isinstance(rec, dict) or rec.get("status") != "failed" \
                or not isinstance(rec.get("video"), str) or "error" not in rec:
            raise DamagedFileError(path, f"{path}: damaged: not a failure record (an object "
                                         "with video, status 'failed' and error)")
        self._check_belongs(path, rec, video)
        return rec

    @staticmethod
    def _open_file(path: Path) -> Any:
        """``safe_open`` of a store file; DamagedFileError when it is not one."""
        from safetensors import safe_open

        try:
            return safe_open(str(path), framework="numpy")
        except Exception as err:  # safetensors raises its own error types
            raise DamagedFileError(path, f"{path}: damaged: not a readable safetensors file "
                                         f"({str(err).splitlines()[0] if str(err) else err})"
                                   ) from None

    def _header_record(self, path: Path, video: Optional[str] = None) -> dict:
        with self._open_file(path) as f:
            meta = f.metadata() or {}
        return self._meta_record(path, meta, video)

    def _meta_record(self, path: Path, meta: dict, video: Optional[str]) -> dict:
        """The checked record of a file whose safetensors metadata is ``meta``."""
        if _META_KEY not in meta:
            raise ForeignFileError(path, f"{path}: not a fastvqa store file (no "
                                         f"{_META_KEY!r} record in its metadata)")
        rec = _loads(meta[_META_KEY], path)
        shape = rec.get("shape") if isinstance(rec, dict) else None
        if not isinstance(rec, dict) or rec.get("status") != "ok" \
                or not isinstance(rec.get("video"), str) or not isinstance(shape, list) \
                or not shape or not all(type(n) is int and n >= 0 for n in shape) \
                or not isinstance(rec.get("dtype"), str):
            raise DamagedFileError(path, f"{path}: damaged: its record is not an object with "
                                         "video, status 'ok', shape (a list of counts) and "
                                         "dtype")
        self._check_belongs(path, rec, video)
        return rec

    def _check_belongs(self, path: Path, rec: dict, video: Optional[str]) -> None:
        """ForeignFileError unless ``rec`` is of this store's recipe and model
        (and of ``video``, when given)."""
        head = self.header
        if rec.get("recipe_hash") != head.get("recipe_hash") \
                or rec.get("model") != head.get("model"):
            mine = describe_recipe(head.get("recipe"), head.get("recipe_hash"))
            theirs = describe_recipe(rec.get("recipe"), rec.get("recipe_hash"))
            if rec.get("sampler") is not None and isinstance(rec.get("recipe"), str):
                theirs = theirs.replace(" (", f" (sampler {rec['sampler']}; ", 1)
            raise ForeignFileError(
                path, f"{path}: foreign: made by recipe {theirs} and model "
                      f"{rec.get('model')!r}, but this store holds recipe {mine} and model "
                      f"{head.get('model')!r} (copied or merged from another store?)")
        if video is not None and rec.get("video") != video:
            raise ForeignFileError(path, f"{path}: foreign: it holds video "
                                         f"{rec.get('video')!r}, not {video!r} (renamed?)")

    def _ids(self, sub: str, suffix: str) -> list:
        root = self.path / sub
        if not root.is_dir():
            return []
        ids = []
        for p in root.rglob(f"*{suffix}"):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and not any(part.startswith(".") for part in rel.split("/")):
                video = rel[:-len(suffix)]
                if _HASHED.search(video):  # a long id's shortened name: the record has it
                    video = self._full_id(p, suffix) or video
                ids.append(video)
        return sorted(ids)

    def _full_id(self, path: Path, suffix: str) -> Optional[str]:
        try:
            rec = self._header_record(path) if suffix == ".safetensors" else \
                self._failure_record(path, None)
        except BadFileError:
            return None
        video = rec["video"]
        try:
            return video if self._path(path.relative_to(self.path).parts[0], video,
                                       suffix) == path else None
        except InputError:
            return None

    def videos(self) -> list:
        """The ids of the videos with features, sorted."""
        return self._ids("features", ".safetensors")

    def failures(self) -> dict:
        """``{video id: failure record}`` of the videos that failed (and have
        no features since), sorted by id."""
        done = set(self.videos())
        return {v: self.record(v) for v in self._ids("failed", ".json") if v not in done}

    def load(self, video: str) -> VideoFeatures:
        """One video's arrays and record (:class:`VideoFeatures`), checked:
        the record as :meth:`record`, the arrays against its shape, dtype and
        ``data_sha256`` (:class:`DamagedFileError` on a mismatch)."""
        path = self.features_path(video)
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{self.path}: no features for video {video!r}")
        with self._open_file(path) as f:  # one open for the record and the arrays
            record = self._meta_record(path, f.metadata() or {}, video)
            try:
                arrays = {k: f.get_tensor(k) for k in ("features", "start", "end")}
            except Exception as err:  # safetensors' own error types, a missing array
                raise DamagedFileError(path, f"{path}: damaged: its arrays cannot be read "
                                             f"({str(err).splitlines()[0] if str(err) else err!r})"
                                       ) from None
        got = (arrays["features"], arrays["start"], arrays["end"])
        n = record["shape"][0]
        if list(got[0].shape) != record["shape"] or str(got[0].dtype) != record["dtype"] \
                or got[1].shape != (n,) or got[2].shape != (n,):
            raise DamagedFileError(path, f"{path}: damaged: its arrays do not have the "
                                         f"shape {record['shape']} its record gives")
        # The checksum is computed once per file as it is on disk (inode, size,
        # modification time): an epoch-long training run reads each file many
        # times, and rewriting a file changes its identity.
        ident = (st.st_ino, st.st_size, st.st_mtime_ns)
        want = record.get("data_sha256")  # absent in files written before checksums
        if want is not None and self._verified.get(path) != ident:
            if data_sha256(*got) != want:
                raise DamagedFileError(path, f"{path}: damaged: its data do not match their "
                                             "checksum (data_sha256); a changed byte")
            self._verified[path] = ident
        return VideoFeatures(*got, record)

    def verify(self) -> dict:
        """Check every file fully (records and checksums): ``{"ok": [paths],
        "damaged": {path: reason}, "foreign": {path: reason}}``."""
        report: dict = {"ok": [], "damaged": {}, "foreign": {}}
        for video in self.videos():
            try:
                self.load(video)
                report["ok"].append(str(self.features_path(video)))
            except BadFileError as err:
                report[err.kind][str(err.path)] = str(err)
        for video in self._ids("failed", ".json"):
            try:
                self._failure_record(self.failure_path(video), video)
            except BadFileError as err:
                report[err.kind][str(err.path)] = str(err)
        return report

    def manifest(self) -> list:
        """Every record, ok and failed, sorted by video id."""
        records = [self._header_record(self.features_path(v), v) for v in self.videos()]
        records += list(self.failures().values())
        return sorted(records, key=lambda r: r["video"])

    def info(self) -> dict:
        """A summary: kind, pairing (of a query store), recipe, model, weights,
        counts (``videos``: entries, records in a query store), features,
        failures, bytes on disk."""
        videos = self.videos()
        items = 0
        shape = None
        for v in videos:
            rec = self._header_record(self.features_path(v), v)
            items += rec["shape"][0]
            shape = shape or rec["shape"][1:]
        size = sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())
        failures = self.failures()
        recipe = self.header["recipe"]
        return {"store": str(self.path), "kind": self.kind, "pair": self.header.get("pair"),
                "recipe": recipe.get("name"),
                "recipe_hash": self.header.get("recipe_hash"), "model": self.header.get("model"),
                "weights": self.header.get("weights"),
                "videos": len(videos), "failed": len(failures), "features": items,
                "feature_shape": shape, "dtype": recipe.get("dtype"),
                "bytes": size, "failures": {v: r.get("error") for v, r in failures.items()}}
