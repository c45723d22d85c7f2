# SPDX-License-Identifier: Apache-2.0
"""SOK-Bench-style questions from timed actions (docs/papers/sokbench.md
§1.2-§1.5, §2, §4.5), through language and vision-language models.

Pipeline (:func:`generate_sokbench`, ``fastvqa generate events --style sokbench``):

1. **situation graph from the captions** (:class:`SituationGraph`, the
   paper's SKG): the timed steps of one video with their objects; edges
   (action, uses, object), (timestamp, at, action), (action, before, next
   action), (object, with, object) for objects of one step.
   :func:`situations_from_events` builds them through a language model (the
   paper's "convert the sentences into organized lists of objects and
   actions, along with their corresponding timestamps"; the reply is
   validated, spans included) or, without one, by matching a vocabulary of
   object names;
2. **situation graph from the video** (:func:`add_visual_facts`,
   :mod:`~fastvqa.generate.events.sokbench_visual`): keyframes of every
   step sent to a vision-language model; the objects, attributes (the
   paper's attribute prompt) and spatial relations found are joined in.
   Without a vision model this stage is skipped, and the result says so;
3. **knowledge** (:mod:`~fastvqa.generate.events.sokbench_knowledge`):
   general knowledge (GKG, the paper's <examples, goal, output format>) and
   situated commonsense knowledge (SCKG, the paper's five parts with
   Few-Shot Self-Prompting, two iterations) from a language model
   (:func:`language_model_knowledge`), or, as a demo aid, from a table
   (:func:`table_knowledge`, :data:`COMMONSENSE`);
4. **the paper's twelve question types**
   (:mod:`~fastvqa.generate.events.sokbench_questions`,
   :data:`QUESTION_TYPES`; OI and APO are fastvqa's reading, documented
   there): every slot's hops and answer come from the graphs; its wording
   from a language model with the paper's top-down parts <video content,
   integrated graph, QA examples, goal, format>
   (:func:`language_model_questions`), or, only where no model is given,
   from fastvqa's templates;
5. **same-category distractors** (sokbench.md §1.4): three answers of the
   same knowledge category about *other* entities of the same video
   (:data:`fastvqa.retrieval.SOKBENCH_RECIPE`). Distractors from other
   videos are off by default (they risk answers that other videos'
   contexts make true, which the released example avoids);
   ``cross_video_distractors=True`` fills a short pool from other videos
   and each question records where its options came from
   (``option_sources``). A question still short of distractors is rejected
   (``too_few_distractors``). Entity names in options are masked with
   ``something``, as in the released example; 4 options, the correct
   position balanced within each type. An answer equal to a distractor
   after masking, and a question asked twice about one video, are rejected.

The output (:meth:`SOKBenchSet.data`) is the released layout
``{question_type: [question, ...]}`` that :func:`fastvqa.data.load_sokbench`
reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.generate.events import sokbench_prompts as P
from fastvqa.generate.events.deveqa import (Rejection, ResponseCache, cached_model, check_span,
                                            options_problem, rejection_counts, reply_json)
from fastvqa.generate.events.sokbench_knowledge import (
    ACTION_RELATIONS, COMMONSENSE, OBJECT_RELATIONS, WORD_LIMITS, LanguageModelKnowledge,
    SituatedKnowledge, language_model_knowledge, pair_names, situated_knowledge,
    table_knowledge)
from fastvqa.generate.events.sokbench_questions import (
    MASK, QUESTION_TYPES, QuestionType, QuestionWriter, Slot, fill, language_model_questions,
    mask_entities)
from fastvqa.generate.events.sokbench_visual import add_visual_facts

N_OPTIONS = 4
#: The most object pairs a graph offers (OI questions, interaction knowledge).
MAX_OBJECT_PAIRS = 12


# ------------------------------------------------------------ the situation

class TimedAction(NamedTuple):
    """One step: ``start``/``end`` seconds (``start <= end``), the step's
    ``text`` and the ``objects`` it names (lower-case names)."""

    index: int
    start: float
    end: float
    text: str
    objects: tuple


@dataclass(frozen=True)
class SituationGraph:
    """The situated knowledge graph of one video (sokbench.md §2.1).

    ``actions`` in time order (start, then index); ``objects`` in order of
    first use (the captions' first, then those only seen in keyframes);
    ``edges`` ``(head, relation, tail)`` with heads and tails
    ``"action:<i>"``, ``"time:<start>-<end>"``, object names or attribute
    text. From the keyframes (empty without the visual stage):
    ``attributes`` object -> the vision model's attribute sentence;
    ``relations`` ``(object, relation, object)``; ``seen`` step index ->
    objects seen in its keyframes; ``visual`` what found them (``""``: the
    stage did not run)."""

    video_id: str
    duration: float
    actions: tuple
    objects: tuple
    edges: tuple
    attributes: dict = field(default_factory=dict)
    relations: tuple = ()
    seen: dict = field(default_factory=dict)
    visual: str = ""

    @property
    def time_slot(self) -> tuple:
        """``(first start, last end)`` of the actions, seconds."""
        return (min(a.start for a in self.actions), max(a.end for a in self.actions))

    def objects_in(self, action: TimedAction) -> tuple:
        """The objects ``action`` names, then those seen in its keyframes."""
        return tuple(dict.fromkeys(action.objects + self.seen.get(action.index, ())))

    def actions_with(self, obj: str) -> list:
        """The actions naming or showing ``obj``, in time order."""
        return [a for a in self.actions if obj in self.objects_in(a)]

    def step_with(self, a: str, b: str) -> TimedAction:
        """The first action with both ``a`` and ``b``, else the first with ``a``."""
        both = [x for x in self.actions_with(a) if b in self.objects_in(x)]
        return (both or self.actions_with(a))[0]

    def neighbours(self, action: TimedAction) -> tuple:
        """``(previous action or None, next action or None)`` in time order."""
        k = self.actions.index(action)
        return (self.actions[k - 1] if k > 0 else None,
                self.actions[k + 1] if k + 1 < len(self.actions) else None)

    def pairs(self, limit: int = MAX_OBJECT_PAIRS) -> tuple:
        """Object pairs ``(a, b)`` (``a`` first in :attr:`objects` order):
        objects named together in one step, in step order, then objects in
        a spatial relation; each pair once, at most ``limit``."""
        order = {o: k for k, o in enumerate(self.objects)}
        found: dict = {}
        candidates = [(a, b) for act in self.actions for i, a in enumerate(act.objects)
                      for b in act.objects[i + 1:]]
        candidates += [(a, b) for a, _, b in self.relations]
        for a, b in candidates:
            if a != b and a in order and b in order:
                found.setdefault(tuple(sorted((a, b), key=order.get)), None)
        return tuple(found)[:limit]


def situation_graph(video_id: str, duration: float, actions: Sequence[TimedAction],
                    attributes: Optional[Mapping[str, str]] = None, *,
                    seen: Optional[Mapping[int, Sequence[str]]] = None,
                    relations: Sequence[tuple] = (), visual: str = "") -> SituationGraph:
    """A :class:`SituationGraph` from timed actions and, optionally, what
    keyframes showed: ``attributes`` (object -> text), ``seen`` (action index
    -> objects), ``relations`` (``(object, relation, object)``), ``visual``
    (what found them). Raises InputError for no action, or a span not within
    ``0 <= start <= end <= duration``.

    >>> g = situation_graph("v", 10.0, [TimedAction(0, 0.0, 4.0, "cut tofu", ("tofu",))],
    ...                     {"tofu": "The tofu is white."}, seen={0: ["knife"]})
    >>> g.objects, [e for e in g.edges if e[1] in ("seen", "attribute")]
    (('tofu', 'knife'),
     [('action:0', 'seen', 'knife'), ('tofu', 'attribute', 'The tofu is white.')])
    """
    op = "situation_graph"
    duration = _checks.real(duration, op, "duration", finite=True, positive=True)
    acts = sorted(actions, key=lambda a: (a.start, a.index))
    if not acts:
        raise InputError(f"{op}: video {video_id}: no actions")
    for a in acts:
        if not 0 <= a.start <= a.end <= duration:
            raise InputError(f"{op}: video {video_id} action {a.index}: span "
                             f"[{a.start:g}, {a.end:g}] is not within [0, {duration:g}]")
    seen = {int(k): tuple(v) for k, v in (seen or {}).items()}
    objects = tuple(dict.fromkeys([o for a in acts for o in a.objects]
                                  + [o for a in acts for o in seen.get(a.index, ())]))
    attributes = {o: attributes[o] for o in objects if attributes and attributes.get(o)}
    relations = tuple(dict.fromkeys(r for r in relations if r[0] in objects and r[2] in objects))
    edges = []
    for k, a in enumerate(acts):
        node = f"action:{a.index}"
        edges.append((f"time:{a.start:g}-{a.end:g}", "at", node))
        edges.extend((node, "uses", o) for o in a.objects)
        edges.extend((o, "with", p) for i, o in enumerate(a.objects) for p in a.objects[i + 1:])
        edges.extend((node, "seen", o) for o in seen.get(a.index, ()))
        if k + 1 < len(acts):
            edges.append((node, "before", f"action:{acts[k + 1].index}"))
    edges.extend((o, "attribute", t) for o, t in attributes.items())
    edges.extend(relations)
    return SituationGraph(str(video_id), duration, tuple(acts), objects, tuple(edges),
                          attributes, relations, seen, visual)


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


#: The step-parsing prompt (:data:`~fastvqa.generate.events.sokbench_prompts.SITUATION`,
#: fastvqa's words: the paper describes the step without printing its prompt).
SITUATION_SYSTEM = P.SITUATION.system
SITUATION_USER = P.SITUATION.user


def situation_messages(video_id: str, duration: float, events: Sequence[Any]) -> list:
    """The step-parsing request for one video's captions (``events``)."""
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


# ----------------------------------------------------------------- the set

class SOKBenchSet(NamedTuple):
    """What :func:`generate_sokbench` made: ``data`` ``{type_key: [question,
    ...]}`` (the released layout), ``rejections``, ``calls`` /
    ``cache_hits`` of the models (0 without one), ``situations`` (videos
    with a graph), ``unfilled`` (slots left out because the knowledge
    source knew nothing; not model output, so not rejections) and
    ``stages`` (``(stage, how it was done)`` pairs, e.g. ``("visual",
    "skipped: ...")``)."""

    data: dict
    rejections: list
    calls: int
    cache_hits: int
    situations: int
    unfilled: int
    stages: tuple = ()

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

    def stage_lines(self) -> list:
        """One ``"<stage>: <how>"`` line per stage."""
        return [f"{stage}: {how}" for stage, how in self.stages]


def _stats(model_stats: Any) -> tuple:
    """``(calls, hits)`` summed over one stats object or a sequence of them."""
    items = model_stats if isinstance(model_stats, (list, tuple)) else [model_stats]
    items = [m for m in items if m is not None]
    return (sum(getattr(m, "calls", 0) for m in items),
            sum(getattr(m, "hits", 0) for m in items))


def _stages(situations: list, know: Any, questions: Any, cross: bool) -> tuple:
    visual = [g for g in situations if g.visual]
    if visual:
        how = f"{len(visual)} of {len(situations)} situations ({visual[0].visual})"
    else:
        how = ("skipped: no vision model (the paper finds objects, attributes and spatial "
               "relations in keyframes)")
    if hasattr(know, "situated"):
        knows = (f"{know.name}: general knowledge by the paper's <examples, goal, format>, "
                 f"situated knowledge by Few-Shot Self-Prompting, "
                 f"{getattr(know, 'iterations', 2)} iterations")
    else:
        knows = getattr(know, "name", "a knowledge function")
    words = (f"{questions.name}, the paper's top-down parts <video content, integrated graph, "
             "QA examples, goal, format>" if questions is not None
             else "fastvqa's templates (no question model given)")
    distract = ("same video, then other videos (recorded per option)" if cross
                else "same video only")
    return (("visual", how), ("knowledge", knows), ("questions", words),
            ("distractors", distract))


def generate_sokbench(situations: Sequence[SituationGraph], knowledge: Any = None, *,
                      questions: Optional[QuestionWriter] = None,
                      types: Optional[Sequence[str]] = None, seed: int = 0,
                      n_options: int = N_OPTIONS, mask: Optional[str] = MASK,
                      cross_video_distractors: bool = False, model_stats: Any = None,
                      rejections: Optional[Sequence[Rejection]] = None) -> SOKBenchSet:
    """SOK-Bench-style questions from situation graphs.

    Args:
        situations: :class:`SituationGraph` s (one per video/clip), with
            visual facts where :func:`add_visual_facts` found them.
        knowledge: :func:`language_model_knowledge` (the paper's prompts), or
            a function ``knowledge(entity, relation) -> str | None`` such as
            :func:`table_knowledge` (the default: the built-in table, a demo
            aid). Its ``rejections`` list, if any, is added to the result.
        questions: :func:`language_model_questions`, which words every
            question through a model; None: fastvqa's templates.
        types: question-type keys of :data:`QUESTION_TYPES` (default all
            twelve, in Table-2 order).
        seed: seeds the options; each type's correct positions are balanced
            (counts differ by at most 1) with the seed ``seed + number``.
        n_options: options per question (2 .. 4).
        mask: the token replacing the video's object names in options (and
            the direct answer) of knowledge-text answers; None: no masking.
        cross_video_distractors: also draw distractors of the same category
            from other videos when a video has too few (off: such a question
            is rejected, ``too_few_distractors``).
        model_stats: an object with ``calls`` and ``hits`` (a
            :class:`~fastvqa.generate.events.deveqa.CachedModel`), or a list
            of them, to report.
        rejections: earlier rejections (situation, visual stages) to carry.

    Returns:
        :class:`SOKBenchSet`; within a type, questions in situation order,
        then entity order. Each question also holds ``question_source``
        (``"language model"`` or ``"template"``) and ``option_sources`` (per
        choice: ``"correct"``, ``"same_video"`` or ``"other_video:<id>"``).

    >>> from fastvqa.generate.events import Event
    >>> steps = ["cut tofu", "mix cornstarch with water", "fry onion in oil", "add salt"]
    >>> graphs = situations_from_events([Event("v", i, t, 10.0 * i, 10.0 * i + 9, 60.0)
    ...                                  for i, t in enumerate(steps)])
    >>> result = generate_sokbench(graphs, types=["OCT"])  # the demo table, templates
    >>> q = result.data["OCT"][0]
    >>> q["question"], q["option_sources"].count("same_video")
    ('What would happen if the person did not use tofu?', 3)
    >>> q["answer"]["direct"]
    'The dish would lose its soft protein base.'
    """
    from fastvqa.retrieval import SOKBENCH_RECIPE, build_options
    from fastvqa.retrieval.duplicates import normalize_question
    from fastvqa.retrieval.options import Recipe

    op = "generate_sokbench"
    seed = _checks.integer(seed, op, "seed", minimum=0)
    n_options = _checks.integer(n_options, op, "n_options", minimum=2)
    cross = _checks.flag(cross_video_distractors, op, "cross_video_distractors")
    if n_options > N_OPTIONS:
        raise InputError(f"{op}: n_options must be <= {N_OPTIONS}")
    know = table_knowledge() if knowledge is None else knowledge
    if not (callable(know) or hasattr(know, "situated")):
        raise InputError(f"{op}: knowledge must be language_model_knowledge(...) or a function "
                         "(entity, relation) -> text")
    keys = list(QUESTION_TYPES) if types is None else list(types)
    for k in keys:
        if k not in QUESTION_TYPES:
            raise InputError(f"{op}: unknown question type {k!r}; expected one of "
                             f"{', '.join(QUESTION_TYPES)}")
    rejected = list(rejections or [])
    situations = list(situations)
    knows = [situated_knowledge(know, g) for g in situations]
    kedges = None if questions is None else [k.edges() for k in knows]
    unfilled = 0
    slots_by_type: dict = {}
    seen: dict = {}
    for qk in keys:
        kept = []
        for gi, g in enumerate(situations):
            got, missed = fill(g, QUESTION_TYPES[qk], knows[gi])
            unfilled += missed
            for s in got:
                if questions is not None:
                    worded = questions.write(s, kedges[gi])
                    if worded is None:
                        continue
                    s = s._replace(question=worded)
                norm = (g.video_id, normalize_question(s.question))
                if norm in seen:
                    rejected.append(Rejection("template" if questions is None else "question",
                                              "duplicate_question", g.video_id, s.entity,
                                              f"{s.question!r} was already asked "
                                              f"({seen[norm]})"))
                    continue
                seen[norm] = qk
                kept.append((gi, s))
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
        for _, s in slots:
            answers.setdefault((s.graph.video_id, s.category), {})[s.entity] = \
                masked(s.answer, s.category, s.graph.video_id)
    for g in situations:  # also objects no kept question asked about
        for obj in g.objects:
            answers.setdefault((g.video_id, "object_name"), {}).setdefault(obj, obj)
    rng = np.random.default_rng(seed)
    corpus: dict = {}
    for (vid, cat), by_entity in answers.items():
        corpus.setdefault(cat, []).extend((vid, e, t) for e, t in by_entity.items())
    sample = {cat: [items[i] for i in rng.permutation(len(items))[:64]]
              for cat, items in corpus.items()}
    recipe = Recipe(SOKBENCH_RECIPE.steps, fallback=("same_category_corpus",) if cross else ())
    data: dict = {}
    for qk in keys:
        qt = QUESTION_TYPES[qk]
        slots = slots_by_type[qk]
        if not slots:
            continue
        pools, where = [], []
        for _, s in slots:
            vid = s.graph.video_id
            same = [(e, t) for e, t in answers[(vid, s.category)].items() if e != s.entity]
            pool = {"same_category": [t for _, t in same]}
            found = {t: (e, "same_video") for e, t in same}
            if cross:
                other = [(v, e, t) for v, e, t in sample[s.category] if v != vid]
                pool["same_category_corpus"] = [t for _, _, t in other]
                for v, e, t in other:
                    found.setdefault(t, (e, f"other_video:{v}"))
            pools.append(pool)
            where.append(found)
        correct = [answers[(s.graph.video_id, s.category)][s.entity] for _, s in slots]
        built = build_options(correct, pools, recipe, n_options=n_options,
                              seed=seed + qt.number, on_short="skip")
        for j in built.skipped:
            s = slots[j][1]
            off = "" if cross else " (distractors from other videos are off)"
            rejected.append(Rejection("options", "too_few_distractors", s.graph.video_id,
                                      s.entity, f"{s.question!r}: fewer than {n_options - 1} "
                                      f"{s.category} answers about other entities of the "
                                      f"video{off}"))
        out = []
        for row, j in enumerate(built.items):
            gi, s = slots[int(j)]
            opts, a = list(built.options[row]), int(built.answer[row])
            problem = options_problem(opts[a], [o for i, o in enumerate(opts) if i != a])
            if problem is not None:
                rejected.append(Rejection("options", "answer_equals_distractor",
                                          s.graph.video_id, s.entity,
                                          f"{s.question!r}: {problem}"))
                continue
            sources = ["correct" if i == a else where[int(j)][o][1] for i, o in enumerate(opts)]
            related = [where[int(j)][o][0] for i, o in enumerate(opts) if i != a]
            out.append(_record(s, opts, a, related, sources, knows[gi],
                               "language model" if questions is not None else "template"))
        if out:
            data[qk] = out
    calls, hits = _stats(model_stats)
    rejected.extend(getattr(know, "rejections", []))
    if questions is not None:
        rejected.extend(questions.rejections)
    return SOKBenchSet(data, rejected, calls, hits, len(situations), unfilled,
                       _stages(situations, know, questions, cross))


def _object_node(e: str, k: SituatedKnowledge, g: SituationGraph) -> dict:
    """An object's entry of ``related_subgraph``, in the released keys."""
    node: dict = {}
    for aspect, key in (("physical", "physical"), ("usage", "usage"),
                        ("interact", "interact with other object")):
        if k.general.get((e, aspect)):
            node[key] = k.general[(e, aspect)]
    if g.attributes.get(e):
        node["attribute"] = g.attributes[e]
    for perspective, key in (("what_if_no_obj", "what if no obj"),
                             ("contribution", "contribution")):
        if k.situated.get((e, perspective)):
            node[key] = {"subject": [e], "consequence": [k.situated[(e, perspective)]]}
    return node


def _action_node(e: str, k: SituatedKnowledge) -> dict:
    node: dict = {}
    general = k.general.get((e, "action"))
    if isinstance(general, dict):
        node.update({("general purpose" if f == "purpose" else f): v
                     for f, v in general.items()})
    for perspective, key in (("purpose", "purpose"), ("what_if_no_act", "what if no act"),
                             ("possibility", "possibility")):
        if k.situated.get((e, perspective)):
            node[key] = {"consequence": [k.situated[(e, perspective)]]}
    return node


def _record(s: Slot, options: list, answer: int, related: list, sources: list,
            k: SituatedKnowledge, question_source: str) -> dict:
    g = s.graph
    subgraph: dict = {"object": {}, "action": {}, "obj_interaction": {}}
    for e in [s.entity] + related:
        if s.category == "interaction":
            names = pair_names(e)
            text = k.situated.get((e, "interaction"))
            if text:
                subgraph["obj_interaction"][e] = {"subject": [names[0]], "target": [names[-1]],
                                                  "consequence": [text]}
        elif s.qtype.concerns == "object":
            subgraph["object"][e] = _object_node(e, k, g)
        else:
            subgraph["action"][e] = _action_node(e, k)
    start, end = g.time_slot
    steps = {"1": f"Identify what the question is about: {' and '.join(pair_names(s.entity))}.",
             "2": f"Recall the step '{s.action.text}' (from {s.action.start:g} sec to "
                  f"{s.action.end:g} sec)."}
    for h, r, t in s.edges:
        steps[str(len(steps) + 1)] = f"Use the edge: {h} | {r} | {t}"
    steps[str(len(steps) + 1)] = f"Select the answer: {options[answer]}"
    return {
        "question": s.question,
        "answer": {"direct": options[answer], "choices": options, "right_choice": answer},
        "related_objs_acts": related + [s.entity, s.action.text],
        "related_subgraph": subgraph,
        "video": g.video_id,
        "video_path": "",
        "rationale": json.dumps(steps, ensure_ascii=False),
        "time_slot": [start, end],
        "question_source": question_source,
        "option_sources": sources,
    }


def write_sokbench(data: Mapping[str, list], path: Union[str, Path],
                   what: str = "--out") -> Path:
    """Writes ``{type: [question, ...]}`` as a new JSON file (never overwriting)."""
    from fastvqa._outputs import write_new

    return write_new(path, json.dumps(dict(data), ensure_ascii=False, indent=1) + "\n", what)


__all__ = ["ACTION_RELATIONS", "COMMONSENSE", "LanguageModelKnowledge", "MASK", "N_OPTIONS",
           "OBJECT_RELATIONS", "QUESTION_TYPES", "QuestionType", "QuestionWriter",
           "SOKBenchSet", "SituatedKnowledge", "SituationGraph", "TimedAction", "WORD_LIMITS",
           "add_visual_facts", "generate_sokbench", "language_model_knowledge",
           "language_model_questions", "mask_entities", "parse_situation_reply",
           "situation_graph", "situation_messages", "situations_from_events",
           "table_knowledge", "write_sokbench"]
