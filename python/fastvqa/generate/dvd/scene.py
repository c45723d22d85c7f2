# SPDX-License-Identifier: Apache-2.0
"""CATER scene graphs for DVD-style generation: objects, movements, the loader
and writer of CATER's scene JSON, and a CATER-like random scene generator.

Frames are integers ``0 .. num_frames - 1``. A movement's ``start`` and
``end`` are both inclusive: the object is at its old position at ``start``
and at its new one at ``end`` (CATER interpolates over ``start .. end``).

Vocabulary (dvd.md §1.2, §2.2): sizes ``large/medium/small``, materials
``metal/rubber``, shapes ``cone/cube/cylinder/sphere/spl`` (``"spl"`` is the
snitch), nine colours, actions ``flying/rotating/sliding``. CATER's operations
map as ``_slide`` -> sliding, ``_rotate`` -> rotating, ``_pick_place`` ->
flying and ``_contain`` -> flying with ``target`` = the covered object;
``_no_op`` is not a movement.

CATER's scene JSON is read as CATER's generator (``render_videos.py``,
``actions.py``) writes it, one file per video, and as DVD's
``update_scene.py`` reads it; docs/generate.md lists every field. Where CATER
differs from what one might assume:

- ``locations`` (per object, frame -> ``[x, y, z]``, every frame) has
  string keys ``"0" .. "300"`` (CATER's integer keys after JSON). CATER's
  ``--num_frames 300`` is the last frame, not a count: a video has 301
  frames, so ``Scene.num_frames`` is the number of ``locations`` entries (301).
  ``3d_coords`` (the frame-0 position) is read only when ``locations`` is
  absent.
- ``movements`` maps every object's ``instance`` (its Blender name,
  ``"Spl_0"``, ``"Cone_1"``, ``"SmoothCube_v2_0"``,
  ``"SmoothCylinder-Short_0"``) to a list, possibly empty, of
  ``[operation, other, start, end]``. Only ``_contain`` has an ``other``:
  the instance the cone lands on (the top of what stands there, which may be
  a smaller cone); only cones contain, never themselves. A cone's later
  ``_slide`` is recorded, with the same frames, for each object under it;
  its ``_pick_place`` releases them, recorded as ``_no_op``. CATER also
  records ``_no_op`` for an object it found no collision-free move for.
- ``directions`` are ground-plane unit vectors from the camera at frame 0
  (the camera-motion variants keep them): ``behind`` is the camera's view
  direction, ``left`` its left, ``front``/``right`` their negatives;
  ``above``/``below`` are ignored. CATER writes no camera pose: the camera
  shows only there and in ``pixel_coords``.
- Ignored: ``split``, ``image_index``, ``image_filename`` (a scene is named
  by its file, which CATER names as the video), ``relationships`` (frame-0
  relations; DVD and fastvqa recompute them per period), each object's
  ``sized``, ``rotation`` and ``pixel_coords``, and every key DVD's
  preprocessing adds (``obj_id_to_idx``, ``periods``, ``contained_events``,
  ...). DVD stores those preprocessed scenes as pickles, which
  :func:`load_cater_scene` refuses (unpickling runs code): give it the CATER
  JSON they were made from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Optional, Union

import numpy as np

from fastvqa.errors import InputError, InputTypeError

#: DVD's action names, sorted (answers join action sets in this order).
ACTIONS: tuple[str, ...] = ("flying", "rotating", "sliding")
#: CATER operation -> DVD action (``_no_op`` is skipped).
CATER_ACTIONS: Mapping[str, str] = MappingProxyType({
    "_slide": "sliding", "_rotate": "rotating", "_pick_place": "flying", "_contain": "flying"})
_CATER_NO_OP = "_no_op"

SIZES: tuple[str, ...] = ("large", "medium", "small")
COLORS: tuple[str, ...] = ("blue", "brown", "cyan", "gold", "gray", "green", "purple", "red", "yellow")
MATERIALS: tuple[str, ...] = ("metal", "rubber")
SHAPES: tuple[str, ...] = ("cone", "cube", "cylinder", "sphere", "spl")
#: Relation names DVD uses (``above``/``below`` are excluded, dvd.md §2.3).
RELATIONS: tuple[str, ...] = ("left", "right", "front", "behind")

_SIZE_RANK = {"small": 0, "medium": 1, "large": 2}
_BLENDER_SHAPE = {"cone": "Cone", "cube": "Cube", "cylinder": "Cylinder", "sphere": "Sphere",
                  "spl": "Spl"}
_SHAPE_ALIASES = {"snitch": "spl"}

_c, _s = math.cos(math.radians(40.0)), math.sin(math.radians(40.0))
#: CLEVR-like camera-relative ground-plane directions (unit vectors, z = 0),
#: used by :func:`synthetic_scene`: ``behind`` points away from the camera,
#: ``left`` is perpendicular to it; ``front``/``right`` are their opposites.
DEFAULT_DIRECTIONS: Mapping[str, tuple[float, float, float]] = MappingProxyType({
    "behind": (-_s, _c, 0.0), "front": (_s, -_c, 0.0),
    "left": (-_c, -_s, 0.0), "right": (_c, _s, 0.0)})
del _c, _s


@dataclass(frozen=True)
class Movement:
    """One action of one object: ``obj`` (object index), ``action`` (one of
    :data:`ACTIONS`), ``start``/``end`` (inclusive frames, ``start <= end``)
    and ``target`` (for a cone's ``_contain``, the index of the object it
    covers; else None)."""

    obj: int
    action: str
    start: int
    end: int
    target: Optional[int] = None

    def sort_key(self) -> tuple:
        """The order :class:`Scene` keeps its movements in: (start, end, obj, action)."""
        return (self.start, self.end, self.obj, self.action)


@dataclass(frozen=True, eq=False)
class SceneObject:
    """An object: its index in the scene, its four attributes (DVD
    vocabulary) and ``positions``, a read-only float64 array of shape
    ``(num_frames, 3)``: its 3-D location at every frame. ``instance`` is
    CATER's name for it (``"Cone_0"``)."""

    index: int
    size: str
    color: str
    material: str
    shape: str
    positions: np.ndarray
    instance: str = ""

    def attributes(self) -> dict[str, str]:
        """``{"size", "color", "material", "shape"}`` -> value."""
        return {"size": self.size, "color": self.color, "material": self.material,
                "shape": self.shape}


@dataclass(frozen=True, eq=False)
class Scene:
    """A CATER video's scene graph: objects (index = position in
    ``objects``), movements sorted by (start, end, obj, action),
    ``num_frames`` frames (0-based), ``fps`` and the camera-relative
    ``directions`` (``left``/``right``/``front``/``behind`` -> unit 3-vector)."""

    name: str
    objects: tuple[SceneObject, ...]
    movements: tuple[Movement, ...]
    num_frames: int
    fps: float = 24.0
    directions: Mapping[str, tuple[float, float, float]] = field(
        default_factory=lambda: DEFAULT_DIRECTIONS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "objects", tuple(self.objects))
        n, nf = len(self.objects), self.num_frames
        if isinstance(nf, bool) or not isinstance(nf, (int, np.integer)) or nf < 1:
            raise InputError(f"Scene {self.name!r}: num_frames must be an integer >= 1, got {nf!r}")
        for i, o in enumerate(self.objects):
            if not isinstance(o, SceneObject) or o.index != i:
                raise InputError(f"Scene {self.name!r}: objects[{i}] must be a SceneObject "
                                 f"with index {i}")
            if np.shape(o.positions) != (nf, 3):
                raise InputError(f"Scene {self.name!r}: objects[{i}].positions must have shape "
                                 f"({nf}, 3), got {np.shape(o.positions)}")
        for m in self.movements:
            if not isinstance(m, Movement) or not 0 <= m.obj < n or m.action not in ACTIONS \
                    or not 0 <= m.start <= m.end < nf \
                    or (m.target is not None and not 0 <= m.target < n):
                raise InputError(f"Scene {self.name!r}: bad movement {m!r} ({n} objects, "
                                 f"frames 0..{nf - 1}, actions {', '.join(ACTIONS)})")
        object.__setattr__(self, "movements",
                           tuple(sorted(self.movements, key=Movement.sort_key)))
        object.__setattr__(self, "directions", MappingProxyType(
            {k: tuple(float(x) for x in v) for k, v in dict(self.directions).items()}))
        by_obj: dict[int, list[Movement]] = {o.index: [] for o in self.objects}
        for m in self.movements:
            by_obj.setdefault(m.obj, []).append(m)
        object.__setattr__(self, "_by_obj", {k: tuple(v) for k, v in by_obj.items()})

    def movements_of(self, obj: int) -> tuple[Movement, ...]:
        """The object's movements, sorted by start frame."""
        return self._by_obj.get(obj, ())  # type: ignore[attr-defined]

    def position(self, obj: int, frame: int) -> np.ndarray:
        """The object's location ``(3,)`` at ``frame`` (clipped to
        ``0 .. num_frames - 1``, so a period's ``None`` end, ``num_frames``,
        reads the last frame)."""
        f = min(max(int(frame), 0), self.num_frames - 1)
        return self.objects[obj].positions[f]


# ----------------------------------------------------------------------------- loader

def _fail(where: str, field_: str, reason: str) -> InputError:
    return InputError(f"{where}: {field_}: {reason}")


def _vocab(value: Any, choices: tuple, where: str, field_: str) -> str:
    if isinstance(value, str):
        v = value.strip().lower()
        v = _SHAPE_ALIASES.get(v, v) if choices is SHAPES else v
        if v in choices:
            return v
    raise _fail(where, field_, f"expected one of {', '.join(choices)}, got {value!r}")


def _frame(value: Any, where: str, field_: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value != int(value) or value < 0:
        raise _fail(where, field_, f"expected a frame number (integer >= 0), got {value!r}")
    return int(value)


def _xyz(value: Any, where: str, field_: str) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != 3 or any(
            isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x)
            for x in value):
        raise _fail(where, field_, f"expected [x, y, z] (3 finite numbers), got {value!r}")
    return [float(x) for x in value]


def _frame_key(key: Any, where: str, field_: str) -> int:
    # JSON turns CATER's integer keys into "0", "1", ...; int() alone would
    # also take " 1", "1_0" or 1.5
    if isinstance(key, str) and key.isascii() and key.isdigit():
        return int(key)
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and key >= 0:
        return int(key)
    raise _fail(where, field_, f"frame key {key!r} is not a frame number (CATER writes "
                "\"0\" .. \"300\")")


def _locations(obj: Mapping, where: str, f: str) -> Optional[np.ndarray]:
    locs = obj.get("locations")
    if locs is None:
        return None
    if isinstance(locs, list):
        items = list(enumerate(locs))
    elif isinstance(locs, Mapping):
        items = [(_frame_key(k, where, f"{f}.locations"), v) for k, v in locs.items()]
    else:
        raise _fail(where, f"{f}.locations", "expected a mapping frame -> [x, y, z], got "
                    f"{type(locs).__name__}")
    if not items:
        raise _fail(where, f"{f}.locations", "is empty")
    items.sort(key=lambda kv: kv[0])
    frames = [k for k, _ in items]
    if frames != list(range(len(frames))):
        raise _fail(where, f"{f}.locations", "frames must be 0, 1, ..., N-1 without gaps")
    return np.array([_xyz(v, where, f"{f}.locations[{k}]") for k, v in items], dtype=np.float64)


def _objects(d: Mapping, where: str) -> tuple[SceneObject, ...]:
    objs = d.get("objects")
    if objs is None and isinstance(d.get("scenes"), list):
        raise _fail(where, "objects", "missing: this is a combined scenes file ('info' + "
                    "'scenes'); give the per-video scene files (CATER's scenes/*.json)")
    if not isinstance(objs, list):
        raise _fail(where, "objects", "expected a list of objects, got "
                    f"{type(objs).__name__ if objs is not None else 'nothing'}")
    if not objs:
        raise _fail(where, "objects", "is empty (a CATER scene has at least the snitch)")
    raw = []
    for i, o in enumerate(objs):
        f = f"objects[{i}]"
        if not isinstance(o, Mapping):
            raise _fail(where, f, f"expected an object (dict), got {type(o).__name__}")
        attrs = {}
        for key, choices in (("size", SIZES), ("color", COLORS), ("material", MATERIALS),
                             ("shape", SHAPES)):
            if key not in o:
                raise _fail(where, f"{f}.{key}", "missing")
            attrs[key] = _vocab(o[key], choices, where, f"{f}.{key}")
        inst = o.get("instance", f"{_BLENDER_SHAPE[attrs['shape']]}_{i}")
        if not isinstance(inst, str) or not inst:
            raise _fail(where, f"{f}.instance", f"expected a name, got {inst!r}")
        raw.append((attrs, inst, _locations(o, where, f), o))
    lengths = {len(p) for _, _, p, _ in raw if p is not None}
    if len(lengths) > 1:
        raise _fail(where, "objects[].locations", f"objects disagree on the number of frames "
                    f"({sorted(lengths)})")
    num_frames = lengths.pop() if lengths else 301
    objects = []
    for i, (attrs, inst, pos, o) in enumerate(raw):
        if pos is None:
            if "3d_coords" not in o:
                raise _fail(where, f"objects[{i}]", "has neither locations nor 3d_coords")
            pos = np.tile(np.array(_xyz(o["3d_coords"], where, f"objects[{i}].3d_coords")),
                          (num_frames, 1))
        pos.setflags(write=False)
        objects.append(SceneObject(i, attrs["size"], attrs["color"], attrs["material"],
                                   attrs["shape"], pos, inst))
    return tuple(objects)


def _movements(mv: Any, objects: tuple[SceneObject, ...], num_frames: int,
               where: str) -> list[Movement]:
    index: dict[str, int] = {}
    for o in objects:
        if o.instance in index:
            raise _fail(where, "objects[].instance", f"{o.instance!r} appears twice")
        index[o.instance] = o.index
    if not isinstance(mv, Mapping):
        raise _fail(where, "movements", "expected a mapping instance -> list of movements, "
                    f"got {type(mv).__name__}")
    out = []
    for inst, lst in mv.items():
        f = f"movements[{inst!r}]"
        if inst not in index:
            raise _fail(where, f, "names no object instance")
        if not isinstance(lst, list):
            raise _fail(where, f, "expected a list of [operation, other, start, end]")
        obj = objects[index[inst]]
        for j, m in enumerate(lst):
            fj = f"{f}[{j}]"
            if not isinstance(m, (list, tuple)) or len(m) != 4:
                raise _fail(where, fj, f"expected [operation, other, start, end], got {m!r}")
            op, other, start, end = m
            if op == _CATER_NO_OP:
                continue
            if not isinstance(op, str) or op not in CATER_ACTIONS:
                raise _fail(where, fj, f"unknown operation {op!r} (expected one of "
                            f"{', '.join(sorted(CATER_ACTIONS))}, _no_op)")
            s, e = _frame(start, where, f"{fj}.start"), _frame(end, where, f"{fj}.end")
            if e < s or e >= num_frames:
                raise _fail(where, fj, f"frames {s}..{e} are not inside 0..{num_frames - 1} "
                            f"(the scene has {num_frames} frames of locations)")
            target = None
            if op == "_contain":
                if obj.shape != "cone":
                    raise _fail(where, fj, f"_contain by a {obj.shape}: only cones contain")
                if not isinstance(other, str) or other not in index:
                    raise _fail(where, fj, f"_contain names no object instance: {other!r}")
                if other == inst:
                    raise _fail(where, fj, "_contain names the cone itself")
                target = index[other]
            out.append(Movement(obj.index, CATER_ACTIONS[op], s, e, target))
    return out


def scene_from_dict(d: Mapping, name: str = "scene", *, where: Optional[str] = None) -> Scene:
    """A :class:`Scene` from a CATER scene JSON dict, as CATER writes it or as
    DVD's preprocessing extends it (see the module notes for what is read and
    what is ignored).

    ``num_frames`` is the length of the objects' ``locations`` (all must
    agree; 301 for CATER); without any ``locations`` every object stays at
    ``3d_coords`` over 301 frames. Object index = position in ``objects``;
    ``movements`` may omit objects that never move. ``fps`` is read from
    ``d["fps"]`` (fastvqa's writer adds it; CATER has none), else 24. Raises
    :class:`~fastvqa.errors.InputError`, one line naming ``where`` (default
    ``name``) and the field, for anything unusable; keys it does not read are
    ignored.

    >>> d = {"objects": [{"shape": "spl", "size": "small", "material": "metal",
    ...                   "color": "gold", "instance": "Spl_0", "3d_coords": [0.0, 0.0, 0.3],
    ...                   "rotation": 12.5, "pixel_coords": [160, 120, 11.2]}],
    ...      "movements": {"Spl_0": [["_slide", None, 3, 27], ["_no_op", None, 40, 60]]},
    ...      "directions": {"left": [-1, 0, 0], "right": [1, 0, 0], "front": [0, -1, 0],
    ...                     "behind": [0, 1, 0], "above": [0, 0, 1], "below": [0, 0, -1]},
    ...      "split": "new", "image_index": 1, "image_filename": "CATER_new_000001.avi"}
    >>> s = scene_from_dict(d, "CATER_new_000001")
    >>> s.num_frames, s.movements
    (301, (Movement(obj=0, action='sliding', start=3, end=27, target=None),))
    """
    where = where or name
    if not isinstance(d, Mapping):
        raise InputError(f"{where}: expected a CATER scene (a JSON object), got "
                         f"{type(d).__name__}")
    objects = _objects(d, where)
    num_frames = len(objects[0].positions)
    movements = _movements(d.get("movements", {}), objects, num_frames, where)
    dirs = d.get("directions")
    if not isinstance(dirs, Mapping):
        raise _fail(where, "directions", "missing (expected left/right/front/behind vectors)"
                    if dirs is None else f"expected a mapping name -> [x, y, z], got "
                    f"{type(dirs).__name__}")
    directions = {}
    for rel in RELATIONS:
        if rel not in dirs:
            raise _fail(where, f"directions.{rel}", "missing")
        directions[rel] = tuple(_xyz(dirs[rel], where, f"directions.{rel}"))
    fps = d.get("fps", 24.0)
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not math.isfinite(fps) \
            or fps <= 0:
        raise _fail(where, "fps", f"expected a positive number, got {fps!r}")
    return Scene(str(name), objects, tuple(movements), num_frames, float(fps), directions)


def load_cater_scene(path: Union[str, Path]) -> Scene:
    """Read one CATER scene JSON file (CATER's ``scenes/<video>.json``); the
    scene's name is the file's stem (CATER names it as the video:
    ``CATER_new_000001.json`` for ``CATER_new_000001.avi``). Raises
    :class:`~fastvqa.errors.InputError` (one line naming the file and the
    field) for malformed content, a pickle (DVD's preprocessed ``.pkl``
    scenes are not read: unpickling runs code) or CATER's combined scenes
    file; a missing file raises ``FileNotFoundError``.

    >>> import json, pathlib, tempfile
    >>> scene = {"objects": [{"shape": "cone", "size": "large", "material": "rubber",
    ...                       "color": "red", "instance": "Cone_0",
    ...                       "locations": {str(f): [1.0, 2.0, 0.75] for f in range(301)}}],
    ...          "movements": {"Cone_0": []},
    ...          "directions": {"left": [-1, 0, 0], "right": [1, 0, 0], "front": [0, -1, 0],
    ...                         "behind": [0, 1, 0]}}
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder, "CATER_new_000007.json")
    ...     _ = path.write_text(json.dumps(scene))
    ...     s = load_cater_scene(path)
    >>> s.name, s.num_frames, s.objects[0].shape
    ('CATER_new_000007', 301, 'cone')
    """
    p = Path(path)
    data = p.read_bytes()
    if data[:1] == b"\x80":   # every pickle protocol >= 2 starts so; JSON never does
        raise InputError(f"{p}: a pickle, not JSON (DVD's preprocessed .pkl scenes are not "
                         "read, as unpickling runs code): give the CATER scene JSON it came from")
    try:
        d = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:  # "[[[[..." 100000 deep: no scene nests more than 4 levels
        raise InputError(f"{p}: JSON nested too deeply to read (a CATER scene nests a few "
                         "levels)") from None
    return scene_from_dict(d, p.stem, where=str(p))


def scene_to_dict(scene: Scene) -> dict:
    """The scene in CATER's JSON layout (see the module notes), readable by
    :func:`scene_from_dict`: ``locations`` keyed by frame number strings,
    ``movements`` as ``[operation, other_instance, start, end]`` (flying is
    written ``_pick_place``, or ``_contain`` with its target), plus
    ``image_filename`` (``<name>.avi``) and ``fps``."""
    inst = [o.instance or f"{_BLENDER_SHAPE[o.shape]}_{o.index}" for o in scene.objects]
    objects = []
    for o, name in zip(scene.objects, inst):
        objects.append({
            "shape": o.shape, "size": o.size, "material": o.material, "color": o.color,
            "instance": name, "3d_coords": [float(x) for x in o.positions[0]],
            "locations": {str(f): [float(x) for x in o.positions[f]]
                          for f in range(scene.num_frames)},
        })
    back = {"sliding": "_slide", "rotating": "_rotate", "flying": "_pick_place"}
    movements: dict[str, list] = {name: [] for name in inst}
    for m in sorted(scene.movements, key=lambda m: (m.obj, m.start, m.end)):
        op = "_contain" if m.target is not None else back[m.action]
        movements[inst[m.obj]].append(
            [op, inst[m.target] if m.target is not None else None, int(m.start), int(m.end)])
    return {"image_filename": f"{scene.name}.avi", "fps": float(scene.fps), "objects": objects,
            "movements": movements,
            "directions": {k: [float(x) for x in v] for k, v in scene.directions.items()}}


# ----------------------------------------------------------------------------- synthetic

_RADIUS = {"small": 0.35, "medium": 0.5, "large": 0.7}
_LIFT = 2.0
_MOVE_MIN, _MOVE_MAX = 20, 30


def _count_range(num_objects: Any) -> tuple[int, int]:
    if isinstance(num_objects, (tuple, list)) and len(num_objects) == 2:
        lo, hi = num_objects
    else:
        lo = hi = num_objects
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InputTypeError("synthetic_scene: num_objects must be an int or (lo, hi), "
                                 f"got {num_objects!r}")
    if not 1 <= lo <= hi:
        raise InputError(f"synthetic_scene: num_objects must satisfy 1 <= lo <= hi, "
                         f"got {num_objects!r}")
    return int(lo), int(hi)


def synthetic_scene(rng: np.random.Generator, *, num_objects: Any = (3, 6),
                    num_frames: int = 301, name: Optional[str] = None) -> Scene:
    """A random CATER-like scene, deterministic in ``rng`` (a NumPy
    ``Generator``).

    ``num_objects``: an int or an inclusive ``(lo, hi)`` range. As in CATER,
    object 0 is the small gold metal snitch (``"spl"``), objects 1 and 2 (when
    present) a medium and a large cone; the rest have random attributes.
    Movements are scheduled in rounds (each round, a random subset of the free
    objects moves once, 20-30 frames, starting 0-10 frames into the round; the
    next round starts after the round's last end), so one object's movements
    never overlap (``next.start > previous.end``). Rules: spheres and cones
    never rotate; only a cone contains, by flying onto a smaller cone, sphere or
    snitch that stays still that round (``Movement.target``); a contained
    object does not move by itself, slides with its cone (a ``sliding``
    movement with the cone's frames, as CATER records) and is released, left
    in place, when its cone flies again. Positions: x, y uniform in [-3, 3],
    z = the size's radius; a static object keeps its position, sliding moves
    in a straight line at constant height, flying moves in a straight
    ground-plane line while lifted (up over the first fifth, down over the
    last fifth), rotating keeps its position."""
    if not isinstance(rng, np.random.Generator):
        raise InputTypeError(f"synthetic_scene: rng must be a numpy.random.Generator, "
                             f"got {type(rng).__name__}")
    lo, hi = _count_range(num_objects)
    if isinstance(num_frames, bool) or not isinstance(num_frames, (int, np.integer)) \
            or num_frames < 2:
        raise InputError(f"synthetic_scene: num_frames must be an integer >= 2, got {num_frames!r}")
    num_frames = int(num_frames)
    n = int(rng.integers(lo, hi + 1))
    attrs = []
    for i in range(n):
        if i == 0:
            attrs.append(("small", "gold", "metal", "spl"))
        elif i in (1, 2):
            attrs.append(("medium" if i == 1 else "large", COLORS[rng.integers(len(COLORS))],
                          MATERIALS[rng.integers(2)], "cone"))
        else:
            attrs.append((SIZES[rng.integers(3)], COLORS[rng.integers(len(COLORS))],
                          MATERIALS[rng.integers(2)], ("cone", "cube", "cylinder", "sphere")[
                              rng.integers(4)]))
    pos = np.zeros((n, num_frames, 3))
    for i in range(n):
        pos[i, :, :2] = rng.uniform(-3.0, 3.0, size=2)
        pos[i, :, 2] = _RADIUS[attrs[i][0]]
    container: dict[int, Optional[int]] = {i: None for i in range(n)}   # obj -> its cone
    holds: dict[int, Optional[int]] = {i: None for i in range(n)}       # cone -> contained obj
    movements: list[Movement] = []
    last = num_frames - 1

    def move(i: int, action: str, s: int, e: int, dest: Optional[np.ndarray],
             target: Optional[int] = None) -> None:
        movements.append(Movement(i, action, s, e, target))
        if action == "rotating":
            return
        p0 = pos[i, s].copy()
        t = np.linspace(0.0, 1.0, e - s + 1)
        seg = p0[None, :] + t[:, None] * np.concatenate([dest - p0[:2], [0.0]])[None, :]
        seg[-1, :2] = dest      # exactly (a cone lands exactly on what it covers)
        if action == "flying":
            rise = np.clip(np.minimum(t, 1.0 - t) / 0.2, 0.0, 1.0)
            seg[:, 2] = p0[2] + _LIFT * rise
        pos[i, s:e + 1] = seg
        pos[i, e + 1:] = seg[-1]
        if action == "sliding" and holds[i] is not None:   # the contained object comes along
            j = holds[i]
            movements.append(Movement(j, "sliding", s, e))
            pj = np.concatenate([seg[:, :2], np.full((len(seg), 1), pos[j, s, 2])], axis=1)
            pos[j, s:e + 1] = pj
            pos[j, e + 1:] = pj[-1]

    cur = 0
    while cur <= last - _MOVE_MAX:
        free = [i for i in range(n) if container[i] is None]
        order = [free[k] for k in rng.permutation(len(free))]
        movers = order[:int(rng.integers(1, len(order) + 1))] if order else []
        busy = set(movers)
        round_end = cur
        for i in movers:
            s = cur + int(rng.integers(0, 11))
            e = min(s + int(rng.integers(_MOVE_MIN, _MOVE_MAX + 1)), last)
            if e <= s:
                continue
            size, _, _, shape = attrs[i]
            candidates = []
            if shape == "cone" and holds[i] is None:
                candidates = [j for j in range(n) if j != i and j not in busy
                              and container[j] is None and holds[j] is None
                              and attrs[j][3] in ("cone", "sphere", "spl")
                              and _SIZE_RANK[attrs[j][0]] < _SIZE_RANK[size]]
            if candidates and rng.random() < 0.35:
                j = candidates[int(rng.integers(len(candidates)))]
                busy.add(j)
                move(i, "flying", s, e, pos[j, s, :2].copy(), target=j)
                holds[i], container[j] = j, i
            else:
                choices = ("sliding", "flying") if shape in ("cone", "sphere") \
                    else ("sliding", "flying", "rotating")
                action = choices[int(rng.integers(len(choices)))]
                dest = rng.uniform(-3.0, 3.0, size=2)
                if action == "flying" and holds[i] is not None:   # release what it covers
                    container[holds[i]] = None
                    holds[i] = None
                move(i, action, s, e, dest)
            round_end = max(round_end, e)
        cur = round_end + 1
    objects = []
    for i, (size, color, material, shape) in enumerate(attrs):
        p = pos[i].copy()
        p.setflags(write=False)
        same = sum(1 for k in range(i) if attrs[k][3] == shape)
        objects.append(SceneObject(i, size, color, material, shape, p,
                                   f"{_BLENDER_SHAPE[shape]}_{same}"))
    if name is None:
        name = f"synthetic_{int(rng.integers(0, 10**9)):09d}"
    return Scene(name, tuple(objects), tuple(movements), num_frames, 24.0, DEFAULT_DIRECTIONS)


__all__ = ["ACTIONS", "CATER_ACTIONS", "COLORS", "DEFAULT_DIRECTIONS", "MATERIALS", "Movement",
           "RELATIONS", "SHAPES", "SIZES", "Scene", "SceneObject", "load_cater_scene",
           "scene_from_dict", "scene_to_dict", "synthetic_scene"]
