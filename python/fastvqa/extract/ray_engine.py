# SPDX-License-Identifier: Apache-2.0
"""The Ray engine of :func:`fastvqa.extract.run` (``engine="ray"``, ``pip
install ray[data]``): the same recipe and store, on a Ray cluster.

A Ray Data pipeline over the videos' file paths (one row per video, never one
per frame): a decode step (:func:`fastvqa.extract.steps.decode_video`, Ray
tasks of one CPU each, scheduled by Ray) and a model step (``map_batches``
over an actor pool: each actor builds the model once and writes each video
into the store as the local engine does, :class:`~fastvqa.extract.steps.Writer`).
The store folder must therefore be reachable from every node (a shared file
system), as the videos must be.

Cluster: ``run`` connects where ``ray.init()`` does: a Ray already
initialised by the caller (``ray.init(address="ray://head:10001")``), else
``RAY_ADDRESS``, else a local Ray on this machine. Scheduling, retries and
scaling are Ray's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import numpy as np

from fastvqa.errors import InputError


def _ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise InputError("engine 'ray' needs Ray Data: pip install 'ray[data]'") from None
    return ray


def _decode_row(row: dict, recipe: dict) -> dict:
    """The decode step of one row (one video), as a Ray Data row."""
    from fastvqa.extract.steps import Video, decode_video
    from fastvqa.extract.recipes import Recipe
    from fastvqa.video.samplers import from_spec

    r = Recipe.from_dict(recipe)
    d = decode_video(Video(row["id"], Path(row["path"]), row["source"]), r,
                     from_spec(r.sampler), decode_workers=1)
    empty_u8, empty_f = np.zeros((0,), np.uint8), np.zeros((0,), np.float64)
    return {"id": row["id"], "path": row["path"], "source": row["source"],
            "source_fields": json.dumps(d.source, sort_keys=True),
            "pixels": empty_u8 if d.pixels is None else d.pixels,
            "pts": empty_f if d.pts is None else d.pts,
            "durations": empty_f if d.durations is None else d.durations,
            "frames": d.frames, "duration": d.duration, "total_frames": d.total_frames,
            "error": "" if d.error is None else d.error, "failed": d.error is not None}


class _ModelActor:
    """The model step: one model per actor; writes every video it is given."""

    def __init__(self, store: str, header: dict, base: dict, recipe: dict, model: Any,
                 model_name: Optional[str], device: str):
        from fastvqa.extract.steps import Writer
        from fastvqa.extract.models import resolve, weights_sha256
        from fastvqa.extract.recipes import Recipe
        from fastvqa.extract.store import FeatureStore

        resolved = resolve(model, model_name)
        if (resolved.name, weights_sha256(resolved.module)) != (header["model"],
                                                                header["model_sha256"]):
            raise InputError(f"model {resolved.name!r} built on a Ray worker has other weights "
                             "than the driver's; give a checkpoint or a seeded model")
        self.write = Writer(FeatureStore(store), Recipe.from_dict(recipe), resolved, base,
                            device=device)

    def __call__(self, batch: dict) -> dict:
        from fastvqa.extract.steps import Decoded, Video

        out: dict = {"id": [], "status": [], "items": [], "frames": []}
        for i in range(len(batch["id"])):
            failed = bool(batch["failed"][i])
            d = Decoded(Video(str(batch["id"][i]), Path(str(batch["path"][i])),
                              str(batch["source"][i])),
                        json.loads(str(batch["source_fields"][i])),
                        None if failed else np.asarray(batch["pixels"][i]),
                        None if failed else np.asarray(batch["pts"][i], np.float64),
                        None if failed else np.asarray(batch["durations"][i], np.float64),
                        int(batch["frames"][i]), float(batch["duration"][i]),
                        int(batch["total_frames"][i]), str(batch["error"][i]) or None)
            status, items, frames = self.write(d)
            for key, value in zip(out, (d.video.id, status, items, frames)):
                out[key].append(value)
        return {k: np.asarray(v) for k, v in out.items()}


def run_ray(todo: list, recipe: Any, *, model: Any, model_name: Optional[str], store: Any,
            header: dict, base: dict, actors: int, device: str = "cpu") -> list:
    """Run the pipeline over ``todo`` (:class:`~fastvqa.extract.steps.Video`);
    ``[(status, items, frames)]`` per video, as the local engine returns."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init()
    if not todo:
        return []
    rows = [{"id": v.id, "path": str(v.path), "source": v.source} for v in todo]
    ds = ray.data.from_items(rows)
    ds = ds.map(_decode_row, fn_kwargs={"recipe": recipe.to_dict()}, num_cpus=1)
    # One GPU per model actor, chosen by Ray and visible to it as "cuda" (the
    # device the store records; run() refuses "cuda:K" with this engine).
    gpu = {"num_gpus": 1} if device != "cpu" else {}
    ds = ds.map_batches(_ModelActor, batch_size=1, concurrency=actors, num_cpus=1, **gpu,
                        batch_format="numpy",
                        fn_constructor_kwargs={"store": str(store.path), "header": header,
                                               "base": base, "recipe": recipe.to_dict(),
                                               "model": model, "model_name": model_name,
                                               "device": "cuda" if gpu else "cpu"})
    try:
        return [(str(r["status"]), int(r["items"]), int(r["frames"])) for r in ds.iter_rows()]
    except ray.exceptions.RayError as err:
        cause = getattr(err, "cause", None)
        while cause is not None and not isinstance(cause, InputError):
            cause = getattr(cause, "cause", None) or cause.__cause__
        if isinstance(cause, InputError):
            raise InputError(str(cause)) from None
        raise
