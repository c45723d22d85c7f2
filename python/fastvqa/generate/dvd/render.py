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

from fastvqa.generate.dvd import executor as _ex
from fastvqa.generate.dvd import intervals as _iv
from fastvqa.generate.dvd.history import FINAL_NAMES
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


_SLOT_TYPES = {"<Z>": "Size", "<C>": "Color", "<M>": "Material", "<S>": "Shape",
               "<Z2>": "Size", "<C2>": "Color", "<M2>": "Material", "<S2>": "Shape",
               "<A>": "Action", "<A2>": "Action", "<R>": "Relation", "<o>": "Order",
               "<f>": "Frequency"}
# Terminal modules whose answer is about an object set (the release's ``answer_obj``).
_SET_ANSWERS = {"count", "count_object", "exist"}


def _params(template: T.Template) -> list[dict]:
    """The template's slots as the release lists them (``{"type", "name"}``)."""
    used = set()
    for node in template.program:
        used.update(x for x in node.get("side_inputs", []) if x in _SLOT_TYPES)
    for text in template.texts:
        used.update(x for x in _SLOT_TYPES if x in text)
    return [{"type": _SLOT_TYPES[x], "name": x} for x in _SLOT_TYPES if x in used]


def _constraints(template: T.Template) -> list[dict]:
    """The constraints fastvqa's sampler enforces on the template, in the
    release's vocabulary: distinct unique objects (``OUT_NEQ``), a static
    spatial reference (``STATIC_ACT``), action slots drawn among the moving
    actions (``NOT_NULL_ACT``, ``NOT_STATIC_ACT``)."""
    uniques = [i for i, n in enumerate(template.program) if n["type"] == "filter_unique"]
    out = []
    if len(uniques) == 2:
        out.append({"type": "OUT_NEQ", "params": uniques})
    if template.spatial:
        out.append({"type": "STATIC_ACT", "params": uniques[:1]})
    for slot in ("<A>", "<A2>"):
        if any(slot in n.get("side_inputs", []) for n in template.program):
            acts = template.actions if slot == "<A>" else T.MOVING_ACTIONS
            if all(a in T.MOVING_ACTIONS for a in acts):
                out.append({"type": "NOT_NULL_ACT", "params": [slot]})
                out.append({"type": "NOT_STATIC_ACT", "params": [slot]})
    return out


def _template_record(turn: Turn, d: Draft, t: int, periods: list, state_before: dict) -> dict:
    template = turn.template
    nodes = [dict(n) for n in template.program]
    uniques = [[i, dict(n)] for i, n in enumerate(nodes) if n["type"] == "filter_unique"]
    last = len(nodes) - 1
    answer_obj = [last, nodes[last]] if nodes[last]["type"] in _SET_ANSWERS else None
    ans_objects = []
    if answer_obj is not None and len(turn.outputs) > 1:
        feed = turn.nodes[-1].get("inputs", [])
        if feed and isinstance(turn.outputs[feed[0]], list):
            ans_objects = list(turn.outputs[feed[0]])
    single = len(uniques) == 1 and template.objects == 1
    return {
        "text": list(turn.text0),
        "nodes": nodes,
        "params": _params(template),
        "constraints": _constraints(template),
        "interval_type": template.interval_type,
        "all_unique_objs": uniques,
        "answer_obj": answer_obj,
        "ref_remark": "none" if uniques else "no_reference",
        "unique_obj": uniques[0] if single else None,
        "cutoff": None if turn.cutoff is None else turn.cutoff.to_json(),
        "sampled_ans_object": -1 if turn.sampled is None else turn.sampled,
        "ans_objects": ans_objects,
        "used_objects": state_before,
        "prior_unique_obj": d.turns[t - 1].unique.get(1, -1) if t > 0 else -1,
        "earlier_unique_obj": -1 if turn.earlier_obj is None else turn.earlier_obj,
        "temporal_obj_id": turn.temporal_obj,
        "used_periods": periods,
        "vals": dict(turn.values),
    }


def turn_json(data: SceneData, d: Draft, t: int, position: int, *, split: str,
              cater_split: str) -> dict:
    """Turn ``t`` (0-based) of the finished dialogue ``d`` in the released
    DVD layout: question, answer (int / bool / string), programs with their
    outputs, template record (slots, constraints, used periods and objects),
    state, turn dependencies, contained objects and the ``effective_*``
    flags.

    Programs, as the release writes them: ``program`` is the question's body
    (raw node names; a reference is one ``unique_obj_ref`` / ``earlier_obj_ref``
    node); ``earlier_object_program`` / ``last_object_program`` resolve a
    long-term reference (``track_object`` ...) and "among them"
    (``refer_object`` ``"them"`` ...); ``all_program`` is the whole question
    (its temporal part, the body with the references spliced in, every
    interval-taking module fed the temporal part's interval) and
    ``final_all_program`` the same under the paper's module names;
    ``temporal_program`` is ``all_program`` when the question has a temporal
    part, else empty. ``position``: the scene's ``image_index``; ``split`` /
    ``cater_split``: the fields written."""
    turn: Turn = d.turns[t]
    scene = data.scene
    state_before = _state_before(d, t)
    periods = [_period_json(x.period, x.cutoff) for x in d.turns[:t + 1]]
    program = _ex.with_outputs(turn.nodes, turn.outputs)
    whole = _ex.with_outputs(turn.final_nodes, turn.final_outputs)
    final = [{**n, "type": FINAL_NAMES.get(n["type"], n["type"])} for n in whole]
    answer = _json_answer(turn.answer)
    out = {
        "split": split,
        "cater_split": cater_split,
        "image_filename": f"{scene.name}.avi",
        "image_index": position,
        "image": scene.name,
        "question": turn.question,
        "answer": answer,
        "program": program,
        "state": {"nodes": [dict(n) for n in program], "vals": dict(turn.values),
                  "input_map": {str(k): v for k, v in sorted(turn.input_map.items())},
                  "next_template_node": len(turn.template.program), "answer": answer},
        "temporal_program": [dict(n) for n in whole] if turn.temporal_nodes else [],
        "earlier_object_program": list(turn.ref_programs.get("earlier", [])),
        "last_object_program": list(turn.ref_programs.get("last", [])),
        "all_program": whole,
        "final_all_program": final,
        "template_filename": turn.template.filename,
        "question_family_index": T.TEMPLATES.index(turn.template),
        "question_index": t,
        "template": _template_record(turn, d, t, periods, state_before),
        "turn_dependencies": dict(turn.deps),
        "contained_objs": _contained(data, turn),
        **{k: bool(v) for k, v in sorted(turn.flags.items())},
    }
    return out


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
