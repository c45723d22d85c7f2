# SPDX-License-Identifier: Apache-2.0
"""Probing a video: the timestamp and keyframe index every sampler and backend works from."""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, Optional

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.video.errors import VideoError

_LOG = logging.getLogger("fastvqa.video")

_PYAV_MISSING = "PyAV is not installed; pip install 'fastvqa[video]' (or pip install av)"


def import_av():
    """``import av`` with an error that says which ``pip install`` fixes it."""
    try:
        import av
    except ImportError as err:
        raise ImportError(_PYAV_MISSING) from err
    return av


def seconds(ticks: np.ndarray, time_base: Fraction) -> np.ndarray:
    """``ticks * time_base`` in float64 seconds, the nearest double to the
    exact rational (``ticks * numerator`` is exact below 2**53, then one
    division rounds): ``k * 1001 / 30000`` rather than ``k * 3.3366...e-05``,
    which is off by an ulp for some ``k``."""
    tb = Fraction(time_base)
    ticks = np.asarray(ticks, dtype=np.int64)
    if ticks.size and int(np.abs(ticks).max()) * tb.numerator >= 2**53:
        return ticks.astype(np.float64) * float(tb)  # beyond exact range: one more rounding
    return (ticks * tb.numerator).astype(np.float64) / tb.denominator


def check_frame_indices(index: Any, frame_indices: Any, op: str = "") -> np.ndarray:
    """``frame_indices`` as int64 1-D, each in ``[0, n)`` for the ``n`` frames
    of ``index`` (a :class:`VideoIndex`, or anything with ``path`` and
    ``timestamps``); the one frame-range check of the API and both backends.

    Raises:
        ValueError: not 1-D, or an index out of range (naming it, the file
            and the frame count); ``op`` (the function called) starts the
            shape message when given.
        TypeError: not integers.
    """
    where = f"{op}: " if op else ""
    idx = np.asarray(frame_indices)
    if idx.ndim != 1:
        raise ValueError(f"{where}frame_indices must be 1-D, got shape {idx.shape}")
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"{where}frame_indices must be integers, got {idx.dtype}")
    idx = idx.astype(np.int64, copy=False)
    n = len(index.timestamps)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx[(idx < 0) | (idx >= n)][0])
        raise InputError(f"frame index {bad} is out of range for {index.path} ({n} frames)")
    return idx


@dataclass(frozen=True, eq=False)
class VideoIndex:
    """What :func:`probe` learns from a video's packets, without decoding any.

    Frames are numbered ``0 .. n - 1`` in **display order** (sorted by
    presentation timestamp), which is the order every sampler and backend
    uses; after B-frame reordering this differs from the order packets are
    stored in.

    Attributes:
        path: the file, as given.
        codec: FFmpeg's decoder name of the video stream (``"h264"``, ``"vp9"``,
            ``"mjpeg"``, ...).
        width, height: coded frame size in pixels (sample aspect ratio is not
            applied).
        duration: seconds from the first frame's timestamp to the end of the
            last frame (its timestamp plus its duration; the median frame
            interval where the container gives none).
        fps: average frame rate in frames per second, ``float(rate)``
            (exactly ``10.0`` for a 10 fps file, ``29.97002997002997`` for
            NTSC's 30000/1001); where the container states no rate, the
            measured ``(n - 1) / (last - first timestamp)`` (``0.0`` for a
            one-frame file). Only informative: samplers use ``timestamps``,
            never this rate.
        timestamps: ``float64 (n,)`` presentation time of every frame in
            seconds, in display order, as the container states it (the first
            need not be 0).
        keyframes: ``int64`` frame indices of the keyframes, ascending.
        time_base: the stream's time base; ``pts * time_base`` is seconds.
        pts: ``int64 (n,)`` the integer presentation timestamps in
            ``time_base`` units; backends identify decoded frames by these.
        stream_index: which stream of the container holds the video.
        decode_order: ``int64 (n,)`` position of each frame's packet in the
            file (decode order), for backends that stop feeding the decoder
            as soon as the frames they need are in.
        dts: ``int64 (n,)`` decoding timestamp of each frame's packet
            (``time_base`` units, display order like ``pts``; the pts where
            the container gives none). Seeks aim at a keyframe's dts: MPEG-TS
            and MPEG-PS seek by dts, and ``dts <= pts`` keeps a seek at or
            before the keyframe in every container.
        rate: the stream's average frame rate in frames per second as the
            exact rational the container gives (:class:`fractions.Fraction`:
            ``Fraction(10)``, ``Fraction(30000, 1001)``): FFmpeg's average
            rate (``avg_frame_rate``; for a variable frame rate file, its
            frames over its duration), else its guessed rate; ``None`` when
            the container states neither.
        durations: ``int64 (n,)`` each frame's duration in ``time_base``
            units, display order: the time to the next frame's pts (as
            players show it); for the last frame, its packet's duration as
            the container states it, else the median frame interval (one
            interval at the exact ``rate`` for a one-frame file).
            :attr:`duration_seconds` gives them in seconds.
        decode_from_start: ``True`` for a stream whose packets do not all
            carry a timestamp (H.264 in MPEG-PS, where only the first frame
            of each PES packet is timed; raw ``.h264``): no packet can be
            placed in display order without decoding, so :func:`probe`
            decodes the stream once and frame ``i`` is the ``i``-th frame
            out of a decode from the start. Its ``pts`` are the decoder's
            where it gives one, the others interpolated between them (or
            stepped at the stream's frame rate); ``dts`` and
            ``decode_order`` are ``None``. Backends then decode in order from
            the start (no seek: no timestamp after one could be checked),
            which is exact but costs a decode up to the last wanted frame.

    Orientation: ``width``/``height`` and every decoded frame are in the
    *coded* orientation; a display matrix (rotation metadata, as phones
    write) is not applied unless ``read_frames(..., rotate=True)`` is asked.
    :func:`display_rotation` reads it.
    """

    path: str
    codec: str
    width: int
    height: int
    duration: float
    fps: float
    timestamps: np.ndarray
    keyframes: np.ndarray
    time_base: Fraction
    pts: np.ndarray
    stream_index: int = 0
    decode_order: Optional[np.ndarray] = None
    dts: Optional[np.ndarray] = None
    rate: Optional[Fraction] = None
    durations: Optional[np.ndarray] = None
    decode_from_start: bool = False

    def __len__(self) -> int:
        return len(self.timestamps)

    @classmethod
    def constant_rate(cls, frames: int, fps: float, *, path: str = "synthetic.mp4",
                      width: int = 64, height: int = 48) -> "VideoIndex":
        """The index of a constant-rate video that exists only on paper:
        ``frames`` frames at ``fps``, frame ``i`` at ``i / fps`` seconds (on a
        1/1000 s time base), every frame a keyframe. For working out which
        frames a sampler picks without a file; no backend can decode it.

        >>> idx = VideoIndex.constant_rate(25, 10.0)
        >>> len(idx), idx.duration, idx.timestamps[:3].tolist()
        (25, 2.5, [0.0, 0.1, 0.2])
        """
        n = _checks.integer(frames, "VideoIndex.constant_rate", "frames", minimum=1)
        rate = _checks.real(fps, "VideoIndex.constant_rate", "fps", finite=True, positive=True)
        pts = np.round(np.arange(n) * (1000.0 / rate)).astype(np.int64)
        return cls(path=path, codec="h264", width=width, height=height, duration=n / rate,
                   fps=float(rate), timestamps=pts / 1000.0, keyframes=np.arange(n),
                   time_base=Fraction(1, 1000), pts=pts)

    @cached_property  # computed once per index (a frozen dataclass with a __dict__)
    def duration_seconds(self) -> np.ndarray:
        """``float64 (n,)`` each frame's duration in seconds (:attr:`durations`
        times ``time_base``, exactly rounded: :func:`seconds`; without them,
        the time to the next frame and, for the last one, to the end of the
        video)."""
        if self.durations is not None:
            return seconds(self.durations, self.time_base)
        ends = np.append(self.timestamps[1:], self.start + self.duration)
        return ends - self.timestamps

    @property
    def start(self) -> float:
        """Timestamp of the first frame (seconds)."""
        return float(self.timestamps[0])

    def __repr__(self) -> str:
        return (f"VideoIndex({os.path.basename(self.path)!r}, codec={self.codec!r}, "
                f"{self.width}x{self.height}, frames={len(self)}, duration={self.duration:.3f}s, "
                f"fps={self.fps:.3f}, keyframes={len(self.keyframes)}"
                f"{', decoded from the start' if self.decode_from_start else ''})")


def probe(path: Any, *, strict: bool = True) -> VideoIndex:
    """Index a video's frames by demuxing its packets (no decoding).

    Reads every packet header of the first video stream once: the cost is a
    pass over the file, not a decode. Sampling then works from the exact
    timestamps, so variable frame rate files need no assumed rate.

    Raises:
        VideoError: naming the file and the reason, for a missing path, a
            folder, an empty file, something FFmpeg cannot open (truncated
            container, garbage, text renamed ``.mp4``), a file without a video
            stream (audio-only), a stream without a decoder in this FFmpeg, a
            stream with no frames or no timestamps, or a packet read error
            (corrupt or truncated data).
        ImportError: PyAV is not installed (``pip install 'fastvqa[video]'``).

    Damage FFmpeg works around: some demuxers skip over garbage or a cut
    end and only log it (Matroska/WebM resync to the next cluster, losing
    frames). With ``strict=True`` (default) an error FFmpeg logs while the
    packets are read makes the file a ``VideoError`` ("corrupt or truncated
    data: <FFmpeg's message>"); ``strict=False`` indexes what can be read.
    FFmpeg's log is switched on (at ERROR level, captured per thread) only
    while a probe runs and restored after; PyAV leaves it off otherwise.

    The container is closed on every path, errors included.
    """
    return _probe_path(path, strict, None)


def probe_open(path: Any, *, strict: bool = True) -> tuple:
    """:func:`probe`, leaving the container it read open for decoding:
    ``(index, container)``, the container standing at the end of the stream
    (a decode from it seeks first). Opening a container costs about as much
    as demuxing a whole short video (FFmpeg decodes its first frames to learn
    the stream's parameters), so a caller that decodes right after probing
    saves one open. The caller closes the container; on an error it is closed
    here."""
    kept: list = []
    try:
        return _probe_path(path, strict, kept), kept[0]
    except BaseException:
        for container in kept:
            container.close()
        raise


def _probe_path(path: Any, strict: bool, keep: Optional[list]) -> VideoIndex:
    av = import_av()
    spath = os.fspath(path)
    if not os.path.exists(spath):
        raise VideoError(spath, "no such file")
    if os.path.isdir(spath):
        raise VideoError(spath, "is a directory, not a video file")
    if os.path.getsize(spath) == 0:
        raise VideoError(spath, "empty file (0 bytes)")
    with _ffmpeg_errors(av) as logs:
        return _probe(av, spath, strict, logs, keep)


def _probe(av, spath: str, strict: bool, logs: list, keep: Optional[list] = None) -> VideoIndex:
    """The index of ``spath``; its container is closed on return, or (``keep``
    a list) appended to ``keep`` right after opening and left open."""
    try:
        container = av.open(spath, mode="r")
    except av.error.FFmpegError as err:
        raise VideoError(spath, f"not a readable video container ({_ffmpeg_reason(err)}); "
                                "truncated, corrupt or unsupported") from None
    del logs[:]  # messages from opening are in the exception above
    if keep is not None:
        keep.append(container)
    with container if keep is None else nullcontext(container):
        if not container.streams.video:
            audio = len(container.streams.audio)
            detail = f"audio only: {audio} audio stream{'s' if audio != 1 else ''}" if audio else \
                f"{len(container.streams)} other stream(s)"
            raise VideoError(spath, f"no video stream ({detail})")
        stream = container.streams.video[0]
        codec_context = stream.codec_context
        if codec_context is None:
            raise VideoError(spath, "unsupported video codec (no decoder in this FFmpeg build)")
        codec = codec_context.name
        pts_list, dts_list, key_list, dur_list = [], [], [], []
        untimed = leading = 0
        try:
            for packet in container.demux(stream):
                if packet.size == 0:  # the flush packet at the end
                    continue
                if not key_list and not packet.is_keyframe:
                    # Before the first keyframe (a recording cut mid-GOP): its
                    # references are gone, decoders output nothing for it.
                    leading += 1
                    continue
                pts = packet.pts if packet.pts is not None else packet.dts
                if pts is None:
                    untimed += 1
                    continue
                pts_list.append(pts)
                dts_list.append(packet.dts if packet.dts is not None else pts)
                key_list.append(bool(packet.is_keyframe))  # the first is True
                dur_list.append(packet.duration or 0)
        except av.error.FFmpegError as err:
            raise VideoError(spath, f"corrupt or truncated data while reading packets "
                                    f"({_ffmpeg_reason(err)})") from None
        _check_logs(av, spath, logs, strict)
        format_name = container.format.name
        time_base = stream.time_base
        # Exact rationals (PyAV's Fractions; None, or 0/x, where unknown).
        rate = stream.average_rate or stream.guessed_rate
        rate = Fraction(rate) if rate is not None and rate > 0 else None
        width, height = codec_context.width, codec_context.height
        stream_index = int(stream.index)
        header_duration = None
        if stream.duration is not None and time_base is not None:
            header_duration = float(stream.duration * time_base)
        elif container.duration is not None and len(container.streams) == 1:
            header_duration = container.duration / 1e6
    if time_base is None:
        raise VideoError(spath, "the video stream has no time base")
    if width <= 0 or height <= 0:
        raise VideoError(spath, f"the video stream has no frame size ({width}x{height})")
    if untimed:
        # Frames cannot be put in display order from the packets (B-frames
        # reorder them and most carry no timestamp): decode once, as PyAV
        # does, and number the frames as they come out.
        _LOG.info("%s: %d of %d video packets carry no timestamp (the %s container times only "
                  "some of them); indexed by decoding, read in order from the start",
                  spath, untimed, untimed + len(pts_list), format_name)
        pts, keyflags, durations = _decoded_frames(av, spath, stream_index, time_base, rate)
        _check_logs(av, spath, logs, strict)
        order = dts = None
    else:
        if not pts_list:
            raise VideoError(spath, "no keyframe in the video stream (cannot start decoding)"
                             if leading else "the video stream has no frames")
        if leading:
            _LOG.info("%s: %d video packets before the first keyframe (cut mid-GOP?) cannot be "
                      "decoded and are not indexed", spath, leading)
        pts = np.asarray(pts_list, dtype=np.int64)
        order = np.argsort(pts, kind="stable")
        pts = pts[order]
        if len(pts) > 1 and np.any(np.diff(pts) == 0):
            raise VideoError(spath, "two video frames share one timestamp (corrupt timestamps)")
        keyflags = np.asarray(key_list, dtype=bool)[order]
        dts = np.asarray(dts_list, dtype=np.int64)[order]
        durations = np.asarray(dur_list, dtype=np.int64)[order]
    tb = float(time_base)
    timestamps = seconds(pts, time_base)
    n = len(pts)
    if durations[-1] > 0:
        last = int(durations[-1])
    elif n > 1:
        last = int(np.median(np.diff(pts)))
    else:  # one frame: a frame interval at the exact rate, in time_base units
        last = round(1 / (rate * Fraction(time_base))) if rate else 0
    # Each frame's duration: until the next frame in display order (packet
    # durations are decode-order dts steps, which B-frames reorder); the last
    # frame's is its packet's.
    frame_durations = np.append(np.diff(pts), last).astype(np.int64)
    duration = float(int(pts[-1] + last - pts[0]) * Fraction(time_base))  # exact, one rounding
    if header_duration is not None and duration > 0:
        # Packets end well before the header says: the file was cut short.
        slack = max(1.0, 3 * last * tb)
        if header_duration - duration > slack:
            raise VideoError(spath, f"truncated: frames end at {duration:.3f} s but the "
                                    f"container declares {header_duration:.3f} s")
    if rate is not None:
        fps = float(rate)
    elif n > 1 and timestamps[-1] > timestamps[0]:
        fps = (n - 1) / (timestamps[-1] - timestamps[0])
    else:
        fps = 0.0
    keyframes = np.flatnonzero(keyflags).astype(np.int64)
    if len(keyframes) == 0:
        raise VideoError(spath, "no keyframe in the video stream (cannot start decoding)")
    return VideoIndex(
        path=spath, codec=codec, width=int(width), height=int(height), duration=duration,
        fps=float(fps), timestamps=timestamps, keyframes=keyframes,
        time_base=Fraction(time_base), pts=pts, stream_index=stream_index,
        decode_order=None if order is None else order.astype(np.int64), dts=dts, rate=rate,
        durations=frame_durations, decode_from_start=order is None,
    )


def _check_logs(av, spath: str, logs: list, strict: bool) -> None:
    """With ``strict``, an error FFmpeg logged so far makes the file a ``VideoError``."""
    errors = [msg.strip() for level, _, msg in logs if level <= av.logging.ERROR]
    if strict and errors:
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise VideoError(spath, f"corrupt or truncated data: FFmpeg reports "
                                f"'{errors[0]}'{more}")


def _decoded_frames(av, spath: str, stream_index: int, time_base, rate) -> tuple:
    """``(pts, keyframe flags, durations)`` of every frame one decode from the
    start outputs (display order), for a stream whose packets are not all
    timed: the pts the decoder gives, the others filled in by
    :func:`fill_pts`. Memory: three numbers a frame (no pixels are kept)."""
    known, keys, durs = [], [], []
    try:
        with av.open(spath, mode="r") as container:
            stream = next(st for st in container.streams if st.index == stream_index)
            for frame in container.decode(stream):
                known.append(frame.pts)
                keys.append(bool(frame.key_frame))
                durs.append(int(frame.duration or 0))
    except av.error.FFmpegError as err:
        raise VideoError(spath, f"decoding failed while indexing, corrupt or truncated data "
                                f"({_ffmpeg_reason(err)})") from None
    if not known:
        raise VideoError(spath, "the video stream has no decodable frames")
    step = 0
    if rate:  # one frame interval at the stated rate, in time_base units
        step = round(1 / (rate * Fraction(time_base)))
    if step <= 0 and any(durs):
        step = int(np.median([d for d in durs if d > 0]))
    keys[0] = True  # a decode from the start starts here, whatever the flag says
    try:
        pts = fill_pts(known, max(step, 1))
    except ValueError as err:
        raise VideoError(spath, f"corrupt timestamps: {err}") from None
    return pts, np.asarray(keys, dtype=bool), np.zeros(len(known), dtype=np.int64)


def fill_pts(known: list, step: int) -> np.ndarray:
    """``int64`` strictly increasing pts for frames in display order, of which
    ``known`` gives some (``None`` for the others).

    The known pts that keep the sequence increasing with room for the frames
    between (at least one tick each) are kept exactly; frames between two of
    them are spaced evenly (rounded to ticks), frames before the first and
    after the last are ``step`` ticks apart; with none known, frame ``i`` is
    at ``i * step``. Linear in ``len(known)``.

    Raises:
        ValueError: a result beyond ``±2**62`` ticks (absurd timestamps).
    """
    anchors = []  # (frame, pts), increasing in both with room between
    for i, p in enumerate(known):
        if p is None:
            continue
        if not anchors or p - anchors[-1][1] >= i - anchors[-1][0]:
            anchors.append((i, int(p)))
    if not anchors:
        anchors = [(0, 0)]
    out = [0] * len(known)  # Python integers: no int64 wrap-around on absurd pts
    first, first_pts = anchors[0]
    for i in range(first + 1):
        out[i] = first_pts - step * (first - i)
    for (a, pa), (b, pb) in zip(anchors, anchors[1:]):
        for i in range(a + 1, b + 1):
            # pa + round((i - a) * (pb - pa) / (b - a)): slope >= 1, so increasing.
            out[i] = pa + (2 * (i - a) * (pb - pa) + (b - a)) // (2 * (b - a))
    last, last_pts = anchors[-1]
    for i in range(last, len(known)):
        out[i] = last_pts + step * (i - last)
    if out and (out[0] <= -2**62 or out[-1] >= 2**62):  # increasing: the ends bound it
        raise ValueError(f"frame timestamps out of range ({out[0]} .. {out[-1]} ticks)")
    return np.asarray(out, dtype=np.int64)


def display_rotation(path: Any, stream_index: Optional[int] = None) -> int:
    """The rotation a video's display matrix asks for: degrees counter-clockwise,
    one of 0, 90, 180, 270 (0 without rotation metadata).

    A phone video shot upright is typically stored sideways with a matrix
    that says 270 (FFmpeg's ``ffprobe`` prints "rotation of -90.00 degrees");
    players show ``np.rot90(frame, rotation // 90)``, which is what
    ``read_frames(..., rotate=True)`` returns. fastvqa decodes in coded
    orientation by default (as decord does). PyAV exposes the matrix on
    decoded frames only, so this decodes the first frame (milliseconds).
    Flips and non-right angles are rounded to the nearest quarter turn.

    Raises:
        VideoError: the file cannot be opened or has no decodable frame.
    """
    av = import_av()
    spath = os.fspath(path)
    try:
        with av.open(spath, mode="r") as container:
            streams = [s for s in container.streams.video
                       if stream_index is None or s.index == stream_index]
            if not streams:
                raise VideoError(spath, "no video stream")
            for frame in container.decode(streams[0]):
                return int(round((frame.rotation or 0) / 90.0)) % 4 * 90
    except av.error.FFmpegError as err:
        raise VideoError(spath, f"cannot read the rotation ({_ffmpeg_reason(err)})") from None
    raise VideoError(spath, "no frame could be decoded to read the rotation")


def _ffmpeg_reason(err: Exception) -> str:
    """FFmpeg's message without the file name PyAV appends."""
    strerror = getattr(err, "strerror", None)
    return strerror or str(err)


_LOG_LOCK = threading.Lock()
_LOG_USERS = 0
_LOG_SAVED: Any = None
_SKIP_SAVED = True


@contextmanager
def _ffmpeg_errors(av):
    """Capture FFmpeg's ERROR-level messages of this thread while the block runs.

    PyAV keeps FFmpeg's log off by default (its callback takes the GIL); it is
    switched to ERROR while at least one probe runs (reference counted, so
    concurrent probes in a thread pool share it) and restored afterwards. A
    level the user set that is already ERROR or more verbose is left alone.
    """
    global _LOG_USERS, _LOG_SAVED, _SKIP_SAVED
    with _LOG_LOCK:
        if _LOG_USERS == 0:
            # PyAV folds repeated messages and emits the fold later, possibly
            # inside the next capture; no folding while we capture.
            _SKIP_SAVED = av.logging.get_skip_repeated()
            av.logging.set_skip_repeated(False)
            _LOG_SAVED = av.logging.get_level()
            if _LOG_SAVED is None or _LOG_SAVED < av.logging.ERROR:
                av.logging.set_level(av.logging.ERROR)
        _LOG_USERS += 1
    try:
        with av.logging.Capture(local=True) as logs:
            yield logs
    finally:
        with _LOG_LOCK:
            _LOG_USERS -= 1
            if _LOG_USERS == 0:
                if av.logging.get_level() != _LOG_SAVED:
                    av.logging.set_level(_LOG_SAVED)
                av.logging.set_skip_repeated(_SKIP_SAVED)
