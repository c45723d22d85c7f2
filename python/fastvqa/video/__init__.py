# SPDX-License-Identifier: Apache-2.0
"""Video decoding at each benchmark's sampling (``pip install 'fastvqa[video]'``).

- :func:`probe` indexes a video's frames (timestamps, keyframes) from its
  packets, without decoding.
- Samplers turn that index into frame indices: :class:`Fps`, :class:`Uniform`,
  :class:`Clips`, :class:`SecondWindows`, :class:`Hierarchical`,
  :class:`Outside`, each restrictable with ``.within(start, end)``.
- :func:`read_frames` / :func:`read_batch` decode exactly those frames, on the
  CPU with PyAV or on the GPU with DALI; :class:`VideoDataset` (torch) shards
  them over DataLoader workers and ranks.

PyAV, torch and DALI are imported only when used.
"""

from __future__ import annotations

from fastvqa.video.api import Frames, read_batch, read_frames, resolve_backend
from fastvqa.video.errors import VideoError
from fastvqa.video.index import VideoIndex, display_rotation, probe
from fastvqa.video.samplers import (
    Clips,
    Fps,
    Hierarchical,
    Outside,
    Sampler,
    SecondWindows,
    Uniform,
    Within,
    from_spec,
)

__all__ = [
    "Clips", "Fps", "Frames", "Hierarchical", "Outside", "Sampler", "SecondWindows",
    "Uniform", "VideoDataset", "VideoError", "VideoIndex", "Within", "display_rotation",
    "from_spec", "probe",
    "read_batch", "read_frames", "resolve_backend",
]


def __getattr__(name):
    if name == "VideoDataset":  # imports torch
        from fastvqa.video.dataset import VideoDataset

        return VideoDataset
    raise AttributeError(f"module 'fastvqa.video' has no attribute {name!r}")
