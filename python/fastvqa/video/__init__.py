# SPDX-License-Identifier: Apache-2.0
"""Video decoding at each benchmark's sampling (``pip install 'fastvqa[video]'``).

- :func:`probe` indexes a video's frames (timestamps, keyframes) from its
  packets, without decoding.
- Samplers turn that index into frame indices: :class:`Fps`, :class:`Uniform`,
  :class:`Clips`, :class:`SecondWindows`, :class:`Hierarchical`,
  :class:`Outside`, each restrictable with ``.within(start, end)``.
- :class:`VideoDecoder` opens one video for many reads (probed once);
  :func:`read_frames` / :func:`read_batch` decode exactly the frames a sampler
  picks, as :class:`Frames`, on the CPU with PyAV or on the GPU with DALI; :class:`VideoDataset` (torch) shards
  them over DataLoader workers and ranks.

Each name is imported on first use; PyAV, torch and DALI only when used.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

# public name -> submodule that defines it
_LAZY = {
    "Frames": "api",
    "read_batch": "api",
    "read_frames": "api",
    "resolve_backend": "api",
    "VideoDataset": "dataset",  # imports torch
    "VideoDecoder": "api",
    "VideoError": "errors",
    "VideoIndex": "index",
    "display_rotation": "index",
    "probe": "index",
    "Clips": "samplers",
    "Fps": "samplers",
    "Hierarchical": "samplers",
    "Outside": "samplers",
    "Sampler": "samplers",
    "SecondWindows": "samplers",
    "Uniform": "samplers",
    "Within": "samplers",
    "from_spec": "samplers",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
