# SPDX-License-Identifier: Apache-2.0
"""SOK-Bench-style questions from timed actions (docs/papers/sokbench.md
§1.2-§1.5, §2, §4.5), with a pluggable knowledge source.

Pipeline (:func:`generate_sokbench`):

1. **situation graph** (:class:`SituationGraph`, the paper's SKG): the timed
   actions of one video with their objects; edges (action, uses, object),
   (timestamp, at, action), (action, before, next action), (object,
   attribute, text), (object, with, object) for objects of one action.
   :func:`situations_from_events` builds them from captions, either through
   a language model (the paper's "convert the sentences into organized
   lists of objects and actions, along with their corresponding timestamps";
   the reply is validated, spans included) or, without one, by matching a
   vocabulary of object names;
2. **knowledge** (the paper's GKG and SCKG): any callable ``knowledge(entity,
   relation) -> str | None`` (:data:`OBJECT_RELATIONS`,
   :data:`ACTION_RELATIONS`); :func:`table_knowledge` reads a table
   (:data:`COMMONSENSE`, a small built-in cooking table, fastvqa's), and
   :func:`language_model_knowledge` asks a model with the paper's Fig. 4
   prompts and word limits (each reply validated);
3. **question types as templates** (:data:`QUESTION_TYPES`): ten of the
   paper's twelve (OI and APO are never defined in the paper, so they are
   not generated); each is an identification hop (none, spatiotemporal:
   the step the object is used in or the neighbouring step; general
   knowledge: a usage) and a target relation;
4. **same-category distractors** (sokbench.md §1.4): three answers of the same
   knowledge category about *other* objects or actions of the same video
   (:data:`fastvqa.retrieval.SOKBENCH_RECIPE`); a video with too few is
   filled from the same category in other videos (fastvqa's fallback,
   recorded). Entity names in options are masked with ``something``, as in
   the released example; 4 options, the correct position balanced within
   each question type. An answer that equals a distractor after masking,
   and a question asked twice about one video, are rejected.

The output (:meth:`SOKBenchSet.data`) is the released layout
``{question_type: [question, ...]}`` that :func:`fastvqa.data.load_sokbench`
reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.generate.events.deveqa import (Rejection, ResponseCache, cached_model, check_span,
                                            options_problem, rejection_counts, reply_json)

#: Knowledge about objects: a short attribute phrase (GKG physical), a
#: usage (GKG usage), the counterfactual consequence and the contribution
#: (SCKG perspectives).
OBJECT_RELATIONS = ("physical", "usage", "what_if_no_obj", "contribution")
#: Knowledge about actions (SCKG perspectives).
ACTION_RELATIONS = ("purpose", "what_if_no_act")
#: Word limits of knowledge replies: the paper's "within 10 words" for
#: attributes and "within 20 words" for situated commonsense; a usage is
#: held to 10 (fastvqa's).
WORD_LIMITS = {"physical": 10, "usage": 10, "what_if_no_obj": 20, "contribution": 20,
               "purpose": 20, "what_if_no_act": 20}
N_OPTIONS = 4
MASK = "something"

#: A small built-in commonsense table (fastvqa's own, for tests and demos):
#: objects by name, actions by their verb (the first word of the step).
COMMONSENSE: dict = {
    "objects": {
        "cornstarch": {"physical": "white powdery ingredient", "usage": "thickening sauces",
                       "what_if_no_obj": "The sauce would stay thin and watery.",
                       "contribution": "thicken the sauce"},
        "water": {"physical": "clear liquid", "usage": "dissolving and boiling",
                  "what_if_no_obj": "The mixture would be too dry to blend.",
                  "contribution": "dissolve the ingredients"},
        "tofu": {"physical": "soft white cubes", "usage": "adding plant protein",
                 "what_if_no_obj": "The dish would lose its soft protein base.",
                 "contribution": "give a soft protein base"},
        "oil": {"physical": "golden slippery liquid", "usage": "frying food",
                "what_if_no_obj": "The food would stick to the pan and burn.",
                "contribution": "keep the food from sticking"},
        "onion": {"physical": "round layered bulb", "usage": "adding savoury flavour",
                  "what_if_no_obj": "The dish would lack a sweet savoury base.",
                  "contribution": "add a sweet savoury base"},
        "garlic": {"physical": "small pungent cloves", "usage": "seasoning dishes",
                   "what_if_no_obj": "The dish would lack its sharp aroma.",
                   "contribution": "add a sharp aroma"},
        "salt": {"physical": "fine white crystals", "usage": "seasoning food",
                 "what_if_no_obj": "The food would taste bland.",
                 "contribution": "season the food"},
        "sugar": {"physical": "sweet white grains", "usage": "sweetening food",
                  "what_if_no_obj": "The result would not taste sweet.",
                  "contribution": "sweeten the mixture"},
        "flour": {"physical": "soft white powder", "usage": "making dough",
                  "what_if_no_obj": "There would be no dough to shape.",
                  "contribution": "form the dough"},
        "egg": {"physical": "oval shelled ingredient", "usage": "binding mixtures",
                "what_if_no_obj": "The mixture would fall apart.",
                "contribution": "bind the mixture together"},
        "butter": {"physical": "soft yellow block", "usage": "enriching dough and sauces",
                   "what_if_no_obj": "The result would be dry and less rich.",
                   "contribution": "make the result rich"},
        "rice": {"physical": "small white grains", "usage": "serving as a staple",
                 "what_if_no_obj": "The meal would lack its filling staple.",
                 "contribution": "provide a sticky base"},
        "tomato": {"physical": "round red fruit", "usage": "making sauces",
                   "what_if_no_obj": "The sauce would lose its tangy red base.",
                   "contribution": "give a tangy base"},
        "pork": {"physical": "pink minced meat", "usage": "adding meaty flavour",
                 "what_if_no_obj": "The dish would become a vegetarian version.",
                 "contribution": "add a meaty richness"},
        "milk": {"physical": "white creamy liquid", "usage": "making batter smooth",
                 "what_if_no_obj": "The batter would be thick and lumpy.",
                 "contribution": "make the batter smooth"},
        "cheese": {"physical": "yellow grated topping", "usage": "topping dishes",
                   "what_if_no_obj": "The top would not melt into a crust.",
                   "contribution": "form a melted crust"},
    },
    "actions": {
        "cut": {"purpose": "to make pieces small enough to cook evenly",
                "what_if_no_act": "The pieces would stay large and cook unevenly."},
        "chop": {"purpose": "to make small pieces that release flavour",
                 "what_if_no_act": "Large chunks would stay hard and bland."},
        "slice": {"purpose": "to make thin even slices",
                  "what_if_no_act": "The slices would be missing from the dish."},
        "mix": {"purpose": "to combine the ingredients evenly",
                "what_if_no_act": "The ingredients would stay separate and uneven."},
        "stir": {"purpose": "to keep the food cooking evenly",
                 "what_if_no_act": "The food would burn at the bottom."},
        "add": {"purpose": "to bring the ingredient into the dish",
                "what_if_no_act": "The dish would miss that ingredient."},
        "pour": {"purpose": "to move the liquid into the pot",
                 "what_if_no_act": "The pot would stay dry."},
        "boil": {"purpose": "to cook the food through in hot water",
                 "what_if_no_act": "The food would stay raw and hard."},
        "fry": {"purpose": "to make the outside crisp and brown",
                "what_if_no_act": "The food would stay pale and soft."},
        "bake": {"purpose": "to cook the dough through with dry heat",
                 "what_if_no_act": "The dough would stay raw."},
        "heat": {"purpose": "to get the pan hot enough to cook",
                 "what_if_no_act": "The food would cook slowly and soak up oil."},
        "whisk": {"purpose": "to beat air into the mixture",
                  "what_if_no_act": "The mixture would stay dense and lumpy."},
        "put": {"purpose": "to place the ingredients where they are needed",
                "what_if_no_act": "The ingredients would not be ready to use."},
        "serve": {"purpose": "to present the finished dish",
                  "what_if_no_act": "The dish would not reach the table."},
        "season": {"purpose": "to give the dish its taste",
                   "what_if_no_act": "The dish would taste flat."},
        "knead": {"purpose": "to make the dough smooth and elastic",
                  "what_if_no_act": "The dough would be rough and tear."},
    },
}


class QuestionType(NamedTuple):
    """One question type: ``key`` (the Table-2 abbreviation, used as the
    output's type key), ``number`` (Table 2), ``concerns`` (``"object"`` or
    ``"action"``), ``clue`` (the identification hop: ``"none"``, ``"st"``:
    spatiotemporal, ``"gk"``: general knowledge), ``relation`` (the asked
    knowledge; ``"object_name"``: the answer is the object itself),
    ``template`` (a :meth:`str.format` string)."""

    key: str
    number: int
    concerns: str
    clue: str
    relation: str
    template: str


#: The ten defined types (sokbench.md §1.2; the templates are fastvqa's, as
#: the paper gives only OCT+ST's in words and keeps the rest in its
#: unavailable supplement). Fields: ``obj``, ``st`` ("the <attribute> used
#: in the step '<step, object masked>'"), ``gk`` ("the ingredient used for
#: <usage>"), ``contribution``, ``step``, ``prev``, ``next``.
QUESTION_TYPES: dict = {t.key: t for t in (
    QuestionType("OCT+ST", 1, "object", "st", "what_if_no_obj",
                 "What would happen if the person did not use {st}?"),
    QuestionType("OCB+ST", 2, "object", "st", "contribution",
                 "What does {st} contribute to the result?"),
    QuestionType("OCT+GK", 3, "object", "gk", "what_if_no_obj",
                 "What would happen if the person did not use {gk}?"),
    QuestionType("OCB+GK", 4, "object", "gk", "contribution",
                 "What does {gk} contribute to the result?"),
    QuestionType("OCT", 5, "object", "none", "what_if_no_obj",
                 "What would happen if the person did not use {obj}?"),
    QuestionType("OCB", 6, "object", "none", "object_name",
                 "What did the person use to {contribution}?"),
    QuestionType("APU+ST", 8, "action", "st", "purpose",
                 "What is the purpose of the step the person does right after '{prev}'?"),
    QuestionType("ACT+ST", 9, "action", "st", "what_if_no_act",
                 "What would happen if the person skipped the step right before '{next}'?"),
    QuestionType("APU", 10, "action", "none", "purpose",
                 "What is the purpose of the step '{step}'?"),
    QuestionType("ACT", 11, "action", "none", "what_if_no_act",
                 "What would happen if the person skipped the step '{step}'?"),
)}


# ------------------------------------------------------------ the situation

class TimedAction(NamedTuple):
    """One step: ``start``/``end`` seconds (``start <= end``), the step's
    ``text`` and the ``objects`` it uses (lower-case names)."""

    index: int
    start: float
    end: float
    text: str
    objects: tuple


@dataclass(frozen=True)
class SituationGraph:
    """The situated knowledge graph of one video (sokbench.md §2.1).

    ``actions`` in time order (start, then index); ``objects`` in order of
    first use; ``edges`` ``(head, relation, tail)`` with heads and tails
    ``"action:<i>"``, ``"time:<start>-<end>"``, object names or attribute
    text; ``attributes`` object -> attribute phrase (from the knowledge
    source, where it has one)."""

    video_id: str
    duration: float
    actions: tuple
    objects: tuple
    edges: tuple
    attributes: dict = field(default_factory=dict)

    @property
    def time_slot(self) -> tuple:
        """``(first start, last end)`` of the actions, seconds."""
        return (min(a.start for a in self.actions), max(a.end for a in self.actions))

    def actions_with(self, obj: str) -> list:
        """The actions using ``obj``, in time order."""
        return [a for a in self.actions if obj in a.objects]

    def neighbours(self, action: TimedAction) -> tuple:
        """``(previous action or None, next action or None)`` in time order."""
        k = self.actions.index(action)
        return (self.actions[k - 1] if k > 0 else None,
                self.actions[k + 1] if k + 1 < len(self.actions) else None)


def situation_graph(video_id: str, duration: float, actions: Sequence[TimedAction],
                    attributes: Optional[Mapping[str, str]] = None) -> SituationGraph:
    """A :class:`SituationGraph` from timed actions. Raises InputError for no
    action, or a span not within ``0 <= start <= end <= duration``."""
    op = "situation_graph"
    duration = _checks.real(duration, op, "duration", finite=True, positive=True)
    acts = sorted(actions, key=lambda a: (a.start, a.index))
    if not acts:
        raise InputError(f"{op}: video {video_id}: no actions")
    for a in acts:
        if not 0 <= a.start <= a.end <= duration:
            raise InputError(f"{op}: video {video_id} action {a.index}: span "
                             f"[{a.start:g}, {a.end:g}] is not within [0, {duration:g}]")
    objects = tuple(dict.fromkeys(o for a in acts for o in a.objects))
    attributes = {o: attributes[o] for o in objects if attributes and attributes.get(o)}
    edges = []
    for k, a in enumerate(acts):
        node = f"action:{a.index}"
        edges.append((f"time:{a.start:g}-{a.end:g}", "at", node))
        edges.extend((node, "uses", o) for o in a.objects)
        edges.extend((o, "with", p) for i, o in enumerate(a.objects) for p in a.objects[i + 1:])
        if k + 1 < len(acts):
            edges.append((node, "before", f"action:{acts[k + 1].index}"))
    edges.extend((o, "attribute", t) for o, t in attributes.items())
    return SituationGraph(str(video_id), duration, tuple(acts), objects, tuple(edges),
                          attributes)


def _find_objects(text: str, vocabulary: Sequence[str]) -> tuple:
    """Vocabulary names in ``text`` (whole words, longer names first, each
    once), in order of appearance."""
    found = []
    taken = [False] * len(text)
    low = text.lower()
    for name in sorted(vocabulary, key=lambda n: (-len(n), n)):
        for m in re.finditer(rf"\b{re.escape(name.lower())}(?:es|s)?\b", low):
            if not any(taken[m.start():m.end()]):
                found.append((m.start(), name))
                for i in range(m.start(), m.end()):
                    taken[i] = True
    return tuple(dict.fromkeys(n for _, n in sorted(found)))


#: The step-parsing prompt (fastvqa's: the paper describes the step, with an
#: LLM turning the timed descriptions into JSON lists, without printing it).
SITUATION_SYSTEM = ("You convert timed step descriptions of a video into organized lists of "
                    "actions and objects, along with their corresponding timestamps.")
SITUATION_USER = ("The video is {duration:g} seconds long. Its steps:\n{steps}\n\n"
                  'Reply with JSON only: {{"actions": [{{"start": seconds, "end": seconds, '
                  '"action": "the step", "objects": ["object", ...]}}, ...]}}, one entry per '
                  "step, objects as short lower-case names.")


def situation_messages(video_id: str, duration: float, events: Sequence[Any]) -> list:
    steps = "\n".join(f"{e.start:g}s - {e.end:g}s: {e.text}" for e in events)
    return [{"role": "system", "content": SITUATION_SYSTEM},
            {"role": "user", "content": SITUATION_USER.format(duration=duration, steps=steps)}]


def parse_situation_reply(text: str, duration: float) -> tuple:
    """``(actions, problems)`` from a step-parsing reply: each entry needs
    ``start``, ``end`` (seconds within ``[0, duration]``), ``action`` (text)
    and ``objects`` (a list of names); a failing entry is a ``(reason,
    detail)`` problem (``missing_field``, ``bad_span``,
    ``span_outside_video``), as is a reply with no JSON (``malformed_json``)
    or no list of actions (``bad_structure``)."""
    value, error = reply_json(text)
    if value is None:
        return [], [("malformed_json", error)]
    items = value.get("actions") if isinstance(value, dict) else value
    if not isinstance(items, list):
        return [], [("bad_structure", "no list of actions")]
    actions, problems = [], []
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append(("bad_structure", f"action {k + 1} is not an object"))
            continue
        missing = [n for n in ("start", "end", "action", "objects") if n not in item]
        if missing or not isinstance(item.get("action"), str) or not item["action"].strip() \
                or not isinstance(item.get("objects"), list) \
                or not all(isinstance(o, str) for o in item["objects"]):
            what = ", ".join(missing) if missing else "action text or objects list"
            problems.append(("missing_field", f"action {k + 1}: missing or mistyped {what}"))
            continue
        span, bad = check_span([item["start"], item["end"]], duration)
        if bad is not None:
            problems.append((bad[0], f"action {k + 1}: {bad[1]}"))
            continue
        objs = tuple(dict.fromkeys(" ".join(o.lower().split()) for o in item["objects"]
                                   if o.strip()))
        actions.append(TimedAction(k, span[0], span[1], " ".join(item["action"].split()), objs))
    return actions, problems


def situations_from_events(events: Sequence[Any], *, llm: Any = None,
                           vocabulary: Optional[Sequence[str]] = None,
                           cache: Union[None, str, Path, ResponseCache] = None,
                           rejections: Optional[list] = None) -> list:
    """One :class:`SituationGraph` per video of ``events`` (captions,
    :class:`~fastvqa.generate.events.captions.Event`), videos in order of
    first appearance.

    With ``llm``: one step-parsing call per video (:data:`SITUATION_USER`);
    each reply is validated (:func:`parse_situation_reply`) and every
    problem appended to ``rejections`` (stage ``"situation"``); a video left
    without a valid action has no graph. Without: each caption is an action
    whose objects are the ``vocabulary`` names it mentions (default the
    objects of :data:`COMMONSENSE`).
    """
    by_video: dict = {}
    for e in events:
        by_video.setdefault(e.video_id, []).append(e)
    out = []
    model = cached_model(llm, cache) if llm is not None else None
    vocab = list(vocabulary) if vocabulary is not None else list(COMMONSENSE["objects"])
    for vid, evs in by_video.items():
        duration = evs[0].duration
        if model is None:
            acts = [TimedAction(e.index, e.start, e.end, e.text, _find_objects(e.text, vocab))
                    for e in evs]
        else:
            reply = model.complete(situation_messages(vid, duration, evs))
            acts, problems = parse_situation_reply(reply, duration)
            for reason, detail in problems:
                if rejections is not None:
                    rejections.append(Rejection("situation", reason, vid, "steps", detail,
                                                reply[:300]))
            if not acts:
                continue
        out.append(situation_graph(vid, duration, acts))
    return out


# -------------------------------------------------------------- knowledge

def _verb(action_text: str) -> str:
    w = re.findall(r"[a-z]+", action_text.lower())
    return w[0] if w else ""


def table_knowledge(table: Optional[Mapping] = None) -> Callable[[str, str], Optional[str]]:
    """A knowledge source reading ``table`` (default :data:`COMMONSENSE`):
    ``{"objects": {name: {relation: text}}, "actions": {verb: {relation:
    text}}}``; an action is looked up by its first word. Unknown -> None."""
    table = COMMONSENSE if table is None else table

    def knowledge(entity: str, relation: str) -> Optional[str]:
        if relation in ACTION_RELATIONS:
            return table.get("actions", {}).get(_verb(entity), {}).get(relation)
        return table.get("objects", {}).get(entity.lower(), {}).get(relation)

    knowledge.name = "builtin commonsense table"
    return knowledge


#: The knowledge prompts: the paper's Fig. 4 wording where it gives one
#: (attributes within 10 words; situated commonsense within 20 words).
KNOWLEDGE_PROMPTS = {
    "physical": "Please describe the {entity} in terms of size, shape, color, and texture in "
                "one short phrase within 10 words.",
    "usage": "Please tell me the main usage of {entity}. Format: The answer should be a short "
             "phrase within 10 words.",
    "what_if_no_obj": "What would happen if the person did not use {entity}? Format: The "
                      "answer should be short and within 20 words.",
    "contribution": "What does {entity} contribute to the result? Format: The answer should "
                    "be a short verb phrase within 20 words.",
    "purpose": "What is the purpose of the step '{entity}'? Format: The answer should be "
               "short and within 20 words.",
    "what_if_no_act": "What would happen if the person skipped the step '{entity}'? Format: "
                      "The answer should be short and within 20 words.",
}
KNOWLEDGE_SYSTEM = "You are a helpful, pattern-following assistant. You know a lot about {entity}."


def language_model_knowledge(llm: Any, *, cache: Union[None, str, Path, ResponseCache] = None,
                             word_limits: Optional[Mapping[str, int]] = None):
    """A knowledge source asking ``llm`` (:data:`KNOWLEDGE_PROMPTS`), one
    cached call per (entity, relation). A reply is the text (a JSON string
    or ``{"answer": ...}`` is unwrapped); an empty one (``missing_field``)
    or one over its word limit (:data:`WORD_LIMITS`, ``over_word_limit``)
    gives None and is appended to the source's ``rejections`` list (stage
    ``"knowledge"``). The source's ``model`` is the :class:`CachedModel`."""
    model = cached_model(llm, cache)
    limits = dict(WORD_LIMITS, **(word_limits or {}))
    memo: dict = {}

    def knowledge(entity: str, relation: str) -> Optional[str]:
        if (entity, relation) in memo:
            return memo[(entity, relation)]
        messages = [{"role": "system", "content": KNOWLEDGE_SYSTEM.format(entity=entity)},
                    {"role": "user", "content": KNOWLEDGE_PROMPTS[relation].format(
                        entity=entity)}]
        reply = model.complete(messages)
        text = reply.strip()
        value, _ = reply_json(text) if text[:1] in "[{\"" else (None, None)
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            text = value["answer"]
        elif text[:1] == '"':
            try:
                loaded = json.loads(text)
                text = loaded if isinstance(loaded, str) else text
            except ValueError:
                pass
        text = " ".join(text.split())
        out: Optional[str] = text
        if not text:
            knowledge.rejections.append(Rejection("knowledge", "missing_field", "", entity,
                                                  f"{relation}: empty reply", reply[:300]))
            out = None
        elif len(text.split()) > limits[relation]:
            knowledge.rejections.append(Rejection(
                "knowledge", "over_word_limit", "", entity,
                f"{relation}: {len(text.split())} words > {limits[relation]}", reply[:300]))
            out = None
        memo[(entity, relation)] = out
        return out

    knowledge.rejections = []
    knowledge.model = model
    knowledge.name = f"language model {model.name}"
    return knowledge


# ----------------------------------------------------------------- masking

def mask_entities(text: str, names: Sequence[str], token: str = MASK) -> str:
    """``text`` with every name of ``names`` (whole words, case-insensitive,
    a plural ``s``/``es`` included, longer names first) replaced by
    ``token``, as the released SOK-Bench options mask entities."""
    for name in sorted(set(n for n in names if n), key=lambda n: (-len(n), n)):
        text = re.sub(rf"\b{re.escape(name)}(?:es|s)?\b", token, text, flags=re.IGNORECASE)
    return text


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


# ----------------------------------------------------------------- the set

class SOKBenchSet(NamedTuple):
    """What :func:`generate_sokbench` made: ``data`` ``{type_key: [question,
    ...]}`` (the released layout), ``rejections``, ``calls`` /
    ``cache_hits`` of the model (0 without one), ``situations`` (videos
    with a graph) and ``unfilled`` (template slots left out because the
    knowledge source knew nothing; not model output, so not rejections)."""

    data: dict
    rejections: list
    calls: int
    cache_hits: int
    situations: int
    unfilled: int

    @property
    def n_questions(self) -> int:
        return sum(len(v) for v in self.data.values())

    def counts(self) -> dict:
        return rejection_counts(self.rejections)

    def summary(self) -> str:
        parts = ", ".join(f"{r} {n}" for r, n in self.counts().items())
        types = ", ".join(f"{k} {len(v)}" for k, v in self.data.items())
        return (f"{self.n_questions} questions ({types}) from {self.situations} situations; "
                f"{len(self.rejections)} rejected" + (f" ({parts})" if parts else "")
                + f"; {self.calls} model calls, {self.cache_hits} from the cache")


class _Slot(NamedTuple):
    qtype: QuestionType
    graph: SituationGraph
    entity: str          # object name, or the action's text
    action: TimedAction  # the identifying (or asked) step
    question: str
    answer: str          # unmasked
    category: str


def _fill(graph: SituationGraph, qt: QuestionType, know: Callable) -> tuple:
    """``(slots, unfilled)``: the slots of one type in one graph, and how
    many were left out for want of knowledge."""
    slots, unfilled = [], 0
    if qt.concerns == "object":
        for obj in graph.objects:
            step = graph.actions_with(obj)[0]
            facts = {r: know(obj, r) for r in ("physical", "usage", "contribution")}
            answer = obj if qt.relation == "object_name" else know(obj, qt.relation)
            fields = {"obj": obj, "contribution": facts["contribution"]}
            if qt.clue == "st":
                if not facts["physical"]:
                    unfilled += 1
                    continue
                masked = mask_entities(step.text, [obj])
                fields["st"] = f"the {facts['physical']} used in the step '{masked}'"
            if qt.clue == "gk":
                if not facts["usage"]:
                    unfilled += 1
                    continue
                fields["gk"] = f"the ingredient used for {facts['usage']}"
            if not answer or (qt.relation == "object_name" and not facts["contribution"]):
                unfilled += 1
                continue
            if qt.relation == "contribution":
                answer = _sentence(f"It helps {answer}") if not answer[:1].isupper() else answer
            slots.append(_Slot(qt, graph, obj, step, qt.template.format(**fields),
                               answer, qt.relation))
    else:
        for act in graph.actions:
            prev, nxt = graph.neighbours(act)
            if qt.clue == "st" and ((qt.key == "APU+ST" and prev is None)
                                    or (qt.key == "ACT+ST" and nxt is None)):
                continue  # no neighbouring step: the template does not apply
            answer = know(act.text, qt.relation)
            if not answer:
                unfilled += 1
                continue
            fields = {"step": act.text, "prev": prev.text if prev else "",
                      "next": nxt.text if nxt else ""}
            slots.append(_Slot(qt, graph, act.text, act, qt.template.format(**fields),
                               _sentence(answer), qt.relation))
    return slots, unfilled


def generate_sokbench(situations: Sequence[SituationGraph], knowledge: Any = None, *,
                      types: Optional[Sequence[str]] = None, seed: int = 0,
                      n_options: int = N_OPTIONS, mask: Optional[str] = MASK,
                      model_stats: Any = None,
                      rejections: Optional[Sequence[Rejection]] = None) -> SOKBenchSet:
    """SOK-Bench-style questions from situation graphs.

    Args:
        situations: :class:`SituationGraph` s (one per video/clip).
        knowledge: ``knowledge(entity, relation) -> str | None`` (default
            :func:`table_knowledge`); a source with a ``rejections`` list
            (:func:`language_model_knowledge`) has them added to the result.
        types: question-type keys of :data:`QUESTION_TYPES` (default all, in
            Table-2 order).
        seed: seeds the options; each type's correct positions are balanced
            (counts differ by at most 1) with the seed ``seed + number``.
        n_options: options per question (2 .. 4).
        mask: the token replacing the video's object names in options (and
            the direct answer) of knowledge-text answers; None: no masking.
        model_stats: an object with ``calls`` and ``hits`` (a
            :class:`~fastvqa.generate.events.deveqa.CachedModel`) to report.
        rejections: earlier rejections (e.g. of the situation step) to carry.

    Returns:
        :class:`SOKBenchSet`; within a type, questions in situation order,
        then entity order.
    """
    from fastvqa.retrieval import SOKBENCH_RECIPE, build_options
    from fastvqa.retrieval.duplicates import normalize_question
    from fastvqa.retrieval.options import Recipe

    op = "generate_sokbench"
    seed = _checks.integer(seed, op, "seed", minimum=0)
    n_options = _checks.integer(n_options, op, "n_options", minimum=2)
    if n_options > N_OPTIONS:
        raise InputError(f"{op}: n_options must be <= {N_OPTIONS}")
    know = table_knowledge() if knowledge is None else knowledge
    if not callable(know):
        raise InputError(f"{op}: knowledge must be a function (entity, relation) -> text")
    keys = list(QUESTION_TYPES) if types is None else list(types)
    for k in keys:
        if k not in QUESTION_TYPES:
            raise InputError(f"{op}: unknown question type {k!r}; expected one of "
                             f"{', '.join(QUESTION_TYPES)}")
    rejected = list(rejections or [])
    situations = list(situations)
    unfilled = 0
    slots_by_type: dict = {}
    seen: dict = {}
    for qk in keys:
        qt = QUESTION_TYPES[qk]
        kept = []
        for g in situations:
            got, missed = _fill(g, qt, know)
            unfilled += missed
            for s in got:
                norm = (g.video_id, normalize_question(s.question))
                if norm in seen:
                    rejected.append(Rejection("template", "duplicate_question", g.video_id,
                                              s.entity, f"{s.question!r} was already asked "
                                              f"({seen[norm]})"))
                    continue
                seen[norm] = qk
                kept.append(s)
        slots_by_type[qk] = kept
    objects_of = {g.video_id: list(g.objects) for g in situations}

    def masked(text: str, category: str, video: str) -> str:
        if not mask or category == "object_name":
            return text
        return mask_entities(text, objects_of[video], mask)

    # Same-category pools: every (video, entity, category) answer known,
    # masked with its video's object names before any option is drawn (so
    # that answers reading the same once masked never share a question).
    answers: dict = {}
    for slots in slots_by_type.values():
        for s in slots:
            answers.setdefault((s.graph.video_id, s.category), {})[s.entity] = \
                masked(s.answer, s.category, s.graph.video_id)
    for g in situations:  # also entities no kept question asked about
        for obj in g.objects:
            answers.setdefault((g.video_id, "object_name"), {}).setdefault(obj, obj)
    rng = np.random.default_rng(seed)
    corpus: dict = {}
    for (vid, cat), by_entity in answers.items():
        corpus.setdefault(cat, []).extend((vid, e, t) for e, t in by_entity.items())
    sample = {cat: [items[i] for i in rng.permutation(len(items))[:64]]
              for cat, items in corpus.items()}
    recipe = Recipe(SOKBENCH_RECIPE.steps, fallback=("same_category_corpus",))
    data: dict = {}
    for qk in keys:
        qt = QUESTION_TYPES[qk]
        slots = slots_by_type[qk]
        if not slots:
            continue
        pools, entity_pools = [], []
        for s in slots:
            vid = s.graph.video_id
            same = [(e, t) for e, t in answers[(vid, s.category)].items() if e != s.entity]
            other = [(e, masked(t, s.category, vid)) for v, e, t in sample[s.category]
                     if v != vid]
            pools.append({"same_category": [t for _, t in same],
                          "same_category_corpus": [t for _, t in other]})
            entity_pools.append({t: e for e, t in same + other})
        correct = [answers[(s.graph.video_id, s.category)][s.entity] for s in slots]
        built = build_options(correct, pools, recipe, n_options=n_options,
                              seed=seed + qt.number, on_short="skip")
        for j in built.skipped:
            s = slots[j]
            rejected.append(Rejection("options", "too_few_distractors", s.graph.video_id,
                                      s.entity, f"{s.question!r}: fewer than {n_options - 1} "
                                      f"{s.category} answers about other entities"))
        out = []
        for row, j in enumerate(built.items):
            s = slots[int(j)]
            opts, a = list(built.options[row]), int(built.answer[row])
            related = [entity_pools[int(j)].get(o) for i, o in enumerate(opts) if i != a]
            related = [e for e in related if e]
            direct = opts[a]
            problem = options_problem(opts[a], [o for i, o in enumerate(opts) if i != a])
            if problem is not None:
                rejected.append(Rejection("options", "answer_equals_distractor",
                                          s.graph.video_id, s.entity,
                                          f"{s.question!r}: {problem}"))
                continue
            out.append(_record(s, opts, a, direct, related, know))
        if out:
            data[qk] = out
    calls = getattr(model_stats, "calls", 0) if model_stats is not None else 0
    hits = getattr(model_stats, "hits", 0) if model_stats is not None else 0
    rejected.extend(getattr(know, "rejections", []))
    return SOKBenchSet(data, rejected, calls, hits, len(situations), unfilled)


def _record(s: _Slot, options: list, answer: int, direct: str, related: list,
            know: Callable) -> dict:
    g = s.graph
    subgraph: dict = {"object": {}, "action": {}}
    for e in [s.entity] + related:
        if s.qtype.concerns == "object":
            facts = {r: know(e, r) for r in OBJECT_RELATIONS}
            node = {k: v for k, v in (("physical", facts["physical"]), ("usage", facts["usage"]))
                    if v}
            if facts["what_if_no_obj"]:
                node["what if no obj"] = {"subject": [e], "consequence": [facts["what_if_no_obj"]]}
            if facts["contribution"]:
                node["contribution"] = {"subject": [e], "consequence": [facts["contribution"]]}
            subgraph["object"][e] = node
        else:
            facts = {r: know(e, r) for r in ACTION_RELATIONS}
            node = {}
            if facts["purpose"]:
                node["purpose"] = {"consequence": [facts["purpose"]]}
            if facts["what_if_no_act"]:
                node["what if no act"] = {"consequence": [facts["what_if_no_act"]]}
            subgraph["action"][e] = node
    start, end = g.time_slot
    steps = {"1": f"Identify what the question is about: {s.entity}.",
             "2": f"Recall the step '{s.action.text}' (from {s.action.start:g} sec to "
                  f"{s.action.end:g} sec).",
             "3": f"Knowledge ({s.category.replace('_', ' ')}): {s.answer}",
             "4": f"Select the answer: {direct}"}
    return {
        "question": s.question,
        "answer": {"direct": direct, "choices": options, "right_choice": answer},
        "related_objs_acts": related + [s.entity, s.action.text],
        "related_subgraph": subgraph,
        "video": g.video_id,
        "video_path": "",
        "rationale": json.dumps(steps, ensure_ascii=False),
        "time_slot": [start, end],
    }


def write_sokbench(data: Mapping[str, list], path: Union[str, Path],
                   what: str = "--out") -> Path:
    """Writes ``{type: [question, ...]}`` as a new JSON file (never overwriting)."""
    from fastvqa._outputs import write_new

    return write_new(path, json.dumps(dict(data), ensure_ascii=False, indent=1) + "\n", what)
