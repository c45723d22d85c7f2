# SPDX-License-Identifier: Apache-2.0
"""DVD's functional programs: the modules of the paper's Table 5 (32) and of
the released ``metadata.json`` (48 names), typed values and an executor over a
:class:`~fastvqa.generate.dvd.scene.Scene`.

A program is a list of nodes ``{"type", "inputs", "side_inputs"}`` as in the
released DVD JSON (``program``, ``final_all_program``): ``inputs`` are indices
of earlier nodes, ``side_inputs`` strings (the template's filled slots).
:func:`execute` returns every node's output, JSON-ready:

============  ===================================================
type          value
============  ===================================================
ObjectSet     ``list[int]`` of object indices (input order kept)
Object        ``int``
Integer       ``int``
Bool          ``bool``
Interval      ``[start, end]`` frames, ``end == -1`` = video end
ActionSet     ``"flying,rotating"`` (sorted, comma-joined) or ``"no action"``
ActionSeq     ``list[str]`` of actions in time order (``[]`` = no action)
Action        ``"flying"`` ... or ``"no action"``
Size/Color/   the attribute string
Material/Shape
============  ===================================================

Intervals. A node whose module works "during an interval" takes it as an
extra input, the index of an Interval-valued node (``count_action`` with
inputs ``[obj, interval]``); without one it uses ``execute``'s ``period``
(default: the whole video up to the cutoff). The video end is ``cutoff`` when
given, else ``scene.num_frames``.

Semantics chosen where dvd.md flags an ambiguity (⚠):

- an object's actions in an interval are its movements overlapping it by
  more than ``overlap`` (5) frames (:func:`~fastvqa.generate.dvd.intervals.actions_in`);
  "no action" is never part of a set or sequence, and stands alone for none;
- ``filter_action`` with ``"static"``/``"no action"`` keeps objects without
  actions, with ``"contained"`` objects covered by a cone in the interval,
  else objects doing that action at least once; ``action_filter_*`` and
  ``actions_filter_*`` are the same filter (a comma-joined ``Action`` means
  "does every listed action");
- ``count_action`` counts movements of the action (all movements without one);
- ``action_by_freq`` with a number ``k`` (``"once"``, ``"twice"``,
  ``"three times"`` ...) is the set of actions done exactly ``k`` times; with
  ``"the most"``/``"the least"`` the actions with the largest / smallest
  positive count; "no action" when none qualifies;
- ``action_by_order``: the k-th action (``"first"`` ... ``"tenth"``,
  ``"last"``) of the sequence, "no action" past its end;
- ``query_action`` is the action set (one action in an atomic interval);
- ``union_interval`` returns the *overlap* of the two intervals, as Table 5's
  description says (not their union); no overlap is a :class:`ProgramError`;
- ``relate_temporal`` maps ``(s, e)`` by ``before`` -> ``(0, s)``,
  ``after`` -> ``(e, end)``, ``during`` -> ``(s, e)``, ``until`` ->
  ``(0, e)``, ``since`` and ``update`` -> ``(s, end)`` (a video update asks
  the last question again over the extended video: the same start, the new
  end), ``whole`` -> ``(0, end)`` (as the released programs: "before" the gray thing's flight [114, 143] is
  [0, 114]); "before" an interval starting at frame 0 and "after" one lasting
  to the video end are a :class:`ProgramError` (empty);
- ``find_interval`` ``"<ordinal> <action noun>"`` (``"first flight"``,
  ``"last slide"``, ``"rotation"``: the only one) is that movement's
  ``[start, end]``, counting the movements that start inside the visible
  video (``start <= cutoff``); one still going on at the cutoff ends at
  ``-1`` (the video end);
- ``relate_spatial``/``relate`` need a reference static in the interval
  (:class:`ProgramError` otherwise) and never return the reference;
- ``same_action_set``/``same_action_seq`` return the *other* objects with the
  same set / sequence (two idle objects share "no action");
- dialogue modules read a :class:`DialogueState`: ``refer_object`` the last
  turn's objects (a plural pronoun gives the list, a singular one the single
  object), ``track_object`` every object mentioned so far,
  ``track_interval``/``refer_interval`` the last turn's interval; a plural
  pronoun ("them") resolves to the object set the last turn counted.

An ill-posed program (``unique`` of no or several objects, an action that
does not happen, a moving spatial reference, an empty reference) raises
:class:`ProgramError`; a malformed program (unknown module, bad inputs)
raises :class:`~fastvqa.errors.InputError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError, InputTypeError
from fastvqa.generate.dvd import intervals as _iv
from fastvqa.generate.dvd.scene import ACTIONS, COLORS, MATERIALS, RELATIONS, SHAPES, SIZES, Scene


class ProgramError(InputError):
    """The program is ill-posed on this scene and dialogue state (a
    generator rejects the question): the message says which node and why."""


# ----------------------------------------------------------------------------- signatures

_META = (  # (name, inputs, side_inputs or None, output, terminal or None, template_only)
    ("scene", (), None, "ObjectSet", False, False),
    ("filter_color", ("ObjectSet",), ("Color",), "ObjectSet", False, False),
    ("filter_shape", ("ObjectSet",), ("Shape",), "ObjectSet", False, False),
    ("filter_size", ("ObjectSet",), ("Size",), "ObjectSet", False, False),
    ("filter_material", ("ObjectSet",), ("Material",), "ObjectSet", False, False),
    ("unique", ("ObjectSet",), None, "Object", False, False),
    ("relate", ("Object",), ("Relation",), "ObjectSet", False, False),
    ("union", ("ObjectSet", "ObjectSet"), None, "ObjectSet", False, False),
    ("intersect", ("ObjectSet", "ObjectSet"), None, "ObjectSet", False, False),
    ("count", ("ObjectSet",), None, "Integer", True, False),
    ("action_count", ("Object",), None, "Integer", True, False),
    ("query_shape", ("Object",), None, "Shape", True, False),
    ("query_color", ("Object",), None, "Color", True, False),
    ("query_size", ("Object",), None, "Size", True, False),
    ("query_material", ("Object",), None, "Material", True, False),
    ("query_action", ("Object",), None, "Action", True, False),
    ("query_action_set", ("Object",), None, "ActionSet", True, False),
    ("query_action_order", ("ActionSeq",), None, "Action", True, False),
    ("query_action_freq", ("ActionSeq",), None, "ActionSet", True, False),
    ("exist", ("ObjectSet",), None, "Bool", True, False),
    ("equal_color", ("Color", "Color"), None, "Bool", True, False),
    ("equal_shape", ("Shape", "Shape"), None, "Bool", True, False),
    ("equal_integer", ("Integer", "Integer"), None, "Bool", True, False),
    ("less_than", ("Integer", "Integer"), None, "Bool", True, False),
    ("greater_than", ("Integer", "Integer"), None, "Bool", True, False),
    ("equal_size", ("Size", "Size"), None, "Bool", True, False),
    ("equal_material", ("Material", "Material"), None, "Bool", True, False),
    ("equal_action", ("Action", "Action"), None, "Bool", True, False),
    ("equal_object", ("Object", "Object"), None, "Bool", True, False),
    ("same_size", ("Object",), None, "ObjectSet", False, False),
    ("same_color", ("Object",), None, "ObjectSet", False, False),
    ("same_material", ("Object",), None, "ObjectSet", False, False),
    ("same_shape", ("Object",), None, "ObjectSet", False, False),
    ("filter", ("ObjectSet",), ("Size", "Color", "Material", "Shape"), "ObjectSet", False, True),
    ("filter_unique", ("ObjectSet",), ("Size", "Color", "Material", "Shape"), "Object", False, True),
    ("filter_count", ("ObjectSet",), ("Size", "Color", "Material", "Shape"), "Integer", True, True),
    ("filter_exist", ("ObjectSet",), ("Size", "Color", "Material", "Shape"), "Bool", True, True),
    ("relate_filter", ("Object",), ("Relation", "Size", "Color", "Material", "Shape"),
     "ObjectSet", False, True),
    ("relate_filter_unique", ("Object",), ("Relation", "Size", "Color", "Material", "Shape"),
     "Object", False, True),
    ("relate_filter_count", ("Object",), ("Relation", "Size", "Color", "Material", "Shape"),
     "Integer", False, True),
    ("relate_filter_exist", ("Object",), ("Relation", "Size", "Color", "Material", "Shape"),
     "Bool", False, True),
    ("action_filter_count", ("Object",), ("Action", "Size", "Color", "Material", "Shape"),
     "Integer", None, False),
    ("actions_filter_count", ("Object",), ("Action", "Size", "Color", "Material", "Shape"),
     "Integer", None, False),
    ("action_filter_exist", ("Object",), ("Action", "Size", "Color", "Material", "Shape"),
     "Bool", None, False),
    ("actions_filter_exist", ("Object",), ("Action", "Size", "Color", "Material", "Shape"),
     "Bool", None, False),
    ("action_filter_unique", ("Object",), ("Action", "Size", "Color", "Material", "Shape"),
     "Object", None, False),
    ("relate_action_filter_count", ("Object",),
     ("Relation", "Action", "Size", "Color", "Material", "Shape"), "Integer", None, False),
    ("relate_action_filter_exist", ("Object",),
     ("Relation", "Action", "Size", "Color", "Material", "Shape"), "Bool", None, False),
)


def _meta_dict(row: tuple) -> dict:
    name, inputs, side, output, terminal, template_only = row
    d: dict[str, Any] = {"name": name, "inputs": list(inputs)}
    if side is not None:
        d["side_inputs"] = list(side)
    d["output"] = output
    if terminal is not None:
        d["terminal"] = terminal
    if name == "unique":
        d["properties"] = []
    if template_only:
        d["template_only"] = True
    return d


#: The released ``metadata.json`` "functions" list, copied (48 signatures, in
#: the file's order and layout).
METADATA_FUNCTIONS: tuple[dict, ...] = tuple(_meta_dict(r) for r in _META)


class ModuleSpec(NamedTuple):
    """A module's signature: ``inputs`` (value types; a trailing
    ``"Interval?"`` marks the optional interval input), ``side_inputs``,
    ``output`` type, ``terminal`` (None where the metadata leaves it out),
    ``paper``: its Table 5 name where it is one of the 32 (None for the
    metadata's template shorthands and the release's raw names)."""

    name: str
    inputs: tuple[str, ...]
    side_inputs: tuple[str, ...]
    output: str
    terminal: Optional[bool]
    paper: Optional[str]


#: Table 5's 32 module names -> the module that executes each.
PAPER_MODULES: Mapping[str, str] = {
    "Count Object": "count_object", "Count Action": "count_action", "Exist": "exist",
    "Filter Color": "filter_color", "Filter Material": "filter_material",
    "Filter Shape": "filter_shape", "Filter Size": "filter_size",
    "Filter Action": "filter_action", "Same Action Set": "same_action_set",
    "Same Action Sequence": "same_action_seq", "Unique": "unique", "Scene": "scene",
    "Find Interval": "find_interval", "Union Interval": "union_interval",
    "Relate Spatial": "relate_spatial", "Relate Temporal": "relate_temporal",
    "Greater Than": "greater_than", "Less Than": "less_than", "Equal": "equal_integer",
    "Refer Object": "refer_object", "Track Object": "track_object",
    "Refer Interval": "refer_interval", "Track Interval": "track_interval",
    "Query Action Set": "query_action_set", "Query Action Sequence": "query_action_seq",
    "Action by Frequency": "action_by_freq", "Action by Order": "action_by_order",
    "Equal Action": "equal_action", "Query Color": "query_color",
    "Query Material": "query_material", "Query Shape": "query_shape", "Query Size": "query_size",
}
#: The 17 modules the paper marks as new (13 video, 4 dialogue).
NEW_VIDEO_MODULES = ("Count Action", "Filter Action", "Same Action Set", "Same Action Sequence",
                     "Find Interval", "Union Interval", "Relate Spatial", "Relate Temporal",
                     "Query Action Set", "Query Action Sequence", "Action by Frequency",
                     "Action by Order", "Equal Action")
NEW_DIALOGUE_MODULES = ("Refer Object", "Track Object", "Refer Interval", "Track Interval")

_EXTRA = (  # modules the metadata lacks: DVD's video/dialogue modules and the release's names
    ("count_object", ("ObjectSet",), (), "Integer", True),
    ("count_action", ("Object", "Interval?"), ("Action",), "Integer", True),
    ("filter_action", ("ObjectSet", "Interval?"), ("Action",), "ObjectSet", False),
    ("filter_actions", ("ObjectSet", "Interval?"), ("Action",), "ObjectSet", False),
    ("same_action_set", ("Object", "Interval?"), (), "ObjectSet", False),
    ("same_action_seq", ("Object", "Interval?"), (), "ObjectSet", False),
    ("find_interval", ("Object",), ("Order Action",), "Interval", False),
    ("union_interval", ("Interval", "Interval"), (), "Interval", False),
    ("relate_spatial", ("Object", "Interval?"), ("Relation",), "ObjectSet", False),
    ("relate_temporal", ("Interval",), ("Temporal Relation",), "Interval", False),
    ("query_action_seq", ("Object", "Interval?"), (), "ActionSeq", True),
    ("action_by_freq", ("Object", "Interval?"), ("Frequency",), "ActionSet", True),
    ("action_by_order", ("Object", "Interval?"), ("Order",), "Action", True),
    ("refer_object", (), ("Reference",), "ObjectSet", False),
    ("unique_obj_ref", (), ("Reference",), "ObjectSet", False),
    ("earlier_obj_ref", (), (), "Object", False),
    ("track_object", (), (), "ObjectSet", False),
    ("refer_interval", (), ("Reference",), "Interval", False),
    ("track_interval", (), (), "Interval", False),
    ("identity", ("Any",), (), "Any", False),
)
# Metadata modules that also take the optional interval (the video ones).
_TIMED = {"relate", "action_count", "query_action", "query_action_set", "query_action_order",
          "query_action_freq", "relate_filter", "relate_filter_unique", "relate_filter_count",
          "relate_filter_exist", "action_filter_count", "actions_filter_count",
          "action_filter_exist", "actions_filter_exist", "action_filter_unique",
          "relate_action_filter_count", "relate_action_filter_exist"}
# Metadata names with a Table 5 name.
_META_PAPER = {v: k for k, v in PAPER_MODULES.items()}
_META_PAPER.update({"count": "Count Object", "action_count": "Count Action",
                    "relate": "Relate Spatial", "query_action_order": "Action by Order",
                    "query_action_freq": "Action by Frequency", "equal_action": "Equal Action"})


def _build_modules() -> dict[str, ModuleSpec]:
    out = {}
    for name, inputs, side, output, terminal, _ in _META:
        ins = tuple(inputs) + (("Interval?",) if name in _TIMED else ())
        out[name] = ModuleSpec(name, ins, tuple(side or ()), output, terminal,
                               _META_PAPER.get(name))
    for name, inputs, side, output, terminal in _EXTRA:
        out[name] = ModuleSpec(name, inputs, side, output, terminal, _META_PAPER.get(name))
    return out


#: Every executable module name -> its :class:`ModuleSpec`: the metadata's 48
#: (signatures as in the file, plus the optional interval input of the video
#: modules), DVD's modules the metadata lacks, and the release's raw names
#: (``identity``, ``filter_actions``, ``unique_obj_ref``, ``earlier_obj_ref``).
MODULES: Mapping[str, ModuleSpec] = _build_modules()


@dataclass(frozen=True)
class DialogueState:
    """What the dialogue modules read. ``last_objects``: the objects the last
    turn singles out, which ``refer_object`` resolves a singular pronoun
    ("it", "its") to; ``last_group``: the object set the last turn counted,
    which a plural pronoun ("them") resolves to (``last_objects`` when
    empty); ``tracked_objects``: every object mentioned so far, in order of
    first mention (``track_object``); ``last_interval``: the last turn's
    interval in frames (``end == -1`` = video end; ``track_interval``,
    ``refer_interval``); ``earlier_object``: the object the release's raw
    ``earlier_obj_ref`` stands for.
    :func:`fastvqa.generate.dvd.history.turn_state` rebuilds it from the
    written turns."""

    last_objects: tuple[int, ...] = ()
    tracked_objects: tuple[int, ...] = ()
    last_interval: Optional[tuple[int, int]] = None
    earlier_object: Optional[int] = None
    last_group: tuple[int, ...] = ()


# ----------------------------------------------------------------------------- values

_ORDINALS = {w: i for i, w in enumerate(
    ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
     "tenth"), start=1)}
_FREQUENCIES = {"once": 1, "twice": 2, "three times": 3, "four times": 4, "five times": 5}
_ACTION_NOUNS = {
    "flight": "flying", "flights": "flying", "fly": "flying", "flying": "flying",
    "slide": "sliding", "slides": "sliding", "sliding": "sliding",
    "rotation": "rotating", "rotations": "rotating", "rotating": "rotating",
    "rotate": "rotating", "spin": "rotating", "spinning": "rotating"}
_GENERIC = {"", "thing", "things", "object", "objects"}
_PLURAL = {"them", "they", "their", "those", "these"}
_ATTR_VOCAB = {"size": SIZES, "color": COLORS, "material": MATERIALS, "shape": SHAPES}
_ATTR_ALIASES = {"snitch": "spl"}


def action_set_string(actions: Sequence[str]) -> str:
    """An action set as DVD writes answers: the distinct actions sorted and
    comma-joined, ``"no action"`` for none (``"no action"`` entries are
    dropped)."""
    acts = sorted({a for a in actions if a != "no action"})
    return ",".join(acts) if acts else "no action"


def to_answer(value: Any) -> str:
    """A module output as one of the 40 answers
    (:data:`fastvqa.metrics.dialogue.DVD_ANSWERS`): booleans ``"True"``/
    ``"False"``, integers ``"0"``..``"10"``, action sets and sequences through
    :func:`action_set_string`, attributes as they are.
    :class:`~fastvqa.errors.InputError` for a value outside the 40 (an integer
    above 10, an object set, an interval)."""
    from fastvqa.metrics.dialogue import DVD_ANSWERS
    if isinstance(value, (bool, np.bool_)):
        ans = "True" if value else "False"
    elif isinstance(value, (int, np.integer)):
        ans = str(int(value))
    elif isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        ans = action_set_string(parts) if all(p in ACTIONS or p == "no action" for p in parts) \
            else value
    elif isinstance(value, (list, tuple)) and all(isinstance(a, str) for a in value):
        ans = action_set_string(value)
    else:
        raise InputError(f"to_answer: {value!r} is not an answer value (Bool, Integer, "
                         "ActionSet/Sequence or attribute)")
    if ans not in DVD_ANSWERS:
        raise InputError(f"to_answer: {ans!r} is not one of the 40 DVD answers")
    return ans


# ----------------------------------------------------------------------------- execution

class _Ctx:
    __slots__ = ("scene", "period", "state", "cutoff", "rng", "overlap", "node")

    def __init__(self, scene, period, state, cutoff, rng, overlap):
        self.scene, self.period, self.state = scene, period, state
        self.cutoff, self.rng, self.overlap = cutoff, rng, overlap
        self.node = ""

    def need_scene(self) -> Scene:
        if self.scene is None:
            raise InputError(f"{self.node}: needs a scene")
        return self.scene

    @property
    def video_end(self) -> int:
        if self.cutoff is not None:
            return int(self.cutoff)
        return self.need_scene().num_frames

    def frames(self, interval: Optional[tuple]) -> tuple[int, int]:
        s, e = interval if interval is not None else self.period
        return int(s), (self.video_end if e is None or e == -1 else int(e))

    def fail(self, reason: str) -> ProgramError:
        return ProgramError(f"{self.node}: {reason}")


def _obj(ctx: _Ctx, v: Any) -> int:
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise ctx.fail(f"expected one object, got {len(v)}")
        v = v[0]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise InputError(f"{ctx.node}: expected an object index, got {v!r}")
    if ctx.scene is not None and not 0 <= v < len(ctx.scene.objects):
        raise InputError(f"{ctx.node}: object index {v} is not in the scene")
    return int(v)


def _objs(ctx: _Ctx, v: Any) -> list[int]:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return [int(v)]
    if not isinstance(v, (list, tuple)):
        raise InputError(f"{ctx.node}: expected a list of object indices, got {v!r}")
    return [_obj(ctx, x) for x in v]


def _int(ctx: _Ctx, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise InputError(f"{ctx.node}: expected an integer, got {v!r}")
    return int(v)


def _side(ctx: _Ctx, side: list, k: int, default: Any = None) -> Any:
    return side[k] if k < len(side) else default


def _attr_ok(ctx: _Ctx, o: int, attr: str, value: Any) -> bool:
    if value is None or (isinstance(value, str) and (value.strip().lower() in _GENERIC
                                                     or value.startswith("<"))):
        return True
    v = _ATTR_ALIASES.get(str(value).strip().lower(), str(value).strip().lower())
    if v not in _ATTR_VOCAB[attr]:
        raise InputError(f"{ctx.node}: {value!r} is not a {attr}")
    return getattr(ctx.need_scene().objects[o], attr) == v


def _filter_attrs(ctx: _Ctx, objs: list[int], zcms: Sequence) -> list[int]:
    keys = ("size", "color", "material", "shape")
    return [o for o in objs if all(_attr_ok(ctx, o, k, v) for k, v in zip(keys, zcms))]


def _actions(ctx: _Ctx, o: int, interval) -> tuple[str, ...]:
    return _iv.actions_in(ctx.need_scene(), o, ctx.frames(interval), ctx.overlap,
                          cutoff=ctx.cutoff)


def _does(ctx: _Ctx, o: int, action: Any, interval) -> bool:
    if not isinstance(action, str):
        raise InputError(f"{ctx.node}: the action must be a string, got {action!r}")
    a = action.strip().lower()
    if a in ("static", "no action", "stationary"):
        return not _actions(ctx, o, interval)
    if a == "contained":
        return _iv.contained_in(ctx.need_scene(), o, ctx.frames(interval), ctx.overlap,
                                cutoff=ctx.cutoff)
    if a in ("moving", "any"):
        return bool(_actions(ctx, o, interval))
    wanted = [_ACTION_NOUNS.get(p.strip(), p.strip()) for p in a.split(",")]
    for w in wanted:
        if w not in ACTIONS:
            raise InputError(f"{ctx.node}: unknown action {action!r}")
    acts = _actions(ctx, o, interval)
    return all(w in acts for w in wanted)


def _filter_action(ctx: _Ctx, objs: list[int], action: Any, interval) -> list[int]:
    return [o for o in objs if _does(ctx, o, action, interval)]


def _relate(ctx: _Ctx, ref: int, relation: Any, interval) -> list[int]:
    _checks.choice(relation, str(ctx.node), "relation", RELATIONS)
    scene = ctx.need_scene()
    period = ctx.frames(interval)
    if not _iv.is_static(scene, ref, period):
        raise ctx.fail(f"the reference object {ref} moves during frames {period[0]}-{period[1]}")
    return [o.index for o in scene.objects if o.index != ref and _iv.spatial_relation(
        scene, ref, o.index, period, relation, rng=ctx.rng)]


def _unique(ctx: _Ctx, objs: list[int]) -> int:
    if len(objs) != 1:
        raise ctx.fail(f"unique needs exactly one object, got {len(objs)}")
    return objs[0]


def _seq_of(ctx: _Ctx, v: Any, interval) -> tuple[str, ...]:
    """An ActionSeq input: an action list, or an object (its sequence)."""
    if isinstance(v, (list, tuple)) and all(isinstance(a, str) for a in v) and v:
        return tuple(v)
    if isinstance(v, (list, tuple)) and not v:
        return ()
    return _actions(ctx, _obj(ctx, v), interval)


def _by_order(ctx: _Ctx, seq: tuple[str, ...], order: Any) -> str:
    w = str(order).strip().lower()
    if w == "last":
        return seq[-1] if seq else "no action"
    if w not in _ORDINALS:
        raise InputError(f"{ctx.node}: unknown order {order!r} (first ... tenth, last)")
    k = _ORDINALS[w]
    return seq[k - 1] if k <= len(seq) else "no action"


def _by_freq(ctx: _Ctx, seq: tuple[str, ...], freq: Any) -> str:
    counts = {a: seq.count(a) for a in set(seq)}
    w = str(freq).strip().lower()
    if w in ("the most", "most", "the least", "least"):
        if not counts:
            return "no action"
        target = max(counts.values()) if w.endswith("most") else min(counts.values())
        return action_set_string([a for a, c in counts.items() if c == target])
    if isinstance(freq, (int, np.integer)) and not isinstance(freq, bool):
        k = int(freq)
    elif w in _FREQUENCIES:
        k = _FREQUENCIES[w]
    else:
        raise InputError(f"{ctx.node}: unknown frequency {freq!r}")
    return action_set_string([a for a, c in counts.items() if c == k])


def _find_interval(ctx: _Ctx, o: int, phrase: Any) -> list[int]:
    words = " ".join(phrase if isinstance(phrase, (list, tuple)) else [str(phrase)]).lower().split()
    words = [w for w in words if w not in ("the", "its", "'s")]
    if not words or words[-1] not in _ACTION_NOUNS:
        raise InputError(f"{ctx.node}: expected '<ordinal> <action>' such as 'first flight', "
                         f"got {phrase!r}")
    action = _ACTION_NOUNS[words[-1]]
    order = words[0] if len(words) > 1 else None
    end = ctx.video_end
    moves = [m for m in ctx.need_scene().movements_of(o) if m.action == action]
    visible = [m for m in moves if m.start <= end]
    if order is None:
        if len(visible) != 1:
            raise ctx.fail(f"object {o} has {len(visible)} {action} movements, not one")
        m = visible[0]
    elif order == "last":
        if not visible:
            raise ctx.fail(f"object {o} has no {action} movement")
        m = visible[-1]
    elif order in _ORDINALS:
        k = _ORDINALS[order]
        if k > len(visible):
            raise ctx.fail(f"object {o} has no {order} {action} movement in the video")
        m = visible[k - 1]
    else:
        raise InputError(f"{ctx.node}: unknown ordinal {order!r}")
    return [int(m.start), int(m.end) if m.end <= end else -1]


def _relate_temporal(ctx: _Ctx, interval: tuple, relation: Any) -> list[int]:
    s, e = int(interval[0]), int(interval[1])
    r = str(relation).strip().lower()
    table = {"before": [0, s], "after": [e, -1], "during": [s, e], "until": [0, e],
             "since": [s, -1], "update": [s, -1], "whole": [0, -1]}
    if r not in table:
        raise InputError(f"{ctx.node}: unknown temporal relation {relation!r} "
                         f"({', '.join(table)})")
    if e == -1 and r == "after":
        raise ctx.fail("nothing comes after an interval that lasts to the video end")
    if s <= 0 and r == "before":
        raise ctx.fail("nothing comes before an interval that starts with the video")
    return table[r]


def _union_interval(ctx: _Ctx, a: tuple, b: tuple) -> list[int]:
    inf = float("inf")
    s = max(int(a[0]), int(b[0]))
    e = min(inf if a[1] == -1 else int(a[1]), inf if b[1] == -1 else int(b[1]))
    if e < s:
        raise ctx.fail(f"intervals {list(a)} and {list(b)} do not overlap")
    return [s, -1 if e == inf else int(e)]


def _refer(ctx: _Ctx, side: list) -> Any:
    state = ctx.state or DialogueState()
    word = side[0] if side else "it"
    word = str(word).strip().lower()
    if word in _PLURAL and state.last_group:
        return list(state.last_group)
    objs = list(state.last_objects)
    if not objs:
        raise ctx.fail("no object in the last turn to refer to")
    if word in _PLURAL:
        return objs
    if word.startswith("the ") and word.endswith(" one") and word.split()[1] in _ORDINALS:
        k = _ORDINALS[word.split()[1]]
        if k > len(objs):
            raise ctx.fail(f"the last turn has no {word.split()[1]} object")
        return objs[k - 1]
    if len(objs) != 1:
        raise ctx.fail(f"{word!r} is ambiguous: the last turn mentions {len(objs)} objects")
    return objs[0]


def _last_interval(ctx: _Ctx) -> list[int]:
    state = ctx.state or DialogueState()
    if state.last_interval is None:
        raise ctx.fail("no interval in the last turn")
    return [int(state.last_interval[0]), int(state.last_interval[1])]


def _same(ctx: _Ctx, o: int, key: Callable[[int], Any]) -> list[int]:
    k = key(o)
    return [x.index for x in ctx.need_scene().objects if x.index != o and key(x.index) == k]


def _same_attr(attr: str):
    def run(ctx, a, side, iv):
        o = _obj(ctx, a[0])
        return _same(ctx, o, lambda x: getattr(ctx.need_scene().objects[x], attr))
    return run


def _query_attr(attr: str):
    def run(ctx, a, side, iv):
        return getattr(ctx.need_scene().objects[_obj(ctx, a[0])], attr)
    return run


def _filter_attr(k: int):
    def run(ctx, a, side, iv):
        zcms = [None] * 4
        zcms[k] = _side(ctx, side, 0)
        return _filter_attrs(ctx, _objs(ctx, a[0]), zcms)
    return run


def _equal(ctx, a, side, iv):
    return a[0] == a[1]


def _equal_action(ctx, a, side, iv):
    def norm(v):
        if isinstance(v, (list, tuple)):
            return ("seq", tuple(x for x in v if x != "no action"))
        return ("set", action_set_string([p.strip() for p in str(v).split(",")]))
    x, y = norm(a[0]), norm(a[1])
    if x[0] != y[0]:   # a set against a sequence: compare as sets
        return action_set_string(x[1] if x[0] == "seq" else x[1].split(",")) == \
            action_set_string(y[1] if y[0] == "seq" else y[1].split(","))
    return x == y


def _count_action(ctx, a, side, iv):
    o = _obj(ctx, a[0])
    action = _side(ctx, side, 0)
    if action is None:
        return len(_actions(ctx, o, iv))
    w = _ACTION_NOUNS.get(str(action).strip().lower(), str(action).strip().lower())
    if w == "contained":
        s, e = ctx.frames(iv)
        return sum(1 for c in _iv.containment_periods(ctx.need_scene())
                   if c.obj == o and min(c.end, e) - max(c.start, s) > ctx.overlap)
    if w not in ACTIONS:
        raise InputError(f"{ctx.node}: unknown action {action!r}")
    return _actions(ctx, o, iv).count(w)


def _action_filter(tail: str, relate: bool):
    def run(ctx, a, side, iv):
        if relate:
            objs = _relate(ctx, _obj(ctx, a[0]), _side(ctx, side, 0), iv)
            side = side[1:]
        else:
            objs = _objs(ctx, a[0])
        objs = _filter_action(ctx, objs, _side(ctx, side, 0, "moving"), iv)
        objs = _filter_attrs(ctx, objs, side[1:5])
        return _tail(ctx, objs, tail)
    return run


def _relate_filter(tail: str):
    def run(ctx, a, side, iv):
        objs = _relate(ctx, _obj(ctx, a[0]), _side(ctx, side, 0), iv)
        return _tail(ctx, _filter_attrs(ctx, objs, side[1:5]), tail)
    return run


def _filter_tail(tail: str):
    def run(ctx, a, side, iv):
        return _tail(ctx, _filter_attrs(ctx, _objs(ctx, a[0]), side[0:4]), tail)
    return run


def _tail(ctx: _Ctx, objs: list[int], tail: str) -> Any:
    if tail == "count":
        return len(objs)
    if tail == "exist":
        return bool(objs)
    if tail == "unique":
        return _unique(ctx, objs)
    return objs


def _union(ctx, a, side, iv):
    x, y = _objs(ctx, a[0]), _objs(ctx, a[1])
    return x + [o for o in y if o not in x]


def _intersect(ctx, a, side, iv):
    y = set(_objs(ctx, a[1]))
    return [o for o in _objs(ctx, a[0]) if o in y]


def _earlier(ctx, a, side, iv):
    state = ctx.state or DialogueState()
    if state.earlier_object is None:
        raise ctx.fail("no earlier object in the dialogue state")
    return int(state.earlier_object)


_FUNCS: dict[str, Callable] = {
    "scene": lambda ctx, a, side, iv: list(range(len(ctx.need_scene().objects))),
    "filter_size": _filter_attr(0), "filter_color": _filter_attr(1),
    "filter_material": _filter_attr(2), "filter_shape": _filter_attr(3),
    "unique": lambda ctx, a, side, iv: _unique(ctx, _objs(ctx, a[0])),
    "relate": lambda ctx, a, side, iv: _relate(ctx, _obj(ctx, a[0]), _side(ctx, side, 0), iv),
    "relate_spatial": lambda ctx, a, side, iv: _relate(ctx, _obj(ctx, a[0]),
                                                       _side(ctx, side, 0), iv),
    "union": _union, "intersect": _intersect,
    "count": lambda ctx, a, side, iv: len(_objs(ctx, a[0])),
    "count_object": lambda ctx, a, side, iv: len(_objs(ctx, a[0])),
    "exist": lambda ctx, a, side, iv: bool(_objs(ctx, a[0])),
    "action_count": _count_action, "count_action": _count_action,
    "query_size": _query_attr("size"), "query_color": _query_attr("color"),
    "query_material": _query_attr("material"), "query_shape": _query_attr("shape"),
    "query_action": lambda ctx, a, side, iv: action_set_string(_actions(ctx, _obj(ctx, a[0]), iv)),
    "query_action_set": lambda ctx, a, side, iv: action_set_string(
        _actions(ctx, _obj(ctx, a[0]), iv)),
    "query_action_seq": lambda ctx, a, side, iv: list(_actions(ctx, _obj(ctx, a[0]), iv)),
    "query_action_order": lambda ctx, a, side, iv: _by_order(ctx, _seq_of(ctx, a[0], iv),
                                                             _side(ctx, side, 0, "first")),
    "action_by_order": lambda ctx, a, side, iv: _by_order(ctx, _seq_of(ctx, a[0], iv),
                                                          _side(ctx, side, 0, "first")),
    "query_action_freq": lambda ctx, a, side, iv: _by_freq(ctx, _seq_of(ctx, a[0], iv),
                                                           _side(ctx, side, 0, "the most")),
    "action_by_freq": lambda ctx, a, side, iv: _by_freq(ctx, _seq_of(ctx, a[0], iv),
                                                        _side(ctx, side, 0, "the most")),
    "equal_color": _equal, "equal_shape": _equal, "equal_size": _equal,
    "equal_material": _equal, "equal_object": _equal,
    "equal_integer": lambda ctx, a, side, iv: _int(ctx, a[0]) == _int(ctx, a[1]),
    "less_than": lambda ctx, a, side, iv: _int(ctx, a[0]) < _int(ctx, a[1]),
    "greater_than": lambda ctx, a, side, iv: _int(ctx, a[0]) > _int(ctx, a[1]),
    "equal_action": _equal_action,
    "same_size": _same_attr("size"), "same_color": _same_attr("color"),
    "same_material": _same_attr("material"), "same_shape": _same_attr("shape"),
    "same_action_set": lambda ctx, a, side, iv: _same(
        ctx, _obj(ctx, a[0]), lambda x: action_set_string(_actions(ctx, x, iv))),
    "same_action_seq": lambda ctx, a, side, iv: _same(
        ctx, _obj(ctx, a[0]), lambda x: _actions(ctx, x, iv)),
    "filter": _filter_tail("objects"), "filter_unique": _filter_tail("unique"),
    "filter_count": _filter_tail("count"), "filter_exist": _filter_tail("exist"),
    "relate_filter": _relate_filter("objects"), "relate_filter_unique": _relate_filter("unique"),
    "relate_filter_count": _relate_filter("count"), "relate_filter_exist": _relate_filter("exist"),
    "filter_action": lambda ctx, a, side, iv: _filter_action(ctx, _objs(ctx, a[0]),
                                                             _side(ctx, side, 0, "moving"), iv),
    "filter_actions": lambda ctx, a, side, iv: _filter_action(ctx, _objs(ctx, a[0]),
                                                              _side(ctx, side, 0, "moving"), iv),
    "action_filter_count": _action_filter("count", False),
    "actions_filter_count": _action_filter("count", False),
    "action_filter_exist": _action_filter("exist", False),
    "actions_filter_exist": _action_filter("exist", False),
    "action_filter_unique": _action_filter("unique", False),
    "relate_action_filter_count": _action_filter("count", True),
    "relate_action_filter_exist": _action_filter("exist", True),
    "find_interval": lambda ctx, a, side, iv: _find_interval(ctx, _obj(ctx, a[0]), side),
    "union_interval": lambda ctx, a, side, iv: _union_interval(ctx, a[0], a[1]),
    "relate_temporal": lambda ctx, a, side, iv: _relate_temporal(ctx, a[0],
                                                                 _side(ctx, side, 0, "during")),
    "refer_object": lambda ctx, a, side, iv: _refer(ctx, side),
    "unique_obj_ref": lambda ctx, a, side, iv: _refer(ctx, side),
    "earlier_obj_ref": _earlier,
    "track_object": lambda ctx, a, side, iv: list((ctx.state or DialogueState()).tracked_objects),
    "refer_interval": lambda ctx, a, side, iv: _last_interval(ctx),
    "track_interval": lambda ctx, a, side, iv: _last_interval(ctx),
    "identity": lambda ctx, a, side, iv: a[0],
}

# Modules whose values are intervals (the optional interval input is found by type).
_INTERVAL_MODULES = {n for n, s in MODULES.items() if s.output == "Interval"}


def _side_list(node: Mapping, where: str) -> list:
    side = node.get("side_inputs", [])
    if side is None:
        return []
    if isinstance(side, str):   # the release writes refer_object's pronoun as a bare string
        return [side]
    if not isinstance(side, (list, tuple)):
        raise InputError(f"{where}: side_inputs must be a list of strings, got {side!r}")
    return list(side)


def _default_period(scene: Optional[Scene], period: Any, cutoff: Optional[int]) -> tuple:
    if period is None:
        return (0, -1)
    if scene is None:
        s, e = _iv.period_frames(period, 1 << 30, cutoff=cutoff)
        return (s, -1 if e == 1 << 30 else e)
    return _iv.period_frames(period, scene.num_frames, cutoff=cutoff)


def run_module(name: str, inputs: Sequence = (), side_inputs: Sequence = (), *,
               interval: Optional[Sequence[int]] = None, scene: Optional[Scene] = None,
               period: Any = None, state: Optional[DialogueState] = None,
               cutoff: Optional[int] = None, rng: Optional[np.random.Generator] = None,
               overlap: int = 5) -> Any:
    """One module on given input values (outputs of earlier nodes, in the
    value layout of the module notes); ``interval`` is its optional interval
    input (``[start, end]`` frames, ``-1`` = video end), else ``period``
    (default: the whole video). ``scene`` may be None for modules that do not
    read it (comparisons, counts, ``unique``, ``relate_temporal``, the
    dialogue modules)."""
    if name not in MODULES:
        raise InputError(f"run_module: unknown DVD module {name!r}")
    ctx = _Ctx(scene, _default_period(scene, period, cutoff), state, cutoff, rng, overlap)
    ctx.node = name
    iv = None if interval is None else (int(interval[0]), int(interval[1]))
    return _FUNCS[name](ctx, list(inputs), list(side_inputs), iv)


def execute(program: Sequence[Mapping], scene: Optional[Scene], *, period: Any = None,
            state: Optional[DialogueState] = None, cutoff: Optional[int] = None,
            rng: Optional[np.random.Generator] = None, overlap: int = 5) -> list:
    """Run a program node by node; returns every node's output (a list as
    long as ``program``; the answer is the last, see :func:`to_answer`).

    ``program``: nodes ``{"type", "inputs", "side_inputs"}`` (extra keys such
    as ``_output`` are ignored), inputs pointing to earlier nodes. ``period``:
    the interval of nodes without an interval input, an Event pair, a DVD JSON
    pair or a ``(start, end)`` frame pair (default: the whole video).
    ``cutoff``: the frame the video is truncated at (the video end; None = the
    scene's ``num_frames``). ``state``: for the dialogue modules. ``rng``:
    where the spatial rule samples the reference's frame (see
    :func:`~fastvqa.generate.dvd.intervals.spatial_relation`). ``overlap``:
    the action-overlap threshold in frames.

    Raises :class:`ProgramError` for an ill-posed program, ``InputError``
    for a malformed one."""
    if scene is not None and not isinstance(scene, Scene):
        raise InputTypeError(f"execute: scene must be a Scene or None, got {type(scene).__name__}")
    if not isinstance(program, (list, tuple)):
        raise InputTypeError(f"execute: program must be a list of nodes, got "
                             f"{type(program).__name__}")
    ctx = _Ctx(scene, _default_period(scene, period, cutoff), state, cutoff, rng, overlap)
    outputs: list = []
    types: list[str] = []
    for i, node in enumerate(program):
        where = f"node {i}"
        if not isinstance(node, Mapping) or not isinstance(node.get("type"), str):
            raise InputError(f"execute: {where} must be a dict with a 'type', got {node!r}")
        name = node["type"]
        where = f"node {i} ({name})"
        if name not in MODULES:
            raise InputError(f"execute: {where}: unknown DVD module")
        ins = node.get("inputs", [])
        if not isinstance(ins, (list, tuple)) or any(
                isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < i for k in ins):
            raise InputError(f"execute: {where}: inputs must be indices of earlier nodes, "
                             f"got {ins!r}")
        ctx.node = f"execute: {where}"
        spec = MODULES[name]
        args, interval = [], None
        positional_interval = spec.inputs[:1] in (("Interval",), ("Any",))
        for k in ins:
            if types[k] == "Interval" and not positional_interval:
                if "Interval?" not in spec.inputs:
                    raise InputError(f"execute: {where}: takes no interval input (node {k})")
                interval = tuple(outputs[k])
            else:
                args.append(outputs[k])
        want = len([t for t in spec.inputs if not t.endswith("?")])
        if len(args) < want:
            raise InputError(f"execute: {where}: needs {want} input(s), got {len(args)}")
        value = _FUNCS[name](ctx, args, _side_list(node, f"execute: {where}"), interval)
        outputs.append(value)
        if name == "identity":
            types.append(types[ins[0]] if ins else "Any")
        elif name in _INTERVAL_MODULES:
            types.append("Interval")
        elif isinstance(value, int) and spec.output == "ObjectSet":
            types.append("Object")
        else:
            types.append(spec.output)
    return outputs


def with_outputs(program: Sequence[Mapping], outputs: Sequence) -> list[dict]:
    """Copies of the program's nodes with ``"_output"`` set (the released
    layout); ``outputs`` as :func:`execute` returns them."""
    if len(program) != len(outputs):
        raise InputError(f"with_outputs: {len(program)} nodes but {len(outputs)} outputs")
    return [{**dict(n), "_output": o} for n, o in zip(program, outputs)]


def answer(program: Sequence[Mapping], scene: Optional[Scene], **kwargs: Any) -> str:
    """The program's answer as one of the 40 DVD answers:
    ``to_answer(execute(program, scene, **kwargs)[-1])``."""
    out = execute(program, scene, **kwargs)
    if not out:
        raise InputError("answer: the program is empty")
    return to_answer(out[-1])


__all__ = ["DialogueState", "METADATA_FUNCTIONS", "MODULES", "ModuleSpec", "NEW_DIALOGUE_MODULES",
           "NEW_VIDEO_MODULES", "PAPER_MODULES", "ProgramError", "action_set_string", "answer",
           "execute", "run_module", "to_answer", "with_outputs"]
