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

from fastvqa._device import parse_device
from fastvqa._shards import parse_shard, shard_of  # noqa: F401  (also importable from here)
from fastvqa.errors import InputError
from fastvqa.extract.models import SEED, resolve, weights_sha256
from fastvqa.extract.recipes import Recipe, get_recipe
from fastvqa.extract.steps import (  # noqa: F401  (Decoded, decode_video: also importable here)
    Decoded,
    Video,
    Writer,
    decode_video,
)
from fastvqa.extract.store import BadFileError, FeatureStore

ENGINES = ("local", "ray")

#: file name endings taken as videos when VIDEOS is a folder (case-insensitive)
VIDEO_SUFFIXES = (".mp4", ".mkv", ".avi", ".webm", ".mov", ".m4v", ".mpg", ".mpeg", ".ts",
                  ".flv", ".ogv", ".3gp")


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



def video_paths(videos: Union[str, Path, Sequence]) -> dict:
    """Video id -> file of :func:`discover`'s videos, where a video in a
    subfolder also answers to its bare name when no other file has that name
    (how ``fastvqa run`` and ``fastvqa generate events`` find a benchmark's
    videos by id).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d, "a").mkdir(), Path(d, "a", "v1.mp4").touch())
    ...     sorted(video_paths(d))
    ['a/v1', 'v1']
    """
    found = {v.id: v.path for v in discover(videos)}
    names: dict = {}
    for vid, path in found.items():
        names.setdefault(Path(vid).name, []).append(path)
    for name, paths in names.items():
        if len(paths) == 1:
            found.setdefault(name, paths[0])
    return found

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
            (``"cpu"``, ``"cuda"``, ``"cuda:k"``, a ``torch.device``; None
            is ``"cpu"``); frames are decoded on the CPU (PyAV) and sent as
            uint8. Each record names it: float rounding may differ between
            devices. The Ray engine takes ``"cuda"`` (Ray picks each actor's
            GPU), not ``"cuda:k"``.
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
    _checks.choice(engine, "", "engine", ENGINES)
    recipe = get_recipe(recipe)
    if engine == "ray" and getattr(parse_device(device), "index", None) is not None:
        # Ray gives each model actor one GPU of its choosing, visible to the
        # actor as "cuda"; a store recording "cuda:1" would name the wrong one.
        raise InputError(f"device {str(parse_device(device))!r}: --engine ray assigns one GPU "
                         "to each model actor itself; use device='cuda' (or limit the GPUs Ray "
                         "sees with CUDA_VISIBLE_DEVICES)")
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
    parsed = parse_device(device)
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
