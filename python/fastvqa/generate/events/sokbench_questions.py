# SPDX-License-Identifier: Apache-2.0
"""SOK-Bench's twelve question types and how a question is worded
(docs/papers/sokbench.md §1.2, §2.4).

Each type (:data:`QUESTION_TYPES`) is an identification hop (``clue``: none;
``st``, spatiotemporal: what the video shows of the object, its attribute
and spatial relation found in keyframes, else its step, or the neighbouring
step of an action; ``gk``: a general-knowledge usage) and an asked relation
(a situated-commonsense edge, or the object itself). :func:`fill` finds every
slot of a type in one situation graph: the entity, the edges the hops rest
on, the correct answer.

A slot's question is then worded either by a language model
(:class:`QuestionWriter`: the paper's top-down prompt parts, <video content,
integrated graph, QA examples, goal, format>, with the goal fixing the hops
and the answer; each reply validated) or, **only where no model is given**,
by the type's template (fastvqa's; the paper keeps its templates in its
unavailable supplement).

OI and APO are not defined in the paper's text (only named, Table 2 / Fig.
3). fastvqa's reading, from the paper and the released example:

- **OI, Object Inference**: what two objects of the video do together (the
  released ``related_subgraph`` holds an ``obj_interaction`` category of
  situated consequences for object pairs, ``"miso<AND>dashi"``, that no
  other type asks; Fig. 4's SCKG shows ``cornstarch -interaction- water ->
  form paste``). The paper's Table 3 gives types 6 and 7 the lowest BLEU of
  all, as short answers would; an inferred object name (OCB's answer kind)
  was the other reading considered.
- **APO, Action Possibility**: another way the step could have been done
  in this video (the released actions' general knowledge holds ``ways of``,
  which no other type asks).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence, Union

from fastvqa.generate.events import sokbench_prompts as P
from fastvqa.generate.events.deveqa import Rejection, ResponseCache, cached_model, reply_json
from fastvqa.generate.events.sokbench_knowledge import pair_key, pair_names, steps_text

MASK = "something"
#: The most words of a question a model writes (fastvqa's bound).
MAX_QUESTION_WORDS = 40
#: The most edges of the integrated graph shown to the model (fastvqa's bound).
MAX_GRAPH_EDGES = 200
#: Reason codes of this stage, beside :data:`fastvqa.generate.events.deveqa.REASONS`.
REASONS = {
    "not_a_question": "the reply's question does not end with '?'",
    "names_the_answer": "the question names the object (or quotes the step) its hop must "
                        "identify, or the answer",
}


class QuestionType(NamedTuple):
    """One question type: ``key`` (the Table-2 abbreviation, the output's
    type key), ``number`` (Table 2), ``concerns`` (``"object"``, or
    ``"action"``), ``clue`` (the identification hop: ``"none"``, ``"st"``,
    ``"gk"``), ``relation`` (the asked knowledge; ``"object_name"``: the
    answer is the object itself), ``template`` (fastvqa's :meth:`str.format`
    wording, used without a model), ``name`` (Table 2's)."""

    key: str
    number: int
    concerns: str
    clue: str
    relation: str
    template: str
    name: str


#: The twelve types, in Table-2 order. Template fields: ``obj``, ``st``
#: (what the video shows of the object), ``gk`` ("the thing used for
#: <usage>"), ``contribution``, ``a``/``b`` (a pair), ``step``, ``prev``,
#: ``next``.
QUESTION_TYPES: dict = {t.key: t for t in (
    QuestionType("OCT+ST", 1, "object", "st", "what_if_no_obj",
                 "What would happen if the person did not use {st}?",
                 "Object Counterfactual + Spatiotemporal"),
    QuestionType("OCB+ST", 2, "object", "st", "contribution",
                 "What does {st} contribute to the result?",
                 "Object Contribution + Spatiotemporal"),
    QuestionType("OCT+GK", 3, "object", "gk", "what_if_no_obj",
                 "What would happen if the person did not use {gk}?",
                 "Object Counterfactual + General Knowledge"),
    QuestionType("OCB+GK", 4, "object", "gk", "contribution",
                 "What does {gk} contribute to the result?",
                 "Object Contribution + General Knowledge"),
    QuestionType("OCT", 5, "object", "none", "what_if_no_obj",
                 "What would happen if the person did not use {obj}?", "Object Counterfactual"),
    QuestionType("OCB", 6, "object", "none", "object_name",
                 "What did the person use to {contribution}?", "Object Contribution"),
    QuestionType("OI", 7, "object", "none", "interaction",
                 "What do the {a} and the {b} do together in the step '{step}'?",
                 "Object Inference"),
    QuestionType("APU+ST", 8, "action", "st", "purpose",
                 "What is the purpose of the step the person does right after '{prev}'?",
                 "Action Purpose + Spatiotemporal"),
    QuestionType("ACT+ST", 9, "action", "st", "what_if_no_act",
                 "What would happen if the person skipped the step right before '{next}'?",
                 "Action Counterfactual + Spatiotemporal"),
    QuestionType("APU", 10, "action", "none", "purpose",
                 "What is the purpose of the step '{step}'?", "Action Purpose"),
    QuestionType("ACT", 11, "action", "none", "what_if_no_act",
                 "What would happen if the person skipped the step '{step}'?",
                 "Action Counterfactual"),
    QuestionType("APO", 12, "action", "none", "possibility",
                 "In what other way could the person have done the step '{step}'?",
                 "Action Possibility"),
)}


def mask_entities(text: str, names: Sequence[str], token: str = MASK) -> str:
    """``text`` with every name of ``names`` (whole words, case-insensitive,
    a plural ``s``/``es`` included, longer names first) replaced by
    ``token``, as the released SOK-Bench options mask entities.

    >>> mask_entities("Add the Tofu and tomatoes", ["tofu", "tomato"])
    'Add the something and something'
    """
    for name in sorted(set(n for n in names if n), key=lambda n: (-len(n), n)):
        text = re.sub(rf"\b{re.escape(name)}(?:es|s)?\b", token, text, flags=re.IGNORECASE)
    return text


def names_any(text: str, names: Sequence[str]) -> Optional[str]:
    """The first of ``names`` that ``text`` holds as a whole word (plural
    included), or None.

    >>> names_any("Two cubes and a cone", ["sphere", "cube"]), names_any("cubed", ["cube"])
    ('cube', None)
    """
    for name in names:
        if name and re.search(rf"\b{re.escape(name)}(?:es|s)?\b", text, flags=re.IGNORECASE):
            return name
    return None


def sentence(text: str) -> str:
    """``text`` stripped, its first letter upper-case.

    >>> sentence("  thicken the sauce")
    'Thicken the sauce'
    """
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


class Slot(NamedTuple):
    """One question to ask: its ``qtype``, ``graph``, ``entity`` (object,
    ``"a<AND>b"`` pair or step text), ``action`` (the step it is about or
    identified by), ``question`` (the template's wording until a model
    words it), ``answer`` (unmasked), ``category`` (the knowledge category
    of the answer: distractors come from the same one), ``edges`` (the
    ``(head, relation, tail)`` edges the hops rest on) and ``hidden`` (texts
    the question must not hold: the object its hop identifies, the step it
    must not quote)."""

    qtype: QuestionType
    graph: Any
    entity: str
    action: Any
    question: str
    answer: str
    category: str
    edges: tuple
    hidden: tuple


def attribute_phrase(text: str, obj: str) -> str:
    """A vision model's attribute sentence as a noun phrase (the object's
    other mentions masked).

    >>> attribute_phrase("The cube is a small red block.", "cube")
    'a small red block'
    """
    s = " ".join(text.split()).rstrip(".")
    low = s.lower()
    for prefix in (f"the {obj} is ", f"the {obj}s are ", f"the {obj} are ", "it is ",
                   "they are "):
        if low.startswith(prefix):
            s = s[len(prefix):]
            break
    return mask_entities(s, [obj])


def _st_clue(graph: Any, obj: str, step: Any, know: Any) -> Optional[tuple]:
    """``(phrase, edges)`` identifying ``obj`` by what the video shows: its
    keyframe attribute and a spatial relation when the visual stage found
    them, else its general physical description and its step."""
    attribute = graph.attributes.get(obj)
    if attribute:
        text = f"the object described as '{attribute_phrase(attribute, obj)}'"
        edges = [(obj, "attribute", attribute)]
        rel = next((r for r in graph.relations if obj in (r[0], r[2])), None)
        if rel is not None:
            text += (f" that is {rel[1]} the {rel[2]}" if rel[0] == obj
                     else f" that the {rel[0]} is {rel[1]}")
            edges.append(rel)
        return text, tuple(edges)
    physical = know(obj, "physical")
    if not physical:
        return None
    masked = mask_entities(step.text, [obj])
    return (f"the {physical} used in the step '{masked}'",
            ((obj, "physical", physical), (f"step '{step.text}'", "uses", obj)))


def fill(graph: Any, qt: QuestionType, know: Any) -> tuple:
    """``(slots, unfilled)``: the :class:`Slot` s of type ``qt`` in ``graph``
    (entities in graph order) and how many were left out because the
    knowledge ``know(entity, relation)`` had nothing."""
    slots, unfilled = [], 0
    if qt.relation == "interaction":
        for a, b in graph.pairs():
            entity = pair_key(a, b)
            answer = know(entity, "interaction")
            step = graph.step_with(a, b)
            if not answer:
                unfilled += 1
                continue
            edges = ((f"step '{step.text}'", "uses", a), (f"step '{step.text}'", "uses", b),
                     (f"{a} and {b}", "interaction", answer))
            slots.append(Slot(qt, graph, entity, step,
                              qt.template.format(a=a, b=b, step=step.text), sentence(answer),
                              "interaction", edges, ()))
    elif qt.concerns == "object":
        for obj in graph.objects:
            step = graph.actions_with(obj)[0]
            answer = obj if qt.relation == "object_name" else know(obj, qt.relation)
            contribution = know(obj, "contribution")
            fields, edges, hidden = {"obj": obj, "contribution": contribution}, [], ()
            if qt.clue == "st":
                clue = _st_clue(graph, obj, step, know)
                if clue is None:
                    unfilled += 1
                    continue
                fields["st"], edges, hidden = clue[0], list(clue[1]), (obj,)
            elif qt.clue == "gk":
                usage = know(obj, "usage")
                if not usage:
                    unfilled += 1
                    continue
                fields["gk"] = f"the thing used for {usage}"
                edges, hidden = [(obj, "usage", usage)], (obj,)
            if not answer or (qt.relation == "object_name" and not contribution):
                unfilled += 1
                continue
            if qt.relation == "object_name":
                edges, hidden = [(obj, "contribution", contribution)], (obj,)
            else:
                edges.append((obj, qt.relation.replace("_", " "), answer))
            if qt.relation == "contribution" and not answer[:1].isupper():
                answer = f"It helps {answer}"
            slots.append(Slot(qt, graph, obj, step, qt.template.format(**fields),
                              sentence(answer) if qt.relation != "object_name" else answer,
                              qt.relation, tuple(edges), hidden))
    else:
        for act in graph.actions:
            prev, nxt = graph.neighbours(act)
            if qt.clue == "st" and ((qt.key == "APU+ST" and prev is None)
                                    or (qt.key == "ACT+ST" and nxt is None)):
                continue  # no neighbouring step: the hop does not apply
            answer = know(act.text, qt.relation)
            if not answer:
                unfilled += 1
                continue
            edges, hidden = [], ()
            if qt.key == "APU+ST":
                edges, hidden = [(f"step '{prev.text}'", "before", f"step '{act.text}'")], \
                    (act.text,)
            elif qt.key == "ACT+ST":
                edges, hidden = [(f"step '{act.text}'", "before", f"step '{nxt.text}'")], \
                    (act.text,)
            edges.append((f"step '{act.text}'", qt.relation.replace("_", " "), answer))
            fields = {"step": act.text, "prev": prev.text if prev else "",
                      "next": nxt.text if nxt else ""}
            slots.append(Slot(qt, graph, act.text, act, qt.template.format(**fields),
                              sentence(answer), qt.relation, tuple(edges), hidden))
    return slots, unfilled


# ------------------------------------------------ worded by a language model

def _node(graph: Any, node: str) -> str:
    """A situation-graph node as the prompt shows it: a step by its text, a
    time node as ``a-b s``."""
    kind, _, rest = node.partition(":")
    if kind == "action" and rest.isdigit():
        act = next((a for a in graph.actions if a.index == int(rest)), None)
        return f"step '{act.text}'" if act is not None else node
    if kind == "time":
        return f"{rest} s"
    return node


def graph_lines(graph: Any, knowledge_edges: Sequence[tuple],
                limit: int = MAX_GRAPH_EDGES) -> list:
    """The integrated graph, one ``"head | relation | tail"`` line per edge:
    the situation graph's edges, then the knowledge's; at most ``limit``."""
    lines = [f"{_node(graph, h)} | {r} | {_node(graph, t)}" for h, r, t in graph.edges]
    lines += [f"{h} | {r} | {t}" for h, r, t in knowledge_edges]
    return lines[:limit]


def parse_question_reply(text: str, hidden: Sequence[str] = (),
                         max_words: int = MAX_QUESTION_WORDS) -> tuple:
    """``(question, None)`` from a question-writing reply (a JSON object
    with ``"question"``), or ``(None, (reason, detail))``: ``malformed_json``,
    ``bad_structure``, ``missing_field``, ``not_a_question`` (no final
    ``?``), ``over_word_limit``, ``names_the_answer`` (it holds one of
    ``hidden``: an object as a whole word, a step as text). Linear in the reply.

    >>> parse_question_reply('{"question": "What would the red thing do?"}', ["cube"])
    ('What would the red thing do?', None)
    >>> parse_question_reply('{"question": "What would the cube do?"}', ["cube"])[1][0]
    'names_the_answer'
    """
    value, error = reply_json(text)
    if value is None:
        return None, ("malformed_json", error)
    if not isinstance(value, dict):
        return None, ("bad_structure", "not a JSON object")
    q = value.get("question")
    if not isinstance(q, str) or not q.strip():
        return None, ("missing_field", "no question text")
    q = " ".join(q.split())
    if not q.endswith("?"):
        return None, ("not_a_question", f"{q[:80]!r} does not end with '?'")
    if len(q.split()) > max_words:
        return None, ("over_word_limit", f"{len(q.split())} words > {max_words}")
    low = q.lower()
    for h in hidden:
        if (" " in h and h.lower() in low) or names_any(q, [h]):
            return None, ("names_the_answer", f"the question holds {h!r}")
    return q, None


class QuestionWriter:
    """Words each slot's question through a language model, with the paper's
    top-down prompt parts (:data:`~fastvqa.generate.events.sokbench_prompts.QA_SYSTEM`):
    the video content and the integrated graph (situation graph + the
    video's knowledge) in the system message; the type's QA example, the
    goal (:data:`~fastvqa.generate.events.sokbench_prompts.QA_GOALS`: the
    hops, the edges they rest on, the correct answer) and the format in the
    user message. Make it with :func:`language_model_questions`.

    ``rejections``: every reply left out (stage ``"question"``); ``model``:
    the :class:`~fastvqa.generate.events.deveqa.CachedModel`."""

    def __init__(self, llm: Any, *, cache: Union[None, str, Path, ResponseCache] = None,
                 max_words: int = MAX_QUESTION_WORDS):
        self.model = cached_model(llm, cache)
        self.max_words = max_words
        self.rejections: list = []
        self.name = f"language model {self.model.name}"
        # (graph, edges) -> system text: every slot of a video shares it. Keyed
        # by identity, the objects held in the value so the ids stay theirs.
        self._systems: dict = {}

    def _system_text(self, g: Any, knowledge_edges: Sequence[tuple]) -> str:
        key = (id(g), id(knowledge_edges))
        hit = self._systems.get(key)
        if hit is None:
            text = P.QA_SYSTEM.system.format(length=g.duration, steps=steps_text(g),
                                             graph="\n".join(graph_lines(g, knowledge_edges)))
            self._systems[key] = hit = (g, knowledge_edges, text)
        return hit[2]

    def messages(self, slot: Slot, knowledge_edges: Sequence[tuple]) -> list:
        """The chat messages asking for ``slot``'s question."""
        g, qt = slot.graph, slot.qtype
        system = self._system_text(g, knowledge_edges)
        example = P.QA_EXAMPLES[qt.key]
        about = " and ".join(pair_names(slot.entity)) if qt.concerns == "object" \
            else slot.action.text
        goal = P.QA_GOAL_TEMPLATE.format(
            key=qt.key, name=qt.name, goal=P.QA_GOALS[qt.key].format(about=about),
            edges="\n".join(f"{h} | {r} | {t}" for h, r, t in slot.edges), answer=slot.answer)
        forbid = f", and it does not name {', '.join(repr(h) for h in slot.hidden)}" \
            if slot.hidden else ""
        user = P.QA_USER.format(examples=f"Q: {example[0]}\nA: {example[1]}", goal=goal,
                                max_words=self.max_words, forbid=forbid)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def write(self, slot: Slot, knowledge_edges: Sequence[tuple]) -> Optional[str]:
        """The model's question for ``slot``, or None (the rejection recorded)."""
        reply = self.model.complete(self.messages(slot, knowledge_edges))
        question, problem = parse_question_reply(reply, slot.hidden, self.max_words)
        if problem is not None:
            self.rejections.append(Rejection("question", problem[0], slot.graph.video_id,
                                             f"{slot.qtype.key}: {slot.entity}", problem[1],
                                             reply[:300]))
        return question


def language_model_questions(llm: Any, *, cache: Union[None, str, Path, ResponseCache] = None,
                             max_words: int = MAX_QUESTION_WORDS) -> QuestionWriter:
    """A :class:`QuestionWriter` asking ``llm`` (a ``complete(messages)``
    object or a function of the messages), one cached call per question.

    >>> writer = language_model_questions(lambda m: '{"question": "Why?"}')
    >>> writer.max_words
    40
    """
    return QuestionWriter(llm, cache=cache, max_words=max_words)


__all__ = ["MASK", "MAX_QUESTION_WORDS", "QUESTION_TYPES", "QuestionType", "QuestionWriter",
           "REASONS", "Slot", "attribute_phrase", "fill", "graph_lines",
           "language_model_questions", "mask_entities", "names_any", "parse_question_reply",
           "sentence"]
