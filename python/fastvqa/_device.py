# SPDX-License-Identifier: Apache-2.0
"""The one ``device`` vocabulary of fastvqa, read in one place.

``device`` is ``None`` (automatic: each consumer documents what it picks),
``"cpu"``, ``"cuda"`` (the current GPU), ``"cuda:K"`` (GPU ``K``) or a
``torch.device`` of type ``cpu``/``cuda``; ``"auto"`` is read as ``None``
(the spelling fastvqa.retrieval used). :func:`parse_device` is the only
reader: the video readers and backends, feature extraction, retrieval's
:class:`~fastvqa.retrieval.Index` and the encoders all work from its
:class:`Device`, so a device is parsed once and its GPU index is never lost
on the way. :func:`gpu_visible` tells whether a GPU is there without
importing torch or DALI.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, NamedTuple, Optional

from fastvqa.errors import InputError, InputTypeError

ACCEPTED = ("None (automatic), 'cpu', 'cuda', 'cuda:K' (K = 0, 1, ...) or a torch.device of "
            "type cpu or cuda")


class Device(NamedTuple):
    """A parsed device: ``type`` is ``"cpu"`` or ``"cuda"``; ``index`` is the
    CUDA ordinal, ``None`` for ``"cpu"`` and for a bare ``"cuda"`` (the
    current device; DALI and FAISS take GPU 0).

    >>> parse_device("cuda:1")
    Device(type='cuda', index=1)
    >>> str(parse_device("cuda:1")), parse_device("cpu").is_cuda, parse_device("auto")
    ('cuda:1', False, None)
    """

    type: str
    index: Optional[int] = None

    @property
    def is_cuda(self) -> bool:
        return self.type == "cuda"

    @property
    def ordinal(self) -> int:
        """The GPU to use: ``index``, or 0 for a bare ``"cuda"``."""
        return 0 if self.index is None else self.index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


_CUDA = re.compile(r"cuda(?::(\d+))?")


def parse_device(device: Any) -> Optional[Device]:
    """``device`` as a :class:`Device`; ``None`` (and ``"auto"``) stay ``None``.

    Raises:
        InputError: (a ValueError) any other string, e.g. ``"gpu"``,
            ``"cuda:x"``, ``"mps"``, or a torch.device of another type,
            naming the value and the accepted ones.
        InputTypeError: (a TypeError) a value that is neither a string nor a
            torch.device.
    """
    if device is None or isinstance(device, Device):
        return device
    if type(device).__name__ == "device" and type(device).__module__ == "torch":
        kind, index = device.type, device.index
        if kind == "cpu":
            return Device("cpu")
        if kind == "cuda":
            return Device("cuda", None if index is None else int(index))
        raise InputError(f"device {device!r} is not supported here; use {ACCEPTED}")
    if not isinstance(device, str):
        raise InputTypeError(f"device must be {ACCEPTED}, got {type(device).__name__} "
                             f"{device!r}")
    if device == "cpu":
        return Device("cpu")
    if device == "auto":
        return None
    match = _CUDA.fullmatch(device)
    if match is None:
        hint = " (for the GPU say 'cuda')" if device.strip().lower() in ("gpu", "cuda", "nvdec") \
            else ""
        raise InputError(f"device {device!r} is not a device fastvqa understands{hint}; "
                         f"use {ACCEPTED}")
    return Device("cuda", None if match.group(1) is None else int(match.group(1)))


def gpu_visible() -> bool:
    """Whether an NVIDIA GPU is visible to this process, without importing torch or DALI.

    A CUDA build of fastvqa asks its own runtime (``_C.cuda_device_count()``);
    a CPU build looks for NVIDIA device files (``/dev/nvidia0``, ...; ``/dev/dxg``
    under WSL) unless ``CUDA_VISIBLE_DEVICES`` hides every device (empty or
    ``-1``). Microseconds, so an automatic choice costs nothing on a CPU machine.
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
