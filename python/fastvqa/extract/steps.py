# SPDX-License-Identifier: Apache-2.0
"""The steps every engine of :func:`fastvqa.extract.run` runs on one video:
decode (:func:`decode_video` into a :class:`Decoded`), then the model and the
store write (:class:`Writer`). The local engine (:mod:`fastvqa.extract.engine`)
runs them in threads, the Ray engine (:mod:`fastvqa.extract.ray_engine`) in
tasks and actors; neither engine imports the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple, Optional

import numpy as np

from fastvqa.errors import InputError
from fastvqa.extract.models import Model
from fastvqa.extract.recipes import Recipe
from fastvqa.extract.store import FeatureStore


class Video(NamedTuple):
    """One input: its store id, its file, and the path recorded (relative to
    the videos folder, or the file name for a list of files)."""

    id: str
    path: Path
    source: str


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
    from fastvqa._digests import sha256_file
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
        self.width = checked_width(self.width, feats, self.model_name, "item",
                                   f"video {d.video.id!r}", "videos")
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


def checked_width(width: Optional[int], feats: np.ndarray, model: str, unit: str, entry: str,
                  others: str) -> int:
    """The store's feature width: ``feats``'s (``[n, D]``) when ``width`` is
    None (the first entry), else ``width`` after checking ``feats`` has it: a
    model whose output size changes stops the run (an InputError naming
    ``entry``, e.g. ``"video 'a'"``, and the ``others`` written before)."""
    if width is not None and feats.shape[1] != width:
        raise InputError(f"model {model!r} gives {feats.shape[1]} values per {unit} for "
                         f"{entry}, but {width} for the {others} before; its output size must "
                         "not change")
    return int(feats.shape[1])


def _stored_width(store: FeatureStore) -> Optional[int]:
    """The feature width of the videos already in the store (``None`` if none)."""
    for v in store.videos():
        shape = store.record(v)["shape"]
        return int(shape[1]) if len(shape) > 1 else None
    return None

