# SPDX-License-Identifier: Apache-2.0
"""CPU decoding with PyAV: seek only when it pays, decode forward, convert only kept frames."""

from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

from fastvqa.video.errors import VideoError
from fastvqa.video.index import VideoIndex, import_av


def output_size(height: int, width: int, size=None) -> tuple:
    """``(H, W)`` after the shorter-side (int) or exact (``(H, W)``) resize.

    An int resizes the shorter side to ``size`` and the longer one to
    ``int(size * long / short)`` (torchvision's ``Resize(int)`` rule,
    truncating).
    """
    if size is None:
        return height, width
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if width <= height:
            return int(size * height / width), int(size)
        return int(size), int(size * width / height)
    h, w = _pair("size", size)
    return h, w


def crop_box(height: int, width: int, crop=None) -> tuple:
    """``(top, left, H, W)`` of the centre crop (torchvision's ``CenterCrop``
    offsets: ``int(round((H - h) / 2))``). A crop larger than the (resized)
    frame is a ``ValueError``."""
    if crop is None:
        return 0, 0, height, width
    if isinstance(crop, numbers.Integral) and not isinstance(crop, bool):
        ch, cw = int(crop), int(crop)
    else:
        ch, cw = _pair("crop", crop)
    if ch < 1 or cw < 1 or ch > height or cw > width:
        raise ValueError(f"crop {ch}x{cw} does not fit in the {height}x{width} frame")
    return int(round((height - ch) / 2.0)), int(round((width - cw) / 2.0)), ch, cw


def _pair(name: str, value) -> tuple:
    try:
        h, w = value
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an int or (height, width), got {value!r}") from None
    for v in (h, w):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"{name} must be positive integers, got {value!r}")
    return int(h), int(w)


def check_frame_indices(index: VideoIndex, frame_indices: Any) -> np.ndarray:
    """``frame_indices`` as int64 1-D, each in ``[0, len(index))``."""
    idx = np.asarray(frame_indices)
    if idx.ndim != 1:
        raise ValueError(f"frame_indices must be 1-D, got shape {idx.shape}")
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"frame_indices must be integers, got {idx.dtype}")
    idx = idx.astype(np.int64, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= len(index)):
        bad = int(idx[(idx < 0) | (idx >= len(index))][0])
        raise ValueError(f"frame index {bad} is out of range for {index.path} "
                         f"({len(index)} frames)")
    return idx


def _plan_seeks(index: VideoIndex, wanted: np.ndarray) -> list:
    """Which wanted frames start with a seek, and to which keyframe.

    Decoding is forward from the last decoded frame. Before wanted frame
    ``w``, seek to the keyframe ``k`` at or before it (display order) only
    when ``k`` lies beyond the frame after the last one decoded: then the
    seek skips frames, which is cheaper than decoding on through them. The
    first wanted frame seeks unless its keyframe is the first one (decoding
    starts there anyway). Returns ``[(position in wanted, keyframe index), ...]``.
    """
    keys = index.keyframes
    plan = []
    current = -1  # last frame decoded so far (display index); -1: nothing yet
    for pos, w in enumerate(wanted):
        k = int(keys[np.searchsorted(keys, w, side="right") - 1]) if w >= keys[0] else int(keys[0])
        if k > current + 1 and not (current == -1 and k == int(keys[0])):
            plan.append((pos, k))
        current = int(w)
    return plan


def decode_pyav(
    index: VideoIndex,
    frame_indices: Any,
    *,
    size=None,
    crop=None,
    threads: Optional[str] = None,
) -> np.ndarray:
    """Decode the given frames of a probed video on the CPU with PyAV.

    Args:
        index: from :func:`fastvqa.video.probe`.
        frame_indices: frame numbers (display order), any order, repeats
            allowed; the output follows this order.
        size: shorter-side resize (int; torchvision's rule) or exact
            ``(H, W)``; ``None`` keeps the coded size.
        crop: centre crop (int or ``(H, W)``) applied after the resize.
        threads: PyAV ``thread_type`` (``"AUTO"``, ``"FRAME"``, ``"SLICE"``,
            ``"NONE"``), or ``None`` to choose from the plan: ``"AUTO"``
            (frame + slice threads) when the frames are decoded in long runs
            (on average at least 64 frames per seek), ``"SLICE"`` (PyAV's
            default) otherwise. Frame threading holds several frames in
            flight, which pays over long runs on many cores but costs that
            latency again after every seek (measured on 2 cores, 720p H.264:
            16 uniform frames 0.18 s with SLICE vs 0.29 s with AUTO). Both
            are safe here: every run ends by draining the decoder (or at a
            seek, which flushes it), so no frame is lost in the threads, frames
            are identified by timestamp, and the container and decoder are
            closed on every path.

    Returns:
        ``(n, H, W, 3)`` uint8 RGB NumPy array.

    How: the distinct wanted frames are visited in display order. Before a
    wanted frame the decoder seeks to the keyframe at or before it only when
    that keyframe lies beyond the frames already decoded (seeking is then
    cheaper than decoding on); otherwise it decodes on. Decoded frames are
    identified by their presentation timestamp, never by counting after a
    seek; a seek that lands past the wanted frame (a container index that
    disagrees with the packets) is retried from an earlier keyframe. Only kept
    frames are converted to RGB, in one swscale call together with the resize
    (bilinear; swscale widens the filter when downscaling, so shrinking is
    antialiased, close to PIL's bilinear and torchvision's ``antialias=True``).

    Raises:
        VideoError: the decoder fails (corrupt data) or a wanted frame never
            comes out of it (truncated or damaged stream).
        ValueError: an index out of range, a crop larger than the frame.
    """
    av = import_av()
    idx = check_frame_indices(index, frame_indices)
    out_h, out_w = output_size(index.height, index.width, size)
    top, left, crop_h, crop_w = crop_box(out_h, out_w, crop)
    wanted, inverse = np.unique(idx, return_inverse=True)
    frames = np.empty((len(wanted), crop_h, crop_w, 3), dtype=np.uint8)
    if len(wanted) == 0:
        return frames
    wanted_pts = index.pts[wanted]
    seek_at = dict(_plan_seeks(index, wanted))
    if threads is None:
        threads = _thread_type(index, wanted, seek_at)
    resize = (out_h, out_w) != (index.height, index.width)
    path = index.path

    def convert(frame) -> np.ndarray:
        if frame.width != index.width or frame.height != index.height:
            raise VideoError(path, f"frame size changes mid-stream ({index.width}x{index.height} "
                                   f"-> {frame.width}x{frame.height}); not supported")
        if resize:
            rgb = frame.reformat(width=out_w, height=out_h, format="rgb24",
                                 interpolation="BILINEAR").to_ndarray()
        else:
            rgb = frame.to_ndarray(format="rgb24")
        return rgb[top:top + crop_h, left:left + crop_w]

    try:
        container = av.open(path, mode="r")
    except (av.error.FFmpegError, OSError) as err:
        raise VideoError(path, f"cannot open for decoding ({err})") from None
    with container:
        stream = next((st for st in container.streams if st.index == index.stream_index), None)
        if stream is None or stream.type != "video":
            raise VideoError(path, f"stream {index.stream_index} is not a video stream any more "
                                   "(file changed since it was probed?)")
        stream.thread_type = threads
        pos = 0  # next wanted frame (position in `wanted`)
        starts = sorted(seek_at) + [len(wanted)]
        try:
            while pos < len(wanted):
                key = seek_at.get(pos)
                stop = _stop_pts(index, wanted, pos, next(s for s in starts if s > pos))
                # Attempt 0: seek to the planned keyframe (or decode on). A seek
                # that lands past the wanted frame (a container index that
                # disagrees with the packets) gets attempt 1: from the start.
                for attempt in (0, 1):
                    if key is not None:
                        _seek(container, stream, int(index.pts[key if attempt == 0 else 0]))
                    pos, status = _collect(_frames(container, stream, stop), pos, wanted_pts,
                                           frames, convert, seek_at, check_first=key is not None)
                    if status != "overshoot":
                        break
                if status in ("eof", "skipped", "overshoot"):
                    break
        except av.error.FFmpegError as err:
            raise VideoError(path, f"decoding failed, corrupt or truncated data "
                                   f"({getattr(err, 'strerror', None) or err})") from None
        if pos < len(wanted):
            missing = int(wanted[pos])
            raise VideoError(path, f"frame {missing} (t={index.timestamps[missing]:.3f} s) never "
                                   "came out of the decoder; the stream is truncated or damaged")
    return frames[inverse] if len(wanted) != len(idx) or not np.all(wanted == idx) else frames


def _thread_type(index: VideoIndex, wanted: np.ndarray, seek_at: dict) -> str:
    """``"AUTO"`` when the plan decodes >= 64 frames per run on average, else ``"SLICE"``.

    A run starts at a seek (or at the start of the file) and decodes from its
    keyframe to its last wanted frame.
    """
    runs = ([] if 0 in seek_at else [(0, 0)]) + sorted(seek_at.items())
    ends = [pos for pos, _ in runs[1:]] + [len(wanted)]
    decoded = sum(int(wanted[end - 1]) + 1 - key for (_, key), end in zip(runs, ends))
    return "AUTO" if decoded / len(runs) >= 64 else "SLICE"


def _collect(decoder, pos, wanted_pts, out, convert, seek_at, check_first):
    """Decode on from the current position, storing wanted frames from ``pos``.

    Returns ``(pos, status)``: ``"seek"`` (the next wanted frame starts with a
    seek, or all are done), ``"eof"``, ``"overshoot"`` (the first frame after
    a seek is already past the wanted one), ``"skipped"`` (a later frame came
    out but the wanted one never did).
    """
    try:
        for frame in decoder:
            pts = frame.pts
            if pts is None:
                continue
            if pts > wanted_pts[pos]:
                return pos, "overshoot" if check_first else "skipped"
            check_first = False
            if pts != wanted_pts[pos]:
                continue
            out[pos] = convert(frame)
            pos += 1
            if pos >= len(wanted_pts) or pos in seek_at:
                return pos, "seek"
        return pos, "eof"
    finally:
        decoder.close()


def _stop_pts(index: VideoIndex, wanted: np.ndarray, lo: int, hi: int) -> Optional[int]:
    """The packet after which the decoder can be drained for wanted[lo:hi].

    The run ``wanted[lo:hi]`` ends with a seek (or with the last wanted
    frame), so nothing decoded after it is used: once the packet of the
    wanted frame that comes last in *decode* order has been fed, draining the
    decoder outputs every wanted frame of the run without decoding the
    packets a B-frame reorder delay (or frame threading) would otherwise
    need. ``None`` without a decode-order index.
    """
    if index.decode_order is None:
        return None
    run = wanted[lo:hi]
    return int(index.pts[run[np.argmax(index.decode_order[run])]])


def _frames(container, stream, stop_pts: Optional[int] = None):
    """Decoded frames from the current position; drains the decoder after the
    packet with ``stop_pts`` (the next step is a seek, which resets it) or at
    the end of the stream."""
    for packet in container.demux(stream):
        yield from packet.decode()
        if stop_pts is not None and packet.pts == stop_pts:
            yield from stream.codec_context.decode(None)
            return


def _seek(container, stream, pts: int) -> None:
    """Seek (which also flushes the decoder) to the keyframe at or before ``pts``."""
    container.seek(pts, stream=stream, backward=True, any_frame=False)
