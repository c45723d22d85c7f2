# SPDX-License-Identifier: Apache-2.0
"""The API layer: :class:`VideoDecoder`, ``read_frames`` and ``read_batch``.

It probes, samples, computes the output geometry
(:func:`fastvqa.video.geometry.output_geometry`), checks the memory the frames
need, and finishes them (shape, layout, dtype, device); the backends
(:mod:`~fastvqa.video.pyav_backend`, :mod:`~fastvqa.video.dali_backend`) only
decode, and never import this module.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa import _checks
from fastvqa._progress import Progress
from fastvqa.errors import InputError
from fastvqa._device import Device, gpu_visible, parse_device
from fastvqa.video.device import BACKENDS
from fastvqa.video.errors import VideoError
from fastvqa.video.geometry import Geometry, output_geometry
from fastvqa.video.index import (VideoIndex, check_frame_indices, display_rotation, probe,
                                 probe_open)
from fastvqa.video.pyav_backend import PyAVFile

LAYOUTS = ("NHWC", "NCHW")
DTYPES = ("uint8", "float32", "float16")


class Frames(NamedTuple):
    """What :func:`read_frames` and :class:`VideoDecoder` return (fields as
    torchcodec's ``FrameBatch``, plus the frame numbers).

    ``data``: the pixels, RGB. Its type is set by the ``device`` asked for,
    never by the machine or the backend: a NumPy array for ``device="cpu"``
    (the default), a torch CUDA tensor for ``"cuda"``/``"cuda:k"``. Its shape
    is ``indices.shape + (H, W, 3)`` (``layout="NHWC"``) or
    ``indices.shape + (3, H, W)`` (``layout="NCHW"``): ``(n, H, W, 3)`` for
    a flat sampler, ``(n_clips, frames_per_clip, H, W, 3)`` for a clip
    sampler (:class:`~fastvqa.video.Clips`,
    :class:`~fastvqa.video.SecondWindows`).

    ``pts_seconds``: float64, each frame's presentation time in seconds as
    the container states it (``pts * time_base``; the first need not be 0).
    ``duration_seconds``: float64, each frame's duration in seconds
    (:attr:`VideoIndex.duration_seconds`: the container's, else the time to
    the next frame). ``indices``: int64 frame numbers in display order,
    exactly the sampler's (repeats included). All three are NumPy arrays of
    shape ``indices.shape``, on every device.
    """

    data: Any
    pts_seconds: np.ndarray
    duration_seconds: np.ndarray
    indices: np.ndarray

    def __repr__(self) -> str:
        # One line at the prompt: the pixels' kind, shape, dtype and device,
        # and the first and last times and frame numbers, never the arrays.
        data = self.data
        kind = type(data).__name__
        shape = tuple(getattr(data, "shape", ()))
        dtype = str(getattr(data, "dtype", "?")).replace("torch.", "")
        device = getattr(data, "device", None)
        where = f", device={device}" if device is not None else ""
        return (f"Frames(data={kind}(shape={shape}, dtype={dtype}{where}), "
                f"pts_seconds={_ends(self.pts_seconds, '{:.3f}')}, "
                f"indices={_ends(self.indices, '{}')}, n={int(np.size(self.indices))})")


def _ends(values: Any, fmt: str) -> str:
    """``[a, b, ..., z]``: the first and last few of a flat view of ``values``."""
    flat = np.asarray(values).reshape(-1)
    if flat.size <= 4:
        return "[" + ", ".join(fmt.format(v) for v in flat) + "]"
    head = ", ".join(fmt.format(v) for v in flat[:2])
    return f"[{head}, ..., {fmt.format(flat[-1])}]"


def _dali_available() -> bool:
    try:
        return importlib.util.find_spec("nvidia.dali") is not None
    except (ImportError, ValueError):
        return False


def _gpu_visible() -> bool:
    return gpu_visible()


def resolve_backend(backend: str, device: Any = "cpu") -> str:
    """The backend a read with ``backend`` and ``device`` uses.

    ``"auto"``: DALI when ``device`` is CUDA, a GPU is visible and DALI is
    installed; PyAV otherwise (for ``device="cpu"``, the default, always
    PyAV). ``"pyav"``/``"dali"`` are taken as asked. The GPU check imports
    neither torch nor DALI (:func:`fastvqa.video.device.gpu_visible`), so a
    CPU machine pays nothing. ``device`` is checked
    (:func:`fastvqa.video.device.parse_device`; ``None`` is ``"cpu"``).
    """
    _checks.choice(backend, "", "backend", BACKENDS)
    parsed = parse_device(device)
    if backend != "auto":
        return backend
    if parsed is None or not parsed.is_cuda:
        return "pyav"
    return "dali" if _gpu_visible() and _dali_available() else "pyav"


def _check_rotate(rotate: bool, backend: str) -> None:
    """``rotate=True`` is a ``ValueError`` with the DALI backend (PyAV only)."""
    if rotate and backend == "dali":
        raise ValueError("rotate=True is implemented by the PyAV backend only "
                         "(backend='pyav')")


def _indices(sampler: Any, index: VideoIndex) -> np.ndarray:
    """The frame numbers ``sampler`` picks, shaped: ``(n,)``, or
    ``(n_clips, frames_per_clip)`` for a clip sampler or a 2-D array."""
    if callable(getattr(sampler, "sample", None)):  # a Sampler
        idx = np.asarray(sampler.sample(index), dtype=np.int64)
    elif callable(getattr(sampler, "indices", None)):  # anything like one
        idx = np.asarray(sampler.indices(index), dtype=np.int64)
    else:
        idx = np.asarray(sampler)
        if idx.ndim not in (1, 2) or not (idx.size == 0 or np.issubdtype(idx.dtype, np.integer)):
            raise TypeError("sampler must be a fastvqa.video sampler (Fps, Uniform, ...) or a "
                            "1-D (or 2-D: clips) array of frame indices, got "
                            f"{type(sampler).__name__}")
        idx = idx.astype(np.int64)
    check_frame_indices(index, idx.reshape(-1))  # (n,) or clips' (n_clips, frames_per_clip)
    return idx


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


def geometry_for(index: VideoIndex, *, size=None, crop=None, rotation: int = 0) -> Geometry:
    """The :class:`~fastvqa.video.geometry.Geometry` of a read of ``index``:
    ``size`` and ``crop`` applied to the frames as delivered (turned by
    ``rotation`` degrees, a multiple of 90, when ``rotate=True``)."""
    height, width = (index.width, index.height) if rotation % 180 else (index.height, index.width)
    return output_geometry(height, width, size, crop)


def check_output_size(index: VideoIndex, count: int, *, size=None, crop=None,
                      dtype: str = "uint8", budget: Optional[int] = None,
                      rotation: int = 0) -> int:
    """Bytes the decoded frames of ``count`` indices will take, after checking
    the output geometry (``size`` and ``crop`` must fit, :func:`geometry_for`)
    and that they fit in ``budget`` bytes (default: the memory available now).

    Raises:
        InputError (a ValueError): a bad size or crop, or frames that would
            not fit, naming the estimate, so nothing of that size is ever
            allocated.
    """
    geometry = geometry_for(index, size=size, crop=crop, rotation=rotation)
    return _check_bytes(index, count, geometry, dtype, budget)


def _check_bytes(index: VideoIndex, count: int, geometry: Geometry, dtype: str,
                 budget: Optional[float]) -> int:
    h, w = geometry.shape
    need = int(count) * h * w * 3 * np.dtype(dtype).itemsize
    if budget is None:
        budget = available_memory()
    if budget is not None and need > budget:
        raise InputError(f"{index.path}: {count:,} frames of {w}x{h} (WxH) RGB {dtype} need "
                         f"{_gib(need)}, more than the {_gib(budget)} of memory available; "
                         "ask for fewer frames or a smaller size")
    return need


def _finish(frames: Any, layout: str, dtype: str) -> Any:
    """Layout (channels moved before height for NCHW) and dtype on NumPy or
    torch; floats are scaled to [0, 1]."""
    if isinstance(frames, np.ndarray):
        if layout == "NCHW":
            frames = np.ascontiguousarray(np.moveaxis(frames, -1, -3))
        if dtype != "uint8":
            frames = frames.astype(dtype) * np.asarray(1.0 / 255.0, dtype=dtype)
        return frames
    import torch

    if layout == "NCHW":
        frames = frames.movedim(-1, -3).contiguous()
    if dtype != "uint8":
        frames = frames.to(getattr(torch, dtype)).mul_(1.0 / 255.0)
    return frames


def _device(device: Any) -> Device:
    parsed = parse_device(device)
    return Device("cpu") if parsed is None else parsed


class VideoDecoder:
    """One video opened for many reads: probed once, output settings fixed once.

    Mirrors torchcodec's ``VideoDecoder``: ``len(decoder)`` frames,
    ``decoder[i]`` / ``decoder[a:b:s]`` (the pixels only; negative indices
    count from the end), :meth:`get_frames_at` (frame numbers),
    :meth:`get_frames_in_range`, :meth:`get_frames_played_at` (seconds), and
    :meth:`read` for a sampler; each of these but indexing returns
    :class:`Frames`. :attr:`metadata` is the :class:`VideoIndex` (exact
    ``rate``, ``time_base``, every frame's timestamp). Each read decodes
    only what it asks for. With PyAV the file stays open from the probe on
    (without ``index``, the first read decodes from the container the probe
    read: one open, not two; with ``index``, it is opened on the first read;
    each later read starts with a seek; reads from several threads take
    turns), until :meth:`close` or the end of a ``with`` block; DALI reads
    the file for each read.

    Args:
        source: the video file.
        size: shorter-side resize (int) or exact ``(H, W)``; rounding as
            :mod:`fastvqa.video.geometry` states (torchvision's), one rule
            for every backend. Bilinear, antialiased when shrinking.
        crop: centre crop (int or ``(H, W)``) after the resize.
        backend: ``"pyav"`` (CPU), ``"dali"`` (NVDEC on the GPU, or DALI's
            CPU decoder for VP8/VP9/MJPEG with ``device="cpu"``), or
            ``"auto"`` (:func:`resolve_backend`: DALI only for a CUDA
            ``device``).
        device: where :attr:`Frames.data` goes, in the one device vocabulary
            (:func:`fastvqa.video.device.parse_device`): ``"cpu"`` (default;
            ``None`` is the same): a NumPy array; ``"cuda"``/``"cuda:k"``: a
            torch CUDA tensor (DALI decodes on GPU ``k``; PyAV decodes on the
            CPU and copies). The type of ``data`` depends only on this.
        layout: ``"NHWC"`` (channels last) or ``"NCHW"`` (channels before
            height: ``(n, 3, H, W)``, ``(n_clips, frames_per_clip, 3, H, W)``).
        dtype: ``"uint8"`` (0..255) or ``"float32"``/``"float16"`` (scaled to [0, 1]).
        rotate: ``False`` (default): frames in the file's *coded*
            orientation, rotation metadata ignored (as decord does). ``True``:
            apply the display matrix (:func:`fastvqa.video.display_rotation`)
            as players do; ``size``/``crop`` refer to the displayed
            orientation. PyAV backend only.
        index: a :class:`VideoIndex` already probed for ``source`` (skips the probe).
        decode_workers: PyAV decoders that share each read's runs
            (:func:`fastvqa.video.pyav_backend.decode_pyav`); ``None``: 2 on
            a machine with 2 or more cores, else 1.

    Raises:
        VideoError: the file cannot be read, naming it and the reason.
        ValueError: a bad size, crop, backend, device, layout or dtype.
        ImportError: PyAV (``fastvqa[video]``) or DALI (``fastvqa[dali]``) missing.
    """

    def __init__(self, source: Any, *, size=None, crop=None, backend: str = "auto",
                 device: Any = "cpu", layout: str = "NHWC", dtype: str = "uint8",
                 rotate: bool = False, index: Optional[VideoIndex] = None,
                 decode_workers: Optional[int] = None):
        self.layout = _checks.choice(layout, "", "layout", LAYOUTS)
        self.dtype = _checks.choice(dtype, "", "dtype", DTYPES)
        self.device = _device(device)
        self.backend = resolve_backend(backend, self.device)
        _check_rotate(rotate, self.backend)
        self._file = None
        if index is not None:
            self.metadata = index
        elif self.backend == "pyav":
            # The probe's container is the one the first read decodes from:
            # one open of the file instead of two.
            self.metadata, container = probe_open(source)
            self._file = PyAVFile(container)
        else:
            self.metadata = probe(source)
        try:
            self._setup(backend, rotate, size, crop)
        except BaseException:
            self.close()
            raise
        self.decode_workers = decode_workers

    def _setup(self, backend: str, rotate: bool, size, crop) -> None:
        """The rest of ``__init__``, after the probe."""
        if self.backend == "dali" and getattr(self.metadata, "decode_from_start", False):
            # DALI seeks by packet timestamps these files do not have: "auto"
            # reads them with PyAV (decoded in order, frame-exact), "dali" is refused.
            if backend == "auto":
                self.backend = "pyav"
            else:
                raise VideoError(self.metadata.path, "not all of its packets carry timestamps "
                                 "(MPEG-PS, raw H.264), so DALI cannot find its frames; read "
                                 "it with backend='pyav' or 'auto'")
        rotation = display_rotation(self.metadata.path, self.metadata.stream_index) \
            if rotate else 0
        self.turns = rotation // 90
        #: resize and crop, computed once (:func:`geometry_for`)
        self.geometry = geometry_for(self.metadata, size=size, crop=crop, rotation=rotation)
        # PyAV with an index given: the container, opened on the first read (under
        # PyAVFile's lock) and kept open
        if self.backend == "pyav" and self._file is None:
            self._file = PyAVFile()

    def close(self) -> None:
        """Close the file kept open for PyAV reads (a later read reopens it)."""
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> "VideoDecoder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def rate(self):
        """The exact average frame rate (:class:`fractions.Fraction`, frames
        per second; ``None`` when the container states none)."""
        return self.metadata.rate

    def __len__(self) -> int:
        return len(self.metadata)

    def __repr__(self) -> str:
        h, w = self.geometry.shape
        return (f"VideoDecoder({os.path.basename(self.metadata.path)!r}, frames={len(self)}, "
                f"out={w}x{h}, backend={self.backend!r}, device={str(self.device)!r})")

    def __getitem__(self, key) -> Any:
        """``decoder[i]``: frame ``i`` (``(H, W, 3)`` in the layout's order);
        ``decoder[a:b:s]``: those frames, ``(n, H, W, 3)``."""
        n = len(self)
        if isinstance(key, slice):
            return self.get_frames_at(np.arange(n)[key]).data
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
            raise TypeError(f"VideoDecoder indices must be integers or slices, got "
                            f"{type(key).__name__}")
        if not -n <= key < n:
            raise IndexError(f"frame {key} is out of range for {self.metadata.path} "
                             f"({n} frames)")
        return self.get_frames_at([int(key) % n]).data[0]

    def read(self, sampler: Any) -> Frames:
        """The frames a sampler picks (:class:`Frames`; clips keep their axis)."""
        return self._decode(_indices(sampler, self.metadata))

    def get_frames_at(self, indices: Any) -> Frames:
        """Frames by number (display order): a 1-D (or, for clips, 2-D) array
        of ints in ``[0, len(self))``, any order, repeats allowed."""
        idx = np.asarray(indices)
        if idx.size == 0:
            idx = idx.astype(np.int64)
        if idx.ndim not in (1, 2) or not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"indices must be a 1-D (or 2-D) array of integers, got "
                            f"{idx.dtype} of shape {idx.shape}")
        return self.read(idx)

    def get_frames_in_range(self, start: int, stop: int, step: int = 1) -> Frames:
        """Frames ``start, start + step, ...`` before ``stop`` (as ``range``)."""
        n = len(self)
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
        if step < 1 or not 0 <= start <= stop <= n:
            raise InputError(f"frame range [{start}, {stop}) step {step} does not fit "
                             f"0 <= start <= stop <= {n} with step >= 1")
        return self.read(np.arange(start, stop, step, dtype=np.int64))

    def get_frames_played_at(self, seconds: Any) -> Frames:
        """The frame on screen at each time, in the container's seconds (the
        timeline of :attr:`Frames.pts_seconds`): the last frame whose
        timestamp is ``<= t`` (1 microsecond of slack). ``seconds``: a number
        or a 1-D (2-D: clips) list. A time before the first frame or at/after
        the end of the video (NaN included) is a ``ValueError``."""
        from fastvqa.video.samplers import TIME_EPS

        t = np.atleast_1d(np.asarray(seconds, dtype=np.float64))
        index = self.metadata
        start, end = index.start, index.start + index.duration
        bad = ~((t >= start - TIME_EPS) & (t < end))
        if t.ndim > 2 or bad.any():
            what = f"shape {t.shape}" if t.ndim > 2 else f"time {float(t[bad].flat[0])!r} s"
            raise InputError(f"{index.path}: {what} is not a 1-D list of times in the video's "
                             f"[{start:.6f}, {end:.6f}) s")
        idx = np.searchsorted(index.timestamps, t + TIME_EPS, side="right") - 1
        return self.read(np.clip(idx, 0, len(index) - 1).astype(np.int64))

    def _check_memory(self, count: int) -> None:
        """Refuse ``count`` frames that would not fit in the memory available
        now (:func:`_check_bytes`); DALI on the GPU is not bounded by host memory."""
        if not (self.backend == "dali" and self.device.is_cuda):
            _check_bytes(self.metadata, count, self.geometry, self.dtype, None)

    def _decode(self, idx: np.ndarray) -> Frames:
        index, geometry = self.metadata, self.geometry
        flat = idx.reshape(-1)
        self._check_memory(len(flat))
        if self.backend == "dali":
            from fastvqa.video.dali_backend import decode_dali

            frames = decode_dali(index, flat, geometry=geometry, device=self.device)
        else:
            from fastvqa.video.pyav_backend import decode_pyav

            frames = decode_pyav(index, flat, geometry=geometry, turns=self.turns, file=self._file,
                                 decode_workers=self.decode_workers)
            if self.device.is_cuda:
                import torch

                frames = torch.from_numpy(frames).to(str(self.device))
        return _result(index, idx, frames, self.layout, self.dtype)


def _result(index: VideoIndex, idx: np.ndarray, frames: Any, layout: str, dtype: str) -> Frames:
    frames = frames.reshape(tuple(idx.shape) + tuple(frames.shape[1:]))
    return Frames(_finish(frames, layout, dtype), index.timestamps[idx],
                  index.duration_seconds[idx], idx)


def read_frames(
    path: Any,
    sampler: Any,
    *,
    size=None,
    crop=None,
    backend: str = "auto",
    device: Any = "cpu",
    layout: str = "NHWC",
    dtype: str = "uint8",
    index: Optional[VideoIndex] = None,
    rotate: bool = False,
    decode_workers: Optional[int] = None,
) -> Frames:
    """Decode the frames ``sampler`` picks from the video at ``path``:
    ``VideoDecoder(path, ...).read(sampler)`` (see :class:`VideoDecoder` for
    every option).

    ``sampler``: a sampler (:class:`~fastvqa.video.Fps`, ``Uniform``,
    ``Clips``, ``SecondWindows``, ``Hierarchical``, ``Outside``, any of them
    ``.within(start, end)``) or an array of frame indices (1-D, or 2-D for
    clips).

    Returns:
        :class:`Frames` ``(data, pts_seconds, duration_seconds, indices)``:
        ``indices`` are exactly the sampler's (repeats included, clips as
        ``(n_clips, frames_per_clip)``) and ``data[i]`` is frame ``indices[i]``.
        ``data`` is NumPy for ``device="cpu"`` (the default), a torch CUDA
        tensor for ``device="cuda"``, whatever the backend.

    Raises:
        VideoError: the file cannot be read (missing, empty, truncated,
            corrupt, audio-only, unsupported), naming the file and the reason.
        ImportError: PyAV (``fastvqa[video]``) or DALI (``fastvqa[dali]``) missing.
    """
    with VideoDecoder(path, size=size, crop=crop, backend=backend, device=device,
                      layout=layout, dtype=dtype, rotate=rotate, index=index,
                      decode_workers=decode_workers) as decoder:
        return decoder.read(sampler)


def read_batch(
    paths: Sequence[Any],
    sampler: Any,
    *,
    size=None,
    crop=None,
    backend: str = "auto",
    device: Any = "cpu",
    layout: str = "NHWC",
    dtype: str = "uint8",
    workers: Optional[int] = None,
    progress: Optional[bool] = None,
    on_error: str = "raise",
    rotate: bool = False,
) -> list:
    """:func:`read_frames` over many videos; one :class:`Frames` per path, in order.

    With PyAV the videos are decoded by a pool of ``workers`` threads
    (default: ``min(8, cores)``; PyAV releases the GIL while decoding); with
    more than one video and more than one worker the files fill the cores, so
    each is read by one decoder (``decode_workers=1``, frame threads still on). With
    the DALI backend every video is probed and sampled here, then all go
    through one DALI pipeline (:func:`fastvqa.video.dali_backend.read_batch_dali`).

    ``progress``: a tqdm bar (or a stderr counter without tqdm), drawn only
    when stderr is a terminal (never escape codes in a log); ``None`` shows it
    there when there are more than 10 videos, ``False`` never.
    ``on_error``: ``"raise"`` (the first :class:`VideoError` stops the batch)
    or ``"return"`` (the error object takes that video's place in the list).
    ``rotate``: as in :func:`read_frames` (PyAV only).
    """
    _checks.choice(on_error, "", "on_error", ("raise", "return"))
    _checks.choice(layout, "", "layout", LAYOUTS)
    _checks.choice(dtype, "", "dtype", DTYPES)
    paths = list(paths)
    device = _device(device)
    chosen = resolve_backend(backend, device)
    _check_rotate(rotate, chosen)
    if progress is None:
        progress = len(paths) > 10 and sys.stderr.isatty()
    bar = Progress(len(paths), bool(progress))
    kwargs = dict(size=size, crop=crop, backend=chosen, device=device, layout=layout, dtype=dtype)

    if chosen == "dali":
        try:
            # backend as asked: "auto" lets a file DALI cannot read go to PyAV
            return _read_batch_dali(paths, sampler, {**kwargs, "backend": backend}, bar.update,
                                    on_error)
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
        if workers > 1:
            kwargs["decode_workers"] = 1  # files in parallel already fill the cores
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, paths))
    finally:
        bar.close()


def _read_batch_dali(paths: list, sampler: Any, kwargs: dict, tick, on_error: str) -> list:
    """:func:`read_batch` with DALI: probe, sample and size every file here,
    then decode them all through one pipeline. With ``on_error="return"`` a
    file that cannot be read yields its ``VideoError`` (or DALI's
    ``ValueError``) in its place; when the batch fails, the files are decoded
    one by one so each error stays with its own file."""
    from fastvqa.video.dali_backend import read_batch_dali

    device = str(kwargs["device"])
    results: list = [None] * len(paths)
    pending = []  # (position, decoder, frame indices)
    for k, path in enumerate(paths):
        try:
            decoder = VideoDecoder(path, **kwargs)
            idx = _indices(sampler, decoder.metadata)
            if decoder.backend != "dali":  # a file DALI cannot read (see VideoDecoder)
                results[k] = decoder._decode(idx)
                tick()
                continue
            decoder._check_memory(idx.size)
            pending.append((k, decoder, idx))
        except VideoError as err:
            if on_error == "raise":
                raise
            results[k] = err
            tick()

    if not pending:
        return results
    try:
        decoded = read_batch_dali([d.metadata for _, d, _ in pending],
                                  [idx.reshape(-1) for _, _, idx in pending],
                                  geometries=[d.geometry for _, d, _ in pending], device=device)
    except (VideoError, ValueError):
        if on_error == "raise":
            raise
        for k, decoder, idx in pending:
            try:
                results[k] = decoder._decode(idx)
            except (VideoError, ValueError) as one_err:
                results[k] = one_err
            tick()
    else:
        for (k, decoder, idx), frames in zip(pending, decoded):
            results[k] = _result(decoder.metadata, idx, frames, decoder.layout, decoder.dtype)
            tick()
    return results
