# SPDX-License-Identifier: Apache-2.0
"""Deterministic DeVi components for the demo's synthetic world
(:mod:`fastvqa.demo.synth`), where everything a video shows is known.

- :class:`DemoCaptioner` describes a segment's frames: each object (found by
  colour, its shape measured) and what it does between consecutive frames
  (slide, rotate, fly, rest), as sentences with times in seconds;
- :class:`DemoLanguageModel` follows DeVi's prompts (:mod:`fastvqa.devi.prompts`):
  it contextualises the captions into one timeline per object, answers the
  demo's multiple-choice questions from the event memory in free text with
  an option letter and a time span, and reconsiders a close call when told
  its answer is inconsistent;
- :class:`DemoEncoder` embeds frames and texts into one space of
  colour x shape x action indicators (60 dimensions), L2-normalised, for the
  self-consistency score.

The frame analysis is the demo pipeline's (:func:`fastvqa.demo.pipeline.video_features`
for sliding and rotating, its :func:`~fastvqa.demo.pipeline.colour_labels`
masks); flying is measured against the object's resting height in its lane
(:attr:`fastvqa.demo.synth.SceneObject.rest_y`), because a segment's few
frames may all show the object in the air.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple, Optional, Sequence

import numpy as np

from fastvqa.demo import pipeline as demo
from fastvqa.demo.synth import (
    ACTION_VERBS,
    ACTIONS,
    HEIGHT,
    LANES,
    PALETTE,
    SHAPES,
    SceneObject,
)
from fastvqa.devi.pipeline import LETTERS
from fastvqa.video.samplers import Hierarchical

#: DeVi's hierarchy for the demo's videos: the paper's frame counts (5/7/13)
#: over segments at the paper's segment-to-video ratios (15/35/65 s of a
#: 127-s mean video: about 0.12, 0.28 and 0.51) for the demo's 20-s default,
#: rounded to its 0.5-s grid. The paper's own 15/35/65 s would put a whole
#: 8-20-s demo video into one segment per scale.
DEMO_HIERARCHY = Hierarchical((2.5, 5.0, 10.0), (5, 7, 13))
#: the rate of the visual memory (the paper's 1 fps CLIP features).
FEATURE_FPS = 1.0

#: verb forms that name each action in questions, options and captions.
ACTION_WORDS = {
    "slide": ("slide", "slides", "sliding", "slid"),
    "rotate": ("rotate", "rotates", "rotating", "rotated"),
    "fly": ("fly", "flies", "flying", "flew"),
    "rest": ("rest", "rests", "resting", "rested"),
}
_WORD_ACTION = {w: a for a, words in ACTION_WORDS.items() for w in words}
_NUM = r"(\d+(?:\.\d+)?)"


class Track(NamedTuple):
    """One object seen in a run of frames: ``colour``, ``shape`` and
    ``activations`` (action -> ``(steps,)`` float64 in [0, 1]; step ``t`` is
    frames ``t -> t + 1``)."""

    colour: str
    shape: str
    activations: dict


def tracks(frames: np.ndarray, timestamps: np.ndarray, period: float) -> list:
    """The objects of ``(N, H, W, 3)`` frames at ``timestamps`` (s), one
    :class:`Track` each (``PALETTE`` order), with per-step activations for
    the ``N`` steps (the last one measured up to ``period`` after the last frame)."""
    times = np.asarray(timestamps, dtype=np.float64)
    feats = demo.video_features(frames, times, period)
    labels = demo.colour_labels(frames)
    ys = (np.arange(labels.shape[1]) * demo.SUBSAMPLE + 0.5)[None, :, None]
    out = []
    for c, colour in enumerate(PALETTE):
        shape = feats.shapes[colour]
        if shape is None:
            continue
        mask = labels == c
        area = mask.sum(axis=(1, 2)).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            cy = (mask * ys).sum(axis=(1, 2)) / area
        lane = int(np.nanmedian(cy) // (HEIGHT / LANES))
        rest_y = SceneObject(colour, shape, lane, 0.0).rest_y
        lift = np.nan_to_num(np.maximum(rest_y - cy, 0.0))
        lift = np.maximum(lift, np.append(lift[1:], 0.0))  # a step flies when either end is up
        acts = dict(feats.actions[colour])
        acts["fly"] = demo._ramp(lift, *demo.FLY_LIFT)
        acts["rest"] = 1.0 - np.maximum(np.maximum(acts["slide"], acts["rotate"]), acts["fly"])
        out.append(Track(colour, shape, acts))
    return out


def step_labels(track: Track) -> list:
    """The action of each step: the highest activation (ties in ``ACTIONS`` order)."""
    stack = np.stack([track.activations[a] for a in ACTIONS])
    return [ACTIONS[k] for k in stack.argmax(axis=0)]


class DemoCaptioner:
    """Captions a segment's frames: for every object, the actions between
    consecutive frames as runs, ``The red cone rests from 0.2 s to 1.7 s,
    then slides from 1.7 s to 2.2 s.`` (an object seen in one frame only:
    ``The red cone is in view at 0.2 s.``)."""

    name = "fastvqa.demo.DemoCaptioner/1"

    def caption(self, frames: np.ndarray, timestamps: np.ndarray) -> str:
        times = np.asarray(timestamps, dtype=np.float64)
        if len(times) == 0:
            return "No frames."
        sentences = []
        for tr in tracks(frames, times, 0.0):
            subject = f"The {tr.colour} {tr.shape}"
            if len(times) == 1:
                sentences.append(f"{subject} is in view at {times[0]:.1f} s.")
                continue
            labels = step_labels(tr)[:-1]  # the last frame has no next frame here
            runs, start = [], 0
            for k in range(1, len(labels) + 1):
                if k == len(labels) or labels[k] != labels[start]:
                    runs.append(f"{ACTION_VERBS[labels[start]]} from {times[start]:.1f} s to "
                                f"{times[k]:.1f} s")
                    start = k
            sentences.append(f"{subject} " + ", then ".join(runs) + ".")
        return " ".join(sentences) if sentences else "The scene is empty."

    __call__ = caption


# Reading events out of text ----------------------------------------------------------

class Event(NamedTuple):
    obj: str  # "red cone"
    action: str
    start: float
    end: float


_SUBJECT = re.compile(rf"\bThe ({'|'.join(PALETTE)}) ({'|'.join(SHAPES)}) ", re.IGNORECASE)
_CLAUSE = re.compile(rf"\b({'|'.join(_WORD_ACTION)}) from {_NUM} s to {_NUM} s", re.IGNORECASE)


def events_in(text: str) -> list:
    """Every ``The <colour> <shape> <verb> from X s to Y s[, then <verb> from ...]``
    in ``text``, as :class:`Event`\\ s in order of appearance."""
    out = []
    subjects = list(_SUBJECT.finditer(text))
    for k, m in enumerate(subjects):
        end = subjects[k + 1].start() if k + 1 < len(subjects) else len(text)
        obj = f"{m.group(1).lower()} {m.group(2).lower()}"
        for c in _CLAUSE.finditer(text, m.end() - 1, end):
            out.append(Event(obj, _WORD_ACTION[c.group(1).lower()], float(c.group(2)),
                             float(c.group(3))))
    return out


def timelines(events: Sequence[Event], start: float, end: float) -> dict:
    """Object -> its events merged into a timeline over ``[start, end]``:
    sorted by start, consecutive events of one action joined, each gap
    between two events closed at its midpoint, the first event extended to
    ``start`` and the last to ``end``."""
    by_obj: dict = {}
    for e in sorted(events, key=lambda e: (e.start, e.end)):
        line = by_obj.setdefault(e.obj, [])
        if line and line[-1].action == e.action:
            line[-1] = line[-1]._replace(end=max(line[-1].end, e.end))
        else:
            line.append(e)
    for obj, line in by_obj.items():
        for k in range(len(line) - 1):
            a, b = line[k], line[k + 1]
            if b.start >= a.end:
                mid = (a.end + b.start) / 2
                line[k], line[k + 1] = a._replace(end=mid), b._replace(start=mid)
        line[0] = line[0]._replace(start=min(start, line[0].start))
        line[-1] = line[-1]._replace(end=max(end, line[-1].end))
    return by_obj


def describe(obj: str, line: Sequence[Event]) -> str:
    return (f"The {obj} " + ", then ".join(f"{ACTION_VERBS[e.action]} from {e.start:.1f} s to "
                                            f"{e.end:.1f} s" for e in line) + ".")


# The rule-following language model ------------------------------------------------------

_CAPTION_LINE = re.compile(rf"^\((\d+)\) scale (\d+), \[{_NUM} s, {_NUM} s\]: (.*)$")
_OPTION_LINE = re.compile(r"^\(([A-J])\) (.+)$")
_FIRST = re.compile(r"What does the (\w+ \w+) do first\?", re.IGNORECASE)
_WHAT = re.compile(rf"What does the (\w+ \w+) do between {_NUM} s and {_NUM} s\?", re.IGNORECASE)
_WHICH = re.compile(rf"Which object (\w+) between {_NUM} s and {_NUM} s\?", re.IGNORECASE)
_PREVIOUS = re.compile(r"Your previous answer: \(([A-J])\)")


def _section(text: str, header: str) -> Optional[str]:
    """The text after ``header`` up to the next blank line (None when absent)."""
    at = text.find(header)
    if at < 0:
        return None
    rest = text[at + len(header):]
    stop = rest.find("\n\n")
    return rest if stop < 0 else rest[:stop]


def _overlap(line: Sequence[Event], action: str, a: float, b: float) -> float:
    """The share of ``[a, b]`` covered by the ``action`` events of a timeline."""
    if b <= a:
        return 0.0
    covered = sum(max(0.0, min(e.end, b) - max(e.start, a)) for e in line if e.action == action)
    return covered / (b - a)


class DemoLanguageModel:
    """``messages -> str`` following DeVi's prompts on the demo's questions.

    - contextualisation (a ``Captions`` section): the events of the finest
      scale's captions merged per object (:func:`timelines`); each caption
      rewritten with the merged events of the objects it shows;
    - the synopsis call (a ``Captions`` section, a system prompt that asks
      for a synopsis): every object's whole timeline (the question's object
      first);
    - answering (an ``Events`` section and ``Options``): the timelines of the
      synopsis (else of the captions), then per question kind:
      ``What does the X do first?`` -> the first action that is not resting,
      its event as the span; ``What does the X do between a s and b s?`` ->
      the option action covering most of ``[a, b]``; ``Which object <verb>s
      between a s and b s?`` -> the option object whose ``<verb>`` events
      cover most of it; the span is ``[a, b]`` for both. Ties go to the first
      option. Replies ``The answer is (X). The supporting event is at
      A.As - B.Bs.``
    - verification (``Your previous answer: (X)``): the same evidence; it
      switches to the best other option when that one's evidence is at least
      :attr:`switch_ratio` of the previous one's (a close call), else keeps
      its answer.

    - an open question (``Events`` and ``Question`` but no ``Options``): the
      same evidence over the demo's answer vocabulary (every action's verb, or
      every object of the events for "Which object ...?"), the best one
      replied as ``Answer: <words>`` and its span.

    Anything else gets a reply that names no option (a parse failure).
    """

    name = "fastvqa.demo.DemoLanguageModel/1"
    switch_ratio = 0.5

    def __call__(self, messages: Sequence[dict]) -> str:
        from fastvqa.llm.images import message_text  # content may be a list of parts

        user = "\n".join(message_text(m) for m in messages if m.get("role") == "user")
        system = "\n".join(message_text(m) for m in messages if m.get("role") == "system")
        if "Captions (" in user and "synopsis" in system.lower():
            return self._contextualise(user, synopsis=True)
        if "Captions (" in user:
            return self._contextualise(user)
        if "Events:" in user and "Options:" in user:
            return self._answer(user)
        if "Events:" in user and "Question: " in user:
            return self._answer_open(user)
        return "I cannot help with that request."

    complete = __call__

    def _contextualise(self, user: str, synopsis: bool = False) -> str:
        """The refined captions, one ``(k) ...`` line each; with ``synopsis``
        (the synopsis call) the ``Synopsis: ...`` line alone."""
        rows = []
        for line in (_section(user, "Captions (") or "").splitlines():
            m = _CAPTION_LINE.match(line.strip())
            if m:
                rows.append((int(m.group(1)), int(m.group(2)), float(m.group(3)),
                             float(m.group(4)), m.group(5)))
        if not rows:
            return "Synopsis: no captions were given."
        finest = min(r[1] for r in rows)
        events = [e for r in rows if r[1] == finest for e in events_in(r[4])]
        lines = timelines(events, min(r[2] for r in rows), max(r[3] for r in rows))
        question = (_section(user, "Question: ") or "").lower()
        order = sorted(lines, key=lambda o: (o not in question, o))
        if synopsis:
            return "Synopsis: " + " ".join(describe(o, lines[o]) for o in order)
        out = []
        for k, _, a, b, text in rows:
            shown = [o for o in order if any(e.obj == o for e in events_in(text))]
            parts = [describe(o, [e for e in lines[o] if e.end > a and e.start < b])
                     for o in shown]
            out.append(f"({k}) " + (" ".join(parts) if parts else text))
        return "\n".join(out)

    def _evidence(self, user: str) -> Optional[tuple]:
        """``(scores per option, span of each option)`` or None for an unknown question."""
        events_text = _section(user, "Events:") or ""
        synopsis = [ln for ln in events_text.splitlines() if ln.startswith("Synopsis:")]
        events = events_in(synopsis[0] if synopsis else events_text)
        lines = timelines(events, math.inf, -math.inf)  # merged, not extended
        question = (_section(user, "Question: ") or "").strip()
        options = []
        for ln in (_section(user, "Options:\n") or "").splitlines():
            m = _OPTION_LINE.match(ln.strip())
            if m:
                options.append(m.group(2).strip())
        if not options:
            return None
        if (m := _FIRST.search(question)):
            line = [e for e in lines.get(m.group(1).lower(), []) if e.action != "rest"]
            scores, spans = [], []
            for opt in options:
                action = _WORD_ACTION.get(opt.lower())
                rank = next((k for k, e in enumerate(line) if e.action == action), None)
                scores.append(0.0 if rank is None else 1.0 / (1 + rank))
                spans.append(None if rank is None else (line[rank].start, line[rank].end))
            return scores, spans
        if (m := _WHAT.search(question)):
            line, a, b = lines.get(m.group(1).lower(), []), float(m.group(2)), float(m.group(3))
            scores = [_overlap(line, _WORD_ACTION.get(o.lower(), ""), a, b) for o in options]
            return scores, [(a, b)] * len(options)
        if (m := _WHICH.search(question)):
            action = _WORD_ACTION.get(m.group(1).lower(), "")
            a, b = float(m.group(2)), float(m.group(3))
            scores = [_overlap(lines.get(o.lower().removeprefix("the ").strip(), []), action, a, b)
                      for o in options]
            return scores, [(a, b)] * len(options)
        return None

    def _answer(self, user: str) -> str:
        found = self._evidence(user)
        if found is None:
            return "I cannot determine the answer from these events."
        scores, spans = found
        best = int(np.argmax(scores))
        prefix = ""
        prev = _PREVIOUS.search(user)
        if prev is not None:
            k = LETTERS.index(prev.group(1))
            k = k if k < len(scores) else best
            others = [j for j in range(len(scores)) if j != k]
            alt = max(others, key=lambda j: (scores[j], -j)) if others else k
            if others and scores[alt] > 0 and scores[alt] >= self.switch_ratio * scores[k]:
                best = alt
                prefix = "Checking again, my previous answer is not consistent with the frames. "
            else:
                best = k
                prefix = "Checking again, the events still support my previous answer. "
        span = spans[best] or (0.0, 0.0)
        return (f"{prefix}The answer is ({LETTERS[best]}). The supporting event is at "
                f"{span[0]:.1f}s - {span[1]:.1f}s.")

    def _answer_open(self, user: str) -> str:
        """An open question (no options): the demo's answer vocabulary (an
        action's verb, or "the <object>" of the events for "Which object
        ...?") weighed as options are, the best one in words."""
        question = (_section(user, "Question: ") or "").strip()
        if _WHICH.search(question):
            objects = {e.obj for e in events_in(_section(user, "Events:") or "")}
            words = [f"the {o}" for o in sorted(objects)]
        else:
            words = [ACTION_VERBS[a] for a in ACTIONS]
        listed = "\n".join(f"({LETTERS[k]}) {w}" for k, w in enumerate(words[:len(LETTERS)]))
        found = self._evidence(f"{user}\n\nOptions:\n{listed}") if words else None
        if found is None:
            return "I cannot determine the answer from these events."
        scores, spans = found
        best = int(np.argmax(scores))
        span = spans[best] or (0.0, 0.0)
        return (f"Answer: {words[best]}\nThe supporting event is at {span[0]:.1f}s - "
                f"{span[1]:.1f}s.")


# The image-text encoder ---------------------------------------------------------------

#: the embedding's axes: one dimension per (colour, shape, action).
VOCAB = [(c, s, a) for c in PALETTE for s in SHAPES for a in ACTIONS]
_AXIS = {v: k for k, v in enumerate(VOCAB)}


def _normalise(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0).astype(np.float32)


class DemoEncoder:
    """Frames and texts as colour x shape x action indicator vectors (:data:`VOCAB`).

    ``encode_frames``: the frames are one video's, in order, ``1 / fps``
    seconds apart (the visual memory's sampling): frame ``t``'s vector holds,
    for each object seen, its action activations of step ``t`` (frames
    ``t -> t + 1``, :func:`tracks`) at its (colour, shape). ``encode_texts``:
    the colours, shapes and action words a text names; each named
    combination gets 1 (a kind the text does not name spans all its values).
    Rows are L2-normalised; a text naming nothing is all zeros."""

    name = "fastvqa.demo.DemoEncoder/1"

    def __init__(self, fps: float = 1.0):
        self.fps = float(fps)

    def encode_frames(self, frames: np.ndarray) -> np.ndarray:
        n = len(frames)
        out = np.zeros((n, len(VOCAB)), dtype=np.float64)
        if n:
            for tr in tracks(frames, np.arange(n) / self.fps, 1.0 / self.fps):
                for a in ACTIONS:
                    out[:, _AXIS[(tr.colour, tr.shape, a)]] = tr.activations[a]
        return _normalise(out)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), len(VOCAB)), dtype=np.float64)
        for i, text in enumerate(texts):
            words = re.findall(r"[a-z]+", text.lower())
            colours = [c for c in PALETTE if c in words]
            shapes = [s for s in SHAPES if s in words]
            actions = list(dict.fromkeys(_WORD_ACTION[w] for w in words if w in _WORD_ACTION))
            if not (colours or shapes or actions):
                continue
            for c in colours or PALETTE:
                for s in shapes or SHAPES:
                    for a in actions or ACTIONS:
                        out[i, _AXIS[(c, s, a)]] = 1.0
        return _normalise(out)
