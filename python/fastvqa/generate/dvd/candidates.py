# SPDX-License-Identifier: Apache-2.0
"""Drafting one candidate turn of a DVD dialogue (dvd.md §3.3-§3.4): a topic
transfer (temporal, attribute, spatial) where the previous turn allows one,
else a new question with its period, object references and slot values, its
program executed (:func:`~fastvqa.generate.dvd.executor.execute`) and its
text rendered (:mod:`~fastvqa.generate.dvd.render`).

:class:`CandidateSampler` draws a candidate; a candidate that is ill-posed
raises :class:`~fastvqa.generate.dvd.filters.Reject` here, and the
acceptance filters (:func:`~fastvqa.generate.dvd.filters.check_candidate`)
judge the rest. Every random choice comes from the caller's ``rng``, in a
fixed order: the draws are the dialogue's random stream.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Mapping, NamedTuple, Optional

from fastvqa.errors import InputError
from fastvqa.generate.dvd import executor as _ex
from fastvqa.generate.dvd import history as _hist
from fastvqa.generate.dvd import intervals as _iv
from fastvqa.generate.dvd import templates as T
from fastvqa.generate.dvd.filters import Fact, Reject
from fastvqa.generate.dvd.render import action_phrase, earlier_word, noun_phrase, render_text
from fastvqa.generate.dvd.state import ATTR_NAMES, Draft, SceneData, Turn, phrase_kind

_SUBSETS = [c for k in range(1, 5) for c in itertools.combinations(range(4), k)]


def sample_cutoff(scene, rng, previous: Optional[int], spacing: int):
    """A cutoff event after ``previous`` (frame; None = the video start):
    drawn uniformly among action start/end events more than ``spacing``
    frames after ``previous`` (after frame 0 at the start) and more than
    ``spacing`` frames before the video end (``num_frames - 1``). None (the
    whole video) when there is none."""
    lo = 0 if previous is None else previous
    last = scene.num_frames - 1
    cands = sorted({e for e in _iv.events(scene) if e.action != "contained"
                    and e.frame - lo > spacing and last - e.frame > spacing})
    if not cands:
        return None
    return cands[int(rng.integers(len(cands)))]


# ----------------------------------------------------------------------------- execution

def _run(data: SceneData, nodes, period, cutoff, state=None) -> tuple[list, str]:
    cf = data.cutoff_frame(cutoff)
    try:
        outputs = _ex.execute(nodes, data.scene, period=period, cutoff=cf, state=state)
    except _ex.ProgramError as err:  # ill-posed on this scene (a malformed
        raise Reject("ill_posed") from err  # program is a bug and propagates)
    try:
        answer = _ex.to_answer(outputs[-1])
    except InputError:
        raise Reject("answer_outside_space") from None
    return outputs, answer


def _run_quiet(data: SceneData, nodes, period, cutoff, state=None):
    try:
        return _run(data, nodes, period, cutoff, state)
    except Reject:
        return None, None


def _history(data: SceneData, d: Draft):
    """The dialogue state the next turn's program reads, from what the
    dialogue has said so far (:mod:`~fastvqa.generate.dvd.history`: the
    same state a reader rebuilds from the written turns)."""
    if not d.turns:
        return _hist.state_after((), tracked=tuple(d.state))
    prev = d.turns[-1]
    interval = None
    if prev.period is not None:
        interval = _iv.period_frames(prev.period, data.scene.num_frames,
                                     cutoff=data.cutoff_frame(prev.cutoff))
    return _hist.state_after(_ex.with_outputs(prev.nodes, prev.outputs), tracked=tuple(d.state),
                             last_interval=interval)


def _object_program(head: dict, desc: Mapping[int, str]) -> list[dict]:
    """``head`` (scene, ``track_object``, ``refer_object``) filtered by the
    attributes a question states (``desc``: attribute index -> value), then
    ``unique``: how a phrase such as "the earlier mentioned red cone" finds
    its object."""
    nodes = [dict(head)]
    for k in sorted(desc):
        nodes.append({"type": f"filter_{ATTR_NAMES[k]}", "inputs": [len(nodes) - 1],
                      "side_inputs": [desc[k]]})
    nodes.append({"type": "unique", "inputs": [len(nodes) - 1]})
    return nodes


def _assemble(temporal_nodes, body, refs: Mapping[str, list]) -> list[dict]:
    """A turn's whole program (the release's ``all_program``): the temporal
    nodes, then the body with each reference node (``refs``' keys) replaced by
    the program that resolves it, and every module that takes an interval fed
    the temporal part's last node."""
    out = [dict(n) for n in temporal_nodes]
    interval = len(out) - 1 if out else None
    at: dict[int, int] = {}
    for i, node in enumerate(body):
        ins = [at[k] for k in node.get("inputs", [])]
        splice = refs.get(node["type"])
        if splice:
            base = len(out)
            for j, m in enumerate(splice):
                out.append({**m, "inputs": ins if j == 0 else [base + k for k in m["inputs"]]})
            at[i] = len(out) - 1
            continue
        new = {**node, "inputs": ins}
        if interval is not None and "Interval?" in _ex.MODULES[node["type"]].inputs:
            new["inputs"] = ins + [interval]
        out.append(new)
        at[i] = len(out) - 1
    return out


def _replace_unique(nodes: list, where: Mapping[int, int], ref: str) -> None:
    """Object 1's ``unique`` (its slots filled with ``""``) becomes the raw
    reference node: ``unique_obj_ref`` ("it") or ``earlier_obj_ref``."""
    i = where[1]
    assert nodes[i]["type"] == "unique", nodes[i]
    nodes[i] = ({"type": "earlier_obj_ref", "inputs": list(nodes[i]["inputs"])} if ref == "earlier"
                else {"type": "unique_obj_ref", "inputs": list(nodes[i]["inputs"]),
                      "side_inputs": ["it"]})


def _related(data: SceneData, ref, other, period, rel, cutoff) -> bool:
    try:
        return bool(_iv.spatial_relation(data.scene, ref, other, period, rel,
                                         cutoff=data.cutoff_frame(cutoff)))
    except InputError:
        return False


def _finish(data: SceneData, d: Draft, template, values, period, cutoff, nodes, *, question,
            text0, deps, unique, described, temporal_nodes=(), temporal_obj=None,
            earlier_obj=None, flags=None, transfer=None, fact_scope=None, body_state=None,
            refs=None, input_map=None, sampled=None) -> Turn:
    """Runs a drafted turn's body program (its references given their
    intended objects by ``body_state``) and records what the filters need:
    its redundancy :class:`~fastvqa.generate.dvd.filters.Fact`, question key
    and ``effective_temporal_localizing`` flag. Then runs the whole program
    as written (temporal part, body, references spliced in) on the state the
    dialogue history gives (:func:`_history`): a turn whose references that
    history does not resolve to its answer is refused
    (``unresolved_reference``)."""
    outputs, answer = _run(data, nodes, period, cutoff, body_state)
    flags = dict(flags or {})
    # answerable without localising: the whole video input gives the same answer
    if template.interval_type != "none" and period != (None, None):
        _, whole = _run_quiet(data, nodes, (None, None), cutoff, body_state)
        flags["effective_temporal_localizing"] = whole is not None and whole != answer
    else:
        flags["effective_temporal_localizing"] = False
    fact = None
    if fact_scope is not None and template.question_type in ("object_count", "object_exist"):
        attrs = frozenset((T.SLOT_ATTRIBUTES[s], values[s]) for s in fact_scope[1]
                          if values.get(s))
        fact = Fact("count" if template.question_type == "object_count" else "exist",
                    (fact_scope[0], _period_key(data, period), data.cutoff_frame(cutoff)),
                    attrs, answer)
    key = (template.name, json.dumps(values, sort_keys=True),
           json.dumps(sorted(unique.items())), _period_key(data, period),
           data.cutoff_frame(cutoff))
    refs = dict(refs or {})
    history = _history(data, d)
    final = _assemble(temporal_nodes, nodes, refs)
    final_outputs, resolved = _run_quiet(data, final, None, cutoff, history)
    if resolved is None or resolved != answer:
        raise Reject("unresolved_reference")
    programs = {}
    for raw, name in (("earlier_obj_ref", "earlier"), ("unique_obj_ref", "last")):
        if raw in refs:
            try:
                outs = _ex.execute(refs[raw], data.scene, cutoff=data.cutoff_frame(cutoff),
                                   state=history)
            except _ex.ProgramError:
                raise Reject("unresolved_reference") from None
            programs[name] = _ex.with_outputs(refs[raw], outs)
    return Turn(template, values, period, cutoff, nodes, outputs, answer, question, text0,
                deps, unique, described, list(temporal_nodes), temporal_obj, earlier_obj,
                flags, fact, key, transfer=transfer, refs=refs, body_state=body_state,
                final_nodes=final, final_outputs=final_outputs, ref_programs=programs,
                input_map=dict(input_map or {}), sampled=sampled)


# ----------------------------------------------------------------------------- sampler

def transfers_allowed(prev: Turn, cutoff) -> tuple[str, ...]:
    """The topic transfers DVD lets follow ``prev`` (dvd.md §1.4, §3.4; the
    generator's rules): an **attribute** transfer after an attribute query
    that was not itself one; a **spatial** transfer after a spatial object
    count or exist that was not itself one (so neither chains); a
    **temporal** transfer (the video extended to a later cutoff, ``cutoff``
    being the current one) after a turn over a compositional interval that
    ends at the cutoff and that was not itself a video update, an attribute
    query, an exist question answered True or an action-by-order query
    answered with an action."""
    kinds = []
    if prev.transfer != "temporal" and prev.template.interval_type == "compositional" \
            and prev.period is not None and prev.period[1] is None and cutoff is not None \
            and prev.template.ask is None \
            and not ("exist" in prev.template.program[-1]["type"] and prev.answer == "True") \
            and not (prev.template.question_subtype == "action_query.by_order"
                     and prev.answer != "no action"):
        kinds.append("temporal")
    if prev.template.ask is not None and prev.deps.get("attribute", "none") == "none":
        kinds.append("attribute")
    if prev.template.spatial and prev.template.question_type in ("object_count", "object_exist") \
            and prev.deps.get("spatial", "none") == "none":
        kinds.append("spatial")
    return tuple(kinds)


class CandidateSampler:
    """Draws candidate turns with the generator's probabilities and limits
    (:class:`~fastvqa.generate.dvd.dialogue.DialogueGenerator` documents
    them): ``p_extend``, ``p_attribute``, ``p_spatial`` (topic transfers),
    ``p_relation``, ``p_reference``, ``p_dependent`` (cross-turn relations),
    ``p_whole``, ``p_skip_none``, ``threshold`` (minimum period length,
    frames) and ``cutoff_spacing`` (frames)."""

    def __init__(self, *, p_extend: float, p_attribute: float, p_spatial: float,
                 p_relation: float, p_reference: float, p_dependent: float, p_whole: float,
                 p_skip_none: float, threshold: int, cutoff_spacing: int):
        self.p_extend = p_extend
        self.p_attribute = p_attribute
        self.p_spatial = p_spatial
        self.p_relation = p_relation
        self.p_reference = p_reference
        self.p_dependent = p_dependent
        self.p_whole = p_whole
        self.p_skip_none = p_skip_none
        self.threshold = threshold
        self.cutoff_spacing = cutoff_spacing

    def candidate(self, data: SceneData, d: Draft, t: int, rng) -> Turn:
        """A candidate for turn ``t`` (0-based) of ``d``: a topic transfer,
        drawn among the kinds the previous turn allows
        (:func:`transfers_allowed`), or a new question. Raises
        :class:`~fastvqa.generate.dvd.filters.Reject` when the draw is
        ill-posed."""
        if t > 0:
            prev = d.turns[-1]
            allowed = transfers_allowed(prev, d.cutoff)
            kinds = []
            if "temporal" in allowed and rng.random() < self.p_extend:
                kinds.append("temporal")
            if "attribute" in allowed and rng.random() < self.p_attribute:
                kinds.append("attribute")
            if "spatial" in allowed and rng.random() < self.p_spatial:
                kinds.append("spatial")
            if kinds:
                kind = kinds[int(rng.integers(len(kinds)))]
                return getattr(self, f"_transfer_{kind}")(data, d, prev, rng)
        return self._new_question(data, d, t, rng)

    # -- transfers

    def _transfer_temporal(self, data, d, prev: Turn, rng) -> Turn:
        new = sample_cutoff(data.scene, rng, data.cutoff_frame(d.cutoff),
                            self.cutoff_spacing)
        period = (prev.period[0], None)
        if new is not None and period[0] is not None and new.frame - period[0].frame \
                <= self.threshold:
            raise Reject("no_valid_interval")
        text = T.TEMPORAL_TRANSFER_TEXTS[int(rng.integers(len(T.TEMPORAL_TRANSFER_TEXTS)))]
        deps = {"temporal": "video_update", "object": "none", "attribute": "none",
                "spatial": "none"}
        tnodes = [{"type": "track_interval", "inputs": [], "side_inputs": []},
                  # the previous interval's start to the new video end
                  {"type": "relate_temporal", "inputs": [0], "side_inputs": ["update"]}]
        return _finish(data, d, prev.template, prev.values, period, new, prev.nodes,
                       question=text, text0=list(prev.text0), deps=deps,
                       unique=prev.unique, described={}, temporal_nodes=tnodes,
                       earlier_obj=prev.earlier_obj,
                       flags={"effective_obj_tracking": False,
                              "effective_temporal_obj_tracking": False,
                              "effective_interval_tracking": False},
                       transfer="temporal",
                       fact_scope=_fact_scope(prev.template, prev.values, prev.unique),
                       body_state=prev.body_state, refs=prev.refs, input_map=prev.input_map,
                       sampled=prev.sampled)

    def _transfer_attribute(self, data, d, prev: Turn, rng) -> Turn:
        obj = prev.unique[1]
        known = d.state.get(obj, {})
        options = [a for a in T.ATTRIBUTES if a != prev.template.ask
                   and T.ATTRIBUTE_SLOTS[a] not in known and not prev.values.get(
                       T.ATTRIBUTE_SLOTS[a])]
        if not options:
            raise Reject("redundant")
        attr = options[int(rng.integers(len(options)))]
        template = T.TEMPLATES_BY_NAME[f"zero_hop_query_{attr}"]
        nodes, where = T.expand_program(template.program, dict.fromkeys(T.OBJ1, ""),
                                        with_map=True)
        _replace_unique(nodes, where, "it")
        nodes[where[1]]["side_inputs"] = ["its"]
        text = T.ATTRIBUTE_TRANSFER_TEXTS[0].format(attr=attr)
        deps = {"temporal": "none", "object": "last_unique", "attribute": attr,
                "spatial": "none"}
        return _finish(data, d, template, dict(prev.values), None, d.cutoff, nodes,
                       question=f"what about its {attr} ?", text0=[text], deps=deps,
                       unique={1: obj}, described={},
                       flags={"effective_obj_tracking": True,
                              "effective_temporal_obj_tracking": False,
                              "effective_interval_tracking": False},
                       transfer="attribute",
                       body_state=_ex.DialogueState(last_objects=(obj,)), input_map=where)

    def _transfer_spatial(self, data, d, prev: Turn, rng) -> Turn:
        old = prev.values["<R>"]
        rel = [r for r in T.RELATIONS if r != old][int(rng.integers(len(T.RELATIONS) - 1))]
        values = dict(prev.values, **{"<R>": rel})
        ref = prev.unique[1]
        nodes, where = T.expand_program(prev.template.program,
                                        {**values, **dict.fromkeys(T.OBJ1, "")}, with_map=True)
        _replace_unique(nodes, where, "it")
        deps = {"temporal": "none", "object": "none", "attribute": "none", "spatial": rel}
        phrase = T.RELATION_PHRASES[rel]
        text0 = [" ".join(x.replace("<R>", phrase).lower().replace("?", " ?").split())
                 for x in T.SPATIAL_TRANSFER_TEXTS]
        question = text0[int(rng.integers(len(text0)))]
        # the same interval as the last turn, found through the history
        tnodes = [{"type": "track_interval", "inputs": [], "side_inputs": []},
                  {"type": "relate_temporal", "inputs": [0], "side_inputs": ["during"]}]
        return _finish(data, d, prev.template, values, prev.period, d.cutoff, nodes,
                       question=question, text0=text0, deps=deps, unique=dict(prev.unique),
                       described={}, temporal_nodes=tnodes,
                       flags={"effective_obj_tracking": False,
                              "effective_temporal_obj_tracking": False,
                              "effective_interval_tracking": False},
                       transfer="spatial",
                       fact_scope=_fact_scope(prev.template, values, prev.unique),
                       body_state=_ex.DialogueState(last_objects=(ref,)), input_map=where)

    # -- new questions

    def _new_question(self, data, d: Draft, t: int, rng) -> Turn:
        choices = [tp for tp in T.TEMPLATES if tp.name not in d.used]
        template = choices[int(rng.integers(len(choices)))]
        timed = [tp for tp in choices if tp.interval_type != "none"]
        if template.interval_type == "none" and timed and rng.random() < self.p_skip_none:
            template = timed[int(rng.integers(len(timed)))]
        prev = d.turns[-1] if d.turns else None
        # which relations to carry
        temporal_opts, body_opts = [], []
        if t > 0 and template.interval_type != "none":
            if prev.period is not None:
                temporal_opts += ["during", "before", "after"]
            if len(prev.unique) == 1 and prev.unique.get(1) is not None:
                temporal_opts.append("last_unique_obj")
            if _earlier_candidates(d, t):
                temporal_opts.append("earlier_unique_obj")
        if t > 0:
            if len(prev.unique) == 1 and 1 in prev.unique:
                body_opts.append("last_unique")
            if _earlier_candidates(d, t):
                body_opts.append("earlier_unique")
            if len(_counted(prev)) >= 2:
                body_opts.append("last_group")
        if not _has_unique_slot(template):
            body_opts = []
        temporal = body = None
        if temporal_opts and rng.random() < self.p_relation:
            temporal = temporal_opts[int(rng.integers(len(temporal_opts)))]
        if body_opts and rng.random() < self.p_reference:
            body = body_opts[int(rng.integers(len(body_opts)))]
        if t > 0 and temporal is None and body is None and rng.random() < self.p_dependent:
            both = [("t", k) for k in temporal_opts] + [("b", k) for k in body_opts]
            if not both:
                raise Reject("no_relation")
            side, k = both[int(rng.integers(len(both)))]
            if side == "t":
                temporal = k
            else:
                body = k
        return self._instantiate(data, d, t, template, temporal, body, rng)

    def _period_choice(self, data, d, t, template, temporal, rng):
        """(period, phrase, temporal dependency, temporal nodes, temporal object,
        described, effective_temporal_obj_tracking)."""
        if template.interval_type == "none":
            return None, "", "none", [], None, {}, False
        allowed, named = data.named_periods(d.cutoff, template.interval_type)
        prev = d.turns[-1] if d.turns else None
        if temporal in ("during", "before", "after"):
            pp = prev.period
            if temporal == "during":
                p = pp
            elif temporal == "before":
                p = None if pp[0] is None else (None, pp[0])
            else:
                p = None if pp[1] is None else (pp[1], None)
            if p is None or p not in allowed:
                raise Reject("no_valid_interval")
            kind = phrase_kind(pp)
            if kind is not None and kind[0] == "during" and rng.random() < 0.5:
                # the last interval was one movement: "after this flight"
                # (Refer Interval), DVD's "prior_<action>_<relation>"
                noun = T.ACTION_FORMS[kind[1].action]["noun"][0]
                tnodes = [{"type": "refer_interval", "inputs": [],
                           "side_inputs": [f"this {noun}"]},
                          {"type": "relate_temporal", "inputs": [0], "side_inputs": [temporal]}]
                return (p, f"{temporal} this {noun}", f"prior_{kind[1].action}_{temporal}",
                        tnodes, None, {}, False)
            phrases = T.RELATION_TEMPORAL_PHRASES[temporal]
            tnodes = [{"type": "track_interval", "inputs": [], "side_inputs": []},
                      {"type": "relate_temporal", "inputs": [0], "side_inputs": [temporal]}]
            return p, phrases[int(rng.integers(len(phrases)))], temporal, tnodes, None, {}, False
        if temporal == "last_unique_obj":
            obj = prev.unique[1]
            cands = [(p, k) for p, k in named if k[1] is not None and k[1].obj == obj]
        elif temporal == "earlier_unique_obj":
            objs = _earlier_candidates(d, t)
            obj = objs[int(rng.integers(len(objs)))]
            cands = [(p, k) for p, k in named if k[1] is not None and k[1].obj == obj]
        else:
            whole = [(p, k) for p, k in named if k[0] == "whole"]
            if whole and rng.random() < self.p_whole:
                cands = whole
            else:
                cands = [(p, k) for p, k in named if k[1] is not None
                         and k[1].obj in data.identifiable]
                if not cands:
                    cands = whole
            obj = None
        if not cands:
            raise Reject("no_valid_interval")
        p, (kind, ev) = cands[int(rng.integers(len(cands)))]
        if kind == "whole":
            phrase = T.WHOLE_VIDEO_PHRASES[int(rng.integers(len(T.WHOLE_VIDEO_PHRASES)))]
            return p, phrase, "none", [], None, {}, False
        ref = ev.obj
        described = {}
        # the phrase's object is found as the question names it: "its" through
        # the last turn (Refer Object), "the earlier mentioned ..." among the
        # objects mentioned so far (Track Object), else in the scene
        if temporal == "last_unique_obj":
            poss, dep, effective = "its", "last_unique_obj_none", True
            head = [{"type": "refer_object", "inputs": [], "side_inputs": ["its"]}]
        elif temporal == "earlier_unique_obj":
            desc = _state_description(data, d, ref, rng)
            poss = f"{earlier_word(rng)} {noun_phrase(desc, rng)} 's"
            dep = "earlier_unique_obj_none"
            effective = len(data.matching(desc, range(data.n))) > 1
            head = _object_program({"type": "track_object", "inputs": []}, desc)
        else:
            desc = _fresh_description(data, ref, range(data.n), rng)
            poss, dep, effective = f"the {noun_phrase(desc, rng)} 's", "none", False
            described[ref] = {T.OBJ1[k]: v for k, v in desc.items()}
            head = _object_program({"type": "scene", "inputs": []}, desc)
        act = action_phrase(data, d, ev)
        phrase = T.PERIOD_PHRASES[kind][0].replace("{obj} 's", poss).replace("{act}", act)
        n = len(head)
        tnodes = [*head,
                  {"type": "find_interval", "inputs": [n - 1], "side_inputs": [act]},
                  {"type": "relate_temporal", "inputs": [n], "side_inputs": [kind]}]
        return p, phrase, dep, tnodes, ref, described, effective

    def _instantiate(self, data, d, t, template: T.Template, temporal, body, rng) -> Turn:
        """Turn ``t`` from ``template`` with the relations drawn
        (``temporal``: a temporal relation or a period named through a
        mentioned object; ``body``: the object reference), in the draw order
        period, objects, slot values, text."""
        period, phrase, tdep, tnodes, tobj, described, eff_t = self._period_choice(
            data, d, t, template, temporal, rng)
        prev = d.turns[-1] if d.turns else None
        picked = _unique_objects(data, d, t, template, body, period, described, rng)
        unique = picked.unique
        values = _slot_values(data, template, unique, rng)
        if template.name == "one_hop_action_query":
            _related_object(data, d, unique, values, period, described, rng)
        # the program filters by what the question states, nothing more
        fill = dict(values)
        for s in itertools.chain(T.OBJ1, T.OBJ2):
            values.setdefault(s, "")
            fill.setdefault(s, "")
        for slot, desc in picked.stated.items():
            slots = T.OBJ1 if slot == 1 else T.OBJ2
            fill.update({slots[k]: desc.get(k, "") for k in range(4)})
        nodes, where = T.expand_program(template.program, fill, with_map=True)
        if picked.ref is not None:
            _replace_unique(nodes, where, picked.ref)
        text = template.texts[int(rng.integers(len(template.texts)))]
        body_text = render_text(text, values, picked.pieces, template, rng)
        question = body_text if not phrase else f"{phrase} , {body_text}"
        question = picked.prefix + question
        # the state records what each slot said (release: ``state.vals``)
        values.update({s: fill[s] for s in itertools.chain(T.OBJ1, T.OBJ2) if fill[s]})
        deps = {"temporal": tdep, "object": picked.odep, "attribute": "none", "spatial": "none"}
        flags = {"effective_obj_tracking": bool(picked.effective),
                 "effective_temporal_obj_tracking": bool(eff_t),
                 "effective_interval_tracking": False}
        body_state = _ex.DialogueState(
            last_objects=(unique[1],) if picked.ref == "it" else (),
            earlier_object=unique[1] if picked.ref == "earlier" else None)
        turn = _finish(data, d, template, values, period, d.cutoff, nodes,
                       question=question, text0=list(template.texts), deps=deps,
                       unique=unique, described=described, temporal_nodes=tnodes,
                       temporal_obj=tobj, earlier_obj=picked.earlier_obj, flags=flags,
                       fact_scope=_fact_scope(template, values, unique),
                       body_state=body_state, refs=picked.refs, input_map=where,
                       sampled=picked.sampled)
        if temporal in ("during", "before", "after"):
            _, before = _run_quiet(data, nodes, prev.period, d.cutoff, body_state)
            turn.flags["effective_interval_tracking"] = before is not None \
                and before != turn.answer
        return turn


# ----------------------------------------------------------------------------- objects and slots

class _Picked(NamedTuple):
    """The objects a template singles out and how the question names them.
    ``unique``: slot (1, 2) -> object; ``pieces``: rendered phrases
    (``"obj1"``/``"obj2"``); ``odep``: the object dependency;
    ``earlier_obj``; ``effective``: effective object tracking; ``stated``:
    slot -> the attributes the question states (index -> value) for objects
    named afresh or as "earlier mentioned"; ``ref``: how object 1 is
    referred to (None, ``"it"``, ``"earlier"``); ``refs``: raw reference
    node -> the program resolving it; ``sampled``: the object "among them"
    singles out; ``prefix``: text before the question ("among them , there
    is a green thing . ")."""

    unique: dict
    pieces: dict
    odep: str
    earlier_obj: Optional[int]
    effective: bool
    stated: dict
    ref: Optional[str]
    refs: dict
    sampled: Optional[int]
    prefix: str


def _counted(turn: Turn) -> tuple:
    """The objects ``turn`` counted (what "them" refers to next turn)."""
    return _hist.counted_group(_ex.with_outputs(turn.nodes, turn.outputs))


def _unique_objects(data: SceneData, d: Draft, t: int, template: T.Template, body, period,
                    described: dict, rng) -> _Picked:
    """The objects a template singles out: object 1 (its unique slot: "it",
    one of the objects the last turn counted ("among them , there is a ..."),
    an earlier mentioned one, or a fresh description; a static one for a
    spatial template) and, for a two-object comparison, object 2. Adds fresh
    descriptions to ``described``."""
    unique: dict = {}
    pieces: dict = {}   # rendered phrases
    stated: dict = {}
    refs: dict = {}
    prev = d.turns[-1] if d.turns else None
    everyone = list(range(data.n))
    odep, earlier_obj, eff_o, ref, sampled, prefix = "none", None, False, None, None, ""
    if _has_unique_slot(template):
        if template.spatial:
            static = [i for i in data.identifiable
                      if _iv.is_static(data.scene, i, period,
                                       cutoff=data.cutoff_frame(d.cutoff))]
            pool = static
        else:
            pool = list(data.identifiable)
        if body == "last_unique":
            obj = prev.unique[1]
            if obj not in pool:
                raise Reject("ill_posed")
            pieces["obj1"] = "it"
            odep, eff_o, ref = "last_unique", True, "it"
        elif body == "last_group":
            group = list(_counted(prev))
            objs = [o for o in group if o in pool]
            if not objs:
                raise Reject("ill_posed")
            obj = objs[int(rng.integers(len(objs)))]
            desc = _fresh_description(data, obj, group, rng, avoid=template.ask)
            prefix = f"among them , there is a {noun_phrase(desc, rng)} . "
            refs["unique_obj_ref"] = _object_program(
                {"type": "refer_object", "inputs": [], "side_inputs": ["them"]}, desc)
            described[obj] = {**described.get(obj, {}),
                              **{T.OBJ1[k]: v for k, v in desc.items()}}
            pieces["obj1"] = "it"
            odep, eff_o, ref, sampled = "last_unique", True, "it", obj
        elif body == "earlier_unique":
            objs = [o for o in _earlier_candidates(d, t) if o in pool]
            if not objs:
                raise Reject("ill_posed")
            obj = objs[int(rng.integers(len(objs)))]
            desc = _state_description(data, d, obj, rng)
            pieces["obj1"] = f"{earlier_word(rng)} {noun_phrase(desc, rng)}"
            odep, earlier_obj, ref = "earlier_unique", obj, "earlier"
            eff_o = len(data.matching(desc, everyone)) > 1
            refs["earlier_obj_ref"] = _object_program({"type": "track_object", "inputs": []},
                                                      desc)
            stated[1] = desc
        else:
            if not pool:
                raise Reject("ill_posed")
            obj = pool[int(rng.integers(len(pool)))]
            avoid = template.ask
            desc = _fresh_description(data, obj, everyone, rng, avoid=avoid)
            pieces["obj1"] = f"the {noun_phrase(desc, rng)}"
            described[obj] = {**described.get(obj, {}),
                              **{T.OBJ1[k]: v for k, v in desc.items()}}
            stated[1] = desc
        unique[1] = obj
        if template.ask is not None:
            if T.ATTRIBUTE_SLOTS[template.ask] in d.state.get(obj, {}):
                raise Reject("redundant")
    if template.objects == 2 and not template.spatial:
        others = [i for i in data.identifiable if i != unique[1]]
        if not others:
            raise Reject("ill_posed")
        obj2 = others[int(rng.integers(len(others)))]
        desc2 = _fresh_description(data, obj2, everyone, rng)
        pieces["obj2"] = f"the {noun_phrase(desc2, rng)}"
        described[obj2] = {T.OBJ1[k]: v for k, v in desc2.items()}
        unique[2] = obj2
        stated[2] = desc2
    return _Picked(unique, pieces, odep, earlier_obj, eff_o, stated, ref, refs, sampled, prefix)


def _slot_values(data: SceneData, template: T.Template, unique: Mapping, rng) -> dict:
    """The template's action, relation, ordinal and frequency slots, and its
    filter (count / exist / the relational target): 0 to 2 attributes of a
    random object (at least 1 without an interval; never the spatial
    reference's), the other filter slots ``""``."""
    values: dict = {}
    if "<A>" in _slots(template):
        values["<A>"] = template.actions[int(rng.integers(len(template.actions)))]
    if "<A2>" in _slots(template):
        values["<A2>"] = T.MOVING_ACTIONS[int(rng.integers(3))]
    if "<R>" in _slots(template):
        values["<R>"] = T.RELATIONS[int(rng.integers(4))]
    if "<o>" in _slots(template):
        values["<o>"] = T.ORDINALS[int(rng.integers(len(T.ORDINALS)))]
    if "<f>" in _slots(template):
        values["<f>"] = T.FREQUENCIES[int(rng.integers(len(T.FREQUENCIES)))]
    filter_slots = _filter_slots(template)
    if filter_slots is not None:
        src = int(rng.integers(data.n))
        if template.spatial and src == unique.get(1):
            src = (src + 1) % data.n
        k = int(rng.integers(0 if template.interval_type != "none" else 1, 3))
        chosen = sorted(rng.choice(4, size=k, replace=False).tolist()) if k else []
        for i, slot in enumerate(filter_slots):
            values[slot] = data.attrs[src][i] if i in chosen else ""
    return values


def _related_object(data: SceneData, d: Draft, unique: dict, values: dict, period,
                    described: dict, rng) -> None:
    """``one_hop_action_query``'s object 2, singled out among the objects
    related (``values["<R>"]``) to object 1: sets ``unique[2]``, its
    description in the ``<Z2>``... slots of ``values`` and ``described``."""
    everyone = list(range(data.n))
    related = [i for i in everyone if i != unique[1] and _related(
        data, unique[1], i, period, values["<R>"], d.cutoff)]
    cands = [i for i in related if i in data.identifiable]
    if not cands:
        raise Reject("ill_posed")
    obj2 = cands[int(rng.integers(len(cands)))]
    desc2 = _fresh_description(data, obj2, related, rng, allow_empty=True)
    for i, slot in enumerate(T.OBJ2):
        values[slot] = desc2.get(i, "")
    unique[2] = obj2
    described[obj2] = {T.OBJ1[k]: v for k, v in desc2.items()}


# ----------------------------------------------------------------------------- small helpers

def _slots(template: T.Template) -> set:
    out = set()
    for text in template.texts:
        for s in ("<A>", "<A2>", "<R>", "<o>", "<f>"):
            if s in text:
                out.add(s)
    for node in template.program:
        for s in node.get("side_inputs", []):
            out.add(s)
    return out


def _has_unique_slot(template: T.Template) -> bool:
    return any(n["type"] == "filter_unique" for n in template.program)


def _filter_slots(template: T.Template) -> Optional[tuple]:
    """The slots of the template's plain filter (count/exist), if any."""
    if template.name == "one_hop_action_query":
        return None
    for node in template.program:
        if node["type"] == "filter":
            return T.OBJ1
        if node["type"] == "relate_filter":
            return T.OBJ2
    return None


def _fact_scope(template: T.Template, values: Mapping, unique: Mapping) -> Optional[tuple]:
    slots = _filter_slots(template)
    if slots is None:
        return None
    return ((values.get("<A>"), values.get("<R>"), unique.get(1) if template.spatial else None),
            slots)


def _full_values(data, obj: int, slots) -> dict:
    return {s: v for s, v in zip(slots, data.attrs[obj])}


def _period_key(data, period) -> Any:
    if period is None:
        return None
    return tuple(None if e is None else (e.frame, e.obj, e.kind, e.nth) for e in period)


def _earlier_candidates(d: Draft, t: int) -> list[int]:
    """State objects first mentioned two or more turns before turn ``t``
    (0-based) with at least one mentioned attribute that, among the state's
    objects, singles them out."""
    out = []
    for obj, entry in sorted(d.state.items()):
        if entry["original_turn"] > t - 1:
            continue
        if any(k.startswith("<") for k in entry):
            out.append(obj)
    return out


def _state_description(data, d: Draft, obj: int, rng) -> dict:
    """A description of a state object from its mentioned attributes that no
    other state object matches (by true attributes); all mentioned ones if
    none is smaller."""
    entry = d.state[obj]
    known = {T.SLOT_ATTRIBUTES[k]: v for k, v in entry.items() if k.startswith("<")}
    idx = {a: i for i, a in enumerate(ATTR_NAMES)}
    items = sorted((idx[a], v) for a, v in known.items())
    others = [o for o in d.state if o != obj]
    for k in range(1, len(items) + 1):
        combos = list(itertools.combinations(items, k))
        order = rng.permutation(len(combos))
        for j in order:
            desc = dict(combos[int(j)])
            if not data.matching(desc, others):
                return desc
    desc = dict(items)
    if data.matching(desc, others):
        raise Reject("ill_posed")
    return desc


def _fresh_description(data, obj: int, among, rng, *, avoid: Optional[str] = None,
                       allow_empty: bool = False) -> dict:
    """Attributes (index -> value) that single ``obj`` out among ``among``:
    a smallest such subset 70 % of the time, else any; never the attribute
    ``avoid``."""
    among = list(among)
    if allow_empty and among == [obj]:
        return {}
    ok = []
    for sub in _SUBSETS:
        if avoid is not None and ATTR_NAMES.index(avoid) in sub:
            continue
        desc = {k: data.attrs[obj][k] for k in sub}
        if data.matching(desc, among) == [obj]:
            ok.append(desc)
    if not ok:
        raise Reject("ill_posed")
    smallest = min(len(x) for x in ok)
    pool = [x for x in ok if len(x) == smallest] if rng.random() < 0.7 else ok
    return pool[int(rng.integers(len(pool)))]


__all__ = ["CandidateSampler", "sample_cutoff", "transfers_allowed"]
