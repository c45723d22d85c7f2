# SPDX-License-Identifier: Apache-2.0
"""Knowledge for SOK-Bench-style questions (docs/papers/sokbench.md §2.2-§2.3):
the general knowledge graph (GKG) of a video's objects and actions and its
situated commonsense knowledge graph (SCKG).

- :func:`language_model_knowledge` composes the prompts as the paper does.
  General knowledge: per entity and aspect, the triplet <examples, goal,
  output format> (:data:`~fastvqa.generate.events.sokbench_prompts.GKG_PROMPTS`;
  the example is a prior dialogue turn, as in the paper's Fig. 4), each
  reply parsed as JSON with bounded sizes. Situated commonsense knowledge:
  per video and perspective, the five parts <video content, general
  knowledge, examples, goal, format> with **Few-Shot Self-Prompting**: in
  iteration 1 an entity's examples are the answers already generated about
  the video's earlier entities (the first has none), in iteration 2 (the
  paper's "just two iterations") they are iteration 1's answers about all
  the video's *other* entities, and iteration 2's answer is kept (iteration
  1's where iteration 2's reply is rejected).
- :func:`table_knowledge` reads a table such as :data:`COMMONSENSE`, a small
  cooking table of fastvqa's: **a demo aid**, not the paper's method.

Either way, :func:`situated_knowledge` gives a :class:`SituatedKnowledge`
per video: lookups ``know(entity, relation) -> text | None`` and the edges
of the integrated graph.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional, Union

from fastvqa import _checks
from fastvqa.generate.events import sokbench_prompts as P
from fastvqa.generate.events.deveqa import Rejection, ResponseCache, cached_model, reply_json

#: How a pair of objects is named as one entity (the released data's
#: ``obj_interaction`` keys, e.g. ``"miso<AND>dashi"``).
PAIR = "<AND>"
#: General-knowledge aspects of objects (one prompt each).
OBJECT_ASPECTS = ("physical", "usage", "interact")
#: The fields of an action's general knowledge (the released example's keys).
ACTION_FIELDS = ("things related", "purpose", "ways of")
#: Situated perspectives: about one object, about a pair of objects of the
#: video, about one step.
OBJECT_PERSPECTIVES = ("what_if_no_obj", "contribution")
PAIR_PERSPECTIVES = ("interaction",)
ACTION_PERSPECTIVES = ("purpose", "what_if_no_act", "possibility")
#: The relations a lookup answers: general knowledge (``physical``,
#: ``usage``, ``interact``; actions' ``things_related``, ``general_purpose``,
#: ``ways_of``) rendered as short text, and the situated perspectives.
OBJECT_RELATIONS = OBJECT_ASPECTS + OBJECT_PERSPECTIVES
SITUATED_PERSPECTIVES = OBJECT_PERSPECTIVES + PAIR_PERSPECTIVES + ACTION_PERSPECTIVES
ACTION_RELATIONS = ("things_related", "general_purpose", "ways_of") + ACTION_PERSPECTIVES
_ACTION_FIELD = {"things_related": "things related", "general_purpose": "purpose",
                 "ways_of": "ways of"}
#: Word limits: the paper's "within 20 words" for situated knowledge; 10 for
#: every general-knowledge text (fastvqa's, as the paper's attributes).
WORD_LIMITS = {"physical": 10, "usage": 10, "interact": 10, "action": 10,
               "what_if_no_obj": 20, "contribution": 20, "interaction": 20, "purpose": 20,
               "what_if_no_act": 20, "possibility": 20}
#: Bounds on a general-knowledge reply (the paper asks for 5 usages).
MAX_PAIRS = 5
MAX_PROPERTIES = 8
#: At most this many earlier answers are given as examples (fastvqa's bound
#: on the prompt's length).
MAX_EXAMPLES = 8

#: A small built-in commonsense table (fastvqa's own): **a demo aid** for
#: examples and tests, not knowledge the paper's method would produce.
#: Objects by name, actions by their verb (the first word of the step), pairs
#: of objects as ``"a<AND>b"`` (either order).
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
    "pairs": {
        "cornstarch<AND>water": {"interaction": "They form a smooth paste that thickens."},
        "oil<AND>onion": {"interaction": "The hot oil softens the onion and sweetens it."},
        "oil<AND>garlic": {"interaction": "The hot oil draws out a sharp aroma."},
        "onion<AND>garlic": {"interaction": "They cook into a fragrant savoury base."},
        "pork<AND>salt": {"interaction": "The salt seasons the meat and draws out juice."},
        "egg<AND>milk": {"interaction": "They blend into a smooth custard mixture."},
        "egg<AND>sugar": {"interaction": "They whisk into a light sweet foam."},
        "milk<AND>sugar": {"interaction": "The grains dissolve and sweeten the liquid."},
        "flour<AND>butter": {"interaction": "They rub together into crumbly dough."},
        "flour<AND>egg": {"interaction": "They bind into a firm dough."},
        "butter<AND>egg": {"interaction": "They make the dough rich and tender."},
    },
    "actions": {
        "cut": {"purpose": "to make pieces small enough to cook evenly",
                "what_if_no_act": "The pieces would stay large and cook unevenly.",
                "possibility": "Tear the food into rough pieces by hand."},
        "chop": {"purpose": "to make small pieces that release flavour",
                 "what_if_no_act": "Large chunks would stay hard and bland.",
                 "possibility": "Grate it or crush it instead."},
        "slice": {"purpose": "to make thin even slices",
                  "what_if_no_act": "The slices would be missing from the dish.",
                  "possibility": "Use a mandoline for even slices."},
        "mix": {"purpose": "to combine the ingredients evenly",
                "what_if_no_act": "The ingredients would stay separate and uneven.",
                "possibility": "Shake them together in a closed jar."},
        "stir": {"purpose": "to keep the food cooking evenly",
                 "what_if_no_act": "The food would burn at the bottom.",
                 "possibility": "Toss the pan instead of stirring."},
        "add": {"purpose": "to bring the ingredient into the dish",
                "what_if_no_act": "The dish would miss that ingredient.",
                "possibility": "Sprinkle it on at the end."},
        "pour": {"purpose": "to move the liquid into the pot",
                 "what_if_no_act": "The pot would stay dry.",
                 "possibility": "Ladle the liquid in bit by bit."},
        "boil": {"purpose": "to cook the food through in hot water",
                 "what_if_no_act": "The food would stay raw and hard.",
                 "possibility": "Steam it over the water instead."},
        "fry": {"purpose": "to make the outside crisp and brown",
                "what_if_no_act": "The food would stay pale and soft.",
                "possibility": "Roast it in a hot oven instead."},
        "bake": {"purpose": "to cook the dough through with dry heat",
                 "what_if_no_act": "The dough would stay raw.",
                 "possibility": "Cook it in a covered pan on the stove."},
        "heat": {"purpose": "to get the pan hot enough to cook",
                 "what_if_no_act": "The food would cook slowly and soak up oil.",
                 "possibility": "Warm the pan in the oven first."},
        "whisk": {"purpose": "to beat air into the mixture",
                  "what_if_no_act": "The mixture would stay dense and lumpy.",
                  "possibility": "Use an electric mixer instead."},
        "put": {"purpose": "to place the ingredients where they are needed",
                "what_if_no_act": "The ingredients would not be ready to use.",
                "possibility": "Pass them over by hand instead."},
        "serve": {"purpose": "to present the finished dish",
                  "what_if_no_act": "The dish would not reach the table.",
                  "possibility": "Serve it straight from the pot."},
        "season": {"purpose": "to give the dish its taste",
                   "what_if_no_act": "The dish would taste flat.",
                   "possibility": "Add a salty sauce instead."},
        "knead": {"purpose": "to make the dough smooth and elastic",
                  "what_if_no_act": "The dough would be rough and tear.",
                  "possibility": "Let a stand mixer knead it."},
    },
}


def pair_key(a: str, b: str) -> str:
    """The entity name of the object pair ``(a, b)``: ``"a<AND>b"``.

    >>> pair_key("miso", "dashi"), pair_names("miso<AND>dashi"), pair_names("miso")
    ('miso<AND>dashi', ('miso', 'dashi'), ('miso',))
    """
    return f"{a}{PAIR}{b}"


def pair_names(entity: str) -> tuple:
    """``(a, b)`` of a pair entity ``"a<AND>b"``; ``(entity,)`` otherwise."""
    a, sep, b = entity.partition(PAIR)
    return (a, b) if sep else (entity,)


def _verb(action_text: str) -> str:
    w = re.findall(r"[a-z]+", action_text.lower())
    return w[0] if w else ""


def table_knowledge(table: Optional[Mapping] = None) -> Callable[[str, str], Optional[str]]:
    """A knowledge source reading ``table`` (default :data:`COMMONSENSE`, a
    demo aid): ``{"objects": {name: {relation: text}}, "pairs": {"a<AND>b":
    {"interaction": text}}, "actions": {verb: {relation: text}}}``; an action
    is looked up by its first word, a pair in either order. Unknown -> None.

    >>> know = table_knowledge()
    >>> know("cornstarch", "usage"), know("water<AND>cornstarch", "interaction")
    ('thickening sauces', 'They form a smooth paste that thickens.')
    """
    table = COMMONSENSE if table is None else table

    def knowledge(entity: str, relation: str) -> Optional[str]:
        if relation in ACTION_RELATIONS:
            return table.get("actions", {}).get(_verb(entity), {}).get(relation)
        names = tuple(n.lower() for n in pair_names(entity))
        if len(names) == 2:
            pairs = table.get("pairs", {})
            entry = pairs.get(pair_key(*names)) or pairs.get(pair_key(names[1], names[0])) or {}
            return entry.get(relation)
        return table.get("objects", {}).get(entity.lower(), {}).get(relation)

    knowledge.name = "builtin commonsense table (a demo aid)"
    return knowledge


# ------------------------------------------------------- per-video knowledge

def _phrase(value: Any) -> Optional[str]:
    """Short text of a general-knowledge value: a string as it is; a
    property object's values joined by commas; a list of ``{thing: how}``
    pairs: its first pair as ``"<how> <thing>"``."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict):
        return ", ".join(v for v in value.values() if isinstance(v, str)) or None
    if isinstance(value, list) and value and isinstance(value[0], dict) and value[0]:
        thing, how = next(iter(value[0].items()))
        return f"{how} {thing}"
    return None


def _edge_text(value: Any) -> str:
    """A general-knowledge value as one line of the integrated graph."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(f"{k}: {v}" for item in value for k, v in item.items())
    return str(value)


class SituatedKnowledge(NamedTuple):
    """What a knowledge source knows about one video.

    ``general``: ``{(entity, aspect): value}`` (aspects of
    :data:`OBJECT_ASPECTS` and ``"action"``; a value is text, a property
    object or a list of ``{thing: how}`` pairs); ``situated``: ``{(entity,
    perspective): text}``; ``source``: what produced it. Calling it,
    ``know(entity, relation)``, gives text or None (:data:`OBJECT_RELATIONS`,
    :data:`ACTION_RELATIONS`, ``"interaction"`` for a pair ``"a<AND>b"``).

    >>> k = SituatedKnowledge({("salt", "usage"): [{"food": "seasoning"}]},
    ...                       {("salt", "what_if_no_obj"): "It would be bland."}, "example")
    >>> k("salt", "usage"), k("salt", "what_if_no_obj"), k("salt", "contribution")
    ('seasoning food', 'It would be bland.', None)
    """

    general: dict
    situated: dict
    source: str = ""

    def __call__(self, entity: str, relation: str) -> Optional[str]:
        if relation in SITUATED_PERSPECTIVES:
            return self.situated.get((entity, relation))
        if relation in _ACTION_FIELD:
            value = self.general.get((entity, "action"))
            value = value.get(_ACTION_FIELD[relation]) if isinstance(value, dict) else None
            return value or None
        return _phrase(self.general.get((entity, relation)))

    def edges(self) -> list:
        """The knowledge as ``(head, relation, tail)`` edges: general
        knowledge first (relation = the aspect), then situated knowledge
        (relation = the perspective, spaced: ``what if no obj``); a pair's
        head is ``"a and b"``."""
        out = []
        for (entity, aspect), value in self.general.items():
            if value:
                out.append((" and ".join(pair_names(entity)), aspect, _edge_text(value)))
        for (entity, perspective), text in self.situated.items():
            if text:
                out.append((" and ".join(pair_names(entity)), perspective.replace("_", " "), text))
        return out


def entities(graph: Any) -> tuple:
    """``(objects, pairs, steps)`` a graph's knowledge is about: its objects,
    its object pairs as ``"a<AND>b"`` (:meth:`SituationGraph.pairs`) and the
    texts of its steps (each once, in time order)."""
    pairs = tuple(pair_key(a, b) for a, b in graph.pairs())
    steps = tuple(dict.fromkeys(a.text for a in graph.actions))
    return tuple(graph.objects), pairs, steps


def situated_knowledge(knowledge: Any, graph: Any) -> SituatedKnowledge:
    """The :class:`SituatedKnowledge` of ``graph`` from ``knowledge``: one
    with a ``situated(graph)`` method (:func:`language_model_knowledge`) is
    asked; a plain ``knowledge(entity, relation)`` function (:func:`table_knowledge`)
    is looked up for every entity of the graph and every relation."""
    if hasattr(knowledge, "situated"):
        return knowledge.situated(graph)
    objects, pairs, steps = entities(graph)
    general, situated = {}, {}
    for o in objects:
        for aspect in OBJECT_ASPECTS:
            general[(o, aspect)] = knowledge(o, aspect)
        for p in OBJECT_PERSPECTIVES:
            situated[(o, p)] = knowledge(o, p)
    for pair in pairs:
        situated[(pair, "interaction")] = knowledge(pair, "interaction")
    for s in steps:
        fields = {f: knowledge(s, r) for r, f in _ACTION_FIELD.items()}
        general[(s, "action")] = {f: v for f, v in fields.items() if v} or None
        for p in ACTION_PERSPECTIVES:
            situated[(s, p)] = knowledge(s, p)
    return SituatedKnowledge({k: v for k, v in general.items() if v},
                             {k: v for k, v in situated.items() if v},
                             getattr(knowledge, "name", "knowledge function"))


# ----------------------------------------------- through a language model

def _words(text: str) -> int:
    return len(text.split())


def _text_items(value: Any) -> Optional[str]:
    """A reply field as text: a string, or a list of strings joined by commas."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return ", ".join(" ".join(v.split()) for v in value)
    return None


def parse_general_reply(aspect: str, text: str, limit: int = 10) -> tuple:
    """``(value, problems)`` of a general-knowledge reply (``problems``: a
    list of ``(reason, detail)``; ``value`` None when nothing usable).

    ``usage``/``interact``: a JSON list of ``{thing: how}`` objects (an
    object of pairs is read as such a list); at most :data:`MAX_PAIRS`
    pairs kept (``too_many_pairs`` beyond). ``physical``: a JSON object of
    ``property: value`` (at most :data:`MAX_PROPERTIES`). ``action``: a JSON
    object with keys of :data:`ACTION_FIELDS`. Every text at most ``limit``
    words (``over_word_limit``: that entry dropped). Linear in the reply.

    >>> parse_general_reply("usage", '[{"sauce": "thickening"}, {"soup": 3}]')
    ([{'sauce': 'thickening'}], [('bad_structure', 'usage entry 2: not text')])
    """
    value, error = reply_json(text)
    if value is None:
        return None, [("malformed_json", error)]
    problems: list = []
    if aspect in ("usage", "interact"):
        items = [{k: v} for k, v in value.items()] if isinstance(value, dict) else value
        if not isinstance(items, list):
            return None, [("bad_structure", f"{aspect}: not a list of pairs")]
        pairs = []
        for k, item in enumerate(items[:4 * MAX_PAIRS]):
            kv = list(item.items())[:2] if isinstance(item, dict) else []
            if len(kv) != 1 or not all(isinstance(x, str) and x.strip() for x in kv[0]):
                problems.append(("bad_structure", f"{aspect} entry {k + 1}: not text"))
                continue
            thing, how = (" ".join(x.split()) for x in kv[0])
            if max(_words(thing), _words(how)) > limit:
                problems.append(("over_word_limit", f"{aspect} entry {k + 1}: over {limit} "
                                                    "words"))
                continue
            pairs.append({thing: how})
        if len(pairs) > MAX_PAIRS:
            problems.append(("too_many_pairs", f"{aspect}: {len(pairs)} pairs, the first "
                                               f"{MAX_PAIRS} kept"))
            pairs = pairs[:MAX_PAIRS]
        out: Any = pairs
    else:
        if not isinstance(value, dict):
            return None, [("bad_structure", f"{aspect}: not a JSON object")]
        allowed = ACTION_FIELDS if aspect == "action" else None
        props = {}
        for key, raw in list(value.items())[:4 * MAX_PROPERTIES]:
            name = " ".join(str(key).split()).lower()
            text_value = _text_items(raw)
            if (allowed and name not in allowed) or not name or not text_value:
                problems.append(("bad_structure", f"{aspect} {name[:40]!r}: unknown or not "
                                                  "text"))
                continue
            if max(_words(name), _words(text_value)) > limit:
                problems.append(("over_word_limit", f"{aspect} {name[:40]!r}: over {limit} "
                                                    "words"))
                continue
            props[name] = text_value
        if len(props) > MAX_PROPERTIES:
            problems.append(("too_many_pairs", f"{aspect}: {len(props)} properties, the first "
                                               f"{MAX_PROPERTIES} kept"))
            props = dict(list(props.items())[:MAX_PROPERTIES])
        out = props
    if not out:
        problems.append(("missing_field", f"{aspect}: nothing usable"))
        return None, problems
    return out, problems


def parse_text_reply(text: str) -> str:
    """A free-text reply as one line: a JSON string or ``{"answer": ...}``
    unwrapped, whitespace collapsed.

    >>> parse_text_reply('{"answer": "The sauce   would be thin."}')
    'The sauce would be thin.'
    """
    text = text.strip()
    if text[:1] == "{":
        value, _ = reply_json(text)
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            text = value["answer"]
    elif text[:1] == '"':
        try:
            loaded = json.loads(text)
            text = loaded if isinstance(loaded, str) else text
        except ValueError:
            pass
    return " ".join(text.split())


def steps_text(graph: Any) -> str:
    """The video content: one ``"<start>s - <end>s: <step>"`` line per step."""
    return "\n".join(f"{a.start:g}s - {a.end:g}s: {a.text}" for a in graph.actions)


class LanguageModelKnowledge:
    """General and situated commonsense knowledge from a language model, as
    the paper prompts for it (see the module doc). Make it with
    :func:`language_model_knowledge`.

    ``model``: the :class:`~fastvqa.generate.events.deveqa.CachedModel`;
    ``rejections``: every reply left out (stage ``"knowledge"``, ``source``
    ``"<entity>: <aspect or perspective>"``); ``iterations``: self-prompting
    iterations (the paper's 2); ``max_examples``: the most examples given.
    """

    def __init__(self, llm: Any, *, cache: Union[None, str, Path, ResponseCache] = None,
                 word_limits: Optional[Mapping[str, int]] = None, iterations: int = 2,
                 max_examples: int = MAX_EXAMPLES):
        op = "language_model_knowledge"
        self.iterations = _checks.integer(iterations, op, "iterations", minimum=1)
        self.max_examples = _checks.integer(max_examples, op, "max_examples", minimum=0)
        self.model = cached_model(llm, cache)
        self.limits = dict(WORD_LIMITS, **(word_limits or {}))
        self.rejections: list = []
        self.name = f"language model {self.model.name}"
        self._general: dict = {}

    def general(self, entity: str, aspect: str) -> Any:
        """The general knowledge of ``entity`` about ``aspect`` (one of
        :data:`OBJECT_ASPECTS`, or ``"action"`` for a step): one cached call
        with the paper's triplet, the example as a prior turn; None when the
        reply is rejected."""
        key = (entity, aspect)
        if key in self._general:
            return self._general[key]
        prompt = P.GKG_PROMPTS[aspect]
        example, example_reply = P.GKG_EXAMPLES[aspect]
        messages = [{"role": "system", "content": P.GKG_SYSTEM.format(entity=entity)},
                    {"role": "user", "content": prompt.user.format(entity=example)},
                    {"role": "assistant", "content": example_reply},
                    {"role": "user", "content": prompt.user.format(entity=entity)}]
        reply = self.model.complete(messages)
        value, problems = parse_general_reply(aspect, reply, self.limits[aspect])
        for reason, detail in problems:
            self.rejections.append(Rejection("knowledge", reason, "", f"{entity}: {aspect}",
                                             detail, reply[:300]))
        self._general[key] = value
        return value

    def situated(self, graph: Any) -> SituatedKnowledge:
        """The knowledge of one video: general knowledge of its objects and
        steps, then its situated commonsense knowledge by Few-Shot
        Self-Prompting, perspective by perspective."""
        objects, pairs, steps = entities(graph)
        general = {(o, a): self.general(o, a) for o in objects for a in OBJECT_ASPECTS}
        general.update({(s, "action"): self.general(s, "action") for s in steps})
        general = {k: v for k, v in general.items() if v}
        lines = [f"{o}: " + "; ".join(f"{a}: {_edge_text(general[(o, a)])}"
                                     for a in OBJECT_ASPECTS if (o, a) in general)
                 for o in objects if any((o, a) in general for a in OBJECT_ASPECTS)]
        lines += [f"step '{s}': {_edge_text(general[(s, 'action')])}"
                  for s in steps if (s, "action") in general]
        system = P.SCKG_SYSTEM.system.format(
            length=graph.duration, n_steps=len(graph.actions), steps=steps_text(graph),
            knowledge="\n".join(lines) if lines else "(none)")
        situated: dict = {}
        for perspective, names in ([(p, objects) for p in OBJECT_PERSPECTIVES]
                                   + [(p, pairs) for p in PAIR_PERSPECTIVES]
                                   + [(p, steps) for p in ACTION_PERSPECTIVES]):
            for entity, text in self._self_prompt(graph.video_id, system, perspective,
                                                  names).items():
                situated[(entity, perspective)] = text
        return SituatedKnowledge(general, situated, self.name)

    def _user(self, perspective: str, entity: str) -> str:
        names = pair_names(entity)
        goal = P.SCKG_GOALS[perspective].format(entity=entity, a=names[0], b=names[-1])
        return f"{goal} {P.SCKG_FORMAT}{P.SCKG_FORMAT_EXTRA.get(perspective, '')}"

    def _self_prompt(self, video_id: str, system: str, perspective: str, names: tuple) -> dict:
        """entity -> answer after :attr:`iterations` iterations (see the module doc)."""
        answers: dict = {}
        for it in range(self.iterations):
            previous, new = dict(answers), {}
            for k, entity in enumerate(names):
                if it == 0:
                    shots = [(e, new[e]) for e in names[:k] if e in new]
                else:
                    shots = [(e, previous[e]) for e in names if e != entity and e in previous]
                shots = shots[-self.max_examples:] if self.max_examples else []
                messages = [{"role": "system", "content": system}]
                for e, text in shots:
                    messages.append({"role": "user", "content": self._user(perspective, e)})
                    messages.append({"role": "assistant", "content": text})
                messages.append({"role": "user", "content": self._user(perspective, entity)})
                reply = self.model.complete(messages)
                text = parse_text_reply(reply)
                source = f"{entity}: {perspective} (iteration {it + 1})"
                if not text:
                    self.rejections.append(Rejection("knowledge", "missing_field", video_id,
                                                     source, "empty reply", reply[:300]))
                elif _words(text) > self.limits[perspective]:
                    self.rejections.append(Rejection(
                        "knowledge", "over_word_limit", video_id, source,
                        f"{_words(text)} words > {self.limits[perspective]}", reply[:300]))
                else:
                    new[entity] = text
            answers.update(new)
        return answers


def language_model_knowledge(llm: Any, *, cache: Union[None, str, Path, ResponseCache] = None,
                             word_limits: Optional[Mapping[str, int]] = None,
                             iterations: int = 2,
                             max_examples: int = MAX_EXAMPLES) -> LanguageModelKnowledge:
    """A :class:`LanguageModelKnowledge` asking ``llm`` (a ``complete(messages)``
    object or a function of the messages), its replies cached in ``cache``
    (a :class:`~fastvqa.generate.events.deveqa.ResponseCache` or its path).

    Calls per video: 3 per object and 1 per distinct step (general knowledge;
    each entity once over the whole run), and ``iterations`` per object x 2,
    per object pair and per distinct step x 3 (situated knowledge).

    >>> def model(messages):
    ...     return "It would taste bland."
    >>> know = language_model_knowledge(model)
    >>> know.general("salt", "usage") is None  # not a JSON list: rejected
    True
    >>> know.rejections[0].reason
    'malformed_json'
    """
    return LanguageModelKnowledge(llm, cache=cache, word_limits=word_limits,
                                  iterations=iterations, max_examples=max_examples)


__all__ = ["ACTION_FIELDS", "ACTION_PERSPECTIVES", "ACTION_RELATIONS", "COMMONSENSE",
           "LanguageModelKnowledge", "OBJECT_ASPECTS", "OBJECT_PERSPECTIVES",
           "OBJECT_RELATIONS", "PAIR", "PAIR_PERSPECTIVES", "SituatedKnowledge",
           "WORD_LIMITS", "entities", "language_model_knowledge", "pair_key", "pair_names",
           "parse_general_reply", "parse_text_reply", "situated_knowledge", "steps_text",
           "table_knowledge"]
