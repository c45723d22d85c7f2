# SPDX-License-Identifier: Apache-2.0
"""A torch ``IterableDataset`` of decoded videos, sharded by DataLoader worker and rank."""

from __future__ import annotations

from typing import Any, Optional, Sequence

try:
    import torch
    from torch.utils.data import IterableDataset, get_worker_info
except ImportError as err:  # pragma: no cover - exercised where torch is absent
    raise ImportError("VideoDataset needs torch; pip install 'fastvqa[torch]'") from err

from fastvqa.video.api import read_frames
from fastvqa.video.errors import VideoError


class VideoDataset(IterableDataset):
    """Yields one dict per video: ``frames`` (uint8/float torch tensor,
    ``layout``; clip samplers keep their clip axis, as
    :attr:`fastvqa.video.Frames.data`), ``pts_seconds`` and
    ``duration_seconds`` (float64 tensors, seconds), ``indices`` (int64
    tensor) and ``path``.

    Sharding: video ``i`` goes to the consumer ``i % (world * workers)`` where
    consumers are numbered ``rank * workers + worker_id`` (``world``/``rank``
    from ``torch.distributed`` when it is initialised, ``workers``/``worker_id``
    from the DataLoader), so every video is read exactly once per epoch across
    all processes. Videos have different frame counts under most samplers:
    use ``DataLoader(ds, batch_size=None)`` or a collate that pads.

    ``on_error="skip"`` drops unreadable videos (a :class:`VideoError`) instead
    of raising. Decoding uses PyAV by default (``backend="pyav"``), which is
    what DataLoader worker processes should run. ``rotate``: as in
    :func:`~fastvqa.video.read_frames` (coded orientation by default).
    """

    def __init__(self, paths: Sequence[Any], sampler: Any, *, size=None, crop=None,
                 backend: str = "pyav", layout: str = "NHWC", dtype: str = "uint8",
                 on_error: str = "raise", rotate: bool = False):
        super().__init__()
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        self.paths = [str(p) for p in paths]
        self.sampler = sampler
        self.kwargs = dict(size=size, crop=crop, backend=backend, layout=layout, dtype=dtype,
                           rotate=rotate)
        self.on_error = on_error

    def __len__(self) -> int:
        return len(self.paths)

    def shard(self) -> list:
        """The paths this process and worker read."""
        rank, world = _rank_world()
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        consumer, consumers = rank * workers + worker, world * workers
        return self.paths[consumer::consumers]

    def __iter__(self):
        for path in self.shard():
            try:
                out = read_frames(path, self.sampler, **self.kwargs)
            except VideoError:
                if self.on_error == "raise":
                    raise
                continue
            frames = out.data if isinstance(out.data, torch.Tensor) else torch.from_numpy(out.data)
            yield {"frames": frames, "pts_seconds": torch.from_numpy(out.pts_seconds),
                   "duration_seconds": torch.from_numpy(out.duration_seconds),
                   "indices": torch.from_numpy(out.indices), "path": path}


def _rank_world(group: Optional[Any] = None) -> tuple:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(group), dist.get_world_size(group)
    return 0, 1
