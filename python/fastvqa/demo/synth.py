# SPDX-License-Identifier: Apache-2.0
"""A small synthetic grounded video-QA benchmark with exact ground truth.

In the spirit of DVD's CATER scenes (``docs/papers/dvd.md`` §2): coloured
shapes (cone = triangle, cube = square, sphere = circle) on a plain
background, each following a timeline of actions over known intervals:
``slide`` (horizontal translation at constant speed), ``rotate`` (in place,
150 degrees/s; spheres never rotate, as in CATER), ``fly`` (straight up and
back down: a trapezoid lift of :data:`FLY_HEIGHT` px) and ``rest``.

Every object keeps to its own horizontal lane (``H / 4`` px high), so objects
never overlap and a colour identifies an object. Intervals are in seconds,
on a 0.5 s grid, **inclusive start, exclusive end** (``[start, end)``); an
object's intervals tile ``[0, duration)``.

Everything is drawn from one ``numpy.random.default_rng(seed)``: the same
seed gives byte-identical ``annotations.json`` (videos are re-encoded each
time; x264 output is not promised to be byte-identical across versions).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

WIDTH, HEIGHT, NATIVE_FPS = 320, 240, 10
LANES = 4
BACKGROUND = (120, 120, 120)
#: colour name -> RGB; a video uses distinct colours, so colour names an object.
PALETTE = {
    "red": (220, 50, 47),
    "green": (60, 175, 60),
    "blue": (50, 90, 225),
    "yellow": (235, 205, 40),
    "purple": (150, 70, 195),
}
SHAPES = ("cone", "cube", "sphere")
ACTIONS = ("slide", "rotate", "fly", "rest")
#: the answer text of each action (multiple-choice options).
ACTION_VERBS = {"slide": "slides", "rotate": "rotates", "fly": "flies", "rest": "rests"}
ROTATE_DEG_PER_S = 150.0
FLY_HEIGHT = 22.0
X_MIN, X_MAX = 24.0, WIDTH - 24.0
GRID = 0.5  # seconds; every interval boundary is a multiple
MIN_DURATION = 5.0
ANNOTATION_VERSION = 1


@dataclass
class Segment:
    """One interval of an object's timeline, ``[start, end)`` seconds.

    ``speed``: signed px/s for ``slide`` (0 otherwise)."""

    action: str
    start: float
    end: float
    speed: float = 0.0


@dataclass
class SceneObject:
    colour: str
    shape: str
    lane: int
    x0: float
    segments: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.colour} {self.shape}"

    @property
    def rest_y(self) -> float:
        """Centre height at rest: near the bottom of the lane."""
        return self.lane * HEIGHT / LANES + 42.0

    def state(self, t: float) -> tuple:
        """``(x, y, angle_degrees)`` of the centre at time ``t`` seconds."""
        x, angle, lift = self.x0, 0.0, 0.0
        for seg in self.segments:
            if t <= seg.start:
                break
            done = min(t, seg.end) - seg.start
            if seg.action == "slide":
                x += seg.speed * done
            elif seg.action == "rotate":
                angle += ROTATE_DEG_PER_S * done
            elif seg.action == "fly" and t < seg.end:
                u = done / (seg.end - seg.start)
                lift = FLY_HEIGHT * min(1.0, 4.0 * u, 4.0 * (1.0 - u))
        return x, self.rest_y - lift, angle

    def to_json(self) -> dict:
        return {
            "name": self.name, "colour": self.colour, "shape": self.shape, "lane": self.lane,
            "actions": [{"action": s.action, "start": s.start, "end": s.end}
                        for s in self.segments],
        }


def _grid(rng: np.random.Generator, lo: float, hi: float) -> float:
    """A uniform multiple of :data:`GRID` in ``[lo, hi]``."""
    return GRID * int(rng.integers(round(lo / GRID), round(hi / GRID) + 1))


def _timeline(rng: np.random.Generator, obj: SceneObject, duration: float) -> None:
    """Alternating rest / action segments tiling ``[0, duration)``, at least one action."""
    t = _grid(rng, 0.5, 2.5)
    x = obj.x0
    segments = [Segment("rest", 0.0, t)]
    choices = ["slide", "fly"] + ([] if obj.shape == "sphere" else ["rotate"])
    while True:
        action = choices[int(rng.integers(len(choices)))]
        length = _grid(rng, 1.5, 3.0) if action == "fly" else _grid(rng, 2.0, 4.0)
        if t + length + GRID > duration:
            if len(segments) > 1:
                break
            length = duration - GRID - t  # the first action: shortened to fit (>= 2 s)
        speed = 0.0
        if action == "slide":
            # Toward the side with more room, slowly enough to stay inside.
            room_right, room_left = X_MAX - x, x - X_MIN
            room = max(room_right, room_left)
            speed = float(rng.uniform(25.0, min(60.0, room / length)))
            speed = speed if room_right >= room_left else -speed
            x += speed * length
        segments.append(Segment(action, t, t + length, speed))
        t += length
        rest = _grid(rng, 1.0, 3.0)
        segments.append(Segment("rest", t, min(t + rest, duration)))
        t = min(t + rest, duration)
        if t + GRID >= duration:
            break
    if segments[-1].action == "rest":
        segments[-1].end = duration
    else:
        segments.append(Segment("rest", segments[-1].end, duration))
    obj.segments = segments


def make_scene(rng: np.random.Generator, duration: float) -> list:
    """3 or 4 objects with distinct colours, each in its own lane, with timelines."""
    n = int(rng.integers(3, 5))
    colours = rng.permutation(list(PALETTE))[:n]
    lanes = rng.permutation(LANES)[:n]
    objects = []
    for colour, lane in zip(colours, lanes):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        obj = SceneObject(str(colour), shape, int(lane), float(_grid(rng, 40.0, 280.0)))
        _timeline(rng, obj, duration)
        objects.append(obj)
    return objects


# Drawing ---------------------------------------------------------------------

def shape_mask(shape: str, cx: float, cy: float, angle: float) -> tuple:
    """``(y0, x0, mask)``: the boolean pixel mask of a shape centred at
    ``(cx, cy)`` rotated by ``angle`` degrees, as a patch whose top-left pixel
    is ``(y0, x0)``. Pixel centres are at integer coordinates + 0.5."""
    r = 20
    y0, x0 = int(math.floor(cy)) - r, int(math.floor(cx)) - r
    yy, xx = np.mgrid[y0:y0 + 2 * r + 1, x0:x0 + 2 * r + 1].astype(np.float64) + 0.5
    dx, dy = xx - cx, yy - cy
    a = math.radians(angle)
    # Coordinates in the shape's own (rotated) frame.
    u = math.cos(a) * dx + math.sin(a) * dy
    v = -math.sin(a) * dx + math.cos(a) * dy
    if shape == "sphere":
        mask = dx * dx + dy * dy <= 13.0 ** 2
    elif shape == "cube":
        mask = (np.abs(u) <= 12.0) & (np.abs(v) <= 12.0)
    elif shape == "cone":
        # Equilateral triangle, circumradius 16, apex up: inside all three edges.
        mask = np.ones_like(u, dtype=bool)
        for k in range(3):
            t = math.radians(90.0 + 120.0 * k)
            mask &= (u * math.cos(t) - v * math.sin(t)) >= -8.0  # inradius 8
    else:
        raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")
    return y0, x0, mask


def render_frame(objects: list, t: float) -> np.ndarray:
    """The ``(HEIGHT, WIDTH, 3)`` uint8 RGB frame at time ``t`` seconds."""
    frame = np.empty((HEIGHT, WIDTH, 3), dtype=np.uint8)
    frame[:] = BACKGROUND
    for obj in objects:
        x, y, angle = obj.state(t)
        y0, x0, mask = shape_mask(obj.shape, x, y, angle)
        ys, xs = np.nonzero(mask)
        ys, xs = ys + y0, xs + x0
        keep = (ys >= 0) & (ys < HEIGHT) & (xs >= 0) & (xs < WIDTH)
        frame[ys[keep], xs[keep]] = PALETTE[obj.colour]
    return frame


def encode_video(path: Path, objects: list, duration: float) -> None:
    """H.264 (yuv420p) MP4 at :data:`NATIVE_FPS`, frame ``k`` at ``k / fps`` s."""
    from fastvqa.video.index import import_av

    av = import_av()
    n = int(round(duration * NATIVE_FPS))
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=NATIVE_FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        # High quality keeps colour edges stable; one thread keeps runs reproducible.
        stream.options = {"crf": "12", "preset": "veryfast"}
        stream.codec_context.thread_count = 1
        for k in range(n):
            frame = av.VideoFrame.from_ndarray(render_frame(objects, k / NATIVE_FPS),
                                               format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


# Questions -------------------------------------------------------------------

def _fmt(t: float) -> str:
    return f"{t:g}"


def _overlaps(seg: Segment, start: float, end: float) -> bool:
    return seg.start < end and start < seg.end


def make_questions(rng: np.random.Generator, video: str, objects: list) -> list:
    """Question records (without options) for one video.

    Kinds: ``when`` (grounding: all intervals of one object's action),
    ``first`` (the object's first action; answer plus its interval),
    ``what`` (an object's action over one of its intervals) and ``which``
    (the only object doing an action over an interval).
    """
    qs = []

    def add(kind, text, answer, spans, **extra):
        qs.append({"id": f"{video}_q{len(qs)}", "video": video, "kind": kind, "text": text,
                   "answer": answer, "spans": [[s, e] for s, e in spans], **extra})

    for obj in objects:
        for action in ("slide", "rotate", "fly"):
            spans = [(s.start, s.end) for s in obj.segments if s.action == action]
            if spans:
                add("when", f"When does the {obj.name} {action}?", None, spans,
                    object=obj.name, action=action)
    for obj in rng.permutation(len(objects))[:2]:
        obj = objects[int(obj)]
        first = next(s for s in obj.segments if s.action != "rest")
        add("first", f"What does the {obj.name} do first?", ACTION_VERBS[first.action],
            [(first.start, first.end)], object=obj.name)
    for k in rng.permutation(len(objects))[:2]:
        obj = objects[int(k)]
        seg = obj.segments[int(rng.integers(len(obj.segments)))]
        add("what", f"What does the {obj.name} do between {_fmt(seg.start)} s and "
            f"{_fmt(seg.end)} s?", ACTION_VERBS[seg.action], [(seg.start, seg.end)],
            object=obj.name, interval=[seg.start, seg.end])
    # "which": an action interval no other object shares (no overlap with the same action).
    candidates = [(obj, seg) for obj in objects for seg in obj.segments if seg.action != "rest"
                  and not any(_overlaps(o, seg.start, seg.end) and o.action == seg.action
                              for other in objects if other is not obj for o in other.segments)]
    for k in rng.permutation(len(candidates))[:2]:
        obj, seg = candidates[int(k)]
        add("which", f"Which object {ACTION_VERBS[seg.action]} between {_fmt(seg.start)} s and "
            f"{_fmt(seg.end)} s?", f"the {obj.name}", [(seg.start, seg.end)],
            action=seg.action, interval=[seg.start, seg.end])
    return qs


def wrong_objects(objects: list, action: str, start: float, end: float) -> list:
    """Objects of the video that do not ``action`` anywhere in ``[start, end)``."""
    return [f"the {o.name}" for o in objects
            if not any(s.action == action and _overlaps(s, start, end) for s in o.segments)]


@dataclass
class Benchmark:
    """What :func:`generate` wrote: the folder, the annotation dict, the video
    paths, and ``scenes``: video id -> its :class:`SceneObject` list (the
    exact timelines, for :mod:`fastvqa.demo.cater`)."""

    root: Path
    annotations: dict
    videos: list
    scenes: dict = field(default_factory=dict)


def generate(root, *, videos: int = 12, duration: float = 20.0, seed: int = 0,
             add_options: Optional[Callable] = None,
             progress: Optional[Callable[[], None]] = None) -> Benchmark:
    """Write ``videos/*.mp4`` and ``annotations.json`` into ``root`` (created).

    Args:
        root: the output folder (must not hold a ``videos`` folder or
            ``annotations.json`` already).
        videos: number of videos (``>= 1``).
        duration: seconds per video (``>= 5``, a multiple of 0.5).
        seed: everything (scenes, timelines, questions, options) derives from it.
        add_options: ``f(questions, objects_by_video, rng)`` that sets each
            multiple-choice question's ``options`` and ``answer_index``
            (:func:`fastvqa.demo.options.add_options`).
        progress: called once per video written.

    Returns:
        :class:`Benchmark` (``scenes``: every video's objects). The
        annotation file holds ``format`` (this layout's
        version), ``fps``, ``width``, ``height``, ``duration``, ``seed``,
        ``span_convention`` (``"[start, end) seconds"``), ``videos`` (id ->
        ``{"file", "objects"}``) and ``questions``.
    """
    if isinstance(videos, bool) or not isinstance(videos, int) or videos < 1:
        raise ValueError(f"videos must be a positive integer, got {videos!r}")
    duration = float(duration)
    if not duration >= MIN_DURATION or abs(duration / GRID - round(duration / GRID)) > 1e-9:
        raise ValueError(f"duration must be >= {MIN_DURATION:g} s and a multiple of {GRID} s, "
                         f"got {duration:g}")
    root = Path(root)
    folder = root / "videos"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    scenes, questions, records, paths = {}, [], {}, []
    for i in range(videos):
        vid = f"video{i:03d}"
        objects = make_scene(rng, duration)
        scenes[vid] = objects
        questions.extend(make_questions(rng, vid, objects))
        records[vid] = {"file": f"videos/{vid}.mp4", "objects": [o.to_json() for o in objects]}
    if add_options is not None:
        add_options(questions, scenes, rng)
    for vid, objects in scenes.items():
        path = folder / f"{vid}.mp4"
        encode_video(path, objects, duration)
        paths.append(path)
        if progress is not None:
            progress()
    annotations = {
        "format": ANNOTATION_VERSION, "fps": NATIVE_FPS, "width": WIDTH, "height": HEIGHT,
        "duration": duration, "seed": seed, "span_convention": "[start, end) seconds",
        "videos": records, "questions": questions,
    }
    text = json.dumps(annotations, indent=1, sort_keys=True)
    (root / "annotations.json").write_text(text + "\n")
    return Benchmark(root, annotations, paths, scenes)
