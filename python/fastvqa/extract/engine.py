# SPDX-License-Identifier: Apache-2.0
"""The local engine of :func:`fastvqa.extract.run`: a pool of decode threads
feeding the model, one video at a time into the store.

Decoding (PyAV, which releases the GIL) runs ``workers`` videos ahead of the
model in threads; the model runs in the calling thread, in the recipe's
batches, under ``torch.inference_mode``. A finished video is written as one
file (:class:`~fastvqa.extract.store.FeatureStore`), so a run killed at any
point resumes where it stopped: videos already in the store are skipped, and
videos recorded as failed are skipped too unless ``retry_failed``.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np

from fastvqa.errors import InputError
from fastvqa.extract.models import SEED, Model, resolve, weights_sha256
from fastvqa.extract.recipes import Recipe, get_recipe
from fastvqa.extract.store import BadFileError, FeatureStore

ENGINES = ("local", "ray")

#: file name endings taken as videos when VIDEOS is a folder (case-insensitive)
VIDEO_SUFFIXES = (".mp4", ".mkv", ".avi", ".webm", ".mov", ".m4v", ".mpg", ".mpeg", ".ts",
                  ".flv", ".ogv", ".3gp")


class Video(NamedTuple):
    """One input: its store id, its file, and the path recorded (relative to
    the videos folder, or the file name for a list of files)."""

    id: str
    path: Path
    source: str


class ExtractSummary(NamedTuple):
    """What :func:`run` did. ``written``: videos whose features this run wrote;
    ``existing``: skipped, already in the store; ``failed``: recorded as failed
    by this run; ``skipped_failed``: skipped because an earlier run recorded
    them as failed (``retry_failed=False``); ``items``: features written;
    ``frames``: frames decoded; ``seconds``: wall time of the run."""

    store: Path
    written: int
    existing: int
    failed: int
    skipped_failed: int
    items: int
    frames: int
    seconds: float

    def line(self) -> str:
        """One line for a log: counts and throughput."""
        rate = self.written / self.seconds if self.seconds > 0 else 0.0
        fps = self.frames / self.seconds if self.seconds > 0 else 0.0
        return (f"{self.written} videos written ({self.items} features, {self.frames} frames "
                f"decoded) in {self.seconds:.1f} s: {rate:.2f} videos/s, {fps:.1f} frames/s; "
                f"{self.existing} already in the store, {self.failed} failed, "
                f"{self.skipped_failed} skipped as failed before")


def discover(videos: Union[str, Path, Sequence]) -> list:
    """The :class:`Video` inputs, sorted by id: a folder (every file below it
    with a video suffix, hidden ones skipped; id = the relative path without
    its suffix), one file, or a list of files (id = the file name without its
    suffix). A missing path, an empty folder or two files with one id raise
    :class:`~fastvqa.errors.InputError`."""
    items = []
    if isinstance(videos, (str, Path)) and Path(videos).is_dir():
        root = Path(videos)
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root)
            if p.is_file() and p.suffix.lower() in VIDEO_SUFFIXES and \
                    not any(part.startswith(".") for part in rel.parts):
                items.append(Video(rel.with_suffix("").as_posix(), p, rel.as_posix()))
        if not items:
            raise InputError(f"{root}: no video files (suffixes {', '.join(VIDEO_SUFFIXES)})")
    else:
        paths = [videos] if isinstance(videos, (str, Path)) else list(videos)
        if not paths:
            raise InputError("no videos given")
        for p in map(Path, paths):
            if not p.exists():
                raise InputError(f"{p}: no such video file or folder")
            if p.is_dir():
                raise InputError(f"{p} is a folder; give a folder alone, or files")
            items.append(Video(p.stem, p, p.name))
    seen: dict = {}
    for v in items:
        if v.id in seen:
            raise InputError(f"two videos have the id {v.id!r}: {seen[v.id]} and {v.path}")
        seen[v.id] = v.path
    return sorted(items, key=lambda v: v.id)


def parse_shard(shard: Union[str, tuple, None]) -> tuple:
    """``(i, n)`` from ``"i/n"`` or a pair (``0 <= i < n``); ``None``: the
    ``RANK``/``WORLD_SIZE`` of a torchrun launch when set, else ``(0, 1)``."""
    if shard is None:
        world = os.environ.get("WORLD_SIZE")
        if world is None:
            return 0, 1
        shard = (os.environ.get("RANK", "0"), world)
        what = f"RANK={shard[0]} WORLD_SIZE={shard[1]}"
    else:
        what = f"shard {shard!r}"
    try:
        i, n = (shard.split("/") if isinstance(shard, str) else shard)
        i, n = int(i), int(n)
    except (ValueError, TypeError):
        raise InputError(f"{what}: expected i/n with integers, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise InputError(f"{what}: need 0 <= i < n")
    return i, n


def shard_of(videos: list, shard: tuple) -> list:
    """The videos of shard ``(i, n)``: every n-th of the id-sorted list,
    starting at the i-th. The n shards partition the list, so their union is
    one run over all of it."""
    i, n = shard
    return videos[i::n]


class Decoded(NamedTuple):
    """One video after the decode step: its pixels (``(n, H, W, 3)`` frames or
    ``(n, T, H, W, 3)`` clips, uint8), each pixel frame's display time and
    duration (seconds from the video's first frame, which is 0), the video's
    duration and frame count, the source fields of its record, and the error
    that stopped it (``None`` if it decoded)."""

    video: Video
    source: dict
    pixels: Optional[np.ndarray]
    pts: Optional[np.ndarray]
    durations: Optional[np.ndarray]
    frames: int
    duration: float
    total_frames: int
    error: Optional[str]


def decode_video(v: Video, recipe: Recipe, sampler: Any,
                 decode_workers: Optional[int] = None) -> Decoded:
    """The decode step: hash the file, probe it, read the recipe's frames.
    A file that cannot be read or decoded gives a :class:`Decoded` with its
    error (the run records it), never an exception."""
    from fastvqa.evaluation import sha256_file
    from fastvqa.video import VideoDecoder

    try:
        sha, size = sha256_file(v.path), v.path.stat().st_size
    except OSError as err:
        return Decoded(v, {"source": v.source}, None, None, None, 0, 0.0, 0,
                       f"cannot read the file: {err.strerror or err}")
    source = {"source": v.source, "source_sha256": sha, "source_bytes": size}
    try:
        # One decoder probes and reads: it decodes from the container its probe
        # opened (one open of the file, not two).
        with VideoDecoder(v.path, size=recipe.size, crop=recipe.crop,
                          decode_workers=decode_workers) as decoder:
            index = decoder.metadata
            got = decoder.read(sampler)
    except InputError as err:  # VideoError, or a sampler that finds no frames
        return Decoded(v, source, None, None, None, 0, 0.0, 0, str(err))
    t0 = float(index.timestamps[0])
    return Decoded(v, source, got.data, np.asarray(got.pts_seconds, np.float64) - t0,
                   np.asarray(got.duration_seconds, np.float64),
                   int(np.unique(got.indices).size), float(index.duration),
                   len(index.timestamps), None)


def _feature_times(recipe: Recipe, sampler: Any, d: Decoded, count: int) -> tuple:
    """``(start, end)`` float64 seconds of each item, from the video's first
    frame (:class:`~fastvqa.extract.recipes.Recipe`'s ``time``)."""
    if recipe.time == "grid":
        offset = float(getattr(sampler, "offset", 0.0))
        k = np.arange(count, dtype=np.float64)
        start = offset + k / sampler.fps
        end = np.minimum(offset + (k + 1) / sampler.fps, d.duration)
        return start, end
    pts = d.pts.reshape(count, -1)
    return pts.min(axis=1), (pts + d.durations.reshape(count, -1)).max(axis=1)


class Writer:
    """The model step and the store write of one video at a time: what both
    engines run after decoding (the Ray engine in each model actor)."""

    def __init__(self, store: FeatureStore, recipe: Recipe, model: Model, base: dict,
                 progress: bool = False, device: str = "cpu"):
        from fastvqa.video.samplers import from_spec

        self.store, self.recipe, self.base = store, recipe, base
        self.sampler = from_spec(recipe.sampler)
        self.forward = _Forward(recipe, model, device)
        self.model_name = model.name
        self.width = _stored_width(store)
        self.progress = progress

    def __call__(self, d: Decoded) -> tuple:
        """``(status, items, frames)``: ``"ok"`` and what was written, or
        ``"failed"`` (recorded in the store) and ``(0, 0)``."""
        from fastvqa._progress import Progress

        recipe = self.recipe
        record = {**self.base, **d.source}
        count = 0 if d.pixels is None else int(d.pixels.shape[0])
        error = d.error
        if error is None and count == 0:
            error = (f"the sampler {recipe.sampler!r} picks nothing in this video "
                     f"({d.duration:.3f} s, {d.total_frames} frames)")
        if error is not None:
            self.store.write_failure(d.video.id, record, error)
            return "failed", 0, 0
        bar = Progress(count, self.progress, desc=d.video.id, unit="item", leave=False,
                       position=1, force=self.progress)
        parts = []
        for b in range(0, count, recipe.batch):
            parts.append(self.forward(d.pixels[b:b + recipe.batch]))
            bar.update(len(parts[-1]))
        bar.close()
        feats = np.concatenate(parts).astype(recipe.dtype)
        if self.width is None:
            self.width = feats.shape[1]
        elif feats.shape[1] != self.width:
            raise InputError(f"model {self.model_name!r} gives {feats.shape[1]} values per "
                             f"item for video {d.video.id!r}, but {self.width} for the videos "
                             "before; its output size must not change")
        start, end = _feature_times(recipe, self.sampler, d, count)
        self.store.write(d.video.id, feats, start, end, {**record, "frames": d.frames})
        return "ok", count, d.frames


class _Forward:
    """The model on one batch: normalise, lay out, run, take the layer, flatten."""

    def __init__(self, recipe: Recipe, model: Model, device: str = "cpu"):
        import torch

        self.torch = torch
        self.recipe, self.model = recipe, model
        self.device = torch.device(device)
        self.mean = torch.tensor(recipe.mean, dtype=torch.float32, device=self.device)
        self.std = torch.tensor(recipe.std, dtype=torch.float32, device=self.device)
        if model.module is not None:
            model.module.to(self.device)
        self.captured = None
        if recipe.layer is not None:
            if model.module is None:
                raise InputError(f"recipe {recipe.name!r} takes layer {recipe.layer!r}, but "
                                 "the model is a plain callable (no modules to hook)")
            try:
                layer = model.module.get_submodule(recipe.layer)
            except AttributeError:
                raise InputError(f"model {model.name!r} has no module {recipe.layer!r} "
                                 f"(recipe {recipe.name!r}'s layer)") from None
            layer.register_forward_hook(self._capture)

    def _capture(self, module, inputs, output):
        self.captured = output

    def __call__(self, pixels: np.ndarray) -> np.ndarray:
        torch = self.torch
        # uint8 to the device (a quarter of float32's bytes), then scale there
        x = torch.from_numpy(pixels).to(self.device).to(torch.float32).div_(255.0)
        x = x.sub_(self.mean).div_(self.std)
        # NHWC frames -> NCHW; clips (B, T, H, W, C) -> (B, C, T, H, W)
        x = x.permute(0, 3, 1, 2) if x.ndim == 4 else x.permute(0, 4, 1, 2, 3)
        with torch.inference_mode():
            self.captured = None
            out = self.model.fn(x.contiguous())
            if self.recipe.layer is not None:
                out = self.captured
        if not isinstance(out, torch.Tensor) or out.ndim < 1 or out.shape[0] != len(pixels):
            shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise InputError(f"model {self.model.name!r} gave {shape} for a batch of "
                             f"{len(pixels)}; expected one output per item")
        return out.reshape(len(pixels), -1).to(torch.float32).cpu().numpy()


def run(videos: Union[str, Path, Sequence], recipe: Union[str, Recipe], *, out: Any,
        model: Any = None, model_name: Optional[str] = None,
        shard: Union[str, tuple, None] = None, workers: Optional[int] = None,
        retry_failed: bool = False, progress: Optional[bool] = None,
        engine: str = "local", device: Any = "cpu", repair: bool = False) -> ExtractSummary:
    """Extract the features of ``videos`` with ``recipe`` into the store ``out``.

    Args:
        videos: a folder, a video file, or a list of files (:func:`discover`).
        recipe: a :class:`~fastvqa.extract.recipes.Recipe` or a built-in name.
        out: the store folder: made if missing; an existing store must have
            been made by the same recipe and model (else
            :class:`~fastvqa.extract.store.StoreError`, nothing written).
        model: a spec string, ``nn.Module`` or callable
            (:func:`fastvqa.extract.models.resolve`); ``None``: the recipe's.
        model_name: the name recorded for a module or callable.
        shard: ``"i/n"`` (:func:`parse_shard`; default torchrun's RANK and
            WORLD_SIZE when set): this run does every n-th video of the
            sorted list, from the i-th.
        workers: ``engine="local"``: decode threads (default ``min(4,
            cores)``), each one video ahead of the model; ``"ray"``: model
            actors (default 1; Ray schedules the decode tasks itself).
        retry_failed: run again the videos an earlier run recorded as failed.
        repair: a file of these videos in the store that is damaged or
            foreign (another recipe, model or video) is moved aside into
            ``STORE/quarantine/`` and its video extracted again; every done
            file's checksum is verified first. Without it such a file stops
            the run before any work (a
            :class:`~fastvqa.extract.store.StoreError` naming it).
        progress: bars per video and overall (``None``: on a terminal; off
            one, a line every 30 s of the overall count, rate and eta,
            :class:`fastvqa._progress.Progress`); the Ray engine shows Ray
            Data's own.
        device: where the model runs, in fastvqa's one device vocabulary
            (``"cpu"``, ``"cuda"``, ``"cuda:k"``, a ``torch.device``); frames
            are decoded on the CPU (PyAV) and sent as uint8. Each record
            names it: float rounding may differ between devices.
        engine: ``"local"`` (module doc) or ``"ray"``
            (:mod:`fastvqa.extract.ray_engine`: Ray Data over the cluster
            ``ray.init`` connects to, writing the same store).

    Returns:
        :class:`ExtractSummary`. A video that cannot be decoded is recorded as
        failed (``FeatureStore.failures()``) and the run goes on; a model
        error, or a model whose output size changes between videos, stops it
        (what was written stays, complete).
    """
    from fastvqa import __version__, _checks
    from fastvqa._progress import Progress, show_progress

    began = time.perf_counter()
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    recipe = get_recipe(recipe)
    device = _model_device(device)
    workers = _checks.optional_integer(workers, "extract", "workers", minimum=1)
    items = shard_of(discover(videos), parse_shard(shard))
    resolved = resolve(recipe.model if model is None else model, model_name)
    model_sha = weights_sha256(resolved.module)
    weights = resolved.weights or (f"module {model_sha}" if model_sha else "callable")
    if weights == "random":
        print(f"warning: model {resolved.name} has RANDOM weights (built from seed {SEED}, "
              "no pretrained checkpoint): its features carry no learned meaning; for real "
              "features pass --model NAME@CHECKPOINT (docs/extract.md)", file=sys.stderr,
              flush=True)
    header = {"recipe": recipe.to_dict(), "recipe_hash": recipe.hash, "model": resolved.name,
              "model_sha256": model_sha, "weights": weights, "fastvqa": __version__}
    store = FeatureStore.create(out, header)

    todo, existing, skipped_failed = [], 0, 0
    for v in items:
        rec = _checked_record(store, v.id, repair)
        if rec is None or (rec["status"] == "failed" and retry_failed):
            todo.append(v)
        elif rec["status"] == "ok":
            existing += 1
        else:
            skipped_failed += 1
    store.remove_partials(v.id for v in todo)  # what a killed run of them left
    base = {"recipe": recipe.name, "recipe_hash": recipe.hash, "model": resolved.name,
            "fastvqa": __version__, "sampler": recipe.sampler, "device": device}
    if engine == "ray":
        from fastvqa.extract.ray_engine import run_ray

        results = run_ray(todo, recipe, model=recipe.model if model is None else model,
                          model_name=model_name, store=store, header=header, base=base,
                          actors=workers or 1, device=device)
    else:
        show = show_progress(progress)
        # Off a terminal the overall count still goes to the log, a line at a time
        overall = Progress(len(todo), progress is not False, desc="extracting", unit="video",
                           force=progress is True)
        try:
            results = _run_local(todo, recipe,
                                 Writer(store, recipe, resolved, base, show, device),
                                 workers or min(4, os.cpu_count() or 1), overall.update)
        finally:
            overall.close()
    ok = [r for r in results if r[0] == "ok"]
    return ExtractSummary(store.path, len(ok), existing, len(results) - len(ok), skipped_failed,
                          sum(r[1] for r in ok), sum(r[2] for r in ok),
                          time.perf_counter() - began)


def _checked_record(store: FeatureStore, video: str, repair: bool) -> Optional[dict]:
    """``store.record(video)``; with ``repair`` the done file is also fully
    verified, and a damaged or foreign file is quarantined (``None``: to do
    again); without, such a file is a StoreError that says how to repair."""
    from fastvqa.extract.store import StoreError

    try:
        rec = store.record(video)
        if repair and rec is not None and rec["status"] == "ok":
            store.load(video)  # the checksum too
        return rec
    except BadFileError as err:
        if not repair:
            raise StoreError(f"{err}; run again with --repair (repair=True) to move it aside "
                             f"into {store.path / 'quarantine'} and extract it again") from None
        moved = store.quarantine(err.path)
        print(f"extract: {err.kind} file moved to quarantine: {moved}", file=sys.stderr,
              flush=True)
        return _checked_record(store, video, repair)  # a failure record may be left


def _model_device(device: Any) -> str:
    """``device`` as ``"cpu"`` or ``"cuda[:k]"``; a GPU torch cannot see is an error."""
    from fastvqa.video.device import parse_device

    try:
        parsed = parse_device(device)
    except (ValueError, TypeError) as err:
        raise InputError(str(err)) from None
    if parsed is None or not parsed.is_cuda:
        return "cpu"
    import torch

    if not torch.cuda.is_available():
        raise InputError(f"device {str(parsed)!r}: torch sees no CUDA GPU here (a CPU build of "
                         "torch, or no visible device); use device='cpu'")
    return str(parsed)


def _run_local(todo: list, recipe: Recipe, write: Writer, workers: int, tick) -> list:
    """Decode ``workers`` videos ahead of the model in threads; write in order."""
    sampler = write.sampler
    decode_workers = 1 if workers > 1 else None
    results = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque = deque()
        queue = iter(todo)
        for v in queue:  # keep `workers` videos decoding ahead of the model
            pending.append(pool.submit(decode_video, v, recipe, sampler, decode_workers))
            if len(pending) >= workers:
                break
        while pending:
            decoded = pending.popleft().result()
            nxt = next(queue, None)
            if nxt is not None:
                pending.append(pool.submit(decode_video, nxt, recipe, sampler, decode_workers))
            results.append(write(decoded))
            tick()
    return results


def _stored_width(store: FeatureStore) -> Optional[int]:
    """The feature width of the videos already in the store (``None`` if none)."""
    for v in store.videos():
        shape = store.record(v)["shape"]
        return int(shape[1]) if len(shape) > 1 else None
    return None

