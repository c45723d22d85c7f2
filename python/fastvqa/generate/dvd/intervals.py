# SPDX-License-Identifier: Apache-2.0
"""DVD's interval engine (dvd.md §2.3-§2.4): action events, containment,
atomic and compositional periods, the two-endpoint spatial rule, relative
length and active parts, and an object's actions inside a period.

Conventions. Frames are integers. An :class:`Event` is the start or end of
one movement (or of a containment) at a frame. A *period* is a pair
``(start_event, end_event)``; ``None`` stands for the video start (frame 0)
and the video end. The video end is ``num_frames`` (301 for CATER), or the
``cutoff`` frame where a function takes one (the video truncated at the
cutoff, dvd.md §1.4) -- the same convention as
:func:`fastvqa.metrics.dialogue.relative_interval_length`. So
:func:`period_frames` of ``(None, None)`` is ``(0, num_frames)``; positions
at a period's end read frame ``min(end, num_frames - 1)``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError, InputTypeError
from fastvqa.generate.dvd.scene import ACTIONS, RELATIONS, Scene

#: The event kinds, ``start_<action>``/``end_<action>`` for every action, and
#: the containment state's ``start_contained``/``end_contained``.
EVENT_KINDS: tuple[str, ...] = tuple(f"{p}_{a}" for a in ACTIONS + ("contained",)
                                     for p in ("start", "end"))


@dataclass(frozen=True, order=True)
class Event:
    """One event: ``frame``, ``obj`` (object index), ``kind`` (one of
    :data:`EVENT_KINDS`) and ``nth``, the 1-based count of that action (or of
    containments) for that object. Events order by (frame, obj, kind, nth)."""

    frame: int
    obj: int
    kind: str
    nth: int

    @property
    def action(self) -> str:
        """``"flying"`` ... or ``"contained"``."""
        return self.kind.split("_", 1)[1]

    @property
    def is_start(self) -> bool:
        return self.kind.startswith("start_")

    def to_json(self) -> list:
        """DVD's event layout, ``[obj, kind, nth, frame]`` (the frame last)."""
        return [self.obj, self.kind, self.nth, self.frame]

    @staticmethod
    def from_json(seq: Any) -> "Event":
        """The inverse of :meth:`to_json`; :class:`~fastvqa.errors.InputError`
        for anything else."""
        if not isinstance(seq, (list, tuple)) or len(seq) != 4 or seq[1] not in EVENT_KINDS \
                or any(isinstance(seq[k], bool) or not isinstance(seq[k], (int, np.integer))
                       for k in (0, 2, 3)):
            raise InputError(f"Event.from_json: expected [obj, kind, nth, frame], got {seq!r}")
        return Event(int(seq[3]), int(seq[0]), str(seq[1]), int(seq[2]))


#: A period: (start event or None = video start, end event or None = video end).
Period = tuple[Optional[Event], Optional[Event]]


class Containment(NamedTuple):
    """``obj`` covered by the cone ``container`` from frame ``start`` (the end
    of the cone's ``_contain`` flight) to ``end``: the start of the cone's next
    flight (``released`` True) or the video end, ``num_frames`` (``released``
    False)."""

    container: int
    obj: int
    start: int
    end: int
    released: bool


def _check_scene(scene: Any, op: str) -> Scene:
    if not isinstance(scene, Scene):
        raise InputTypeError(f"{op}: scene must be a fastvqa.generate.dvd.scene.Scene, "
                             f"got {type(scene).__name__}")
    return scene


def containment_periods(scene: Scene) -> tuple[Containment, ...]:
    """Every containment, sorted by (start, obj): a cone's flying movement
    with a ``target`` starts one; the cone's next flying movement (its next
    ``_pick_place``) ends it, else it lasts to the video end."""
    _check_scene(scene, "containment_periods")
    out = []
    for m in scene.movements:
        if m.target is None:
            continue
        nxt = [k for k in scene.movements_of(m.obj) if k.action == "flying" and k.start > m.end]
        if nxt:
            out.append(Containment(m.obj, m.target, m.end, nxt[0].start, True))
        else:
            out.append(Containment(m.obj, m.target, m.end, scene.num_frames, False))
    return tuple(sorted(out, key=lambda c: (c.start, c.obj)))


def events(scene: Scene, *, cutoff: Optional[int] = None) -> tuple[Event, ...]:
    """All events, sorted by (frame, obj, kind, nth): ``start_<a>``/``end_<a>``
    of every movement (``nth`` counts that object's movements of action ``a``
    in start order) and ``start_contained``/``end_contained`` of every
    containment (no ``end_contained`` for one lasting to the video end).
    With ``cutoff``, only events at frames ``<= cutoff``."""
    _check_scene(scene, "events")
    out = []
    for obj in range(len(scene.objects)):
        counts: dict[str, int] = {}
        for m in scene.movements_of(obj):
            counts[m.action] = counts.get(m.action, 0) + 1
            out.append(Event(m.start, obj, f"start_{m.action}", counts[m.action]))
            out.append(Event(m.end, obj, f"end_{m.action}", counts[m.action]))
    nth: dict[int, int] = {}
    for c in containment_periods(scene):
        nth[c.obj] = nth.get(c.obj, 0) + 1
        out.append(Event(c.start, c.obj, "start_contained", nth[c.obj]))
        if c.released:
            out.append(Event(c.end, c.obj, "end_contained", nth[c.obj]))
    if cutoff is not None:
        out = [e for e in out if e.frame <= cutoff]
    return tuple(sorted(out))


def _video_end(scene: Scene, cutoff: Optional[int]) -> int:
    return scene.num_frames if cutoff is None else int(cutoff)


def _groups(scene: Scene, cutoff: Optional[int]) -> list[tuple[int, list[Event]]]:
    """Endpoint-eligible events (not containment events) grouped by frame."""
    evs = [e for e in events(scene, cutoff=cutoff) if e.action != "contained"]
    return [(f, list(g)) for f, g in itertools.groupby(evs, key=lambda e: e.frame)]


def _pair_ok(s: Event, e: Event) -> bool:
    """dvd.md §2.4: endpoints of one object must be that object's start -> end
    of the same movement, or an end -> a start."""
    if s.obj != e.obj:
        return True
    if s.is_start:
        return (not e.is_start) and s.action == e.action and s.nth == e.nth
    return e.is_start


def _period_key(p: Period) -> tuple:
    s, e = p
    return (-1 if s is None else s.frame, 1 << 60 if e is None else e.frame,
            () if s is None else (s.obj, s.kind, s.nth), () if e is None else (e.obj, e.kind, e.nth))


def _check_threshold(threshold: Any, op: str) -> int:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)) or threshold < 0:
        raise InputError(f"{op}: threshold must be an integer >= 0 (frames), got {threshold!r}")
    return int(threshold)


def _periods(scene: Scene, threshold: int, cutoff: Optional[int], atomic: bool) -> tuple[Period, ...]:
    groups = _groups(scene, cutoff)
    end = _video_end(scene, cutoff)
    out: list[Period] = []
    if not groups:
        return ((None, None),) if end > threshold else ()
    if not atomic and end > threshold:
        out.append((None, None))
    firsts = groups if not atomic else groups[:1]
    lasts = groups if not atomic else groups[-1:]
    for f, g in firsts:
        if f > threshold:
            out.extend((None, e) for e in g)
    for f, g in lasts:
        if end - f > threshold:
            out.extend((s, None) for s in g)
    if atomic:
        pairs = zip(groups, groups[1:])
    else:
        pairs = itertools.combinations(groups, 2)
    for (fa, ga), (fb, gb) in pairs:
        if fb - fa > threshold:
            out.extend((s, e) for s in ga for e in gb if _pair_ok(s, e))
    return tuple(sorted(out, key=_period_key))


def atomic_periods(scene: Scene, threshold: int = 10, *,
                   cutoff: Optional[int] = None) -> tuple[Period, ...]:
    """DVD's atomic periods (dvd.md §2.4): events (containment events
    excluded) grouped by identical frame; each pair of *consecutive* groups
    more than ``threshold`` frames apart (strict: 10 frames apart is dropped,
    11 kept) gives a period per pair of their events, plus ``(None, e)`` for
    the first group and ``(e, None)`` for the last, under the same gap rule
    against frame 0 and the video end (``num_frames``, or ``cutoff``: events
    after it are ignored). A period whose two endpoints belong to one object
    must be that object's start -> end of one movement or an end -> a start.
    A video without events has the single atomic period ``(None, None)``.
    Sorted by (start frame, end frame, start event, end event), None first.

    The boundary periods are held to the gap rule too (the paper's minimum
    duration of about 0.5 s applies to every interval); the released data is
    laxer there (``CLEVR_new_000002`` turn 7 uses ``(None, start_flying@2)``,
    2 frames), so DVD's code evidently did not check the gap at the video
    start and end."""
    _check_scene(scene, "atomic_periods")
    return _periods(scene, _check_threshold(threshold, "atomic_periods"), cutoff, True)


def compositional_periods(scene: Scene, threshold: int = 10, *,
                          cutoff: Optional[int] = None) -> tuple[Period, ...]:
    """DVD's compositional periods (dvd.md §2.4, as its code): *every* pair of
    event groups ``i < j`` more than ``threshold`` frames apart (per event
    pair, with the same-object rule of :func:`atomic_periods`), plus
    ``(None, e)``, ``(e, None)`` under the gap rule and ``(None, None)``, the
    whole video. Atomic periods are a subset (filter them out with
    ``set(atomic_periods(...))`` where "not atomic" is wanted). Same order as
    :func:`atomic_periods`."""
    _check_scene(scene, "compositional_periods")
    return _periods(scene, _check_threshold(threshold, "compositional_periods"), cutoff, False)


def _end_frame(x: Any, default: int, field: str) -> int:
    if x is None:
        return default
    if isinstance(x, Event):
        return x.frame
    if isinstance(x, (list, tuple)) and x:
        x = x[-1]
    if isinstance(x, bool) or not isinstance(x, (int, np.integer, float)) or x != int(x):
        raise InputError(f"period_frames: the {field} must be an Event, [obj, kind, nth, frame], "
                         f"a frame or None, got {x!r}")
    return int(x)


def period_frames(period: Any, num_frames: int, *, cutoff: Optional[int] = None) -> tuple[int, int]:
    """``(start, end)`` frames of a period: an :class:`Event` pair, a DVD JSON
    pair (``[obj, kind, nth, frame]`` or None each) or an ``(int, int)`` frame
    pair. A None start is 0; a None (or ``-1``, the executor's "video end")
    end is the video end, ``cutoff`` if given else ``num_frames``.
    :class:`~fastvqa.errors.InputError` for a malformed or reversed period."""
    if not isinstance(period, (list, tuple)) or len(period) != 2:
        raise InputError(f"period_frames: a period must be (start, end), got {period!r}")
    vend = int(num_frames) if cutoff is None else int(cutoff)
    s = _end_frame(period[0], 0, "start")
    e = _end_frame(period[1], vend, "end")
    if e == -1:
        e = vend
    if e < s:
        raise InputError(f"period_frames: the period ends (frame {e}) before it starts "
                         f"(frame {s})")
    return s, e


def period_to_json(period: Any) -> list:
    """A period as DVD writes it: ``[start_event_or_None, end_event_or_None]``
    with events as ``[obj, kind, nth, frame]``."""
    if not isinstance(period, (list, tuple)) or len(period) != 2:
        raise InputError(f"period_to_json: a period must be (start, end), got {period!r}")
    return [e.to_json() if isinstance(e, Event) else (None if e is None else list(e))
            for e in period]


def _frames(scene: Scene, period: Any, cutoff: Optional[int]) -> tuple[int, int]:
    return period_frames(period, scene.num_frames, cutoff=cutoff)


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return min(a1, b1) - max(a0, b0)


def is_static(scene: Scene, obj: int, period: Any, *, cutoff: Optional[int] = None) -> bool:
    """Whether the object has no movement overlapping the period's inside
    (a movement that only touches an end, ``m.end == start`` or
    ``m.start == end``, does not count)."""
    _check_scene(scene, "is_static")
    s, e = _frames(scene, period, cutoff)
    return not any(_overlap(m.start, m.end, s, e) > 0 for m in scene.movements_of(obj))


def spatial_relation(scene: Scene, ref: int, other: int, period: Any, relation: str, *,
                     eps: float = 0.2, rng: Optional[np.random.Generator] = None,
                     cutoff: Optional[int] = None) -> bool:
    """Whether ``other`` is ``relation`` (left/right/front/behind) of the
    reference ``ref`` during the period, DVD's two-endpoint rule (dvd.md
    §2.3): with ``d`` the scene's direction vector, ``p1`` the reference's
    position and ``p2(t)`` the other's, the relation holds iff
    ``dot(p2(start) - p1, d) > eps`` and, when ``other`` moves in the period,
    also ``dot(p2(end) - p1, d) > eps`` (strict: exactly ``eps`` is False).
    ``p1`` is read at one frame drawn uniformly from the period by ``rng``
    (at the period's start frame without one; the reference is static, so
    any frame gives the same point in a consistent scene).

    The reference must be static in the period: a moving one raises
    :class:`~fastvqa.errors.InputError` (check :func:`is_static` first).
    ``ref == other`` is False."""
    _check_scene(scene, "spatial_relation")
    _checks.choice(relation, "spatial_relation", "relation", RELATIONS)
    n = len(scene.objects)
    for name, v in (("ref", ref), ("other", other)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < n:
            raise InputError(f"spatial_relation: {name} must be an object index in 0..{n - 1}, "
                             f"got {v!r}")
    if relation not in scene.directions:
        raise InputError(f"spatial_relation: the scene has no {relation!r} direction")
    if ref == other:
        return False
    if not is_static(scene, ref, period, cutoff=cutoff):
        raise InputError(f"spatial_relation: the reference object {ref} moves during the "
                         "period (spatial relations need a static reference)")
    s, e = _frames(scene, period, cutoff)
    last = min(e, scene.num_frames - 1)
    f = s if rng is None else int(rng.integers(s, max(s, last) + 1))
    p1 = scene.position(ref, f)
    d = np.asarray(scene.directions[relation], dtype=np.float64)
    if not float(np.dot(scene.position(other, s) - p1, d)) > eps:
        return False
    if is_static(scene, other, period, cutoff=cutoff):
        return True
    return float(np.dot(scene.position(other, last) - p1, d)) > eps


def relative_length(period: Any, num_frames: int, *, cutoff: Optional[int] = None) -> float:
    """``(end - start) / video_end``: the period's length as a fraction of
    the video input (0 .. ``cutoff`` or 0 .. ``num_frames``), as
    :func:`fastvqa.metrics.dialogue.relative_interval_length`."""
    s, e = period_frames(period, num_frames, cutoff=cutoff)
    whole = int(num_frames) if cutoff is None else int(cutoff)
    return (e - s) / whole if whole > 0 else float("nan")


def active_parts(period: Any, num_frames: int, n: int = 10) -> tuple[int, ...]:
    """Indices of the ``n`` equal parts of the whole video (part ``k`` covers
    frames ``[k * num_frames / n, (k + 1) * num_frames / n)``) the period
    overlaps with positive length (dvd.md Fig. 13); a zero-length period
    activates the part holding its frame."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"active_parts: n must be an integer >= 1, got {n!r}")
    s, e = period_frames(period, num_frames)
    out = []
    for k in range(n):
        lo, hi = k * num_frames / n, (k + 1) * num_frames / n
        if (e > s and min(e, hi) > max(s, lo)) or (e == s and lo <= s < hi):
            out.append(k)
    return tuple(out)


def _movements_in(scene: Scene, obj: int, period: Any, overlap: int, cutoff: Optional[int]):
    s, e = _frames(scene, period, cutoff)
    return [m for m in scene.movements_of(obj) if _overlap(m.start, m.end, s, e) > overlap]


def actions_in(scene: Scene, obj: int, period: Any, overlap: int = 5, *,
               cutoff: Optional[int] = None) -> tuple[str, ...]:
    """The object's action sequence in the period: the actions of its
    movements that overlap the period by more than ``overlap`` frames
    (``min(ends) - max(starts) > overlap``, DVD's ``overlap_threshold`` 5),
    in start order, repeats kept. ``()`` means "no action"."""
    _check_scene(scene, "actions_in")
    return tuple(m.action for m in _movements_in(scene, obj, period, overlap, cutoff))


def contained_in(scene: Scene, obj: int, period: Any, overlap: int = 5, *,
                 cutoff: Optional[int] = None) -> bool:
    """Whether the object is covered by a cone for more than ``overlap``
    frames of the period."""
    _check_scene(scene, "contained_in")
    s, e = _frames(scene, period, cutoff)
    return any(c.obj == obj and _overlap(c.start, c.end, s, e) > overlap
               for c in containment_periods(scene))


__all__ = ["Containment", "EVENT_KINDS", "Event", "Period", "active_parts", "actions_in",
           "atomic_periods", "compositional_periods", "contained_in", "containment_periods",
           "events", "is_static", "period_frames", "period_to_json", "relative_length",
           "spatial_relation"]
