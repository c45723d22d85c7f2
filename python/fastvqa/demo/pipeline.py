# SPDX-License-Identifier: Apache-2.0
"""The demo's pipeline: decode, per-step action scores, grounding, answers, metrics.

Nothing here is learned. Each object is found by its colour; its per-step
action scores (activations in ``[0, 1]``) come from the mask's centroid and
shape over time, and the temporal-attention span kernel
(:func:`fastvqa.ops.top_spans`) turns them into spans in seconds.

Step ``t`` stands for ``[times[t], times[t + 1])`` seconds (the last step for
one sampling period), and its motion is measured between frames ``t`` and
``t + 1``, so a motion over ``[s, e)`` activates exactly the steps inside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from fastvqa.demo.synth import ACTION_VERBS, BACKGROUND, PALETTE

#: px per pixel of the subsampled grid the masks are computed on.
SUBSAMPLE = 2
#: a pixel is a palette colour when it is nearest to it and within this RGB distance.
COLOUR_RADIUS = 60.0
#: ramps (lo, hi) from a measurement to an activation in [0, 1].
SLIDE_SPEED = (5.0, 15.0)       # px/s, horizontal centroid speed
FLY_LIFT = (2.0, 8.0)           # px above the object's resting height
ROTATE_CHANGE = (0.06, 0.15)    # share of the mask that changes per step
STILL_SPEED = (4.0, 12.0)       # px/s; rotation counts only while the centroid stays put
#: grounding: a step's attention is ``act - GAP_PENALTY * (1 - act)`` and a
#: span's score the sum over its steps. The penalty is large enough that no
#: span bridges a 1 s pause between two actions of up to 4 s.
GAP_PENALTY = 6.0
#: further spans (beyond the best) are kept when they score at least this many
#: seconds' worth of fully active steps.
MIN_SPAN_SECONDS = 0.5
MAX_SPANS = 6
VERB_ACTIONS = {verb: action for action, verb in ACTION_VERBS.items()}


def _ramp(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.clip((x - lo) / (hi - lo), 0.0, 1.0)


@dataclass
class VideoFeatures:
    """Per-step activations of one video.

    ``times``: ``(T,)`` step start times (s); ``ends``: ``(T,)`` step end
    times (s); ``actions``: colour -> action -> ``(T,)`` float64 activation in
    ``[0, 1]`` for ``slide``, ``rotate``, ``fly`` and ``rest`` (= 1 - the
    largest of the other three). A colour absent from the video has all zeros
    (and ``rest`` ones). ``shapes``: colour -> ``"cone"``, ``"cube"``,
    ``"sphere"`` (:func:`shape_of`) or None when the colour is absent.
    """

    times: np.ndarray
    ends: np.ndarray
    actions: dict
    shapes: dict


def colour_labels(frames: np.ndarray, step: int = SUBSAMPLE) -> np.ndarray:
    """``(T, h, w)`` int8: index into ``PALETTE`` of every ``step``-th pixel
    (both axes), -1 for background or anything farther than
    :data:`COLOUR_RADIUS` from every colour."""
    refs = np.array([*PALETTE.values(), BACKGROUND], dtype=np.float32)
    px = frames[:, ::step, ::step]
    labels = np.full(px.shape[:3], -1, dtype=np.int8)
    # Most pixels are background: classify only those that differ from it.
    diff = np.abs(px.astype(np.int16) - np.asarray(BACKGROUND, dtype=np.int16)).max(axis=-1)
    where = np.nonzero(diff > COLOUR_RADIUS / 2)
    cand = px[where].astype(np.float32)
    d2 = ((cand[:, None, :] - refs) ** 2).sum(axis=-1)
    nearest = d2.argmin(axis=-1)
    ok = (nearest < len(PALETTE)) & (d2[np.arange(len(cand)), nearest] <= COLOUR_RADIUS ** 2)
    labels[tuple(w[ok] for w in where)] = nearest[ok]
    return labels


def shape_of(frame: np.ndarray, colour: str, cy: float, cx: float) -> Optional[str]:
    """The shape of the ``colour`` object centred near ``(cy, cx)`` (px) in one
    ``(H, W, 3)`` frame, from a full-resolution crop: how much of the circle
    through its farthest pixel it fills (disc ~1, square 2/pi ~0.64,
    equilateral triangle ~0.41). None when the crop holds none of the colour."""
    r = 24
    y0, x0 = max(int(cy) - r, 0), max(int(cx) - r, 0)
    crop = frame[None, y0:int(cy) + r + 1, x0:int(cx) + r + 1]
    ys, xs = np.nonzero(colour_labels(crop, step=1)[0] == list(PALETTE).index(colour))
    if ys.size == 0:
        return None
    r2 = ((ys - ys.mean()) ** 2 + (xs - xs.mean()) ** 2).max()
    fill = ys.size / (np.pi * max(r2, 1.0))
    return "sphere" if fill > 0.82 else "cube" if fill > 0.52 else "cone"


def video_features(frames: np.ndarray, timestamps: np.ndarray, period: float) -> VideoFeatures:
    """Activations from ``(T, H, W, 3)`` uint8 RGB frames sampled at ``timestamps`` (s).

    ``period``: the sampling period in seconds (the last step's length).
    """
    times = np.asarray(timestamps, dtype=np.float64)
    ends = np.append(times[1:], times[-1] + period) if times.size else times
    dt = np.maximum(ends - times, 1e-9)
    labels = colour_labels(frames)
    h, w = labels.shape[1:]
    ys = (np.arange(h) * SUBSAMPLE + 0.5)[None, :, None]
    xs = (np.arange(w) * SUBSAMPLE + 0.5)[None, None, :]
    out, shapes = {}, {}
    for c, colour in enumerate(PALETTE):
        mask = labels == c
        area = mask.sum(axis=(1, 2)).astype(np.float64)
        if not area.any():
            zero = np.zeros(times.shape)
            out[colour] = {"slide": zero, "rotate": zero, "fly": zero, "rest": zero + 1.0}
            shapes[colour] = None
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            cx = (mask * xs).sum(axis=(1, 2)) / area
            cy = (mask * ys).sum(axis=(1, 2)) / area
        # Forward differences: step t's motion is frame t -> t + 1 (0 for the last step).
        vx = np.nan_to_num(np.abs(np.diff(cx, append=cx[-1])) / dt)
        vy = np.nan_to_num(np.abs(np.diff(cy, append=cy[-1])) / dt)
        change = np.append((mask[1:] ^ mask[:-1]).sum(axis=(1, 2)), 0) / np.maximum(area, 1.0)
        # Objects rest at the bottom of their lane and fly only upwards.
        lift = np.nan_to_num(np.nanmax(cy) - cy)
        lift = np.maximum(lift, np.append(lift[1:], 0.0))
        slide = _ramp(vx, *SLIDE_SPEED)
        fly = _ramp(lift, *FLY_LIFT)
        rotate = _ramp(change, *ROTATE_CHANGE) * (1.0 - _ramp(np.hypot(vx, vy), *STILL_SPEED))
        out[colour] = {"slide": slide, "rotate": rotate, "fly": fly,
                       "rest": 1.0 - np.maximum(np.maximum(slide, rotate), fly)}
        # The most common shape over (up to) 9 frames where the object is seen.
        seen = np.flatnonzero(area > 0)
        votes = [shape_of(frames[t], colour, cy[t], cx[t])
                 for t in seen[::max(1, seen.size // 9)]]
        votes = [v for v in votes if v is not None] or [None]
        shapes[colour] = max(sorted(set(votes), key=str), key=votes.count)
    return VideoFeatures(times, ends, out, shapes)


def min_span_score(feats: VideoFeatures) -> float:
    """The score of :data:`MIN_SPAN_SECONDS` of fully active steps at this sampling."""
    step = float(np.median(feats.ends - feats.times)) if feats.times.size else 1.0
    return MIN_SPAN_SECONDS / step


def ground(rows: list) -> list:
    """Spans in seconds for each ``(features, colour, action)`` row, best first.

    Each row's activations become attention ``act - GAP_PENALTY * (1 - act)``
    and go through :func:`fastvqa.ops.top_spans` (``reduce="sum"``: the best
    span is the maximum-sum run of active steps; ``nms_iou=0``: each further
    span must not overlap a kept one). The best span is always returned;
    others when their score reaches :data:`MIN_SPAN_SECONDS` of fully active
    steps (``MIN_SPAN_SECONDS / step length``).

    Returns one list per row of ``(start, end, score)``; seconds, best first.
    """
    from fastvqa.ops import top_spans

    if not rows:
        return []
    t_max = max(f.times.size for f, _, _ in rows)
    x = np.full((len(rows), t_max), -GAP_PENALTY)
    lengths = np.zeros(len(rows), dtype=np.int64)
    for r, (feats, colour, action) in enumerate(rows):
        act = feats.actions[colour][action]
        x[r, :act.size] = act - GAP_PENALTY * (1.0 - act)
        lengths[r] = act.size
    spans, scores = top_spans(x, MAX_SPANS, reduce="sum", lengths=lengths, nms_iou=0.0)
    out = []
    for r, (feats, _, _) in enumerate(rows):
        kept, floor = [], min_span_score(feats)
        for (i, j), s in zip(spans[r], scores[r]):
            if i < 0 or (kept and s < floor):
                continue
            kept.append((float(feats.times[i]), float(feats.ends[j]), float(s)))
        out.append(kept)
    return out


def _colour_of(text: str) -> Optional[str]:
    words = text.lower().replace("?", " ").split()
    return next((w for w in words if w in PALETTE), None)


def _seen_object(text: str, feats: VideoFeatures) -> Optional[str]:
    """The colour of an option naming an object ("the red cone") when an object
    of that colour and shape is in the video, else None."""
    colour = _colour_of(text)
    words = text.lower().split()
    if colour is None or feats.shapes[colour] is None or feats.shapes[colour] not in words:
        return None
    return colour


def _mean_over(feats: VideoFeatures, act: np.ndarray, interval) -> float:
    inside = (feats.times >= interval[0]) & (feats.times < interval[1])
    return float(act[inside].mean()) if inside.any() else -np.inf


def answer(question: dict, feats: VideoFeatures) -> tuple:
    """``(option index, span or None)`` for one multiple-choice question.

    - ``what`` (an object's action over an interval): the option action with
      the highest mean activation over the steps starting in the interval;
    - ``which`` (the object doing an action over an interval): the option
      object with the highest mean activation of that action there (an
      option whose colour and shape are not both seen scores ``-inf``);
    - ``first`` (an object's first action): the option action whose earliest
      grounded span starts first; that span is the evidence.

    Options that name no known action or colour score ``-inf``; ties go to
    the first option.
    """
    kind, options = question["kind"], question["options"]
    if kind == "which":
        scores = []
        for opt in options:
            colour = _seen_object(opt, feats)
            scores.append(-np.inf if colour is None else _mean_over(
                feats, feats.actions[colour][question["action"]], question["interval"]))
        return int(np.argmax(scores)), None
    colour = _colour_of(question["text"])
    if colour is None:
        raise ValueError(f"question {question['id']}: names no known colour")
    actions = [VERB_ACTIONS.get(opt.strip().lower()) for opt in options]
    if kind == "what":
        scores = [-np.inf if a is None else _mean_over(feats, feats.actions[colour][a],
                                                       question["interval"]) for a in actions]
        return int(np.argmax(scores)), None
    if kind == "first":
        rows = [(k, a) for k, a in enumerate(actions) if a is not None and a != "rest"]
        if not rows:
            return 0, None
        found = ground([(feats, colour, a) for _, a in rows])
        best, best_key = 0, None
        for (k, _), spans in zip(rows, found):
            real = [s for s in spans if s[2] >= min_span_score(feats)]
            if not real:
                continue
            first = min(real, key=lambda s: (s[0], -s[2]))
            key = (first[0], -first[2])
            if best_key is None or key < best_key:
                best, best_key, best_span = k, key, first[:2]
        if best_key is None:  # nothing detected: the best-scoring option's best span
            k = int(np.argmax([spans[0][2] if spans else -np.inf for spans in found]))
            return rows[k][0], found[k][0][:2] if found[k] else None
        return best, best_span
    raise ValueError(f"question {question['id']}: unknown kind {kind!r}")


def decode(paths: list, fps: float, backend: str, progress: bool) -> list:
    """``Frames`` (NumPy) of each video at ``fps``, in order."""
    from fastvqa.video import Fps, read_batch

    device = "cuda" if backend == "dali" else "cpu"
    out = read_batch(paths, Fps(fps), backend=backend, device=device, progress=progress)
    frames = []
    for f in out:
        pixels = f.data
        if not isinstance(pixels, np.ndarray):  # DALI: a torch CUDA tensor
            pixels = pixels.cpu().numpy()
        frames.append((pixels, f.pts_seconds))
    return frames


def evaluate(questions: list, predictions: dict, duration: float) -> dict:
    """The demo's metrics, each a :class:`~fastvqa.metrics.MetricResult`.

    ``predictions``: question id -> ``{"spans": [[s, e], ...] best first}``
    (``when``), ``{"answer": k, "span": [s, e] or None}`` (``first``) or
    ``{"answer": k}`` (``what``, ``which``).

    Returns ``{"grounding": grounded_qa over the "when" questions (best span),
    "evidence": iou_f1 (mode "clean") over their span lists, "grounded_qa":
    grounded_qa with answers over the "first" questions, "multiple_choice":
    multiple_choice_accuracy over first/what/which by kind}``; a kind with no
    questions is left out.
    """
    from fastvqa.errors import InputError

    try:
        return _evaluate(questions, predictions, duration)
    except InputError as err:  # the demo built these inputs itself: a bug, not the user's
        raise RuntimeError(f"demo evaluation: {err}") from err


def _evaluate(questions: list, predictions: dict, duration: float) -> dict:
    from fastvqa.data import spans_to_csr
    from fastvqa.metrics import grounded_qa, iou_f1, multiple_choice_accuracy

    results = {}
    when = [q for q in questions if q["kind"] == "when"]
    if when:
        best = np.array([predictions[q["id"]]["spans"][0] for q in when], dtype=np.float64)
        gt, offsets = spans_to_csr([q["spans"] for q in when])
        results["grounding"] = grounded_qa(best, (gt, offsets), keys=[q["id"] for q in when],
                                           durations=np.full(len(when), duration))
        results["evidence"] = iou_f1([predictions[q["id"]]["spans"] for q in when],
                                     [q["spans"] for q in when], mode="clean")
    first = [q for q in questions if q["kind"] == "first"]
    if first:
        span = [predictions[q["id"]].get("span") for q in first]
        pred = np.array([s if s is not None else (np.nan, np.nan) for s in span], dtype=np.float64)
        gt, offsets = spans_to_csr([q["spans"] for q in first])
        results["grounded_qa"] = grounded_qa(
            pred, (gt, offsets), keys=[q["id"] for q in first],
            pred_answers=[predictions[q["id"]]["answer"] for q in first],
            gt_answers=[q["answer_index"] for q in first],
            durations=np.full(len(first), duration))
    mc = [q for q in questions if q["kind"] in ("first", "what", "which")]
    if mc:
        results["multiple_choice"] = multiple_choice_accuracy(
            [predictions[q["id"]]["answer"] for q in mc],
            ([q["options"] for q in mc], [q["answer_index"] for q in mc]),
            question_types=[q["kind"] for q in mc])
    return results


def ground_questions(questions: list, features: dict) -> dict:
    """Span predictions ``{"spans": [[s, e], ...]}`` (best first) for the
    ``when`` questions; ``features``: video id -> :class:`VideoFeatures`.

    Reads each question's ``text`` (the colour) and ``action`` field, never its
    answer or spans."""
    when = [q for q in questions if q["kind"] == "when"]
    rows = []
    for q in when:
        colour = _colour_of(q["text"])
        if colour is None:
            raise ValueError(f"question {q['id']}: names no known colour")
        rows.append((features[q["video"]], colour, q["action"]))
    return {q["id"]: {"spans": [list(s[:2]) for s in spans]}
            for q, spans in zip(when, ground(rows))}


def answer_questions(questions: list, features: dict,
                     tick: Optional[Callable[[], None]] = None) -> dict:
    """Answers ``{"answer": k}`` (plus ``"span"`` for ``first``) for the
    multiple-choice questions; ``tick()`` after each."""
    preds: dict[str, Any] = {}
    for q in questions:
        if q["kind"] == "when":
            continue
        k, span = answer(q, features[q["video"]])
        preds[q["id"]] = {"answer": k}
        if q["kind"] == "first":
            preds[q["id"]]["span"] = None if span is None else list(span)
        if tick is not None:
            tick()
    return preds


# The feature store path (fastvqa demo --store) ---------------------------------

#: the per-step values of one colour in a stored feature vector
_STORED = ("slide", "rotate", "fly", "rest", "cone", "cube", "sphere")


class Activations:
    """:func:`video_features` as an extraction model (:func:`fastvqa.extract.run`):
    it takes all of a video's frames at once, ``(n, 3, H, W)`` float32 in
    ``[0, 1]`` sampled every ``1 / fps`` s, and gives ``(n, 7 * colours)``
    float32 rows: per colour (``PALETTE`` order) its four action activations
    and a one-hot of its shape (zeros when absent). :func:`from_store` reads
    them back."""

    def __init__(self, fps: float):
        self.fps = float(fps)

    def __call__(self, x):
        import torch

        frames = (x.permute(0, 2, 3, 1) * 255.0).round().to(torch.uint8).numpy()
        times = np.arange(len(frames)) / self.fps
        feats = video_features(frames, times, 1.0 / self.fps)
        cols = []
        for colour in PALETTE:
            acts = feats.actions[colour]
            cols += [acts[a] for a in _STORED[:4]]
            cols += [np.full(len(frames), float(feats.shapes[colour] == s)) for s in _STORED[4:]]
        return torch.from_numpy(np.stack(cols, axis=1).astype(np.float32))


def extraction_recipe(fps: float):
    """The demo's recipe: frames at ``fps``, decoded size, values in ``[0, 1]``,
    one whole video per model call (the activations need consecutive frames)."""
    from fastvqa.extract import Recipe

    return Recipe(name="demo-activations", sampler=f"fps:{fps:g}", model="", batch=1 << 30,
                  time="grid", source="fastvqa demo: colour masks, their motion and shape")


def from_store(stored) -> VideoFeatures:
    """The :class:`VideoFeatures` of one video read from the store
    (:class:`fastvqa.extract.VideoFeatures`), as :func:`video_features` made them."""
    x = np.asarray(stored.features, dtype=np.float64)
    actions, shapes = {}, {}
    for c, colour in enumerate(PALETTE):
        block = x[:, c * len(_STORED):(c + 1) * len(_STORED)]
        actions[colour] = {a: block[:, i] for i, a in enumerate(_STORED[:4])}
        present = block[:, 4:].max(axis=0) if len(block) else np.zeros(3)
        shapes[colour] = _STORED[4 + int(present.argmax())] if present.max() > 0 else None
    return VideoFeatures(np.asarray(stored.start), np.asarray(stored.end), actions, shapes)
