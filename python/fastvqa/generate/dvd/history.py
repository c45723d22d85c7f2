# SPDX-License-Identifier: Apache-2.0
"""The dialogue history a DVD turn's cross-turn modules read (dvd.md §3.4;
Table 5's Refer Object, Track Object, Refer Interval, Track Interval),
rebuilt from the turns written before it.

A turn's ``final_all_program`` names no object it refers to: "it" is
``refer_object`` (the object the last turn singled out), "among them" is
``refer_object`` with ``"them"`` (the objects the last turn counted), "the
earlier mentioned cone" is ``track_object`` (every object mentioned so far)
filtered by what the question says, and "during this time" is
``track_interval`` (the last turn's interval). :func:`turn_state` reads those
from the written dialogue alone, so
``execute(turn["final_all_program"], scene, state=turn_state(dialogue, t,
scene.num_frames), cutoff=...)`` answers the turn as the question is asked.

What counts as singled out or counted is read from the previous turn's
``program`` (its question body, without the temporal phrase): the outputs of
its ``unique``, ``unique_obj_ref``, ``earlier_obj_ref`` and singular
``refer_object`` nodes, in program order; the counted set is the input of a
final ``count``/``count_object`` node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from fastvqa.errors import InputError
from fastvqa.generate.dvd import intervals as _iv
from fastvqa.generate.dvd.executor import DialogueState

#: Nodes whose output is an object the question singles out.
SINGLING_OUT = ("unique", "unique_obj_ref", "earlier_obj_ref", "refer_object")
#: Final nodes that count an object set ("among them" refers to that set).
COUNTING = ("count", "count_object")
#: The release's raw node names -> the paper's module names, as
#: ``final_all_program`` writes them (``all_program`` keeps the raw names).
FINAL_NAMES = {"unique_obj_ref": "refer_object", "count": "count_object",
               "action_count": "count_action", "filter_actions": "filter_action",
               "relate": "relate_spatial"}


def _is_object(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def singled_out(program: Sequence[Mapping]) -> tuple[int, ...]:
    """The objects a program (nodes with ``_output``) singles out, distinct,
    in program order.

    >>> singled_out([{"type": "scene", "_output": [0, 1, 2]},
    ...              {"type": "filter_color", "_output": [2]},
    ...              {"type": "unique", "_output": 2}])
    (2,)
    """
    out: list[int] = []
    for node in program:
        v = node.get("_output")
        if node.get("type") in SINGLING_OUT and _is_object(v) and v not in out:
            out.append(v)
    return tuple(out)


def counted_group(program: Sequence[Mapping]) -> tuple[int, ...]:
    """The object set a program's final ``count``/``count_object`` counts
    (``()`` when it ends otherwise).

    >>> counted_group([{"type": "scene", "inputs": [], "_output": [0, 1, 2]},
    ...                {"type": "filter_color", "inputs": [0], "_output": [0, 2]},
    ...                {"type": "count_object", "inputs": [1], "_output": 2}])
    (0, 2)
    """
    if not program:
        return ()
    last = program[-1]
    ins = last.get("inputs") or []
    if last.get("type") not in COUNTING or not ins or not 0 <= ins[0] < len(program) - 1:
        return ()
    v = program[ins[0]].get("_output")
    if isinstance(v, list) and all(_is_object(x) for x in v):
        return tuple(v)
    return ()


def state_after(program: Sequence[Mapping], *, tracked: Sequence[int] = (),
                last_interval: Optional[tuple[int, int]] = None,
                earlier_object: Optional[int] = None) -> DialogueState:
    """The state a turn reads, given the previous turn's ``program`` (nodes
    with ``_output``; ``()`` for the first turn), the objects mentioned so
    far (``tracked``, in order of first mention) and the previous turn's
    interval in frames."""
    return DialogueState(last_objects=singled_out(program), tracked_objects=tuple(tracked),
                         last_interval=last_interval, earlier_object=earlier_object,
                         last_group=counted_group(program))


def _field(turn: Any, key: str, where: str) -> Any:
    if not isinstance(turn, Mapping) or key not in turn:
        raise InputError(f"{where}: missing {key!r} (expected a turn in the DVD layout)")
    return turn[key]


def _interval(turn: Mapping, num_frames: int, where: str) -> Optional[tuple[int, int]]:
    template = _field(turn, "template", where)
    periods = _field(template, "used_periods", f"{where}.template")
    if not isinstance(periods, list) or not periods:
        raise InputError(f"{where}.template.used_periods: expected a non-empty list")
    period = periods[-1]
    if period is None:
        return None
    cutoff = template.get("cutoff")
    cut = None if cutoff is None else _iv.Event.from_json(cutoff).frame
    return _iv.period_frames(period, num_frames, cutoff=cut)


def turn_state(dialogue: Sequence[Mapping], t: int, num_frames: int) -> DialogueState:
    """The :class:`~fastvqa.generate.dvd.executor.DialogueState` turn ``t``
    (0-based) of a written dialogue (turns in the released layout) reads:
    the objects turn ``t - 1`` singled out and counted, its interval (frames,
    from its last ``used_periods`` entry and its cutoff; ``num_frames`` is
    the video's length, the end of an open period), the objects mentioned
    before turn ``t`` (the keys of its ``template.used_objects``, in order),
    and the object its raw ``earlier_obj_ref`` stands for
    (``template.earlier_unique_obj``). Raises
    :class:`~fastvqa.errors.InputError` naming a missing field."""
    if not 0 <= t < len(dialogue):
        raise InputError(f"turn_state: turn {t} is outside the dialogue's {len(dialogue)} turns")
    where = f"turn {t}"
    template = _field(dialogue[t], "template", where)
    used = _field(template, "used_objects", f"{where}.template")
    if not isinstance(used, Mapping):
        raise InputError(f"{where}.template.used_objects: expected a mapping object -> entry")
    try:
        tracked = [int(k) for k in used]
    except ValueError:
        raise InputError(f"{where}.template.used_objects: keys must be object indices") from None
    earlier = template.get("earlier_unique_obj", -1)
    earlier = int(earlier) if _is_object(earlier) and earlier >= 0 else None
    if t == 0:
        return state_after((), tracked=tracked, earlier_object=earlier)
    prev = dialogue[t - 1]
    program = _field(prev, "program", f"turn {t - 1}")
    return state_after(program, tracked=tracked, earlier_object=earlier,
                       last_interval=_interval(prev, num_frames, f"turn {t - 1}"))


__all__ = ["COUNTING", "FINAL_NAMES", "SINGLING_OUT", "counted_group", "singled_out",
           "state_after", "turn_state"]
