# SPDX-License-Identifier: Apache-2.0
"""Rendering DVD's generated turns: a template text with its slots filled
into question text (:func:`render_text`, :func:`noun_phrase`,
:func:`action_phrase`), and a drafted turn into the released DVD JSON layout
(:func:`turn_json`; :func:`dialogues_to_json` / :func:`write_dialogues` for a
whole set, which :func:`fastvqa.data.load_dvd` reads).

Question text is lower-cased with "?" spaced off, as in the release; words
with synonyms (:data:`~fastvqa.generate.dvd.templates.SYNONYMS`) are drawn
from the caller's ``rng``, so rendering is part of a dialogue's random
stream.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Mapping, Optional, Sequence

from fastvqa.errors import InputError
from fastvqa.generate.dvd import executor as _ex
from fastvqa.generate.dvd import intervals as _iv
from fastvqa.generate.dvd import templates as T
from fastvqa.generate.dvd.state import Draft, SceneData, Turn, record_turn

_ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
                  "ninth", "tenth")
_INTEGER_ANSWERS = frozenset(str(i) for i in range(11))


# ----------------------------------------------------------------------------- question text

def _word(value: str, rng) -> str:
    words = T.SYNONYMS.get(value, (value,))
    return words[int(rng.integers(len(words)))]


def noun_phrase(desc: Mapping[int, str], rng, plural: bool = False) -> str:
    """``{index: value}`` (attribute index in
    :data:`~fastvqa.generate.dvd.state.ATTR_NAMES` order) -> "big red cone"
    (shape last; "thing"/"object" without one)."""
    words = [_word(desc[k], rng) for k in (0, 1, 2) if desc.get(k)]
    noun = _word(desc.get(3, "") or "", rng)
    if plural:
        noun = T.PLURALS.get(noun, noun + "s")
    return " ".join(words + [noun])


def earlier_word(rng) -> str:
    """One of the "earlier mentioned" phrases of a long-range reference."""
    return T.EARLIER_PHRASES[int(rng.integers(len(T.EARLIER_PHRASES)))]


def action_phrase(data: SceneData, d: Draft, ev) -> str:
    """"first flight" / "slide" (no ordinal when the object has only one
    visible movement of that action)."""
    noun = T.ACTION_FORMS[ev.action]["noun"][0]
    same = [e for e in data.events(d.cutoff)
            if e.obj == ev.obj and e.kind == f"start_{ev.action}"]
    if len(same) <= 1:
        return noun
    return f"{_ORDINAL_WORDS[min(ev.nth, 10) - 1]} {noun}"


def render_text(text: str, values: Mapping, pieces: Mapping, template: T.Template, rng) -> str:
    """Fills a template text: object phrases, filters, actions, relation,
    ordinal and frequency; lower-cased, "?" spaced off as the release.
    ``pieces``: already rendered object phrases (``"obj1"``/``"obj2"``)."""
    out = text
    for n, slots in (("obj1", T.OBJ1), ("obj2", T.OBJ2)):
        pat = "the " + " ".join(slots)
        if pat in out and n in pieces:
            out = out.replace(pat, pieces[n])
    for slots in (T.OBJ1, T.OBJ2):
        pat = " ".join(slots)
        desc = {i: values.get(s, "") for i, s in enumerate(slots) if values.get(s)}
        if pat + "s" in out:
            out = out.replace(pat + "s", noun_phrase(desc, rng, plural=True))
        if "the " + pat in out:
            out = out.replace("the " + pat, "the " + noun_phrase(desc, rng))
        if pat in out:
            out = out.replace(pat, noun_phrase(desc, rng))
    for slot in ("<A>", "<A2>"):
        if slot in out:
            form = template.forms.get(slot, "third" if slot == "<A2>" else "participle")
            forms = T.ACTION_FORMS[values[slot]][form]
            out = out.replace(slot, forms[int(rng.integers(len(forms)))])
    if "<R>" in out:
        out = out.replace("<R>", T.RELATION_PHRASES[values["<R>"]])
    for slot in ("<o>", "<f>"):
        if slot in out:
            out = out.replace(slot, values[slot])
    out = " ".join(out.lower().replace("?", " ?").split())
    return out


# ----------------------------------------------------------------------------- JSON layout

def _json_answer(answer: str) -> Any:
    if answer in _INTEGER_ANSWERS:
        return int(answer)
    if answer in ("True", "False"):
        return answer == "True"
    return answer


def _period_json(period, cutoff) -> Optional[list]:
    if period is None:
        return None
    s, e = period
    if e is None and cutoff is not None:
        e = cutoff
    return [None if s is None else s.to_json(), None if e is None else e.to_json()]


def _state_before(d: Draft, t: int) -> dict:
    state: dict = {}
    for i, turn in enumerate(d.turns[:t]):
        record_turn(state, turn, i + 1)
    return {str(k): copy.deepcopy(v) for k, v in state.items()}


def turn_json(data: SceneData, d: Draft, t: int, position: int, *, split: str,
              cater_split: str) -> dict:
    """Turn ``t`` (0-based) of the finished dialogue ``d`` in the released
    DVD layout: question, answer (int / bool / string), programs with their
    outputs, template record (used periods and objects), turn dependencies,
    contained objects and the ``effective_*`` flags. ``position``: the
    scene's ``image_index``; ``split`` / ``cater_split``: the fields
    written."""
    turn: Turn = d.turns[t]
    scene = data.scene
    state_before = _state_before(d, t)
    periods = [_period_json(x.period, x.cutoff) for x in d.turns[:t + 1]]
    program = _ex.with_outputs(turn.nodes, turn.outputs)
    temporal = _temporal_outputs(data, d, t)
    offset = len(temporal)
    final = [dict(n) for n in temporal] + [
        {**n, "inputs": [i + offset for i in n.get("inputs", [])]} for n in program]
    template = {
        "text": list(turn.text0),
        "nodes": [dict(n) for n in turn.template.program],
        "interval_type": turn.template.interval_type,
        "cutoff": None if turn.cutoff is None else turn.cutoff.to_json(),
        "used_periods": periods,
        "used_objects": state_before,
        "earlier_unique_obj": -1 if turn.earlier_obj is None else turn.earlier_obj,
        "temporal_obj_id": turn.temporal_obj,
        "prior_unique_obj": d.turns[t - 1].unique.get(1, -1) if t > 0 else -1,
        "vals": {k: v for k, v in turn.values.items()},
    }
    out = {
        "split": split,
        "cater_split": cater_split,
        "image_filename": f"{scene.name}.avi",
        "image_index": position,
        "image": scene.name,
        "question": turn.question,
        "answer": _json_answer(turn.answer),
        "program": program,
        "state": {"vals": dict(turn.values), "answer": _json_answer(turn.answer)},
        "temporal_program": [dict(n) for n in temporal],
        "earlier_object_program": [],
        "last_object_program": [],
        "all_program": final,
        "final_all_program": final,
        "template_filename": turn.template.filename,
        "question_family_index": T.TEMPLATES.index(turn.template),
        "question_index": t,
        "template": template,
        "turn_dependencies": dict(turn.deps),
        "contained_objs": _contained(data, turn),
        **{k: bool(v) for k, v in sorted(turn.flags.items())},
    }
    return out


def _temporal_outputs(data: SceneData, d: Draft, t: int) -> list:
    """The turn's temporal program (how its period is found: the named
    movement and the relation, or the tracked previous interval) with
    ``_output``s where the executor can run it; without them otherwise."""
    turn = d.turns[t]
    nodes = [dict(n) for n in turn.temporal_nodes]
    if not nodes:
        return nodes
    last = None
    if t > 0 and d.turns[t - 1].period is not None:
        s, e = _iv.period_frames(d.turns[t - 1].period, data.scene.num_frames,
                                 cutoff=data.cutoff_frame(d.turns[t - 1].cutoff))
        last = (s, e)
    try:
        outs = _ex.execute(nodes, data.scene, cutoff=data.cutoff_frame(turn.cutoff),
                           state=_ex.DialogueState(last_interval=last))
    except InputError:
        return nodes
    return _ex.with_outputs(nodes, outs)


def _contained(data: SceneData, turn: Turn) -> dict:
    """Objects the turn names (its unique objects and the temporal
    phrase's) that are contained during its period (the whole video for
    a turn without one): ``{obj: {"contain_periods": [[s, e]],
    "contain_time": frames}}``."""
    period = turn.period if turn.period is not None else (None, None)
    s, e = _iv.period_frames(period, data.scene.num_frames,
                             cutoff=data.cutoff_frame(turn.cutoff))
    named = sorted(set(turn.unique.values()) | ({turn.temporal_obj} - {None}))
    out = {}
    for c in _iv.containment_periods(data.scene):
        if c.obj in named:
            lo, hi = max(c.start, s), min(c.end, e)
            if hi > lo:
                entry = out.setdefault(str(c.obj), {"contain_periods": [], "contain_time": 0})
                entry["contain_periods"].append([lo, hi])
                entry["contain_time"] += hi - lo
    return out


def dialogues_to_json(dialogues: Sequence) -> str:
    """The dialogues as the JSON text :func:`write_dialogues` writes
    (deterministic: keys in insertion order, no floats)."""
    return json.dumps(list(dialogues), ensure_ascii=False, separators=(",", ":"))


def write_dialogues(dialogues: Sequence, path) -> Any:
    """Writes the dialogues to ``path`` (a new file; nothing is
    overwritten: :func:`fastvqa._outputs.write_new`). Returns the path."""
    from fastvqa._outputs import write_new

    return write_new(path, dialogues_to_json(dialogues) + "\n", what="dialogue file")


__all__ = ["action_phrase", "dialogues_to_json", "earlier_word", "noun_phrase", "render_text",
           "turn_json", "write_dialogues"]
