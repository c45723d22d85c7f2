# SPDX-License-Identifier: Apache-2.0
"""``read_frames`` and ``read_batch``: a video (or many) to the frames a sampler asks for."""

from __future__ import annotations

import importlib.util
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa._progress import Progress
from fastvqa.errors import InputError
from fastvqa.video.device import Device, gpu_visible, parse_device
from fastvqa.video.errors import VideoError
from fastvqa.video.index import VideoIndex, probe

BACKENDS = ("auto", "pyav", "dali")
LAYOUTS = ("NHWC", "NCHW")
DTYPES = ("uint8", "float32", "float16")


class Frames(NamedTuple):
    """What :func:`read_frames` returns.

    ``frames``: ``(n, H, W, 3)`` (``layout="NHWC"``) or ``(n, 3, H, W)`` RGB,
    NumPy on the CPU, a torch tensor on the GPU. ``timestamps``: float64
    ``(n,)`` seconds, the container's presentation time of each frame.
    ``indices``: int64 ``(n,)`` frame numbers in display order.
    """

    frames: Any
    timestamps: np.ndarray
    indices: np.ndarray


def _dali_available() -> bool:
    try:
        return importlib.util.find_spec("nvidia.dali") is not None
    except (ImportError, ValueError):
        return False


def _gpu_visible() -> bool:
    return gpu_visible()


def resolve_backend(backend: str, device: Any = None) -> str:
    """``"auto"``: DALI when a GPU is visible and DALI is installed (and
    ``device`` is not ``"cpu"``), else PyAV. ``"pyav"``/``"dali"`` are taken as
    asked. The GPU check comes first and imports neither torch nor DALI
    (:func:`fastvqa.video.device.gpu_visible`), so a CPU machine pays nothing.
    ``device`` is checked (:func:`fastvqa.video.device.parse_device`)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    parsed = parse_device(device)
    if backend != "auto":
        return backend
    if parsed is not None and parsed.type == "cpu":
        return "pyav"
    return "dali" if _gpu_visible() and _dali_available() else "pyav"


def _indices(sampler: Any, index: VideoIndex) -> np.ndarray:
    if callable(getattr(sampler, "indices", None)):  # a Sampler, or anything like one
        return np.asarray(sampler.indices(index), dtype=np.int64)
    idx = np.asarray(sampler)
    if idx.ndim == 1 and (idx.size == 0 or np.issubdtype(idx.dtype, np.integer)):
        return idx.astype(np.int64)
    raise TypeError("sampler must be a fastvqa.video sampler (Fps, Uniform, ...) or a 1-D "
                    f"array of frame indices, got {type(sampler).__name__}")


def available_memory() -> Optional[int]:
    """Bytes of memory available to a new allocation now (Linux ``MemAvailable``;
    elsewhere the free physical pages), or ``None`` when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def check_output_size(index: VideoIndex, count: int, *, size=None, crop=None,
                      dtype: str = "uint8", budget: Optional[int] = None,
                      rotation: int = 0) -> int:
    """Bytes the decoded frames of ``count`` indices will take, after checking
    the output geometry (``size`` and ``crop`` must fit) and that they fit in
    ``budget`` bytes (default: the memory available now).

    Raises:
        InputError (a ValueError): a bad size or crop, or frames that would
            not fit, naming
            the estimate, so nothing of that size is ever allocated.

    ``rotation``: the quarter turn (degrees) the frames will be turned by
    (``rotate=True``); size and crop apply to the turned frames.
    """
    from fastvqa.video.pyav_backend import crop_box, output_size

    height, width = (index.width, index.height) if rotation % 180 else (index.height, index.width)
    out_h, out_w = output_size(height, width, size)
    _, _, h, w = crop_box(out_h, out_w, crop)
    need = int(count) * h * w * 3 * np.dtype(dtype).itemsize
    if budget is None:
        budget = available_memory()
    if budget is not None and need > budget:
        raise InputError(f"{index.path}: {count:,} frames of {w}x{h} (WxH) RGB {dtype} need "
                         f"{_gib(need)}, more than the {_gib(budget)} of memory available; "
                         "ask for fewer frames or a smaller size")
    return need


def _finish(frames: Any, layout: str, dtype: str) -> Any:
    """Layout and dtype on NumPy or torch; floats are scaled to [0, 1]."""
    if isinstance(frames, np.ndarray):
        if layout == "NCHW":
            frames = np.ascontiguousarray(frames.transpose(0, 3, 1, 2))
        if dtype != "uint8":
            frames = frames.astype(dtype) * np.asarray(1.0 / 255.0, dtype=dtype)
        return frames
    import torch

    if layout == "NCHW":
        frames = frames.permute(0, 3, 1, 2).contiguous()
    if dtype != "uint8":
        frames = frames.to(getattr(torch, dtype)).mul_(1.0 / 255.0)
    return frames


def read_frames(
    path: Any,
    sampler: Any,
    *,
    size=None,
    crop=None,
    backend: str = "auto",
    device: Any = None,
    layout: str = "NHWC",
    dtype: str = "uint8",
    index: Optional[VideoIndex] = None,
    rotate: bool = False,
) -> Frames:
    """Decode the frames ``sampler`` picks from the video at ``path``.

    Args:
        path: the video file.
        sampler: a sampler (:class:`~fastvqa.video.Fps`, ``Uniform``, ``Clips``,
            ``SecondWindows``, ``Hierarchical``, ``Outside``, any of them
            ``.within(start, end)``) or a 1-D array of frame indices.
        size: shorter-side resize (int) or exact ``(H, W)``; bilinear,
            antialiased when shrinking (swscale on the CPU; DALI's resize on the GPU).
        crop: centre crop (int or ``(H, W)``) after the resize.
        backend: ``"pyav"`` (CPU), ``"dali"`` (NVDEC on the GPU, or DALI's CPU
            reader for VP8/VP9/MJPEG with ``device="cpu"``), or ``"auto"``:
            DALI when it imports and a GPU is visible, else PyAV.
        device: where the frames go, in the one device vocabulary
            (:func:`fastvqa.video.device.parse_device`). ``None``: NumPy for
            PyAV, the GPU for DALI. ``"cpu"`` (or ``torch.device("cpu")``):
            NumPy (DALI: its CPU reader). ``"cuda"``/``"cuda:k"`` (or a CUDA
            ``torch.device``): a torch CUDA tensor (DALI decodes on GPU ``k``;
            PyAV decodes on the CPU and copies). Anything else (``"gpu"``,
            ``"cuda:x"``, ``"mps"``) is a ``ValueError``.
        layout: ``"NHWC"`` or ``"NCHW"``.
        dtype: ``"uint8"`` (0..255) or ``"float32"``/``"float16"`` (scaled to [0, 1]).
        index: a :class:`VideoIndex` already probed for ``path`` (skips the probe).
        rotate: ``False`` (default): frames in the file's *coded* orientation,
            rotation metadata ignored (as decord does). ``True``: apply the
            display matrix (:func:`fastvqa.video.display_rotation`) as players
            do; ``size``/``crop`` refer to the displayed orientation. PyAV
            backend only.

    Returns:
        :class:`Frames` ``(frames, timestamps, indices)``; ``indices`` are
        exactly the sampler's (repeats included) and ``frames[i]`` is frame
        ``indices[i]``.

    Raises:
        VideoError: the file cannot be read (missing, empty, truncated,
            corrupt, audio-only, unsupported), naming the file and the reason.
        ImportError: PyAV (``fastvqa[video]``) or DALI (``fastvqa[dali]``) missing.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    device = parse_device(device)
    chosen = resolve_backend(backend, device)
    if index is None:
        index = probe(path)
    idx = _indices(sampler, index)
    if rotate and chosen == "dali":
        raise ValueError("rotate=True is implemented by the PyAV backend only "
                         "(backend='pyav')")
    if chosen == "dali":
        # DALI checks its own crop (it rounds the resize half up); frames on the
        # GPU are not bounded by host memory.
        on_gpu = device is None or device.is_cuda
        check_output_size(index, len(idx), size=size, dtype=dtype,
                          budget=float("inf") if on_gpu else None)
    elif not rotate:  # (with rotate, decode_pyav checks the turned geometry)
        check_output_size(index, len(idx), size=size, crop=crop, dtype=dtype)
    if chosen == "dali":
        from fastvqa.video.dali_backend import decode_dali

        frames = decode_dali(index, idx, size=size, crop=crop, device=device)
    else:
        from fastvqa.video.pyav_backend import decode_pyav

        frames = decode_pyav(index, idx, size=size, crop=crop, rotate=bool(rotate))
        if device is not None and device.is_cuda:
            import torch

            frames = torch.from_numpy(frames).to(str(device))
    frames = _finish(frames, layout, dtype)
    return Frames(frames, index.timestamps[idx].copy(), idx)


def read_batch(
    paths: Sequence[Any],
    sampler: Any,
    *,
    size=None,
    crop=None,
    backend: str = "auto",
    device: Any = None,
    layout: str = "NHWC",
    dtype: str = "uint8",
    workers: Optional[int] = None,
    progress: Optional[bool] = None,
    on_error: str = "raise",
    rotate: bool = False,
) -> list:
    """:func:`read_frames` over many videos; one :class:`Frames` per path, in order.

    On the CPU (PyAV) the videos are decoded by a pool of ``workers`` threads
    (default: ``min(8, cores)``; PyAV releases the GIL while decoding). With
    the DALI backend the videos go through ``dali_backend.decode_dali_batch``
    (one pipeline).

    ``progress``: a tqdm bar (or a stderr counter without tqdm), drawn only
    when stderr is a terminal (never escape codes in a log); ``None`` shows it
    there when there are more than 10 videos, ``False`` never.
    ``on_error``: ``"raise"`` (the first :class:`VideoError` stops the batch)
    or ``"return"`` (the error object takes that video's place in the list).
    ``rotate``: as in :func:`read_frames` (PyAV only).
    """
    if on_error not in ("raise", "return"):
        raise ValueError(f"on_error must be 'raise' or 'return', got {on_error!r}")
    paths = list(paths)
    device = parse_device(device)
    chosen = resolve_backend(backend, device)
    if progress is None:
        progress = len(paths) > 10 and sys.stderr.isatty()
    bar = Progress(len(paths), bool(progress))
    kwargs = dict(size=size, crop=crop, backend=chosen, device=device, layout=layout, dtype=dtype)

    if chosen == "dali":
        if rotate:
            raise ValueError("rotate=True is implemented by the PyAV backend only "
                             "(backend='pyav')")
        from fastvqa.video.dali_backend import decode_dali_batch

        try:
            return decode_dali_batch(paths, sampler, **kwargs, progress=bar.update,
                                     on_error=on_error)
        finally:
            bar.close()

    def one(path):
        try:
            return read_frames(path, sampler, **kwargs, rotate=rotate)
        except VideoError as err:
            if on_error == "raise":
                raise
            return err
        finally:
            bar.update()

    try:
        if len(paths) <= 1:
            return [one(p) for p in paths]
        workers = workers or min(8, os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, paths))
    finally:
        bar.close()
