# SPDX-License-Identifier: Apache-2.0
"""The demo's 2-D scenes as CATER scene graphs, and DVD-style dialogues for them.

:func:`demo_scene_to_cater` turns one demo video's objects
(:class:`fastvqa.demo.synth.SceneObject`: colour, shape, lane, ``x0`` and a
timeline of ``[start, end)``-second segments) into a
:class:`fastvqa.generate.dvd.scene.Scene`, which :func:`write_scenes` writes as
CATER scene JSON (``scenes/<video>.json``) and :func:`demo_dialogues` feeds to
:func:`fastvqa.generate.dvd.generate_dialogues` (issue 17: "the demo's scene
generator produces CATER-like scenes: generate dialogues for them").

Conversion rules (fixed, so a hand computation can check them):

- **Attributes.** ``color`` = the demo colour and ``shape`` = the demo shape
  (every :data:`~fastvqa.demo.synth.PALETTE` colour and
  :data:`~fastvqa.demo.synth.SHAPES` shape is a DVD vocabulary word; checked).
  The demo has no size or material: every object is :data:`SIZE` ``"medium"``
  and :data:`MATERIAL` ``"rubber"``. A demo video's colours are distinct
  (:func:`fastvqa.demo.synth.make_scene`: 3 or 4 of the 5 colours), so the
  four attributes single out every object. The DVD generator describes only
  objects that their attributes single out and skips a scene with fewer than
  two (``scene_unidentifiable``); object lists given by hand with two objects
  of one colour and shape are converted all the same, and
  :func:`demo_dialogues` records 0 dialogues for a skipped scene.
- **Frames.** ``num_frames = round(duration * fps)``; frame ``k`` is the
  state at ``t = k / fps`` seconds (the demo video's own frames at the default
  ``fps = synth.NATIVE_FPS``). A time ``t`` maps to frame ``floor(t * fps +
  0.5)`` (half up; on the demo's 0.5 s grid and an integer or half-integer
  ``fps`` this is exact).
- **Movements.** A segment ``[start, end)`` seconds of action ``slide`` /
  ``rotate`` / ``fly`` becomes a movement ``sliding`` / ``rotating`` /
  ``flying`` from frame ``frame(start)`` to frame ``frame(end)``, both
  **inclusive** (CATER's convention: the object is at its old state at the
  start frame and at its new one at the end frame; the demo's ``state(end)``
  is the finished action). ``rest`` is no movement. The end is clipped to
  ``num_frames - 1`` (the demo always ends on a rest, so this never bites).
  The demo keeps rests of at least 1 s between an object's actions, so one
  object's movements never overlap. Unlike CATER, the demo's cones rotate.
- **Positions.** The ground plane is ``(X, Y)`` with ``Z`` up, in units of
  :data:`PX_PER_UNIT` = 40 px: ``X = (x - WIDTH / 2) / 40`` (image left to
  right, about -3.4 .. 3.4 like CATER's -3 .. 3), ``Y = (LANES - 1 - lane -
  (LANES - 1) / 2) * LANE_DEPTH`` with :data:`LANE_DEPTH` = 1.5 (lane 0, the
  top of the image, is the farthest from the camera: ``Y = 2.25``; lane 3 the
  nearest: ``Y = -2.25``), ``Z = BASE_Z + lift / 40`` (:data:`BASE_Z` = 0.5,
  the medium radius; a flight lifts by up to ``FLY_HEIGHT / 40`` = 0.55).
  ``x``, ``lift`` come from :meth:`SceneObject.state` at ``k / fps``.
- **Directions** (:data:`DIRECTIONS`): ``right = (1, 0, 0)``, ``left =
  (-1, 0, 0)``, ``behind = (0, 1, 0)`` (a lower lane number), ``front =
  (0, -1, 0)``. So with DVD's rule (``dot(p_other - p_ref, d) > 0.2``) an
  object in a lane of lower number is *behind* one in a higher lane (lanes are
  1.5 apart), and one whose ``x`` is more than 8 px larger is to its *right*.
- **Names.** The scene is named after the video (``video000``); instances are
  ``<Shape>_<k>`` with ``k`` counting that shape in object order (CATER's
  Blender names, e.g. ``Cone_0``).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa.demo import synth
from fastvqa.errors import InputError

#: The fixed attributes the demo's objects lack.
SIZE, MATERIAL = "medium", "rubber"
#: Pixels per ground-plane unit (x and the flight lift).
PX_PER_UNIT = 40.0
#: Ground-plane distance between two neighbouring lanes (units).
LANE_DEPTH = 1.5
#: Height of an object's centre at rest (units): CATER's medium radius.
BASE_Z = 0.5
#: demo action -> DVD action; ``rest`` is no movement.
ACTION_MAP: Mapping[str, str] = {"slide": "sliding", "rotate": "rotating", "fly": "flying"}
#: Camera-relative directions of the converted scenes (unit vectors).
DIRECTIONS: Mapping[str, tuple[float, float, float]] = {
    "right": (1.0, 0.0, 0.0), "left": (-1.0, 0.0, 0.0),
    "behind": (0.0, 1.0, 0.0), "front": (0.0, -1.0, 0.0)}
#: The demo's default: a few dialogues per scene keep the demo fast.
DIALOGUES_PER_SCENE = 2
#: Dialogues tried per scene before giving up (DVD's code: 100); the demo's
#: scenes are small, so a scene that fills none in this many gets 0.
MAX_ATTEMPTS = 8

_BLENDER = {"cone": "Cone", "cube": "Cube", "sphere": "Sphere"}


def time_to_frame(t: float, fps: float) -> int:
    """Frame of time ``t`` seconds: ``floor(t * fps + 0.5)`` (half up)."""
    return int(math.floor(float(t) * float(fps) + 0.5))


def ground_position(lane: int, x: float, y: float, rest_y: float) -> tuple[float, float, float]:
    """``(X, Y, Z)`` ground-plane position (units) of a demo object in
    ``lane`` whose centre is at image ``(x, y)`` px, ``rest_y`` its centre
    height at rest (module notes)."""
    X = (x - synth.WIDTH / 2.0) / PX_PER_UNIT
    Y = ((synth.LANES - 1 - lane) - (synth.LANES - 1) / 2.0) * LANE_DEPTH
    Z = BASE_Z + (rest_y - y) / PX_PER_UNIT
    return (X, Y, Z)


def _check_vocabulary(objects: Sequence) -> None:
    from fastvqa.generate.dvd.scene import COLORS, SHAPES

    for o in objects:
        if o.colour not in COLORS:
            raise InputError(f"demo_scene_to_cater: colour {o.colour!r} is not a DVD colour "
                             f"({', '.join(COLORS)})")
        if o.shape not in SHAPES or o.shape not in _BLENDER:
            raise InputError(f"demo_scene_to_cater: shape {o.shape!r} is not a demo shape "
                             f"that DVD knows ({', '.join(_BLENDER)})")


def demo_scene_to_cater(video_id: str, objects: Sequence, duration: float,
                        fps: float = synth.NATIVE_FPS):
    """One demo video as a CATER :class:`~fastvqa.generate.dvd.scene.Scene`.

    Args:
        video_id: the scene's name (the video id, e.g. ``"video000"``).
        objects: the video's :class:`fastvqa.demo.synth.SceneObject` list
            (object ``i`` becomes scene object ``i``).
        duration: the video's length in seconds.
        fps: frames per second of the scene (default the videos' 10).

    Returns:
        A Scene with ``num_frames = round(duration * fps)`` frames
        (``0 .. num_frames - 1``, frame ``k`` at ``k / fps`` s), ``fps``,
        :data:`DIRECTIONS`, positions ``(num_frames, 3)`` float64 and one
        movement per non-rest segment with inclusive start and end frames
        (module notes for every rule). Raises InputError for an empty object
        list, a colour or shape outside DVD's vocabulary or two objects alike.
    """
    from fastvqa.generate.dvd.scene import Movement, Scene, SceneObject

    if not objects:
        raise InputError(f"demo_scene_to_cater: {video_id}: no objects")
    if not (isinstance(fps, (int, float)) and not isinstance(fps, bool) and fps > 0
            and math.isfinite(fps)):
        raise InputError(f"demo_scene_to_cater: fps must be a positive number, got {fps!r}")
    _check_vocabulary(objects)
    num_frames = time_to_frame(duration, fps)
    if num_frames < 1:
        raise InputError(f"demo_scene_to_cater: {video_id}: {duration!r} s at {fps:g} fps "
                         "is no frame")
    scene_objects, movements, seen = [], [], Counter()
    for i, o in enumerate(objects):
        pos = np.empty((num_frames, 3), dtype=np.float64)
        for k in range(num_frames):
            x, y, _ = o.state(k / fps)
            pos[k] = ground_position(o.lane, x, y, o.rest_y)
        pos.setflags(write=False)
        instance = f"{_BLENDER[o.shape]}_{seen[o.shape]}"
        seen[o.shape] += 1
        scene_objects.append(SceneObject(i, SIZE, o.colour, MATERIAL, o.shape, pos, instance))
        for seg in o.segments:
            if seg.action == "rest":
                continue
            start = time_to_frame(seg.start, fps)
            end = min(time_to_frame(seg.end, fps), num_frames - 1)
            if start <= end:
                movements.append(Movement(i, ACTION_MAP[seg.action], start, end))
    return Scene(str(video_id), tuple(scene_objects), tuple(movements), num_frames,
                 float(fps), DIRECTIONS)


def write_scenes(folder, scenes: Mapping[str, Sequence], duration: float,
                 fps: float = synth.NATIVE_FPS) -> list:
    """Writes ``folder/<video>.json`` (CATER scene JSON,
    :func:`~fastvqa.generate.dvd.scene.scene_to_dict`) for every video of
    ``scenes`` (video id -> its demo objects); each file is new
    (:func:`fastvqa._outputs.write_new`). Returns the converted Scenes in
    the order given."""
    from fastvqa._outputs import write_new
    from fastvqa.generate.dvd.scene import scene_to_dict

    folder = Path(folder)
    out = []
    for vid, objects in scenes.items():
        scene = demo_scene_to_cater(vid, objects, duration, fps)
        write_new(folder / f"{vid}.json",
                  json.dumps(scene_to_dict(scene), separators=(",", ":")) + "\n",
                  what="CATER scene file")
        out.append(scene)
    return out


class DemoDialogues(NamedTuple):
    """What :func:`demo_dialogues` generated: ``dialogues`` (the released
    DVD layout: a list of dialogues, each a list of turn dicts, in scene-name
    order), ``per_scene`` (scene name -> dialogues kept; 0 for a scene the
    generator skipped or could not fill) and the generator's
    :class:`~fastvqa.generate.dvd.GenerationSummary`."""

    dialogues: list
    per_scene: dict
    summary: Any


def demo_dialogues(scenes: Sequence, *, seed: int,
                   dialogues_per_scene: int = DIALOGUES_PER_SCENE, turns: int = 10,
                   max_attempts: int = MAX_ATTEMPTS) -> DemoDialogues:
    """DVD-style dialogues for converted demo scenes
    (:func:`fastvqa.generate.dvd.generate_dialogues` with the demo's
    ``seed``, few dialogues per scene and at most ``max_attempts`` dialogue
    attempts per scene, so the stage stays fast). A scene with fewer than two
    identifiable objects (which a demo video never is) is skipped by the
    generator and one that fills no dialogue in ``max_attempts`` tries gets
    none: both are recorded as 0 in ``per_scene``, never an error."""
    from fastvqa.generate.dvd import generate_dialogues

    result = generate_dialogues(list(scenes), seed=seed, dialogues_per_scene=dialogues_per_scene,
                                turns=turns, max_attempts=max_attempts, progress=False)
    per_scene = {s.name: 0 for s in sorted(scenes, key=lambda s: s.name)}
    for dialogue in result.dialogues:
        per_scene[dialogue[0]["image"]] += 1
    return DemoDialogues(result.dialogues, per_scene, result.summary)


def dialogue_counts(result: DemoDialogues) -> dict:
    """The counts ``results.json`` records: dialogues, turns, scenes,
    dialogues per scene, scenes with none, and the generator's rejections by
    reason."""
    s = result.summary
    return {"dialogues": s.dialogues, "turns": s.turns, "scenes": s.scenes,
            "scenes_skipped": s.scenes_skipped, "scenes_short": s.scenes_short,
            "scenes_without_dialogues": sum(1 for n in result.per_scene.values() if n == 0),
            "per_scene": dict(result.per_scene), "video_updates": s.video_updates,
            "transfers": dict(s.transfers), "rejections": dict(s.rejections)}


def shown_dialogues(dialogues: Sequence, n: Optional[int] = 2) -> list:
    """The first ``n`` dialogues as rows for the report: per dialogue
    ``{"scene", "turns": [{"question", "answer", "dependencies"}]}``, the
    dependencies the turn's non-``"none"`` ``turn_dependencies`` as
    ``"kind: value"`` strings."""
    rows = []
    for dialogue in list(dialogues)[:n]:
        turns = []
        for turn in dialogue:
            deps = [f"{k}: {v}" for k, v in turn.get("turn_dependencies", {}).items()
                    if v != "none"]
            turns.append({"question": turn["question"], "answer": str(turn["answer"]),
                          "dependencies": deps})
        rows.append({"scene": dialogue[0]["image"] if dialogue else "", "turns": turns})
    return rows


__all__ = ["ACTION_MAP", "BASE_Z", "DIALOGUES_PER_SCENE", "DIRECTIONS", "DemoDialogues",
           "LANE_DEPTH", "MATERIAL", "MAX_ATTEMPTS", "PX_PER_UNIT", "SIZE", "demo_dialogues",
           "demo_scene_to_cater", "dialogue_counts", "ground_position", "shown_dialogues",
           "time_to_frame", "write_scenes"]
