# SPDX-License-Identifier: Apache-2.0
"""CPU decoding with PyAV: seek only when it pays, decode forward, convert only kept frames."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Optional

import numpy as np

from fastvqa import _checks
from fastvqa.video.errors import VideoError
from fastvqa.video.geometry import Geometry, output_geometry
from fastvqa.video.index import VideoIndex, check_frame_indices, import_av


def _keyframe_of(keys: np.ndarray, frame: int) -> int:
    """The keyframe at or before ``frame`` (display order; the first keyframe
    for frames before it)."""
    return int(keys[np.searchsorted(keys, frame, side="right") - 1]) if frame >= keys[0] \
        else int(keys[0])


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
        k = _keyframe_of(keys, w)
        if k > current + 1 and not (current == -1 and k == int(keys[0])):
            plan.append((pos, k))
        current = int(w)
    return plan


def _decoding_failed(path, err) -> VideoError:
    """The one-line error for FFmpeg failing in the middle of a read."""
    return VideoError(path, f"decoding failed, corrupt or truncated data "
                            f"({getattr(err, 'strerror', None) or err})")


def decode_pyav(
    index: VideoIndex,
    frame_indices: Any,
    *,
    geometry: Optional[Geometry] = None,
    turns: int = 0,
    threads: Optional[str] = None,
    file: Optional["PyAVFile"] = None,
    decode_workers: Optional[int] = None,
) -> np.ndarray:
    """Decode the given frames of a probed video on the CPU with PyAV.

    Args:
        index: from :func:`fastvqa.video.probe`.
        frame_indices: frame numbers (display order), any order, repeats
            allowed; the output follows this order.
        geometry: the resize and crop, as
            :func:`fastvqa.video.geometry.output_geometry` computes them for
            the frames as delivered (turned, with ``turns``); ``None`` keeps
            the coded size.
        threads: PyAV ``thread_type`` (``"AUTO"``, ``"FRAME"``, ``"SLICE"``,
            ``"NONE"``), or ``None`` for ``"AUTO"`` (frame + slice threads,
            FFmpeg's thread count: one more than the cores). x264 writes one
            slice per frame by default, so slice threads alone decode such
            H.264 on one core; frame threads use them all. Their cost, several
            frames in flight after every seek, is not paid here: each run is
            fed up to its last wanted packet and then drained (:func:`_stop_pts`),
            so no frame past it is decoded. Safe: every run ends by draining
            the decoder (or at a seek, which flushes it), so no frame is lost
            in the threads, frames are identified by timestamp, and the
            container and decoder are closed on every path.
        file: a :class:`PyAVFile` to decode from, kept open across calls
            (its first call opens it, with that call's ``threads``); ``None``
            opens the file for this call only.
        decode_workers: how many decoders (each its own open container, in
            its own thread; PyAV releases the GIL while demuxing and
            decoding) share the runs of the plan: the runs are cut into that
            many consecutive groups of about equal decoding work, each starting
            with its own seek, so no frame is decoded twice. ``None``: 2 on a
            machine with 2 or more cores, else 1. A group of fewer than 30
            frames to decode is not split off (opening a container costs more).
            Several decoders each open the file for this call (``file`` is
            then not read) and share the cores out: ``cores // decoders``
            FFmpeg threads each, at least one, so a call never runs more
            decoding threads than cores. Frame threads alone leave cores idle
            after every seek (the pipeline fills again); two decoders overlap
            those.
        turns: quarter turns counter-clockwise applied to each frame after
            the resize and before the crop (``display_rotation // 90`` to
            show frames as players do); ``geometry`` refers to the turned
            frames (``H``/``W`` swap for odd turns). ``0``: coded orientation.

    Returns:
        ``(n, H, W, 3)`` uint8 RGB NumPy array.

    How: the distinct wanted frames are visited in display order. Before a
    wanted frame the decoder seeks to the keyframe at or before it only when
    that keyframe lies beyond the frames already decoded (seeking is then
    cheaper than decoding on); otherwise it decodes on. Decoded frames are
    identified by their presentation timestamp, never by counting after a
    seek. A seek aims at the timestamp the demuxer searches (dts for MPEG-TS
    and MPEG-PS, pts elsewhere; :func:`_seek_targets`), feeds the decoder from
    the wanted keyframe's packet on, and checks every packet against the
    probe's; a seek that lands past it is retried (other timestamp, earlier
    keyframe, start), and packets whose timestamps differ from the probe's
    (MPEG-PS interpolation) switch to one pass from the start. An index built
    by decoding (:attr:`VideoIndex.decode_from_start`: packets without
    timestamps) is always read in one pass from the start, frame ``i`` being
    the ``i``-th frame out of the decoder, up to the last wanted one. Only kept
    frames are converted to RGB, in one swscale call together with the resize
    (bilinear; swscale widens the filter when downscaling, so shrinking is
    antialiased, close to PIL's bilinear and torchvision's ``antialias=True``),
    through one swscale context per call. Frames that are not kept are not
    even reconstructed where the codec allows it exactly: for H.264, HEVC and
    MPEG-1/2 (:data:`SKIP_NONREF`) the packets of unwanted frames are decoded
    with ``skip_frame = "NONREF"`` (a picture no other picture refers to is
    dropped, which changes no other picture), wanted ones with ``"DEFAULT"``.

    Raises:
        VideoError: the decoder fails (corrupt data) or a wanted frame never
            comes out of it (truncated or damaged stream).
        ValueError: an index out of range.
    """
    return _decode(index, frame_indices, geometry=geometry, turns=turns, threads=threads,
                   file=file, decode_workers=decode_workers)


class _Rows:
    """Where a decoder stores the ``pos``-th of its sorted wanted frames:
    row ``rows[pos]`` of the call's one output array. Each frame is written
    once, straight into the array the caller gets (in request order), so a
    read allocates its output once: a 32-frame 720p read is 88 MB, and every
    fresh large buffer costs page faults, at times hundreds of ms of them on
    VMs that hand freed memory back to the host."""

    __slots__ = ("out", "rows")

    def __init__(self, out: np.ndarray, rows: np.ndarray):
        self.out, self.rows = out, rows

    def __setitem__(self, pos: int, frame: np.ndarray) -> None:
        self.out[self.rows[pos]] = frame


def _decode(index: VideoIndex, frame_indices: Any, *, geometry: Optional[Geometry], turns: int,
            threads: Optional[str], file: Optional["PyAVFile"], decode_workers: Optional[int],
            thread_count: int = 0, into: Optional[_Rows] = None) -> np.ndarray:
    """:func:`decode_pyav`; ``thread_count``: FFmpeg's decoding threads
    (0: its default, one more than the cores); ``into``: store the frames
    there (one decoder of a call shared by several, :func:`_decode_groups`;
    ``frame_indices`` are then sorted and distinct) and return ``into.out``."""
    av = import_av()
    idx = check_frame_indices(index, frame_indices)
    turns = int(turns) % 4
    shown_h, shown_w = (index.width, index.height) if turns % 2 else (index.height, index.width)
    if geometry is None:
        geometry = output_geometry(shown_h, shown_w)
    out_h, out_w = geometry.resize or (shown_h, shown_w)
    top, left, crop_h, crop_w = geometry.crop or (0, 0, out_h, out_w)
    coded_h, coded_w = (out_w, out_h) if turns % 2 else (out_h, out_w)  # resize before turning
    wanted, inverse = np.unique(idx, return_inverse=True)
    if into is None:
        # each wanted frame goes to the first row that asks for it; repeats are copied after
        first = np.empty(len(wanted), dtype=np.int64)
        first[inverse[::-1]] = np.arange(len(idx) - 1, -1, -1)
        into = _Rows(np.empty((len(idx), crop_h, crop_w, 3), dtype=np.uint8), first)
        inverse_of_call = inverse
    else:
        inverse_of_call = None  # a share of another call's frames: that call fills repeats
    frames = into
    if len(wanted) == 0:
        return into.out
    wanted_pts = index.pts[wanted]
    # A stream indexed by decoding (untimed packets) is read from the start, no seek.
    seek_at = {} if index.decode_from_start else dict(_plan_seeks(index, wanted))
    if threads is None:
        threads = "AUTO"
    groups = _split_runs(index, wanted, seek_at, _workers(decode_workers))
    if len(groups) > 1:
        _decode_groups(index, [(wanted[a:b], _Rows(into.out, into.rows[a:b]))
                               for a, b in groups], geometry=geometry, turns=turns,
                       threads=threads)
        return _with_repeats(into, inverse_of_call)
    keep = frozenset(int(t) for t in wanted_pts)
    reformatter = av.video.reformatter.VideoReformatter()  # one swscale context for the call
    resize = (coded_h, coded_w) != (index.height, index.width)
    path = index.path

    def convert(frame) -> np.ndarray:
        if frame.width != index.width or frame.height != index.height:
            raise VideoError(path, f"frame size changes mid-stream ({index.width}x{index.height} "
                                   f"-> {frame.width}x{frame.height}); not supported")
        # What frame.reformat / frame.to_ndarray("rgb24") do, with the
        # swscale context kept across frames instead of made per frame.
        if resize:
            rgb = reformatter.reformat(frame, width=coded_w, height=coded_h, format="rgb24",
                                       interpolation="BILINEAR").to_ndarray()
        else:
            rgb = reformatter.reformat(frame, format="rgb24").to_ndarray()
        if turns:
            rgb = np.rot90(rgb, turns)
        return rgb[top:top + crop_h, left:left + crop_w]

    context = _Reader(av, index, threads, thread_count=thread_count) if file is None \
        else file.reader(av, index, threads)
    with context as reader:
        if index.decode_from_start:
            if not reader.fresh:  # a reused container: back to the start
                reader.reopen()
            reader.fresh = False
            try:
                pos, count = _collect_counted(_frames(reader), wanted, frames, convert)
            except av.error.FFmpegError as err:
                raise _decoding_failed(path, err) from None
            if pos < len(wanted):
                missing = int(wanted[pos])
                raise VideoError(path, f"frame {missing} never came out of the decoder (it "
                                       f"gave {count} frames, the probe "
                                       f"{len(index)}); the file changed or is damaged")
            return _with_repeats(into, inverse_of_call)
        if not reader.fresh:  # a reused container: it stands wherever the last read left it
            if reader.sequential:
                reader.reopen()  # seeks are not trusted here: from the start again
            elif 0 not in seek_at:
                seek_at[0] = _keyframe_of(index.keyframes, int(wanted[0]))
        reader.fresh = False
        pos = 0  # next wanted frame (position in `wanted`)
        starts = sorted(seek_at) + [len(wanted)]
        try:
            while pos < len(wanted):
                if reader.sequential:
                    # Timestamps after a seek did not match the probe's: decode
                    # the rest in one pass from the start, as probe read it.
                    pos, status = _collect(_frames(reader, keep=keep), pos, wanted_pts, frames,
                                           convert, {}, check_first=False)
                    break
                key = seek_at.get(pos)
                stop = _stop_pts(index, wanted, pos, next(s for s in starts if s > pos))
                # Seek to the planned keyframe (or decode on). A seek that lands
                # past it (a container index that disagrees with the packets) is
                # retried from an earlier keyframe, then from the start.
                tries = [(None, None)] if key is None else _seek_targets(index, key,
                                                                         reader.by_dts)
                for target, timestamp in tries:
                    check = None
                    if target is not None:
                        _seek(reader, timestamp)
                        check = (int(index.pts[target]), reader.by_decode)
                    pos, status = _collect(_frames(reader, stop, check, keep), pos, wanted_pts,
                                           frames, convert, seek_at,
                                           check_first=key is not None)
                    if status != "overshoot":
                        break
                if status == "unreliable":
                    reader.reopen()
                    continue
                if status in ("eof", "skipped", "overshoot"):
                    break
        except av.error.FFmpegError as err:
            raise _decoding_failed(path, err) from None
        if pos < len(wanted):
            missing = int(wanted[pos])
            raise VideoError(path, f"frame {missing} (t={index.timestamps[missing]:.3f} s) never "
                                   "came out of the decoder; the stream is truncated or damaged")
    return _with_repeats(into, inverse_of_call)


#: The least decoding work (frames, keyframe to last wanted frame) of a group
#: of runs given to a decoder of its own (:func:`_split_runs`).
MIN_GROUP_FRAMES = 30


def _with_repeats(into: _Rows, inverse: Optional[np.ndarray]) -> np.ndarray:
    """``into.out`` with every row of a frame asked for more than once filled
    (each distinct frame was stored in the first row asking for it;
    ``inverse``: the request's position of each row among the distinct
    frames, None for a decoder sharing another call, which fills them)."""
    if inverse is not None:
        source = into.rows[inverse]
        repeat = source != np.arange(len(source))
        if repeat.any():
            into.out[repeat] = into.out[source[repeat]]
    return into.out


def _workers(decode_workers: Optional[int]) -> int:
    """The decoders of one call: ``decode_workers``, or 2 on 2+ cores."""
    workers = _checks.optional_integer(decode_workers, "decode", "decode_workers", minimum=1)
    if workers is None:
        return 2 if (os.cpu_count() or 1) >= 2 else 1
    return workers


def _split_runs(index: VideoIndex, wanted: np.ndarray, seek_at: dict, workers: int) -> list:
    """``[(lo, hi), ...]``: consecutive slices of ``wanted``, each made of
    whole runs (it starts where the plan seeks, so it decodes nothing another
    decodes), of about equal decoding work; ``[(0, len(wanted))]`` when one
    decoder does it all. A run decodes from its keyframe to its last wanted
    frame; groups under :data:`MIN_GROUP_FRAMES` are merged into their neighbour.
    """
    n = len(wanted)
    if workers < 2 or not seek_at:
        return [(0, n)]
    starts = sorted(seek_at)
    runs = ([] if starts[0] == 0 else [(0, int(index.keyframes[0]))]) + \
        [(pos, seek_at[pos]) for pos in starts]
    ends = [pos for pos, _ in runs[1:]] + [n]
    cost = [int(wanted[end - 1]) + 1 - key for (_, key), end in zip(runs, ends)]
    total = sum(cost)
    share = max(total / workers, MIN_GROUP_FRAMES)
    cuts, done = [0], 0
    for (pos, _), c in zip(runs, cost):
        if pos > cuts[-1] and done >= share * len(cuts) and total - done >= MIN_GROUP_FRAMES \
                and len(cuts) < workers:
            cuts.append(pos)
        done += c
    return list(zip(cuts, cuts[1:] + [n]))


def _decode_groups(index: VideoIndex, groups: list, **kwargs) -> None:
    """Each group ``(sorted distinct frames, _Rows where they go)`` decoded
    by its own decoder, the
    first one in this thread, the others in threads. The cores are shared out:
    each decoder gets ``cores // decoders`` FFmpeg threads (at least one), and
    opens the file for this call (a kept-open container has its thread count
    fixed when it first decoded). Measured on 2 cores, 32 random frames of a
    720p GOP-30 H.264 file: two decoders of one thread each took 218-246 ms
    in 6 of 8 calls, two of three frame threads each (six threads on two
    cores) 272-453 ms."""
    per = max(1, (os.cpu_count() or 1) // len(groups))
    with ThreadPoolExecutor(max_workers=len(groups) - 1) as pool:
        rest = [pool.submit(_decode, index, g, file=None, decode_workers=1, thread_count=per,
                            into=rows, **kwargs) for g, rows in groups[1:]]
        g, rows = groups[0]
        _decode(index, g, file=None, decode_workers=1, thread_count=per, into=rows, **kwargs)
        for f in rest:
            f.result()


def _collect(decoder, pos, wanted_pts, out, convert, seek_at, check_first):
    """Decode on from the current position, storing wanted frames from ``pos``.

    Returns ``(pos, status)``: ``"seek"`` (the next wanted frame starts with a
    seek, or all are done), ``"eof"``, ``"overshoot"`` (the seek landed past
    its keyframe, or the first frame after it is already past the wanted
    one), ``"unreliable"`` (the packets after the seek do not carry the
    probe's timestamps), ``"skipped"`` (a later frame came out but the wanted
    one never did).
    """
    try:
        for frame in decoder:
            if frame is _OVERSHOOT:
                return pos, "overshoot"
            if frame is _UNRELIABLE:
                return pos, "unreliable"
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


def _collect_counted(decoder, wanted, out, convert) -> tuple:
    """Frame ``i`` is the ``i``-th frame out of a decode from the start (the
    numbering of an index built by decoding, :attr:`VideoIndex.decode_from_start`):
    stores the sorted distinct ``wanted`` frames, stops after the last one.
    Returns ``(how many were stored, how many frames came out)``."""
    pos, count = 0, 0
    try:
        for frame in decoder:
            if count == wanted[pos]:
                out[pos] = convert(frame)
                pos += 1
                if pos == len(wanted):
                    return pos, count + 1
            count += 1
        return pos, count
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


#: What :func:`_frames` yields when a seek landed past the keyframe it aimed at.
_OVERSHOOT = object()


#: Demuxers that seek by decoding timestamp (a binary search over the file's
#: packets), as FFmpeg names them: MPEG-TS and MPEG-PS.
DTS_SEEKING = frozenset({"mpegts", "mpeg"})


def _seek_targets(index: VideoIndex, key: int, by_dts: bool) -> list:
    """``(keyframe, timestamp)`` seeks to try, in order, for a run that needs
    keyframe ``key``.

    First ``key`` at the timestamp its demuxer seeks by (``by_dts``: MPEG-TS
    and MPEG-PS, :data:`DTS_SEEKING`; otherwise its pts, as MP4's sample table
    and Matroska's cues are searched), then ``key`` at the other one, then the
    keyframe two before it by dts, then the very start. Aiming at the dts
    (``dts <= pts``) lands at or before the keyframe in every container, but
    one keyframe early in MP4 (its search lands on the previous keyframe),
    which costs a GOP of decoding: hence pts first there. Each seek that
    lands past its keyframe is detected by :func:`_frames` and the next one
    tried; one that lands early only costs demuxing up to the keyframe.
    """
    keys = index.keyframes
    at = int(np.searchsorted(keys, key))
    pts = int(index.pts[key])
    dts = pts if index.dts is None else min(int(index.dts[key]), pts)
    first = int(keys[0])
    start = int(min(int((index.dts if index.dts is not None else index.pts).min()),
                    int(index.pts[first])))
    earlier = int(keys[max(0, at - 2)])
    earlier_ts = start if earlier == first else (
        int(index.pts[earlier]) if index.dts is None else
        min(int(index.dts[earlier]), int(index.pts[earlier])))
    tries = [(key, dts), (key, pts)] if by_dts else [(key, pts), (key, dts)]
    if key == first:
        tries = [(key, start)]
    tries += [(earlier, earlier_ts), (first, start)]
    out = []
    for item in tries:
        if item not in out:
            out.append(item)
    return out


def _pts_in_decode_order(index: VideoIndex) -> Optional[np.ndarray]:
    """The probe's packet pts in file (decode) order; ``None`` without a decode-order index."""
    if index.decode_order is None:
        return None
    out = np.empty_like(index.pts)
    out[index.decode_order] = index.pts
    return out


#: Codecs (FFmpeg decoder names) whose ``skip_frame = "NONREF"`` drops only
#: pictures no other picture refers to (H.264/HEVC ``nal_ref_idc == 0`` /
#: sub-layer non-reference pictures, MPEG-1/2 B-pictures): the pictures kept
#: decode exactly as without it. Others (VP9, MJPEG, ...) never skip.
SKIP_NONREF = frozenset({"h264", "hevc", "mpeg1video", "mpeg2video"})


class PyAVFile:
    """One video kept open for many :func:`decode_pyav` calls
    (:class:`fastvqa.video.VideoDecoder` holds one). Opened on first use, or
    handed an open ``container`` (the probe's, from
    :func:`fastvqa.video.index.probe_open`: one open instead of two; nothing
    decoded from it yet); calls are serialised by a lock; after a call that
    failed the container is closed and the next call reopens it. :meth:`close`
    closes it."""

    def __init__(self, container=None):
        self._reader = None
        self._container = container  # handed over, not yet wrapped in a _Reader
        self._lock = threading.Lock()

    @contextmanager
    def reader(self, av, index: VideoIndex, threads: str):
        with self._lock:
            if self._reader is None:
                container, self._container = self._container, None
                self._reader = _Reader(av, index, threads, container)
            try:
                yield self._reader
            except BaseException:
                self._reader.close()
                self._reader = None
                raise

    def close(self) -> None:
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            if self._container is not None:
                self._container.close()
                self._container = None


class _Reader:
    """The open container and its video stream, reopened from the start on demand.

    ``container``: an open one to adopt (closed with this reader), already
    demuxed (the probe's), so it is not ``fresh``; ``None`` opens the file."""

    def __init__(self, av, index: VideoIndex, threads: str, container=None, thread_count=0):
        self.av, self.index, self.threads = av, index, threads
        self.thread_count = thread_count  # FFmpeg's decoding threads; 0: its default
        self.sequential = False  # True once reopened: no more seeks
        self.fresh = container is None  # nothing demuxed yet
        self.container = None
        #: the probe's packet pts in decode order, once per opened file (:func:`_frames`)
        self.by_decode = _pts_in_decode_order(index)
        self._open(container)

    def _open(self, container=None):
        av, path = self.av, self.index.path
        if container is not None:
            self.container = container
        else:
            try:
                self.container = av.open(path, mode="r")
            except (av.error.FFmpegError, OSError) as err:
                raise VideoError(path, f"cannot open for decoding ({err})") from None
        self.stream = next((st for st in self.container.streams
                            if st.index == self.index.stream_index), None)
        if self.stream is None or self.stream.type != "video":
            self.close()
            raise VideoError(path, f"stream {self.index.stream_index} is not a video stream any "
                                   "more (file changed since it was probed?)")
        self.stream.thread_type = self.threads
        if self.thread_count:
            self.stream.codec_context.thread_count = self.thread_count
        self.skip_nonref = self.stream.codec_context.name in SKIP_NONREF
        self.skipping = False  # codec_context.skip_frame is "NONREF" (else "DEFAULT")
        self.by_dts = bool(set(self.container.format.name.split(",")) & DTS_SEEKING)

    def set_skipping(self, skipping: bool) -> None:
        """``skip_frame = "NONREF"`` (``True``) or ``"DEFAULT"``, set only on a change."""
        if skipping != self.skipping:
            self.stream.codec_context.skip_frame = "NONREF" if skipping else "DEFAULT"
            self.skipping = skipping

    def reopen(self):
        self.close()
        self.sequential = True
        self._open()

    def close(self):
        if self.container is not None:
            self.container.close()
            self.container = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


#: What :func:`_frames` yields when a seek landed past the keyframe it aimed
#: at, and when the packets after a seek do not carry the probe's timestamps.
_OVERSHOOT = object()
_UNRELIABLE = object()


def _frames(reader: _Reader, stop_pts: Optional[int] = None, check=None, keep=None):
    """Decoded frames from the current position; drains the decoder after the
    packet with ``stop_pts`` (the next step is a seek, which resets it) or at
    the end of the stream.

    ``check = (key_pts, by_decode)`` after a seek to the keyframe with pts
    ``key_pts``: packets before that keyframe's packet are demuxed but not
    fed to the decoder (a demuxer that seeks by byte position, as MPEG-TS/PS
    do, can land on any packet, and decoding from a non-keyframe gives
    concealed garbage on some codecs; a seek that lands a keyframe early, as
    MP4 does on some files, then costs no decoding). When a keyframe past
    ``key_pts`` comes first the seek overshot: :data:`_OVERSHOOT` is yielded
    instead of any frame. Every packet fed is
    then checked against the probe's packet sequence ``by_decode`` (pts in
    decode order): some demuxers (MPEG-PS) interpolate the timestamps of
    packets that carry none, and after a seek they come out different from a
    sequential read; at the first packet that differs :data:`_UNRELIABLE` is
    yielded, before it is decoded, so no frame is ever matched by a wrong
    timestamp.

    ``keep``: the pts of the frames that will be kept. Where the codec allows
    it exactly (:data:`SKIP_NONREF`), each other packet is decoded with
    ``skip_frame = "NONREF"`` and each kept one with ``"DEFAULT"``.
    """
    container, stream = reader.container, reader.stream
    skip = keep is not None and reader.skip_nonref
    key_pts, by_decode = check if check is not None else (None, None)
    waiting = check is not None
    at = None  # decode position of the next packet, while checking
    for packet in container.demux(stream):
        if packet.size == 0:
            continue
        if waiting:
            if not packet.is_keyframe:
                continue
            ts = packet.pts if packet.pts is not None else packet.dts
            if ts is not None and ts > key_pts:
                yield _OVERSHOOT
                return
            if ts is not None and ts < key_pts:
                continue  # landed early: skip to our keyframe without decoding
            waiting = False
            if by_decode is not None:
                hits = np.flatnonzero(by_decode == ts) if ts is not None else []
                if len(hits) != 1:
                    yield _UNRELIABLE
                    return
                at = int(hits[0])
        if at is not None:
            ts = packet.pts if packet.pts is not None else packet.dts
            if at >= len(by_decode) or ts != by_decode[at]:
                yield _UNRELIABLE
                return
            at += 1
        if skip:
            # FFmpeg reads skip_frame when a packet is sent (frame threads
            # copy it from the user's context then), so it applies per packet.
            reader.set_skipping(packet.pts is not None and packet.pts not in keep)
        yield from packet.decode()
        if stop_pts is not None and packet.pts == stop_pts:
            yield from stream.codec_context.decode(None)
            return
    if waiting:  # the seek found no keyframe at all before the end
        yield _OVERSHOOT
        return
    yield from stream.codec_context.decode(None)


def _seek(reader: _Reader, timestamp: int) -> None:
    """Seek (which also flushes the decoder) to the keyframe at or before
    ``timestamp`` (see :func:`_seek_targets`)."""
    reader.container.seek(timestamp, stream=reader.stream, backward=True, any_frame=False)
