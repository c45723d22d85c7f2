# SPDX-License-Identifier: Apache-2.0
"""The one ``device`` vocabulary of fastvqa.video, and a GPU check that imports nothing heavy.

``device`` is ``None``, ``"cpu"``, ``"cuda"``, ``"cuda:k"`` or a
``torch.device`` of type ``cpu``/``cuda`` (DESIGN.md, "One device
vocabulary"). :func:`parse_device` is the only place that reads it; every
reader and backend in this package works from its result.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, NamedTuple, Optional

#: The decoding backends, for every caller (read_frames, the command lines).
BACKENDS = ("auto", "pyav", "dali")

ACCEPTED = "None, 'cpu', 'cuda', 'cuda:K' (K = 0, 1, ...) or a torch.device of type cpu or cuda"


class Device(NamedTuple):
    """A parsed device: ``type`` is ``"cpu"`` or ``"cuda"``; ``index`` is the
    CUDA ordinal, ``None`` for ``"cpu"`` and for a bare ``"cuda"`` (the
    current device; DALI takes GPU 0)."""

    type: str
    index: Optional[int] = None

    @property
    def is_cuda(self) -> bool:
        return self.type == "cuda"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


_CUDA = re.compile(r"cuda(?::(\d+))?")


def parse_device(device: Any) -> Optional[Device]:
    """``device`` as a :class:`Device` (``None`` stays ``None``: the backend's default).

    Raises:
        ValueError: anything else, e.g. ``"gpu"``, ``"cuda:x"``, ``"mps"``, naming
            the value and the accepted ones.
        TypeError: a value that is neither a string nor a torch.device.
    """
    if device is None or isinstance(device, Device):
        return device
    if type(device).__name__ == "device" and type(device).__module__ == "torch":
        kind, index = device.type, device.index
        if kind == "cpu":
            return Device("cpu")
        if kind == "cuda":
            return Device("cuda", None if index is None else int(index))
        raise ValueError(f"device {device!r} is not supported here; use {ACCEPTED}")
    if not isinstance(device, str):
        raise TypeError(f"device must be {ACCEPTED}, got {type(device).__name__} {device!r}")
    if device == "cpu":
        return Device("cpu")
    match = _CUDA.fullmatch(device)
    if match is None:
        hint = " (for the GPU say 'cuda')" if device.strip().lower() in ("gpu", "cuda", "nvdec") else ""
        raise ValueError(f"device {device!r} is not a device fastvqa.video understands{hint}; "
                         f"use {ACCEPTED}")
    return Device("cuda", None if match.group(1) is None else int(match.group(1)))


def gpu_visible() -> bool:
    """Whether an NVIDIA GPU is visible to this process, without importing torch or DALI.

    A CUDA build of fastvqa asks its own runtime (``_C.cuda_device_count()``);
    a CPU build looks for NVIDIA device files (``/dev/nvidia0``, ...; ``/dev/dxg``
    under WSL) unless ``CUDA_VISIBLE_DEVICES`` hides every device (empty or
    ``-1``). Microseconds, so ``backend="auto"`` costs nothing on a CPU machine.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    try:
        from fastvqa._ext import _C

        if _C.build_info()["cuda"]:
            return _C.cuda_device_count() > 0
    except (ImportError, KeyError, AttributeError):
        pass
    return bool(glob.glob("/dev/nvidia[0-9]*")) or os.path.exists("/dev/dxg")
