# SPDX-License-Identifier: Apache-2.0
"""Frame-exact decoding through NVIDIA DALI: NVDEC on the GPU, DALI's CPU decoder in tests.

Which DALI operator, and why:
    ``fn.decoders.video`` (DALI >= 2.x; ``fn.experimental.decoders.video`` is a
    deprecated alias) decodes an in-memory file and takes ``frames=`` as a
    per-sample list of frame indices in any order. It builds a packet index
    (sorted by presentation time, keyframes marked), sorts the requested
    frames, and for each one seeks to the keyframe before it only when the
    jump is backwards, crosses a keyframe, or is more than 10 frames ahead;
    otherwise it decodes on. So arbitrary indices cost about "from the
    preceding keyframe to each requested frame", never the whole file. The
    file readers (``fn.experimental.readers.video``) only sample regular
    sequences (``sequence_length``/``stride``/``step``, ``uniform_sample``),
    so they cannot serve an arbitrary sampler and are not used.

Costs to know:
    - The whole encoded file is read into host memory (the operator decodes
      from a buffer): a one-hour 720p file is a few hundred MB of RAM while it
      is decoded. Frames themselves are decoded only as described above.
    - A repeated index would make DALI seek back and decode its GOP again, so
      the indices are de-duplicated and sorted here; the output is gathered
      back into the requested order (one copy).
    - Pipelines are built once per configuration and reused (building one
      costs tens of milliseconds); each is guarded by a lock, so concurrent
      callers serialise on it.

Frame numbering:
    Frame ``i`` is the ``i``-th frame in presentation order, the numbering of
    ``VideoIndex.timestamps``. DALI's index drops packets with a negative
    timestamp (some MP4 edit lists); such frames are counted here and the
    numbering shifted, and asking for one of them raises :class:`VideoError`
    (the PyAV backend decodes them).

Resize and crop:
    This backend only executes a :class:`fastvqa.video.geometry.Geometry`
    computed by the API layer (the same one the PyAV backend gets, so both
    give the same shapes): ``fn.resize`` to exactly ``geometry.resize``
    (bilinear, DALI's antialiasing filter when shrinking:
    ``interp_type=INTERP_LINEAR, antialias=True``), then ``fn.slice`` at
    ``geometry.crop``. On the GPU both run on the GPU, after NVDEC.

This module never imports :mod:`fastvqa.video.api` (which calls it).

Codecs:
    CPU (``device="cpu"``): VP8, VP9 and MJPEG only -- the FFmpeg bundled
    with DALI >= 2.3 has the H.264 and HEVC decoders compiled out. GPU
    (NVDEC): additionally H.264, HEVC, AV1 and MPEG-4, within what the GPU's
    NVDEC supports (4:2:0 chroma; no 4:2:2/4:4:4 H.264).
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from fastvqa import _checks
from fastvqa.video.errors import VideoError
from fastvqa.video.geometry import Geometry, output_geometry
from fastvqa.video.index import check_frame_indices

__all__ = ["CPU_CODECS", "GPU_CODECS", "dali_device", "decode_dali", "read_batch_dali"]

#: Codecs DALI's CPU decoder handles (VP8, VP9, MJPEG); everything else is NVDEC only.
CPU_CODECS = frozenset({"vp8", "vp9", "mjpeg"})
#: Codecs DALI decodes on the GPU (NVDEC), as listed by DALI 2.4.
GPU_CODECS = frozenset({"vp8", "vp9", "mjpeg", "av1", "mpeg4", "h264", "hevc"})

_INSTALL_HINT = "pip install 'fastvqa[dali]' (NVIDIA DALI for CUDA 13: nvidia-dali-cuda130)"


def decode_dali(
    index: Any,
    frame_indices: Any,
    *,
    geometry: Optional[Geometry] = None,
    device: Any = "cuda",
    device_id: Optional[int] = None,
) -> Any:
    """Decode exactly the frames ``frame_indices`` of one video with DALI.

    Args:
        index: a ``VideoIndex`` (from ``fastvqa.video.probe``) or any object with
            ``path``, ``codec``, ``width``, ``height`` and ``timestamps``.
        frame_indices: 1-D integers, indices into ``index.timestamps``
            (presentation order), in any order, repeats allowed; the output
            follows this order.
        geometry: the resize and crop
            (:func:`fastvqa.video.geometry.output_geometry` of the coded
            size); ``None`` keeps the coded frames.
        device: ``"cuda"``/``"cuda:k"`` (or a CUDA ``torch.device``: NVDEC,
            resize and crop on the GPU) or ``"cpu"`` (DALI's CPU decoder: VP8,
            VP9 and MJPEG only); the one device vocabulary
            (:func:`fastvqa.video.device.parse_device`), so ``"gpu"`` is a
            ``ValueError``.
        device_id: the CUDA device for a bare ``"cuda"`` (default 0).

    Returns:
        ``(n, H, W, 3)`` uint8 RGB frames: a torch CUDA tensor on
        ``cuda:device_id`` for ``device="cuda"`` (shared with DALI's output
        through DLPack when the indices are already sorted and unique, else one
        gather on the GPU), a NumPy array for ``device="cpu"``.

    Raises:
        ImportError: DALI (or, for the GPU, torch) is not installed.
        RuntimeError: ``device="cuda"`` and no GPU is visible (checked before any
            GPU pipeline is built, so the process is never aborted).
        VideoError: (a ``ValueError``) the codec is not decodable on this device,
            or DALI fails on the file; the message names the file and the reason.
        ValueError: a requested frame is out of range
            (:func:`fastvqa.video.index.check_frame_indices`).
    """
    return read_batch_dali(
        [index], [frame_indices], geometries=[geometry], device=device, device_id=device_id
    )[0]


def read_batch_dali(
    indexes: Sequence[Any],
    frame_indices_list: Sequence[Any],
    *,
    geometries: Optional[Sequence[Optional[Geometry]]] = None,
    device: Any = "cuda",
    device_id: Optional[int] = None,
    batch_size: int = 8,
    num_threads: Optional[int] = None,
) -> list:
    """Decode several videos through one DALI pipeline.

    Files go through the pipeline ``batch_size`` at a time; within a batch
    DALI opens and decodes the files in parallel (its own thread pool, one
    NVDEC session per file on the GPU), then resizes and crops the whole batch
    in one launch. The pipeline is built once and reused for every batch (and
    later calls with the same configuration).

    Args:
        indexes: ``VideoIndex`` objects (see :func:`decode_dali`).
        frame_indices_list: one 1-D integer array per index.
        geometries: one :class:`~fastvqa.video.geometry.Geometry` (or
            ``None``) per index; ``None``: no resize or crop for any.
        device, device_id: as in :func:`decode_dali`.
        batch_size: files per pipeline run (``>= 1``); larger batches overlap
            more decoding but hold more encoded files and frames in memory.
        num_threads: DALI CPU threads (default ``min(8, os.cpu_count())``).

    Returns:
        A list with one frame array per file, as :func:`decode_dali` returns.
        A file whose decoding fails raises :class:`VideoError` naming it (a
        failed batch is retried file by file to find which).
    """
    device, device_id = dali_device(device, device_id)  # DALI's own "gpu"/"cpu" from here on
    if len(indexes) != len(frame_indices_list):
        raise ValueError(
            f"read_batch_dali: got {len(indexes)} indexes but {len(frame_indices_list)} "
            "frame index arrays"
        )
    batch_size = _checks.integer(batch_size, "read_batch_dali", "batch_size", minimum=1)
    if num_threads is None:
        num_threads = max(1, min(8, os.cpu_count() or 1))
    num_threads = _checks.integer(num_threads, "read_batch_dali", "num_threads", minimum=1)
    if geometries is None:
        geometries = [None] * len(indexes)
    if len(geometries) != len(indexes):
        raise ValueError(f"read_batch_dali: got {len(indexes)} indexes but {len(geometries)} "
                         "geometries")

    _import_dali()
    if device == "gpu":
        _check_gpu(device_id)  # before reading any file or building a GPU pipeline
    requests = [
        _Request.make(ix, fi, geo, device)
        for ix, fi, geo in zip(indexes, frame_indices_list, geometries)
    ]

    results: list = [None] * len(requests)
    todo = []
    for i, req in enumerate(requests):
        if req.unique.size == 0:  # nothing to decode: an empty (0, H, W, 3) result
            results[i] = _empty(req, device, device_id)
        else:
            todo.append(i)
    config = _Config(device, device_id, any(r.resize_hw is not None for r in requests),
                     any(r.crop_anchor is not None for r in requests), batch_size, num_threads)
    for start in range(0, len(todo), batch_size):
        chunk = todo[start:start + batch_size]
        outs = _run_chunk(config, [requests[i] for i in chunk])
        for i, out in zip(chunk, outs):
            results[i] = out
    return results


# --------------------------------------------------------------------------------------
# Requests: validation, output geometry, the indices DALI is asked for.


@dataclass
class _Request:
    path: str
    data: np.ndarray  # the encoded file, uint8
    unique: np.ndarray  # sorted unique requested frames, DALI numbering, int32
    inverse: Optional[np.ndarray]  # requested order from `unique`; None when identical
    out_hw: tuple  # (H, W) after resize and crop
    coded_hw: tuple  # (H, W) of the decoded frames
    resize_hw: Optional[tuple]
    crop_anchor: Optional[tuple]  # (top, left) of the crop (its size is out_hw)

    @staticmethod
    def make(index: Any, frame_indices: Any, geometry: Optional[Geometry],
             device: str) -> "_Request":
        path = str(index.path)
        codec = _codec_name(index.codec)
        if device == "cpu" and codec not in CPU_CODECS:
            raise VideoError(
                path,
                f"codec {codec!r} cannot be decoded by DALI's CPU decoder, which handles only "
                "VP8, VP9 and MJPEG (H.264 and HEVC are compiled out of the FFmpeg it bundles); "
                "decode it on the GPU (device='cuda', NVDEC) or with the PyAV backend "
                "(backend='pyav')",
            )
        if device == "gpu" and codec not in GPU_CODECS:
            raise VideoError(
                path,
                f"codec {codec!r} is not supported by DALI's GPU decoder (NVDEC handles "
                f"{', '.join(sorted(GPU_CODECS))}); use the PyAV backend (backend='pyav')",
            )
        timestamps = np.asarray(index.timestamps, dtype=np.float64)
        fi = check_frame_indices(index, frame_indices, "decode_dali")
        # DALI's index skips packets with a negative timestamp: shift the numbering.
        skipped = int(np.count_nonzero(timestamps < 0))
        if skipped and fi.size and fi.min() < skipped:
            raise VideoError(
                path,
                f"frame {int(fi.min())} has a negative timestamp, and DALI skips the first "
                f"{skipped} such frames; decode it with the PyAV backend (backend='pyav')",
            )
        unique, inverse = np.unique(fi, return_inverse=True)
        identical = unique.shape == fi.shape and bool(np.all(unique == fi))
        height, width = int(index.height), int(index.width)
        if geometry is None:
            geometry = output_geometry(height, width)
        anchor = None if geometry.crop is None else tuple(geometry.crop[:2])
        if unique.size:
            try:
                data = np.fromfile(path, dtype=np.uint8)
            except OSError as err:
                raise VideoError(path, f"cannot read the file ({err})") from None
            if data.size == 0:
                raise VideoError(path, "the file is empty")
        else:
            data = np.empty(0, np.uint8)
        return _Request(
            path=path,
            data=data,
            unique=(unique - skipped).astype(np.int32),
            inverse=None if identical else inverse.reshape(-1).astype(np.int64),
            out_hw=tuple(geometry.shape),
            coded_hw=(height, width),
            resize_hw=None if geometry.resize is None else tuple(geometry.resize),
            crop_anchor=anchor,
        )


def _codec_name(codec: Any) -> str:
    name = str(codec).lower()
    aliases = {"libvpx": "vp8", "libvpx-vp9": "vp9", "libdav1d": "av1", "libaom-av1": "av1",
               "h265": "hevc", "avc": "h264", "vp09": "vp9", "vp08": "vp8", "av01": "av1"}
    return aliases.get(name, name)


def dali_device(device: Any, device_id: Optional[int] = None) -> tuple:
    """``device`` as DALI's ``("gpu" | "cpu", device id)``.

    ``device`` is read by :func:`fastvqa.video.device.parse_device` (the one
    parser): ``None`` and ``"cuda"`` decode on GPU ``device_id`` (default 0),
    ``"cuda:k"`` on GPU ``k``, ``"cpu"`` with DALI's CPU decoder; anything
    else (``"gpu"``, ...) is a ``ValueError`` naming the accepted values.
    """
    from fastvqa._device import parse_device

    parsed = parse_device(device)
    if device_id is not None and (isinstance(device_id, bool) or int(device_id) != device_id
                                  or device_id < 0):
        raise ValueError(f"device_id must be a CUDA ordinal >= 0, got {device_id!r}")
    if parsed is None or parsed.is_cuda:
        if parsed is not None and parsed.index is not None:
            if device_id is not None and int(device_id) != parsed.index:
                raise ValueError(f"device {str(parsed)!r} and device_id={device_id} disagree")
            return "gpu", parsed.index
        return "gpu", 0 if device_id is None else int(device_id)
    return "cpu", 0


# --------------------------------------------------------------------------------------
# DALI and the GPU, imported and checked lazily.


def _import_dali():
    try:
        import nvidia.dali
        from nvidia.dali import fn, pipeline_def, types  # noqa: F401
    except ImportError as err:
        raise ImportError(f"the DALI video backend needs NVIDIA DALI: {_INSTALL_HINT}") from err
    return nvidia.dali


def _check_gpu(device_id: int):
    """torch, after making sure ``cuda:device_id`` exists (a DALI GPU pipeline
    built without a GPU aborts on an assertion, so this runs first)."""
    try:
        import torch
    except ImportError as err:
        raise ImportError(
            "decode_dali(device='cuda') returns torch CUDA tensors: pip install torch"
        ) from err
    count = torch.cuda.device_count()
    if count == 0:
        raise RuntimeError(
            "decode_dali(device='cuda'): no CUDA GPU is visible (torch.cuda.device_count() == 0: "
            "no GPU or driver, CUDA_VISIBLE_DEVICES hides them, or torch is a CPU build); "
            "use the PyAV backend, or device='cpu' for VP8/VP9/MJPEG files"
        )
    if not 0 <= device_id < count:
        raise RuntimeError(
            f"decode_dali: device_id {device_id} is not a visible GPU (found {count})"
        )
    return torch


@dataclass(frozen=True)
class _Config:
    device: str
    device_id: int
    resize: bool
    crop: bool
    batch_size: int
    num_threads: int


_PIPELINES: dict = {}
_PIPELINES_LOCK = threading.Lock()


def _pipeline(config: _Config):
    """The cached ``(pipeline, lock)`` for ``config``, built on first use."""
    with _PIPELINES_LOCK:
        entry = _PIPELINES.get(config)
        if entry is None:
            entry = (_build(config), threading.Lock())
            _PIPELINES[config] = entry
        return entry


def _drop_pipeline(config: _Config) -> None:
    # A DALI pipeline that raised is no longer usable; the next call rebuilds it.
    with _PIPELINES_LOCK:
        _PIPELINES.pop(config, None)


def _build(config: _Config):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(
        batch_size=config.batch_size,
        num_threads=config.num_threads,
        device_id=config.device_id if config.device == "gpu" else None,
        exec_dynamic=True,  # outputs are reference-counted, never recycled under the caller
        prefetch_queue_depth=1,
    )
    def graph():
        encoded = fn.external_source(name="encoded", dtype=types.UINT8, ndim=1, no_copy=True)
        frames = fn.external_source(name="frames", dtype=types.INT32, ndim=1)
        video = fn.decoders.video(
            encoded,
            frames=frames,
            pad_mode="none",  # an index DALI does not have is an error, never a padded frame
            device="mixed" if config.device == "gpu" else "cpu",
        )
        if config.resize:
            size = fn.external_source(name="size", dtype=types.FLOAT, ndim=1)
            video = fn.resize(video, size=size, interp_type=types.INTERP_LINEAR, antialias=True)
        if config.crop:
            anchor = fn.external_source(name="anchor", dtype=types.INT32, ndim=1)
            shape = fn.external_source(name="shape", dtype=types.INT32, ndim=1)
            video = fn.slice(video, anchor, shape, axis_names="HW",
                             normalized_anchor=False, normalized_shape=False)
        return video

    pipe = graph()
    pipe.build()
    return pipe


def _run_chunk(config: _Config, requests: list) -> list:
    try:
        return _run_once(config, requests)
    except (RuntimeError, ValueError) as err:
        if isinstance(err, ValueError) and not _is_dali_error(err):
            raise
        if len(requests) > 1:  # find the file that failed
            return [out for req in requests for out in _run_chunk(config, [req])]
        reason = f"DALI failed to decode it: {_dali_reason(err)}"
        raise VideoError(requests[0].path, reason) from err


def _dali_reason(err: Exception) -> str:
    """The informative line of a DALI error (drops the banner and source locations)."""
    text = str(err)
    text = text.split("encountered:", 1)[-1]  # after the operator's traceback, if any
    for line in text.splitlines():
        line = re.sub(r"^\s*\[[^\]]*\.(?:cc|h|cu|cpp):\d+\]\s*", "", line).strip()
        if line and not line.startswith(("Critical error", "C++ context", "Current pipeline")):
            return line
    return type(err).__name__


def _is_dali_error(err: Exception) -> bool:
    return "dali" in type(err).__module__.lower() or "C++ context" in str(err)


def _run_once(config: _Config, requests: list) -> list:
    pipe, lock = _pipeline(config)
    with lock:
        try:
            pipe.feed_input("encoded", [r.data for r in requests])
            pipe.feed_input("frames", [r.unique for r in requests])
            if config.resize:
                pipe.feed_input("size", [np.asarray(r.resize_hw or r.coded_hw, np.float32)
                                         for r in requests])
            if config.crop:
                pipe.feed_input("anchor", [np.asarray(r.crop_anchor or (0, 0), np.int32)
                                           for r in requests])
                pipe.feed_input("shape", [np.asarray(r.out_hw, np.int32)
                                          for r in requests])
            (out,) = pipe.run()
        except BaseException:
            _drop_pipeline(config)
            raise
    if config.device == "cpu":
        results = []
        for i, req in enumerate(requests):
            frames = np.asarray(out[i])  # a view of DALI's buffer; the result owns a copy
            results.append(frames.copy() if req.inverse is None
                           else np.take(frames, req.inverse, axis=0))
        return results
    import torch

    results = []
    for i, req in enumerate(requests):
        # Zero-copy: torch consumes DALI's buffer through DLPack; DALI orders its
        # stream before torch's current stream (the __dlpack__ stream handshake).
        frames = torch.from_dlpack(out[i])
        if req.inverse is not None:
            index = torch.as_tensor(req.inverse, device=frames.device)
            frames = frames.index_select(0, index)
        results.append(frames)
    return results


def _empty(req: _Request, device: str, device_id: int):
    h, w = req.out_hw
    if device == "cpu":
        return np.empty((0, h, w, 3), np.uint8)
    import torch

    return torch.empty((0, h, w, 3), dtype=torch.uint8, device=f"cuda:{device_id}")


