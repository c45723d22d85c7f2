# SPDX-License-Identifier: Apache-2.0
"""Frame samplers: small value objects that turn a video's timestamps into frame indices.

Every sampler has ``indices(index) -> int64 array`` of frame indices into
``index.timestamps`` (display order), in the order the frames should come
out; indices may repeat (edge replication) and backends decode each distinct
frame once.

Time axis and the frame at a time:
    Times are seconds **from the first frame** (``index.timestamps[0]`` is
    time 0; for the usual file that starts at 0 this is the container's
    time). The video spans ``[0, index.duration)``. A sampler that asks for
    time ``t`` gets **the frame on screen at t: the last frame whose
    timestamp is <= t** (with 1 microsecond of slack for float rounding, so
    ``t`` equal to a frame's timestamp selects that frame). Times before the
    first frame take frame 0. Sampling is by timestamp, never by an assumed
    frame rate, so variable frame rate files sample correctly.
    :class:`Clips` is the exception: it counts frames, as clip-based models do.

Restricting to a time range:
    ``sampler.within(start, end)`` applies any sampler to ``[start, end)``
    seconds as if that range were the whole video (its time 0 is ``start``;
    the frame on screen at ``start`` is its first frame).

Spec strings (``from_spec``, used by ``fastvqa decode --sampler``):
    ``NAME:ARGS`` of a sampler in the registry :data:`SAMPLERS`
    (:func:`register_sampler`; the command line's help and the docs list
    each one's syntax from it), optionally ending with ``@start-end`` to
    restrict it to a time range: ``fps:1``, ``uniform:16,linspace``,
    ``clips:16,4,1``, ``seconds:16``, ``hierarchical:15,35,65/5,7,13``,
    ``outside:12.5,20,8@0-60``.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError

#: Slack (seconds) when comparing a requested time with frame timestamps.
TIME_EPS = 1e-6

#: The most frame indices one sampler call returns (2**24: 155 hours at 30
#: fps). A request for more (``Fps(1e9)``) is a ``ValueError`` naming the
#: count, raised before anything of that size is allocated.
MAX_INDICES = 2**24


def _bounded(owner: str, count, detail: str) -> int:
    """``count`` (an int, or a float that may be huge or infinite) as an int,
    or a ``ValueError`` when it exceeds :data:`MAX_INDICES` (or is NaN)."""
    if not count <= MAX_INDICES:
        shown = f"{int(count):,}" if isinstance(count, int) or math.isfinite(count) \
            else "infinitely many"
        raise InputError(f"{owner}: {shown} frame indices ({detail}) exceed the limit of "
                         f"{MAX_INDICES:,} per video; ask for fewer frames")
    return int(count)


def _frame_count(value, owner: str, name: str, *, indices: bool = True) -> int:
    """An integer argument counted in frames, in ``[1, MAX_INDICES]``: larger
    ones are refused here, naming ``owner`` and ``name``, before any
    arithmetic on them (NumPy would overflow int64). ``indices``: the value is
    a number of frame indices asked for (:func:`_bounded`'s message), else a
    distance in frames (a clip stride)."""
    value = _checks.integer(value, owner, name, minimum=1)
    if value > MAX_INDICES and indices:
        _bounded(owner, value, f"{name}={value}")
    if value > MAX_INDICES:
        raise InputError(f"{owner}: {name} must be <= {MAX_INDICES:,} frames, got {value:,}")
    return value


def _rate_count(owner: str, fps: float, offset: float, duration: float) -> int:
    """How many times ``offset + k / fps`` lie in ``[0, duration)``, bounded
    (:func:`_bounded`) before ``ceil`` (a product of huge floats is infinite)."""
    raw = (duration - offset) * fps
    return _bounded(owner, raw if raw > MAX_INDICES else max(0, math.ceil(raw - 1e-9)),
                    f"{fps:g} fps over {duration:.3f} s")


@dataclass(frozen=True)
class _Timeline:
    """The frames a sampler sees: timestamps relative to time 0 (the first is
    0), the duration, and the index of the first frame in the real video."""

    t: np.ndarray
    duration: float
    offset: int = 0

    @property
    def n(self) -> int:
        return len(self.t)

    def at(self, times) -> np.ndarray:
        """Local index of the frame on screen at each time (last pts <= t)."""
        times = np.asarray(times, dtype=np.float64)
        idx = np.searchsorted(self.t, times + TIME_EPS, side="right") - 1
        return np.clip(idx, 0, self.n - 1).astype(np.int64)


def _timeline(index) -> _Timeline:
    ts = np.asarray(index.timestamps, dtype=np.float64)
    if len(ts) == 0:
        raise InputError("the video has no frames")
    return _Timeline(ts - ts[0], float(index.duration), 0)


class Sampler(abc.ABC):
    """Base of all samplers: ``indices(index)`` and ``within(start, end)``."""

    def indices(self, index) -> np.ndarray:
        """Frame indices (int64, into ``index.timestamps``) to decode, in output
        order, flat (``(n,)``; clip by clip for a clip sampler)."""
        tl = _timeline(index)
        return self._local(tl) + tl.offset

    @property
    def clip_length(self) -> Optional[int]:
        """Frames per clip for a sampler that picks clips (:class:`Clips`,
        :class:`SecondWindows`), ``None`` for one that picks frames."""
        return None

    def sample(self, index) -> np.ndarray:
        """:meth:`indices` with the clip axis: ``(n_clips, clip_length)`` for a
        clip sampler (``(0, clip_length)`` when no clip fits), ``(n,)`` otherwise.
        What :func:`fastvqa.video.read_frames` decodes."""
        idx = self.indices(index)
        k = self.clip_length
        return idx if k is None else idx.reshape(-1, k)

    @abc.abstractmethod
    def _local(self, tl: _Timeline) -> np.ndarray:
        """Frame indices relative to the timeline's first frame."""

    def within(self, start: float, end: Optional[float] = None) -> "Within":
        """This sampler applied to ``[start, end)`` seconds only (``end=None``: to the
        end of the video; see the module doc)."""
        return Within(self, start, end)


@dataclass(frozen=True)
class Fps(Sampler):
    """``fps`` frames per second: times ``offset + k / fps`` for every ``k >= 0``
    with that time ``< duration``; the frame on screen at each.

    ``Fps(1)`` is what ``ffmpeg -r 1`` is used for (WildQA, DeVi's CLIP
    features); ``Fps(1, offset=0.5)`` takes the middle of each second instead.
    A rate above the video's gives repeated frames (like ffmpeg's duplication).

    >>> from fastvqa.video import VideoIndex
    >>> Fps(2).indices(VideoIndex.constant_rate(25, 10.0)).tolist()  # 2.5 s at 10 fps
    [0, 5, 10, 15, 20]
    """

    fps: float
    offset: float = 0.0

    def __post_init__(self):
        _checks.real(self.fps, "Fps", "fps", finite=True, positive=True)
        _checks.real(self.offset, "Fps", "offset", finite=True, minimum=0)

    def _local(self, tl, owner: str = "Fps"):
        count = _rate_count(owner, self.fps, self.offset, tl.duration)
        return tl.at(self.offset + np.arange(count) / self.fps)


@dataclass(frozen=True)
class Uniform(Sampler):
    """``n`` frames spread evenly over the video.

    ``mode="center"`` (default, TSN test-time sampling and most VQA code):
    split ``[0, duration)`` into ``n`` equal segments and take the frame on
    screen at each segment's midpoint, ``t_k = (k + 1/2) * duration / n``.
    For a constant-rate video of ``N`` frames that is frame
    ``floor((2k + 1) * N / (2n))``.

    ``mode="linspace"``: the first and the last frame and ``n - 2`` between,
    ``t_k = k * t_last / (n - 1)`` where ``t_last`` is the last frame's time
    (DALI's ``uniform_sample``; ``n = 1`` takes the first frame).

    ``n`` larger than the number of frames repeats frames.

    >>> from fastvqa.video import VideoIndex
    >>> idx = VideoIndex.constant_rate(25, 10.0)
    >>> Uniform(4).indices(idx).tolist(), Uniform(4, mode="linspace").indices(idx).tolist()
    ([3, 9, 15, 21], [0, 8, 16, 24])
    """

    n: int
    mode: str = "center"

    def __post_init__(self):
        _frame_count(self.n, "Uniform", "n")
        if self.mode not in ("center", "linspace"):
            raise InputError(f"Uniform: mode must be 'center' or 'linspace', got {self.mode!r}")

    def _local(self, tl):
        return tl.at(_uniform_times(self.n, self.mode, 0.0, tl.duration, tl.t[-1]))


def _uniform_times(n: int, mode: str, start: float, end: float, last: float) -> np.ndarray:
    if mode == "center":
        return start + (np.arange(n) + 0.5) * (end - start) / n
    if n == 1:
        return np.array([start])
    return start + np.arange(n) * (last - start) / (n - 1)


@dataclass(frozen=True)
class Clips(Sampler):
    """Clips of ``length`` frames, a new clip every ``stride`` frames, ``step``
    frames apart inside a clip. Counts frames (display order), not seconds.

    Clip ``k`` is frames ``k * stride + j * step`` for ``j = 0 .. length - 1``;
    only complete clips are taken: ``K = floor((N - span) / stride) + 1``
    clips with ``span = (length - 1) * step + 1`` (none when ``N < span``).
    With ``pad_last=True``, frames left after the last complete clip (or a
    video shorter than one clip) get one more clip starting at the next clip
    start, its missing frames replaced by the last frame (edge replication).

    DVD (16-frame clips every 4 frames, clip ``k`` = frames ``[4k, 4k + 15]``,
    72 clips for 301 frames) is ``Clips(16, 4)`` = ``Clips(16, 4, 1)``.
    :meth:`sample` (and so ``read_frames``) gives ``(K, length)`` indices;
    :meth:`indices` the same ``K * length`` flat, clip by clip.

    Naming: ``stride`` here is the papers' "stride" (between clip starts).
    DALI calls that ``step`` and calls the in-clip gap ``stride``: this
    sampler is DALI's ``sequence_length=length, step=stride, stride=step``.

    >>> from fastvqa.video import VideoIndex
    >>> Clips(3, stride=10).sample(VideoIndex.constant_rate(25, 10.0)).tolist()
    [[0, 1, 2], [10, 11, 12], [20, 21, 22]]
    """

    length: int
    stride: int
    step: int = 1
    pad_last: bool = False

    def __post_init__(self):
        _frame_count(self.length, "Clips", "length")
        _frame_count(self.stride, "Clips", "stride", indices=False)
        _frame_count(self.step, "Clips", "step", indices=False)

    @property
    def clip_length(self) -> int:
        return self.length

    def starts(self, n: int) -> np.ndarray:
        """First frame of each clip for a video (or range) of ``n`` frames."""
        span = (self.length - 1) * self.step + 1
        count = (n - span) // self.stride + 1 if n >= span else 0
        starts = np.arange(count, dtype=np.int64) * self.stride
        if self.pad_last and n > 0:
            covered = starts[-1] + span if count else 0
            if covered < n:
                starts = np.append(starts, count * self.stride)
        return starts

    def _local(self, tl):
        span = (self.length - 1) * self.step + 1
        clips = (tl.n - span) // self.stride + 2 if tl.n >= span else 1
        _bounded("Clips", clips * self.length, f"up to {clips} clips of {self.length} frames")
        starts = self.starts(tl.n)
        idx = starts[:, None] + np.arange(self.length, dtype=np.int64)[None, :] * self.step
        return np.minimum(idx, tl.n - 1).reshape(-1)


@dataclass(frozen=True)
class SecondWindows(Sampler):
    """WildQA's per-second windows: frames at ``fps`` (1 by default, as
    :class:`Fps`), then for each of those ``S`` frames a window of ``window``
    of them around it, in temporal order, repeating the first/last frame at
    the edges.

    Window ``s`` holds the ``fps`` frames ``s - before .. s + after`` clamped
    to ``[0, S - 1]``, with ``before = window // 2`` and
    ``after = (window - 1) // 2``: for ``window=16`` that is ``[s - 8, s + 7]``
    (WildQA's I3D clips: ``ceil(15/2) = 8`` before, ``15 // 2 = 7`` after).
    :meth:`sample` (and so ``read_frames``) gives ``(S, window)`` indices;
    :meth:`indices` the same flat, window by window. Backends decode each
    distinct frame once.

    >>> from fastvqa.video import VideoIndex
    >>> SecondWindows(window=4, fps=1.0).sample(VideoIndex.constant_rate(25, 10.0)).tolist()
    [[0, 0, 0, 10], [0, 0, 10, 20], [0, 10, 20, 20]]
    """

    window: int = 16
    fps: float = 1.0

    def __post_init__(self):
        # Bounded in _local, with the windows' count (window x windows indices).
        _checks.integer(self.window, "SecondWindows", "window", minimum=1)
        _checks.real(self.fps, "SecondWindows", "fps", finite=True, positive=True)

    @property
    def clip_length(self) -> int:
        return self.window

    def _local(self, tl):
        base = Fps(self.fps)._local(tl, owner="SecondWindows")
        s = len(base)
        _bounded("SecondWindows", s * self.window, f"{s} windows of window={self.window} frames")
        if s == 0:
            return base
        before, after = self.window // 2, (self.window - 1) // 2
        pos = np.arange(s)[:, None] + np.arange(-before, after + 1)[None, :]
        return base[np.clip(pos, 0, s - 1)].reshape(-1)


@dataclass(frozen=True)
class Hierarchical(Sampler):
    """DeVi's multi-scale segments: for each level ``l``, tile the video with
    non-overlapping segments of ``lengths[l]`` seconds,
    ``[j * L, (j + 1) * L)``, and take ``frames[l]`` frames uniformly from each
    (``mode`` as in :class:`Uniform`, over the segment).

    The last segment of a level is usually partial (the video does not end on
    a multiple of ``L``). ``last`` decides:

    - ``"keep"`` (default): keep it as a shorter segment ``[j * L, duration)``
      with the same number of frames; a level has ``ceil(duration / L)``
      segments (DeVE-QA: a 127-s video gives 9 + 4 + 2 = 15 segments for
      15/35/65 s). A video shorter than ``L`` is one segment.
    - ``"drop"``: drop it; ``floor(duration / L)`` segments (none for a video
      shorter than ``L``).
    - ``"merge"``: merge it into the segment before it (the last full one
      becomes longer); ``max(1, floor(duration / L))`` segments.

    Output: level by level (in the order given), segment by segment in time,
    frames in time. :meth:`segments` gives the matching
    ``(level, start, end, frames)`` rows. DeVE-QA is
    ``Hierarchical((15, 35, 65), (5, 7, 13))``; NExT-GQA uses lengths
    ``(5, 15, 45)`` (the frame counts there are not published).

    >>> from fastvqa.video import VideoIndex
    >>> Hierarchical((1.0, 2.5), (2, 3)).indices(VideoIndex.constant_rate(25, 10.0)).tolist()
    [2, 7, 12, 17, 21, 23, 4, 12, 20]
    """

    lengths: tuple = (15.0, 35.0, 65.0)
    frames: tuple = (5, 7, 13)
    last: str = "keep"
    mode: str = "center"

    def __post_init__(self):
        object.__setattr__(self, "lengths", tuple(self.lengths))
        object.__setattr__(self, "frames", tuple(self.frames))
        if not self.lengths or len(self.lengths) != len(self.frames):
            raise InputError(f"Hierarchical: lengths and frames must be non-empty and of one "
                             f"length, got {len(self.lengths)} and {len(self.frames)}")
        for v in self.lengths:
            _checks.real(v, "Hierarchical", "lengths", finite=True, positive=True)
        for v in self.frames:
            _frame_count(v, "Hierarchical", "frames")
        if self.last not in ("keep", "drop", "merge"):
            raise InputError(f"Hierarchical: last must be 'keep', 'drop' or 'merge', got {self.last!r}")
        if self.mode not in ("center", "linspace"):
            raise InputError(f"Hierarchical: mode must be 'center' or 'linspace', got {self.mode!r}")

    def segments(self, duration: float) -> list:
        """``[(level, start, end, frames), ...]`` in output order."""
        # In floats first: duration / 5e-324 s is infinite, and floor() of it an OverflowError.
        detail = f"lengths={list(self.lengths)} s over {duration:.3f} s"
        rough = sum((duration / length + 2) * k for length, k in zip(self.lengths, self.frames))
        if not math.isfinite(rough):
            _bounded("Hierarchical", rough, detail)
        _bounded("Hierarchical", sum((math.floor(duration / length + 1e-9) + 1) * k
                                     for length, k in zip(self.lengths, self.frames)), detail)
        rows = []
        for level, (length, k) in enumerate(zip(self.lengths, self.frames)):
            full = int(math.floor(duration / length + 1e-9))
            bounds = [(j * length, (j + 1) * length) for j in range(full)]
            rest = duration - full * length
            if rest > 1e-9:
                if self.last == "keep":
                    bounds.append((full * length, duration))
                elif self.last == "merge":
                    if bounds:
                        bounds[-1] = (bounds[-1][0], duration)
                    else:
                        bounds.append((0.0, duration))
            rows.extend((level, float(s), float(e), k) for s, e in bounds)
        return rows

    def _local(self, tl):
        out = []
        for _, s, e, k in self.segments(tl.duration):
            last = tl.t[tl.at(np.array([e - TIME_EPS * 2]))[0]]
            out.append(tl.at(_uniform_times(k, self.mode, s, e, max(last, s))))
        return np.concatenate(out) if out else np.zeros(0, np.int64)


@dataclass(frozen=True)
class Outside(Sampler):
    """``n`` frames from outside ``span = (start, end)`` seconds, for
    distractor mining: evenly over the union ``[0, start) U (end, duration)``.

    The two parts are laid end to end (length ``start + duration - end``)
    and split into ``n`` equal bins; bin ``k``'s midpoint ``u_k`` maps back to
    a time ``t`` (``u`` itself left of the span, ``end + (u - start)`` right of
    it). Frames are taken among those whose timestamp is outside the span
    (``< start`` or ``> end``): the last such frame at or before ``t`` on its
    side, or the first one after ``end`` when the frame on screen at ``t``
    started inside the span. A side without such frames counts as empty.
    Raises ``ValueError`` when no frame lies outside the span.

    >>> from fastvqa.video import VideoIndex
    >>> Outside((0.5, 1.5), n=4).indices(VideoIndex.constant_rate(25, 10.0)).tolist()
    [1, 16, 19, 23]
    """

    span: tuple
    n: int

    def __post_init__(self):
        span = tuple(self.span)
        if len(span) != 2:
            raise InputError(f"Outside: span must be (start, end), got {self.span!r}")
        s = _checks.real(span[0], "Outside", "span start", finite=True, minimum=0)
        e = _checks.real(span[1], "Outside", "span end", finite=True, minimum=0)
        if e < s:
            raise InputError(f"Outside: span end {e} is before its start {s}")
        object.__setattr__(self, "span", (s, e))
        _frame_count(self.n, "Outside", "n")

    def _local(self, tl):
        s, e = self.span
        t = tl.t
        left = np.flatnonzero(t < s - TIME_EPS)
        right = np.flatnonzero(t > e + TIME_EPS)
        left_len = min(s, tl.duration) if len(left) else 0.0
        right_len = max(0.0, tl.duration - e) if len(right) else 0.0
        total = left_len + right_len
        if total <= 0:
            raise InputError(f"Outside: no frame lies outside the span [{s}, {e}] s "
                             f"of a {tl.duration:.3f}-s video")
        u = (np.arange(self.n) + 0.5) * total / self.n
        out = np.empty(self.n, dtype=np.int64)
        is_left = u < left_len
        if is_left.any():
            pos = np.searchsorted(t[left], u[is_left] + TIME_EPS, side="right") - 1
            out[is_left] = left[np.clip(pos, 0, len(left) - 1)]
        if (~is_left).any():
            times = e + (u[~is_left] - left_len)
            pos = np.searchsorted(t[right], times + TIME_EPS, side="right") - 1
            out[~is_left] = right[np.clip(pos, 0, len(right) - 1)]
        return out


@dataclass(frozen=True)
class Within(Sampler):
    """``sampler`` applied to ``[start, end)`` seconds (``end=None``: to the end).

    The range is clipped to the video. Inside it, time 0 is ``start``, the
    first frame is the one on screen at ``start`` and the duration is
    ``min(end, duration) - start``; indices are returned in the whole video's
    numbering. Raises ``ValueError`` for a range outside the video.

    >>> from fastvqa.video import VideoIndex
    >>> Uniform(3).within(1.0, 2.0).indices(VideoIndex.constant_rate(25, 10.0)).tolist()
    [11, 15, 18]
    """

    sampler: Sampler
    start: float
    end: Optional[float] = None

    def __post_init__(self):
        if not isinstance(self.sampler, Sampler):
            raise TypeError(f"Within: sampler must be a Sampler, got {type(self.sampler).__name__}")
        _checks.real(self.start, "Within", "start", finite=True, minimum=0)
        if self.end is not None:
            _checks.real(self.end, "Within", "end", finite=True, minimum=0)
            if self.end <= self.start:
                raise InputError(f"Within: end {self.end} must be after start {self.start}")

    @property
    def clip_length(self) -> Optional[int]:
        return self.sampler.clip_length

    def _local(self, tl):
        end = tl.duration if self.end is None else min(float(self.end), tl.duration)
        start = float(self.start)
        if start >= end:
            raise InputError(f"Within: range [{self.start}, {self.end}) s is outside the "
                             f"{tl.duration:.3f}-s video")
        first = int(tl.at(np.array([start]))[0])
        stop = int(np.searchsorted(tl.t, end - TIME_EPS, side="left"))  # frames with t < end
        stop = max(stop, first + 1)
        t = tl.t[first:stop] - start
        t[0] = 0.0
        sub = _Timeline(t, end - start, tl.offset + first)
        return self.sampler._local(sub) + first


# ----------------------------------------------------------------- the registry


@dataclass(frozen=True)
class SamplerEntry:
    """One registered sampler: its spec ``name``, the class, how its spec
    arguments parse, and the text the command line and the docs show."""

    name: str
    cls: type
    parse: Callable[[str], Sampler]
    syntax: str  # e.g. "fps:RATE[,OFFSET]"
    example: str  # e.g. "fps:1"
    help: str  # one line


#: spec name -> :class:`SamplerEntry`, in registration order (the order
#: ``fastvqa decode --help`` and error messages list them).
SAMPLERS: dict = {}


def register_sampler(name: str, *, syntax: str, example: str, help: str,
                     parse: Optional[Callable[[str], Sampler]] = None):
    """Class decorator: make a :class:`Sampler` subclass known to
    :func:`from_spec`, ``fastvqa decode --sampler`` and the docs as ``name``.

    ``parse(args)`` builds the sampler from the text after ``name:``
    (default: the comma-separated numbers as positional arguments); it may
    raise ``TypeError``/``ValueError``/``IndexError``, which :func:`from_spec`
    reports naming the spec. ``syntax``, ``example`` and ``help`` are what
    the command line and the docs show. A name registered twice is a
    ``ValueError``.
    """
    if not name or ":" in name or "@" in name or name != name.strip().lower():
        raise ValueError(f"sampler name must be lower case without ':' or '@', got {name!r}")

    def decorate(cls):
        if not (isinstance(cls, type) and issubclass(cls, Sampler)):
            raise TypeError(f"register_sampler({name!r}) decorates a Sampler subclass, "
                            f"got {cls!r}")
        if name in SAMPLERS:
            raise ValueError(f"sampler {name!r} is already registered "
                             f"({SAMPLERS[name].cls.__name__})")
        SAMPLERS[name] = SamplerEntry(name, cls, parse or (lambda args: cls(*_nums(args))),
                                      syntax, example, help)
        return cls

    return decorate


def spec_help(sep: str = " | ") -> str:
    """The registered spec syntaxes joined by ``sep``, for help texts."""
    return sep.join(e.syntax for e in SAMPLERS.values())


def spec_examples(sep: str = ", ") -> str:
    """One example spec per registered sampler, joined by ``sep``."""
    return sep.join(e.example for e in SAMPLERS.values())


def _nums(text: str, cast=float) -> list:
    return [cast(x) for x in text.split(",") if x.strip()]


def _parse_uniform(args: str) -> Sampler:
    parts = args.split(",")
    return Uniform(int(parts[0]), *(p.strip() for p in parts[1:]))


def _parse_seconds(args: str) -> Sampler:
    vals = _nums(args)
    return SecondWindows(int(vals[0]), *vals[1:]) if vals else SecondWindows()


def _parse_hierarchical(args: str) -> Sampler:
    parts = args.split("/")
    if len(parts) < 2:
        raise InputError("expected hierarchical:LENGTHS/FRAMES[/keep|drop|merge]")
    return Hierarchical(tuple(_nums(parts[0])), tuple(_nums(parts[1], int)),
                        *(p.strip() for p in parts[2:]))


def _parse_outside(args: str) -> Sampler:
    s, e, n = _nums(args)
    return Outside((s, e), int(n))


register_sampler("fps", syntax="fps:RATE[,OFFSET]", example="fps:1",
                 help="the frame on screen every 1/RATE s (Fps)")(Fps)
register_sampler("uniform", syntax="uniform:N[,center|linspace]", example="uniform:16",
                 help="N frames spread evenly (Uniform)", parse=_parse_uniform)(Uniform)
register_sampler("clips", syntax="clips:LENGTH,STRIDE[,STEP]", example="clips:16,4,1",
                 help="clips of LENGTH frames every STRIDE frames (Clips)",
                 parse=lambda args: Clips(*_nums(args, int)))(Clips)
register_sampler("seconds", syntax="seconds:WINDOW[,FPS]", example="seconds:16",
                 help="a window of WINDOW frames around each 1/FPS-s frame (SecondWindows)",
                 parse=_parse_seconds)(SecondWindows)
register_sampler("hierarchical", syntax="hierarchical:LENGTHS/FRAMES[/keep|drop|merge]",
                 example="hierarchical:15,35,65/5,7,13",
                 help="FRAMES frames from each LENGTHS-s segment, per level (Hierarchical)",
                 parse=_parse_hierarchical)(Hierarchical)
register_sampler("outside", syntax="outside:START,END,N", example="outside:10,20,8",
                 help="N frames outside [START, END] s (Outside)", parse=_parse_outside)(Outside)


# ----------------------------------------------------------------- spec strings


def from_spec(spec: str) -> Sampler:
    """Parse a sampler spec string ``NAME:ARGS[@START-END]`` of a registered
    sampler (:data:`SAMPLERS`), e.g. ``"uniform:16"``.
    A spec that does not parse, or whose values a sampler refuses, raises
    :class:`fastvqa.errors.InputError` (a ``ValueError``) naming the spec, as
    every sampler's own checks of user values do.

    >>> from_spec("uniform:4"), from_spec("fps:2@1-2")
    (Uniform(n=4, mode='center'), Within(sampler=Fps(fps=2.0, offset=0.0), start=1.0, end=2.0))
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise InputError(f"sampler spec {spec!r}: expected NAME:ARGS, e.g. {spec_examples()}")
    rng = None
    if "@" in spec:
        spec, rng = spec.rsplit("@", 1)
    name, _, args = spec.partition(":")
    name = name.strip().lower()
    entry = SAMPLERS.get(name)
    if entry is None:
        raise InputError(f"sampler spec {spec!r}: unknown sampler {name!r} "
                         f"({', '.join(SAMPLERS)})")
    try:
        sampler = entry.parse(args.strip())
        if rng is not None:
            lo, _, hi = rng.partition("-")
            sampler = sampler.within(float(lo), float(hi) if hi.strip() else None)
    except (TypeError, ValueError, IndexError) as err:
        raise InputError(f"sampler spec {spec!r}: {err}") from None
    return sampler
