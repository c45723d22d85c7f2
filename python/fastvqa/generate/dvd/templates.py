# SPDX-License-Identifier: Apache-2.0
"""DVD's question templates as data: 26 templates of the paper's 8 question
types (dvd.md §3.2, Table 6), written for fastvqa from the paper's examples.

Each :class:`Template` holds the Table 6 row it instantiates (question type,
sub-type, interval type, spatial or not), its text variants with slots, and
its functional program as nodes ``{"type", "inputs", "side_inputs"}`` whose
side inputs are slots. Slots:

- ``<Z> <C> <M> <S>`` (size, colour, material, shape) describe object 1, the
  one a question is about (or, in spatial templates, the static reference
  object); ``<Z2> <C2> <M2> <S2>`` describe object 2. In the text, the phrase
  ``the <Z> <C> <M> <S>`` is rendered as a whole (``the big rubber cone``,
  ``it``, ``the earlier mentioned cone``); ``<S>s`` is the plural noun;
- ``<A>``/``<A2>``: an action, rendered in the form the template's
  ``forms`` names (``"base"`` fly, ``"third"`` flies, ``"participle"``
  flying);
- ``<R>``: a spatial relation (``left``/``right``/``front``/``behind``,
  rendered ``to the left of`` ...);
- ``<o>``: an ordinal (``first`` .. ``third``, ``last``); ``<f>``: a
  frequency (``once``, ``twice``, ``three times``, ``the most``, ``the
  least``), as in the release's ``metadata.json`` types.

Program node types are the executor's (:mod:`fastvqa.generate.dvd.executor`)
plus three template-only shorthands expanded at instantiation
(:func:`expand_program`): ``filter_unique`` (the attribute filters of the
slot's non-empty values, then ``unique``), ``filter`` (the filters only) and
``relate_filter`` (``relate_spatial`` then the filters).

The question type and sub-type of a template are the ones
:func:`fastvqa.data.dvd.official_question_type` /
``official_question_subtype`` give its text (the official analysis rules on
the template text); the tests check that every text variant classifies as
its template says. ⚠ The paper names 26 templates but Table 6 has 24 rows;
the two extra templates here are object exist (none interval) and action
count (atomic non-spatial), neither given in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

#: Slot names of the two objects, in the order size, colour, material, shape.
OBJ1 = ("<Z>", "<C>", "<M>", "<S>")
OBJ2 = ("<Z2>", "<C2>", "<M2>", "<S2>")
#: Attribute names in slot order (DVD's object-state keys are the slots).
ATTRIBUTES = ("size", "color", "material", "shape")
ATTRIBUTE_SLOTS = dict(zip(ATTRIBUTES, OBJ1))
SLOT_ATTRIBUTES = {**dict(zip(OBJ1, ATTRIBUTES)), **dict(zip(OBJ2, ATTRIBUTES))}

#: Ordinals and frequencies the templates use (the release's metadata types).
ORDINALS = ("first", "second", "third", "last")
FREQUENCIES = ("once", "twice", "three times", "the most", "the least")
RELATIONS = ("left", "right", "front", "behind")

#: Surface words (dvd.md §2.2 lists the paper's: big, average, matte, shiny,
#: metallic, block ...). The first word of each list is the plain one.
SYNONYMS: Mapping[str, tuple[str, ...]] = {
    "large": ("large", "big"),
    "medium": ("medium", "average"),
    "small": ("small", "tiny"),
    "metal": ("metal", "metallic", "shiny"),
    "rubber": ("rubber", "matte"),
    "cube": ("cube", "block"),
    "sphere": ("sphere", "ball"),
    "cylinder": ("cylinder",),
    "cone": ("cone",),
    "spl": ("snitch",),
    "": ("thing", "object"),
}
PLURALS = {"snitch": "snitches"}

#: Action forms: base, third person, participle, noun (the paper's "flight",
#: "slide", "rotation"; "spin" is its synonym of rotate).
ACTION_FORMS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "flying": {"base": ("fly",), "third": ("flies",), "participle": ("flying",),
               "noun": ("flight",)},
    "rotating": {"base": ("rotate", "spin"), "third": ("rotates", "spins"),
                 "participle": ("rotating", "spinning"), "noun": ("rotation",)},
    "sliding": {"base": ("slide",), "third": ("slides",), "participle": ("sliding",),
                "noun": ("slide",)},
    # filter values of object count/exist templates only
    "static": {"participle": ("stationary",)},
    "contained": {"participle": ("contained",)},
}
RELATION_PHRASES = {"left": "to the left of", "right": "to the right of",
                    "front": "in front of", "behind": "behind"}

MOVING_ACTIONS = ("flying", "rotating", "sliding")


@dataclass(frozen=True)
class Template:
    """One question template.

    Attributes:
        name: unique id, also the ``template_filename`` stem written for its
            turns (``one_hop_*`` names mark the atomic spatial templates, as
            the official analysis reads the interval type from the file name).
        question_type / question_subtype: fastvqa's names
            (:data:`fastvqa.data.dvd.QUESTION_SUBTYPES` values).
        interval_type: ``"none"``, ``"atomic"`` or ``"compositional"`` (the
            kind of period the question is asked over).
        spatial: an atomic spatial template (object 1 is a static reference,
            ``<R>`` relates object 2 to it).
        texts: text variants (lower-cased when rendered).
        program: nodes ``{"type", "inputs", "side_inputs"}``, side inputs
            being slots or literal values.
        forms: the form each action slot is rendered in.
        actions: the values the ``<A>`` slot may take (``<A2>`` takes
            :data:`MOVING_ACTIONS`).
        objects: how many unique-object slots the program has (1 or 2).
        ask: for attribute queries, the attribute asked (it must not be in
            object 1's description).
    """

    name: str
    question_type: str
    question_subtype: str
    interval_type: str
    texts: tuple[str, ...]
    program: tuple[Mapping, ...]
    spatial: bool = False
    forms: Mapping[str, str] = field(default_factory=dict)
    actions: tuple[str, ...] = MOVING_ACTIONS
    objects: int = 1
    ask: Optional[str] = None

    @property
    def interval_label(self) -> str:
        """The breakdown label :func:`fastvqa.data.load_dvd` derives:
        ``none``, ``atomic_spatial``, ``atomic_non_spatial`` or
        ``compositional``."""
        if self.interval_type == "atomic":
            return "atomic_spatial" if self.spatial else "atomic_non_spatial"
        return self.interval_type

    @property
    def filename(self) -> str:
        return f"{self.name}.json"


def _n(type_: str, inputs=(), side=None) -> dict:
    node = {"type": type_, "inputs": list(inputs)}
    if side is not None:
        node["side_inputs"] = list(side)
    return node


_UNIQUE1 = _n("filter_unique", [0], OBJ1)


def _compare_int(sub: str, word: str) -> Template:
    program = (_n("scene"), _UNIQUE1, _n("count_action", [1], ["<A>"]),
               _n("scene"), _n("filter_unique", [3], OBJ2), _n("count_action", [4], ["<A2>"]),
               _n({"more": "greater_than", "equal": "equal_integer", "less": "less_than"}[sub],
                  [2, 5]))
    texts = (f"Does the <Z> <C> <M> <S> <A> {word} the <Z2> <C2> <M2> <S2> <A2>?",
             f"Would you say the <Z> <C> <M> <S> does <A> {word} the <Z2> <C2> <M2> <S2> <A2>?")
    return Template(f"compare_integer_{sub}", "compare_action_freq",
                    f"compare_action_freq.{sub}", "compositional", texts, program,
                    forms={"<A>": "base", "<A2>": "third"}, objects=2)


def _same(kind: str, sub: str) -> Template:
    phrase = {"seq": "the same sequence of activities", "set": "the same set of activities"}[kind]
    last = _n("count_object", [2]) if sub == "count" else _n("exist", [2])
    program = (_n("scene"), _UNIQUE1, _n(f"same_action_{kind}", [1]), last)
    if sub == "count":
        texts = (f"How many other things perform {phrase} as the <Z> <C> <M> <S>?",
                 f"How many other objects undertake {phrase} as the <Z> <C> <M> <S>?")
    else:
        texts = (f"Is there any other thing that performs {phrase} as the <Z> <C> <M> <S>?",
                 f"Is there another object that undertakes {phrase} as the <Z> <C> <M> <S>?")
    return Template(f"same_relate_{kind}_{sub}", f"compare_action_{kind}",
                    f"compare_action_{kind}.{sub}", "compositional", texts, program)


def _attribute(attr: str) -> Template:
    texts = {"size": ("What size is the <Z> <C> <M> <S>?", "What size does the <Z> <C> <M> <S> have?"),
             "color": ("What color is the <Z> <C> <M> <S>?",
                       "What color does the <Z> <C> <M> <S> have?"),
             "material": ("What material is the <Z> <C> <M> <S>?",
                          "What material is the <Z> <C> <M> <S> made of?"),
             "shape": ("What shape is the <Z> <C> <M> <S>?",
                       "What shape does the <Z> <C> <M> <S> have?")}[attr]
    return Template(f"zero_hop_query_{attr}", "attribute_query", f"attribute_query.{attr}",
                    "none", texts, (_n("scene"), _UNIQUE1, _n(f"query_{attr}", [1])), ask=attr)


_ALL_ACTION_TEXTS = ("What types of actions does the <Z> <C> <M> <S> undertake?",
                     "What is the <Z> <C> <M> <S> doing?")
_COUNT_TEXTS = ("How many <A> <Z> <C> <M> <S>s are there?",
                "What number of <A> <Z> <C> <M> <S>s are there?")
_EXIST_TEXTS = ("Is there any <A> <Z> <C> <M> <S>?", "Is there at least one <A> <Z> <C> <M> <S>?")
_ACTION_FILTER = (_n("scene"), _n("filter_action", [0], ["<A>"]), _n("filter", [1], OBJ1))

#: The 26 templates, in a fixed order (their index is written as
#: ``question_family_index``).
TEMPLATES: tuple[Template, ...] = (
    # Compare action frequency (compositional): more / equal / less.
    _compare_int("more", "more frequently than"),
    _compare_int("equal", "as frequently as"),
    _compare_int("less", "less frequently than"),
    # Compare action sequence / set (compositional): count / exist.
    _same("seq", "count"), _same("seq", "exist"), _same("set", "count"), _same("set", "exist"),
    # Action query.
    Template("action_query_by_frequency", "action_query", "action_query.by_frequency",
             "compositional",
             ("What types of actions does the <Z> <C> <M> <S> undertake <f>?",
              "What is the action that the <Z> <C> <M> <S> performs <f>?"),
             (_n("scene"), _UNIQUE1, _n("action_by_freq", [1], ["<f>"]))),
    Template("action_query_by_order", "action_query", "action_query.by_order", "compositional",
             ("What is the <Z> <C> <M> <S> doing <o>?",
              "What type of action does the <Z> <C> <M> <S> perform <o>?"),
             (_n("scene"), _UNIQUE1, _n("action_by_order", [1], ["<o>"]))),
    Template("zero_hop_action_query", "action_query", "action_query.all_actions",
             "compositional", _ALL_ACTION_TEXTS,
             (_n("scene"), _UNIQUE1, _n("query_action_set", [1]))),
    Template("atomic_action_query", "action_query", "action_query.all_actions", "atomic",
             _ALL_ACTION_TEXTS, (_n("scene"), _UNIQUE1, _n("query_action_set", [1]))),
    Template("one_hop_action_query", "action_query", "action_query.all_actions", "atomic",
             ("What types of actions does the <Z2> <C2> <M2> <S2> that is <R> the <Z> <C> <M> <S> "
              "undertake?",
              "What is the <Z2> <C2> <M2> <S2> <R> the <Z> <C> <M> <S> doing?"),
             (_n("scene"), _UNIQUE1, _n("relate_filter", [1], ["<R>", *OBJ2]), _n("unique", [2]),
              _n("query_action_set", [3])), spatial=True, objects=2),
    # Attribute query (no interval).
    _attribute("size"), _attribute("color"), _attribute("material"), _attribute("shape"),
    # Action count.
    Template("zero_hop_action_count", "action_count", "action_count", "compositional",
             ("How many times does the <Z> <C> <M> <S> <A> in total?",
              "How many times does the <Z> <C> <M> <S> <A>?"),
             (_n("scene"), _UNIQUE1, _n("count_action", [1], ["<A>"])), forms={"<A>": "base"}),
    Template("atomic_action_count", "action_count", "action_count", "atomic",
             ("How many times does the <Z> <C> <M> <S> <A> in this period?",
              "How many times does the <Z> <C> <M> <S> <A>?"),
             (_n("scene"), _UNIQUE1, _n("count_action", [1], ["<A>"])), forms={"<A>": "base"}),
    # Object count.
    Template("zero_hop_object_count", "object_count", "object_count", "compositional",
             _COUNT_TEXTS, (*_ACTION_FILTER, _n("count_object", [2])),
             forms={"<A>": "participle"}),
    Template("one_hop_object_count", "object_count", "object_count", "atomic",
             ("What number of <Z2> <C2> <M2> <S2>s are <R> the <Z> <C> <M> <S>?",
              "How many <Z2> <C2> <M2> <S2>s are <R> the <Z> <C> <M> <S>?"),
             (_n("scene"), _UNIQUE1, _n("relate_filter", [1], ["<R>", *OBJ2]),
              _n("count_object", [2])), spatial=True, objects=2),
    Template("atomic_object_count", "object_count", "object_count", "atomic", _COUNT_TEXTS,
             (*_ACTION_FILTER, _n("count_object", [2])), forms={"<A>": "participle"},
             actions=(*MOVING_ACTIONS, "static")),
    Template("none_object_count", "object_count", "object_count", "none",
             ("What number of <Z> <C> <M> <S>s are there?", "How many <Z> <C> <M> <S>s are there?"),
             (_n("scene"), _n("filter", [0], OBJ1), _n("count_object", [1]))),
    # Object exist.
    Template("zero_hop_object_exist", "object_exist", "object_exist", "compositional",
             _EXIST_TEXTS, (*_ACTION_FILTER, _n("exist", [2])), forms={"<A>": "participle"}),
    Template("one_hop_object_exist", "object_exist", "object_exist", "atomic",
             ("Is there any <Z2> <C2> <M2> <S2> <R> the <Z> <C> <M> <S>?",
              "Is there at least one <Z2> <C2> <M2> <S2> <R> the <Z> <C> <M> <S>?"),
             (_n("scene"), _UNIQUE1, _n("relate_filter", [1], ["<R>", *OBJ2]), _n("exist", [2])),
             spatial=True, objects=2),
    Template("atomic_object_exist", "object_exist", "object_exist", "atomic", _EXIST_TEXTS,
             (*_ACTION_FILTER, _n("exist", [2])), forms={"<A>": "participle"},
             actions=(*MOVING_ACTIONS, "static", "contained")),
    Template("none_object_exist", "object_exist", "object_exist", "none",
             ("Is there any <Z> <C> <M> <S>?", "Is there at least one <Z> <C> <M> <S>?"),
             (_n("scene"), _n("filter", [0], OBJ1), _n("exist", [1]))),
)

TEMPLATES_BY_NAME: Mapping[str, Template] = {t.name: t for t in TEMPLATES}

#: Follow-up texts of topic-transfer turns (dvd.md §3.4 Type III); the
#: official rules classify ``what about its <attr>`` as that attribute query
#: and other ``what about`` turns as the previous turn's type.
ATTRIBUTE_TRANSFER_TEXTS = ("What about its {attr}?", "What about its {attr} ?")
SPATIAL_TRANSFER_TEXTS = ("What about <R> it?", "How about <R> it?")
TEMPORAL_TRANSFER_TEXTS = ("what about up until now ?", "what about now ?",
                           "what about until now ?")

#: Temporal phrases of periods (dvd.md §2.4's reading of the paper's examples).
#: ``{obj}`` is the possessive object phrase, ``{act}`` the ordinal + noun.
WHOLE_VIDEO_PHRASES = ("during the whole video", "throughout the whole video")
PERIOD_PHRASES = {
    "during": ("during {obj} 's {act}",),
    "until": ("until the end of {obj} 's {act}",),
    "before": ("before {obj} 's {act}",),
    "after": ("after {obj} 's {act}",),
    "since": ("since the start of {obj} 's {act}",),
}
#: Cross-turn temporal relations (TR) to the previous turn's interval.
RELATION_TEMPORAL_PHRASES = {
    "during": ("during this time period", "in the same time period"),
    "before": ("before this time period", "before that"),
    "after": ("after this time period", "after that"),
}
#: Long-term object references (dvd.md §3.4 Type II).
EARLIER_PHRASES = ("the earlier mentioned", "the aforementioned")


def expand_program(nodes, values: Mapping[str, str], *, with_map: bool = False):
    """A template program with its slots filled -> executor nodes.

    ``values`` maps slots to values (attribute values, ``""`` for an unused
    attribute; ``<A>``, ``<R>``, ``<o>``, ``<f>`` values). The shorthands
    ``filter_unique`` / ``filter`` / ``relate_filter`` become
    ``filter_size``/``filter_color``/``filter_material``/``filter_shape``
    nodes for the non-empty attributes (``relate_spatial`` first,
    ``unique`` last for ``filter_unique``); input indices are renumbered.
    Returns new node dicts (``type``, ``inputs``, ``side_inputs`` where the
    module has side inputs); with ``with_map``, ``(nodes, where)`` where
    ``where`` maps each template node index to the index of the last node it
    expanded into (the release's ``state.input_map``)."""
    out: list[dict] = []
    where: dict[int, int] = {}  # template node index -> index of its last expanded node

    def value(side: str) -> str:
        return values.get(side, side) if side.startswith("<") else side

    for i, node in enumerate(nodes):
        inputs = [where[j] for j in node.get("inputs", [])]
        kind = node["type"]
        side = list(node.get("side_inputs", []))
        if kind in ("filter_unique", "filter", "relate_filter"):
            prev = inputs[0]
            if kind == "relate_filter":
                out.append({"type": "relate_spatial", "inputs": [prev],
                            "side_inputs": [value(side[0])]})
                prev = len(out) - 1
                side = side[1:]
            for slot in side:
                v = value(slot)
                if v:
                    out.append({"type": f"filter_{SLOT_ATTRIBUTES[slot]}", "inputs": [prev],
                                "side_inputs": [v]})
                    prev = len(out) - 1
            if kind == "filter_unique":
                out.append({"type": "unique", "inputs": [prev]})
                prev = len(out) - 1
            where[i] = prev
            continue
        new = {"type": kind, "inputs": inputs}
        if side:
            new["side_inputs"] = [value(s) for s in side]
        out.append(new)
        where[i] = len(out) - 1
    return (out, where) if with_map else out


def template_json(template: Template) -> dict:
    """The template as the release writes it under a turn's ``template``:
    ``text``, ``nodes``, ``interval_type`` (the other fields are added per
    turn by the generator)."""
    return {"text": list(template.texts), "nodes": [dict(n) for n in template.program],
            "interval_type": template.interval_type}


__all__ = ["ACTION_FORMS", "ATTRIBUTES", "ATTRIBUTE_TRANSFER_TEXTS", "EARLIER_PHRASES",
           "FREQUENCIES", "MOVING_ACTIONS", "ORDINALS", "PERIOD_PHRASES", "RELATIONS",
           "RELATION_PHRASES", "RELATION_TEMPORAL_PHRASES", "SPATIAL_TRANSFER_TEXTS", "SYNONYMS",
           "TEMPLATES", "TEMPLATES_BY_NAME", "TEMPORAL_TRANSFER_TEXTS", "Template",
           "WHOLE_VIDEO_PHRASES", "expand_program", "template_json"]
