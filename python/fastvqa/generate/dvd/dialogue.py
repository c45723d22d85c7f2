# SPDX-License-Identifier: Apache-2.0
"""DVD's dialogue generator (dvd.md §1.4, §3.3-§3.5): ten-turn dialogues over
CATER-format scenes, with cross-turn relations, answer balancing and the
redundancy and dependency filters, written in the released DVD JSON layout.

One dialogue, turn by turn:

1. Turn 1 picks the video cutoff ``T0`` (:func:`sample_cutoff`: an action's
   start or end more than ``cutoff_spacing`` = 50 frames after the video start
   and before its end; none: the whole video) and asks an independent
   question: a template (:mod:`~fastvqa.generate.dvd.templates`; ``none``
   interval templates are skipped 80 % of the time), a period of the
   template's interval type among the visible periods
   (:func:`~fastvqa.generate.dvd.intervals.atomic_periods` /
   ``compositional_periods`` at the cutoff) that a phrase can name ("during
   the whole video", "during / until the end of / before / after / since the
   start of X 's n-th flight"), objects described by attributes that single
   them out, the program executed (:func:`~fastvqa.generate.dvd.executor.execute`).
2. Turns 2-10 first try a topic transfer when the previous turn allows one
   (dvd.md §3.4 Type III): *temporal* (``p_extend``, default the paper's
   30 %): the previous question again over a video extended to a later cutoff
   (more than 50 frames later; the video end when no such event is left;
   never after the cutoff has reached the end; the previous period must end
   at the cutoff and be compositional), *attribute* (70 %, after an attribute
   query: "what about its material ?") or *spatial* (70 %, after a spatial
   object count/exist: "what about to the right of it ?"). Otherwise a new
   template with a temporal relation to the previous period (TR: ``during``
   = the same period, ``before`` = video start to its start, ``after`` = its
   end to the video end) or a period named through a mentioned object ("before
   its first flight", "until the end of the earlier mentioned red thing 's
   slide"), and object references in the question (short range: "it", the
   previous turn's one object; long range: "the earlier mentioned <attributes
   the dialogue has mentioned>", an object first mentioned two or more turns
   earlier, drawn uniformly).
3. Every candidate is rejected (and another drawn, up to ``max_tries`` per
   turn) when it is ill-posed (a description that is not unique, a moving
   spatial reference, a program error), its answer is outside the
   40-answer space or the template's sub-space, answer balancing refuses it
   (:class:`AnswerBalancer`), it is redundant in the dialogue
   (:func:`is_redundant`), or (turns 2-10, with probability ``p_dependent``)
   it carries no cross-turn relation.
4. A finished dialogue is kept only if turns 2-10 each carry a relation
   (:func:`passes_dependency_filter`); up to ``max_attempts`` dialogues are
   tried per scene for ``dialogues_per_scene`` kept ones. A scene with fewer
   than two objects that its attributes single out is skipped.

Determinism: scenes are processed in name order, each with its own
``numpy.random.default_rng`` seeded by :func:`scene_seed` ``(seed, name)``;
answer-balancing counts are reset every ``balance_reset`` (250) scenes. A
shard (:func:`shard_scenes`) is a range of whole balancing blocks, so the
shards of a run together generate exactly the unsharded run's dialogues.

⚠ The paper gives no probabilities for TR, OR or the transfers; the ones
used are parameters of :class:`DialogueGenerator` (defaults documented
there), taken from dvd.md's notes on the released code where it has them.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa.errors import InputError, InputTypeError
from fastvqa.generate.dvd import executor as _ex
from fastvqa.generate.dvd import intervals as _iv
from fastvqa.generate.dvd import templates as T
from fastvqa.metrics.dialogue import ANSWER_SUBSPACES

#: Why candidates, dialogues and scenes are rejected (the summary's keys).
#: Per candidate turn: ``ill_posed``, ``answer_outside_space``,
#: ``balancing``, ``redundant``, ``no_valid_interval``, ``no_relation`` (a
#: turn after the first that could carry no cross-turn relation, refused with
#: probability ``p_dependent``); per dialogue:
#: ``turn_unfilled`` (no candidate passed for some turn),
#: ``dependency_filter``; per scene: ``scene_unidentifiable`` (fewer than two
#: objects singled out by their attributes).
REJECTION_REASONS = ("ill_posed", "answer_outside_space", "balancing", "redundant",
                     "no_valid_interval", "no_relation", "turn_unfilled", "dependency_filter",
                     "scene_unidentifiable")

_DEPENDENCY_KEYS = ("temporal", "object", "attribute", "spatial")
_INTEGER_ANSWERS = frozenset(str(i) for i in range(11))


class _Reject(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# ----------------------------------------------------------------------------- helpers

def scene_seed(seed: int, name: str) -> int:
    """The seed of one scene's generator: the first 8 bytes of
    ``sha256(f"{seed}:{name}")`` as an unsigned integer, so a scene's
    dialogues depend only on the run's seed, the scene's name and the
    balancing counts of the earlier scenes of its block."""
    digest = hashlib.sha256(f"{int(seed)}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def shard_scenes(num_scenes: int, shard: Optional[tuple[int, int]],
                 block: int = 250) -> range:
    """The scene positions (in name order) shard ``(i, n)`` generates: the
    scenes are cut into balancing blocks of ``block`` scenes (the last may
    be shorter), and shard ``i`` takes blocks ``i * B // n`` to
    ``(i + 1) * B // n - 1`` of the ``B`` blocks. The ``n`` shards partition
    ``range(num_scenes)`` in order (a shard may be empty when ``n > B``), and
    since balancing counts restart at every block, each shard generates
    exactly its part of the unsharded run. ``None``: every scene."""
    if shard is None:
        return range(num_scenes)
    i, n = shard
    blocks = -(-num_scenes // block)
    lo, hi = i * blocks // n, (i + 1) * blocks // n
    return range(min(lo * block, num_scenes), min(hi * block, num_scenes))


def passes_dependency_filter(dialogue: Sequence[Mapping]) -> bool:
    """DVD's dependency filter (dvd.md §3.5): every turn after the first
    carries at least one cross-turn relation, i.e. some value of its
    ``turn_dependencies`` (``temporal``, ``object``, ``attribute``,
    ``spatial``) is not ``"none"``. Takes turns in the written JSON layout."""
    for turn in list(dialogue)[1:]:
        deps = turn.get("turn_dependencies") or {}
        if all(deps.get(k, "none") == "none" for k in _DEPENDENCY_KEYS):
            return False
    return True


class AnswerBalancer:
    """Per-template answer balancing (dvd.md §3.5, CLEVR's rule): with the
    template's counts over its whole answer sub-space (unseen answers at 0),
    an instance with answer ``a`` is refused when ``count[a] > 1.1 x`` the
    second-largest count, or ``count[a] > 5 x max(median count, 5)``.
    Counts are committed per kept dialogue (:meth:`commit`) and cleared by
    :meth:`reset` (every 250 scenes in the generator)."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter] = {}

    def reset(self) -> None:
        self.counts = {}

    def accepts(self, key: str, answer: str, space: Sequence[str],
                pending: Optional[Mapping[str, Counter]] = None) -> bool:
        """Whether ``answer`` may be added for template ``key`` (``pending``:
        counts of the dialogue being built, added to the committed ones)."""
        base = self.counts.get(key, Counter())
        extra = (pending or {}).get(key, Counter())
        values = sorted(base[a] + extra[a] for a in space)
        mine = base[answer] + extra[answer]
        if len(values) >= 2 and mine > 1.1 * values[-2]:
            return False
        return not mine > 5 * max(statistics.median(values), 5)

    def commit(self, pending: Mapping[str, Counter]) -> None:
        for key, c in pending.items():
            self.counts.setdefault(key, Counter()).update(c)


class Fact(NamedTuple):
    """What a count/exist turn established, for :func:`is_redundant`:
    ``kind`` (``"count"``/``"exist"``), ``scope`` (anything that must be equal
    for two questions to be about the same set: period frames, cutoff,
    action, relation and its reference), ``attrs`` (the filter as a frozenset
    of ``(attribute, value)``) and the ``answer`` string."""

    kind: str
    scope: tuple
    attrs: frozenset
    answer: str


def is_redundant(fact: Optional[Fact], earlier: Sequence[Fact], *, asked: Optional[str] = None,
                 obj: Optional[int] = None, known: Optional[Mapping[int, Mapping]] = None,
                 question_key: Any = None, earlier_keys: Sequence = ()) -> bool:
    """DVD's redundancy check against the dialogue's state (dvd.md §3.5).

    A candidate is redundant when
    - it asks attribute ``asked`` of object ``obj`` and the dialogue object
      state ``known`` (``{obj: {"<Z>": value, ...}}``) already holds it;
    - its ``question_key`` (template, resolved values, period, cutoff)
      equals an earlier turn's;
    - it counts or checks the existence of objects with filter ``attrs`` in
      a ``scope`` where an earlier count/exist with a filter that is a subset
      of ``attrs`` answered 0 / False (the answer follows) or 1 (the one
      object is known: the paper's example, "how many red rubber objects are
      there?" after "how many red objects are there?" answered 1). A filter
      equal to the earlier one counts as a subset."""
    if asked is not None and obj is not None and known is not None:
        if T.ATTRIBUTE_SLOTS[asked] in known.get(obj, {}):
            return True
    if question_key is not None and question_key in earlier_keys:
        return True
    if fact is not None:
        for old in earlier:
            if old.scope == fact.scope and old.attrs <= fact.attrs \
                    and old.answer in ("0", "1", "False"):
                return True
    return False


# ----------------------------------------------------------------------------- results

@dataclass(frozen=True)
class GenerationSummary:
    """What a run generated and rejected.

    ``scenes``: scenes in the run (this shard); ``scenes_skipped``: scenes
    without two identifiable objects; ``scenes_short``: scenes that got fewer
    than ``dialogues_per_scene`` dialogues; ``dialogues`` and ``turns``
    written; ``rejections``: reason (:data:`REJECTION_REASONS`) -> count
    (candidate turns, dialogues or scenes); ``video_updates``: temporal-transfer
    turns; ``transfers``: topic transfers by kind; ``question_types``: turns
    by question sub-type."""

    scenes: int
    scenes_skipped: int
    scenes_short: int
    dialogues: int
    turns: int
    rejections: Mapping[str, int]
    video_updates: int
    transfers: Mapping[str, int]
    question_types: Mapping[str, int]

    def line(self) -> str:
        """One line: what was generated, then the rejections by reason."""
        rej = ", ".join(f"{k} {v}" for k, v in self.rejections.items() if v) or "none"
        return (f"{self.dialogues} dialogues ({self.turns} turns) from {self.scenes} scenes "
                f"({self.scenes_skipped} skipped, {self.scenes_short} short); "
                f"{self.video_updates} video updates; rejected: {rej}")


class GenerationResult(NamedTuple):
    """:func:`generate_dialogues`'s result: the dialogues (each a list of
    turn dicts in the released layout) and the :class:`GenerationSummary`."""

    dialogues: list
    summary: GenerationSummary


# ----------------------------------------------------------------------------- internals

@dataclass
class _Turn:
    template: T.Template
    values: dict                      # slot -> value
    period: Optional[tuple]           # (Event|None, Event|None); None end = cutoff / video end
    cutoff: Any                       # Event or None
    nodes: list                       # resolved program (executor nodes)
    outputs: list
    answer: str
    question: str
    text0: list                       # template text written
    deps: dict
    unique: dict                      # slot (1, 2) -> object index
    described: dict                   # obj -> {slot: value} mentioned this turn
    temporal_nodes: list = field(default_factory=list)
    temporal_obj: Optional[int] = None
    earlier_obj: Optional[int] = None
    flags: dict = field(default_factory=dict)
    fact: Optional[Fact] = None
    key: Any = None
    transfer: Optional[str] = None


@dataclass
class _Dialogue:
    cutoff: Any
    turns: list = field(default_factory=list)
    state: dict = field(default_factory=dict)   # obj -> {"original_turn", "<Z>"...}
    pending: dict = field(default_factory=dict)  # template -> Counter
    used: set = field(default_factory=set)


def _attr_tuple(o) -> tuple:
    return (o.size, o.color, o.material, o.shape)


_ATTR_NAMES = ("size", "color", "material", "shape")
_SUBSETS = [c for k in range(1, 5) for c in itertools.combinations(range(4), k)]


class _SceneData:
    """Per-scene caches: events and periods per cutoff, identifiable objects."""

    def __init__(self, scene, threshold: int):
        self.scene = scene
        self.threshold = threshold
        self.n = len(scene.objects)
        self.attrs = [_attr_tuple(o) for o in scene.objects]
        full = Counter(self.attrs)
        self.identifiable = [i for i in range(self.n) if full[self.attrs[i]] == 1]
        self._periods: dict = {}
        self._named: dict = {}
        self._events: dict = {}

    def events(self, cutoff) -> tuple:
        """:func:`~fastvqa.generate.dvd.intervals.events` up to the cutoff."""
        cf = self.cutoff_frame(cutoff)
        if cf not in self._events:
            self._events[cf] = _iv.events(self.scene, cutoff=cf)
        return self._events[cf]

    def named_periods(self, cutoff, interval_type: str) -> tuple[list, list]:
        """The periods a template of ``interval_type`` may use at the cutoff
        (compositional ones, or only the atomic ones for ``"atomic"``) and,
        of those, the ones a phrase can name, as ``(period, _phrase_kind)``
        pairs."""
        key = (self.cutoff_frame(cutoff), interval_type == "atomic")
        if key not in self._named:
            atomic, comp = self.periods(cutoff)
            allowed = [p for p in comp if not key[1] or p in atomic]
            named = [(p, k) for p in allowed for k in [_phrase_kind(p)] if k is not None]
            self._named[key] = (allowed, named)
        return self._named[key]

    def cutoff_frame(self, cutoff) -> Optional[int]:
        return None if cutoff is None else cutoff.frame

    def periods(self, cutoff) -> tuple[set, list]:
        """(atomic set, compositional list) of normalised periods at the
        cutoff: an end at the cutoff frame becomes None."""
        cf = self.cutoff_frame(cutoff)
        if cf in self._periods:
            return self._periods[cf]

        def norm(p):
            s, e = p
            if e is not None and cf is not None and e.frame >= cf:
                e = None
            return (s, e)

        atomic = {norm(p) for p in _iv.atomic_periods(self.scene, self.threshold, cutoff=cf)}
        comp, seen = [], set()
        for p in _iv.compositional_periods(self.scene, self.threshold, cutoff=cf):
            q = norm(p)
            if q not in seen:
                seen.add(q)
                comp.append(q)
        self._periods[cf] = (atomic, comp)
        return atomic, comp

    def matching(self, attrs: Mapping[int, str], among: Sequence[int]) -> list[int]:
        return [i for i in among if all(self.attrs[i][k] == v for k, v in attrs.items())]


def _phrase_kind(period) -> Optional[tuple[str, Any]]:
    """How a period can be named: ("whole", None) or (kind, reference event)."""
    s, e = period
    if s is None and e is None:
        return ("whole", None)
    if s is None:
        return ("before" if e.is_start else "until", e)
    if e is None:
        return ("since" if s.is_start else "after", s)
    if s.obj == e.obj and s.is_start and not e.is_start and s.action == e.action \
            and s.nth == e.nth:
        return ("during", s)
    return None


_ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
                  "ninth", "tenth")


def _json_answer(answer: str) -> Any:
    if answer in _INTEGER_ANSWERS:
        return int(answer)
    if answer in ("True", "False"):
        return answer == "True"
    return answer


class DialogueGenerator:
    """DVD-style dialogue generation over CATER-format scenes (module notes).

    Args:
        seed: the run's seed (one seed, one dataset: byte-identical output).
        dialogues_per_scene: dialogues kept per scene (10 as DVD).
        turns: turns per dialogue (10 as DVD).
        p_extend: probability of a temporal transfer (video cutoff
            extension) where the previous turn allows one; the paper's 30 %
            (dvd.md §1.4; the released code uses 0.7 with more gating).
        cutoff_spacing: a new cutoff lies more than this many frames after
            the previous one and before the video end (50, the released code).
        balance_reset: answer-balancing counts restart every this many
            scenes (250), which is also the shard granularity.
        threshold: minimum period length, strict, in frames (10).
        p_attribute / p_spatial: attribute / spatial transfer probability
            where applicable (0.7 each, the released code's).
        p_relation: probability of a temporal relation (during/before/after
            or a period named through a mentioned object) on a turn after the
            first (0.5); p_reference: of an object reference in the question
            (0.5). A candidate turn drawn with neither gets one anyway with
            probability p_dependent (0.98); where it can carry none, it is
            refused (``no_relation``) with that probability. So relation-less
            turns stay rare (else retries would favour them, as they fail less)
            and the dependency filter rejects few dialogues.
        p_whole: probability of "the whole video" for an independent period
            where the template allows it (0.1); p_skip_none: of skipping a
            sampled template without interval (0.8, ``not_frameqa_p``).
        max_tries: candidates per turn before the dialogue is given up (60);
        max_attempts: dialogues tried per scene (100, as the released code).
        split / cater_split: the ``split`` (CATER split, part of every record
            key) and ``cater_split`` fields written.
    """

    def __init__(self, *, seed: int, dialogues_per_scene: int = 10, turns: int = 10,
                 p_extend: float = 0.3, cutoff_spacing: int = 50, balance_reset: int = 250,
                 threshold: int = 10, p_attribute: float = 0.7, p_spatial: float = 0.7,
                 p_relation: float = 0.5, p_reference: float = 0.5, p_dependent: float = 0.98,
                 p_whole: float = 0.1, p_skip_none: float = 0.8, max_tries: int = 60,
                 max_attempts: int = 100, split: str = "all_actions",
                 cater_split: str = "generated"):
        from fastvqa import _checks

        op = "DialogueGenerator"
        self.seed = _checks.integer(seed, op, "seed")
        self.dialogues_per_scene = _checks.integer(dialogues_per_scene, op,
                                                   "dialogues_per_scene", minimum=1)
        self.turns = _checks.integer(turns, op, "turns", minimum=1)
        self.cutoff_spacing = _checks.integer(cutoff_spacing, op, "cutoff_spacing", minimum=0)
        self.balance_reset = _checks.integer(balance_reset, op, "balance_reset", minimum=1)
        self.threshold = _checks.integer(threshold, op, "threshold", minimum=0)
        self.max_tries = _checks.integer(max_tries, op, "max_tries", minimum=1)
        self.max_attempts = _checks.integer(max_attempts, op, "max_attempts", minimum=1)
        for name, v in (("p_extend", p_extend), ("p_attribute", p_attribute),
                        ("p_spatial", p_spatial), ("p_relation", p_relation),
                        ("p_reference", p_reference), ("p_dependent", p_dependent),
                        ("p_whole", p_whole), ("p_skip_none", p_skip_none)):
            setattr(self, name, _checks.unit_interval(v, op, name))
        self.split = _checks.string(split, op, "split")
        self.cater_split = _checks.string(cater_split, op, "cater_split")

    # ------------------------------------------------------------------ public

    def generate(self, scenes: Sequence, *, shard: Optional[tuple[int, int]] = None,
                 progress=None) -> GenerationResult:
        """Dialogues for ``scenes``, or for shard ``(i, n)`` of them
        (:func:`shard_scenes`). ``scenes``: :class:`~fastvqa.generate.dvd.scene.Scene`
        objects with distinct names, or ``(name, loader)`` pairs whose
        ``loader()`` returns the scene of that name (called only for the
        shard's scenes), in any order: they are processed sorted by name, and
        a scene's ``image_index`` is its position in that order.
        ``progress``: None (a bar only on a terminal), True or False.
        Returns a :class:`GenerationResult`; the dialogues are in scene-name
        order, each a list of ``turns`` turn dicts (released DVD layout)."""
        from fastvqa._progress import Progress
        from fastvqa.generate.dvd.scene import Scene

        items = []
        for s in scenes:
            if isinstance(s, Scene):
                items.append((s.name, s))
            elif isinstance(s, tuple) and len(s) == 2 and isinstance(s[0], str) \
                    and callable(s[1]):
                items.append(s)
            else:
                raise InputTypeError("generate_dialogues: scenes must be Scene objects or "
                                     f"(name, loader) pairs, got {type(s).__name__}")
        items.sort(key=lambda x: x[0])
        dup = [n for n, c in Counter(n for n, _ in items).items() if c > 1]
        if dup:
            raise InputError(f"generate_dialogues: two scenes are named {dup[0]!r}")
        if shard is not None:
            if not (isinstance(shard, tuple) and len(shard) == 2
                    and all(isinstance(v, int) and not isinstance(v, bool) for v in shard)
                    and shard[1] >= 1 and 0 <= shard[0] < shard[1]):
                raise InputError(f"generate_dialogues: shard must be (i, n) with 0 <= i < n, "
                                 f"got {shard!r}")
        positions = shard_scenes(len(items), shard, self.balance_reset)
        rejections = Counter({k: 0 for k in REJECTION_REASONS})
        balancer = AnswerBalancer()
        out: list = []
        skipped = short = 0
        bar = Progress(len(positions), progress is not False, desc="dialogues", unit="scene",
                       force=progress is True)
        try:
            for pos in positions:
                if pos % self.balance_reset == 0 or pos == positions.start:
                    balancer.reset()
                name, scene = items[pos]
                if not isinstance(scene, Scene):
                    scene = scene()
                    if not isinstance(scene, Scene) or scene.name != name:
                        raise InputError(f"generate_dialogues: the loader of {name!r} did not "
                                         "return a Scene of that name")
                got = self._scene(scene, pos, balancer, rejections)
                if got is None:
                    skipped += 1
                    rejections["scene_unidentifiable"] += 1
                else:
                    if len(got) < self.dialogues_per_scene:
                        short += 1
                    out.extend(got)
                bar.update()
        finally:
            bar.close()
        summary = _summarise(out, len(positions), skipped, short, rejections)
        return GenerationResult(out, summary)

    # ------------------------------------------------------------------ per scene

    def _scene(self, scene, position: int, balancer: AnswerBalancer, rejections: Counter):
        data = _SceneData(scene, self.threshold)
        if len(data.identifiable) < 2:
            return None
        rng = np.random.default_rng(scene_seed(self.seed, scene.name))
        kept: list = []
        for _ in range(self.max_attempts):
            if len(kept) >= self.dialogues_per_scene:
                break
            dialogue = self._dialogue(data, rng, balancer, rejections)
            if dialogue is None:
                rejections["turn_unfilled"] += 1
                continue
            turns = [self._turn_json(data, dialogue, t, position) for t in range(len(dialogue.turns))]
            if not passes_dependency_filter(turns):
                rejections["dependency_filter"] += 1
                continue
            balancer.commit(dialogue.pending)
            kept.append(turns)
        return kept

    # ------------------------------------------------------------------ cutoffs

    def sample_cutoff(self, scene, rng, previous: Optional[int]):
        """A cutoff event after ``previous`` (frame; None = the video start):
        drawn uniformly among action start/end events more than
        ``cutoff_spacing`` frames after ``previous`` (after frame 0 at the
        start) and more than ``cutoff_spacing`` frames before the video end
        (``num_frames - 1``). None (the whole video) when there is none."""
        lo = 0 if previous is None else previous
        last = scene.num_frames - 1
        cands = sorted({e for e in _iv.events(scene) if e.action != "contained"
                        and e.frame - lo > self.cutoff_spacing
                        and last - e.frame > self.cutoff_spacing})
        if not cands:
            return None
        return cands[int(rng.integers(len(cands)))]

    # ------------------------------------------------------------------ dialogue

    def _dialogue(self, data: _SceneData, rng, balancer, rejections) -> Optional[_Dialogue]:
        d = _Dialogue(cutoff=self.sample_cutoff(data.scene, rng, None))
        for t in range(self.turns):
            turn = None
            for _ in range(self.max_tries):
                try:
                    turn = self._candidate(data, d, t, rng)
                    self._check(data, d, turn, balancer)
                    break
                except _Reject as r:
                    rejections[r.reason] += 1
                    turn = None
            if turn is None:
                return None
            self._accept(d, turn, t)
        return d

    def _accept(self, d: _Dialogue, turn: _Turn, t: int) -> None:
        d.turns.append(turn)
        d.pending.setdefault(turn.template.name, Counter())[turn.answer] += 1
        if turn.transfer is None:
            d.used.add(turn.template.name)
        d.cutoff = turn.cutoff
        for obj, attrs in turn.described.items():
            entry = d.state.setdefault(obj, {"original_turn": t + 1})
            entry.update(attrs)
        if turn.template.ask is not None and 1 in turn.unique:
            d.state.setdefault(turn.unique[1], {"original_turn": t + 1})[
                T.ATTRIBUTE_SLOTS[turn.template.ask]] = turn.answer

    def _check(self, data, d: _Dialogue, turn: _Turn, balancer: AnswerBalancer) -> None:
        space = ANSWER_SUBSPACES[turn.template.question_subtype]
        if turn.answer not in space:
            raise _Reject("answer_outside_space")
        obj = turn.unique.get(1)
        if is_redundant(turn.fact, [x.fact for x in d.turns if x.fact is not None],
                        asked=turn.template.ask, obj=obj, known=d.state,
                        question_key=turn.key, earlier_keys=[x.key for x in d.turns]):
            raise _Reject("redundant")
        if not balancer.accepts(turn.template.name, turn.answer, space, d.pending):
            raise _Reject("balancing")

    # ------------------------------------------------------------------ execution

    def _run(self, data, nodes, period, cutoff) -> tuple[list, str]:
        cf = data.cutoff_frame(cutoff)
        try:
            outputs = _ex.execute(nodes, data.scene, period=period, cutoff=cf)
        except _ex.ProgramError as err:  # ill-posed on this scene (a malformed
            raise _Reject("ill_posed") from err  # program is a bug and propagates)
        try:
            answer = _ex.to_answer(outputs[-1])
        except InputError:
            raise _Reject("answer_outside_space") from None
        return outputs, answer

    # ------------------------------------------------------------------ candidates

    def _candidate(self, data, d: _Dialogue, t: int, rng) -> _Turn:
        if t > 0:
            prev = d.turns[-1]
            kinds = []
            if prev.transfer != "temporal" and prev.template.interval_type == "compositional" \
                    and prev.period is not None and prev.period[1] is None \
                    and d.cutoff is not None and rng.random() < self.p_extend:
                kinds.append("temporal")
            if prev.template.ask is not None and rng.random() < self.p_attribute:
                kinds.append("attribute")
            if prev.template.spatial and prev.template.question_type in (
                    "object_count", "object_exist") and rng.random() < self.p_spatial:
                kinds.append("spatial")
            if kinds:
                kind = kinds[int(rng.integers(len(kinds)))]
                return getattr(self, f"_transfer_{kind}")(data, d, prev, rng)
        return self._new_question(data, d, t, rng)

    def _finish(self, data, d, template, values, period, cutoff, nodes, *, question, text0,
                deps, unique, described, temporal_nodes=(), temporal_obj=None,
                earlier_obj=None, flags=None, transfer=None, fact_scope=None) -> _Turn:
        outputs, answer = self._run(data, nodes, period, cutoff)
        flags = dict(flags or {})
        # answerable without localising: the whole video input gives the same answer
        if template.interval_type != "none" and period != (None, None):
            _, whole = self._run_quiet(data, nodes, (None, None), cutoff)
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
        return _Turn(template, values, period, cutoff, nodes, outputs, answer, question, text0,
                     deps, unique, described, list(temporal_nodes), temporal_obj, earlier_obj,
                     flags, fact, key, transfer=transfer)

    def _run_quiet(self, data, nodes, period, cutoff):
        try:
            return self._run(data, nodes, period, cutoff)
        except _Reject:
            return None, None

    # -- transfers

    def _transfer_temporal(self, data, d, prev: _Turn, rng) -> _Turn:
        new = self.sample_cutoff(data.scene, rng, data.cutoff_frame(d.cutoff))
        period = (prev.period[0], None)
        if new is not None and period[0] is not None and new.frame - period[0].frame \
                <= self.threshold:
            raise _Reject("no_valid_interval")
        text = T.TEMPORAL_TRANSFER_TEXTS[int(rng.integers(len(T.TEMPORAL_TRANSFER_TEXTS)))]
        deps = {"temporal": "video_update", "object": "none", "attribute": "none",
                "spatial": "none"}
        tnodes = [{"type": "track_interval", "inputs": [], "side_inputs": []},
                  # the previous interval's start to the new video end
                  {"type": "relate_temporal", "inputs": [0], "side_inputs": ["update"]}]
        turn = self._finish(data, d, prev.template, prev.values, period, new, prev.nodes,
                            question=text, text0=list(prev.text0), deps=deps,
                            unique=prev.unique, described={}, temporal_nodes=tnodes,
                            flags={"effective_obj_tracking": False,
                                   "effective_temporal_obj_tracking": False,
                                   "effective_interval_tracking": False},
                            transfer="temporal",
                            fact_scope=_fact_scope(prev.template, prev.values, prev.unique))
        return turn

    def _transfer_attribute(self, data, d, prev: _Turn, rng) -> _Turn:
        obj = prev.unique[1]
        known = d.state.get(obj, {})
        options = [a for a in T.ATTRIBUTES if a != prev.template.ask
                   and T.ATTRIBUTE_SLOTS[a] not in known and not prev.values.get(
                       T.ATTRIBUTE_SLOTS[a])]
        if not options:
            raise _Reject("redundant")
        attr = options[int(rng.integers(len(options)))]
        template = T.TEMPLATES_BY_NAME[f"zero_hop_query_{attr}"]
        nodes = T.expand_program(template.program, _full_values(data, obj, T.OBJ1))
        text = T.ATTRIBUTE_TRANSFER_TEXTS[0].format(attr=attr)
        deps = {"temporal": "none", "object": "last_unique", "attribute": attr,
                "spatial": "none"}
        return self._finish(data, d, template, dict(prev.values), None, d.cutoff, nodes,
                            question=f"what about its {attr} ?", text0=[text], deps=deps,
                            unique={1: obj}, described={},
                            flags={"effective_obj_tracking": True,
                                   "effective_temporal_obj_tracking": False,
                                   "effective_interval_tracking": False},
                            transfer="attribute")

    def _transfer_spatial(self, data, d, prev: _Turn, rng) -> _Turn:
        old = prev.values["<R>"]
        rel = [r for r in T.RELATIONS if r != old][int(rng.integers(len(T.RELATIONS) - 1))]
        values = dict(prev.values, **{"<R>": rel})
        ref = prev.unique[1]
        nodes = T.expand_program(prev.template.program,
                                 {**values, **_full_values(data, ref, T.OBJ1)})
        deps = {"temporal": "none", "object": "none", "attribute": "none", "spatial": rel}
        text = T.SPATIAL_TRANSFER_TEXTS[0]
        question = f"what about {T.RELATION_PHRASES[rel]} it ?"
        return self._finish(data, d, prev.template, values, prev.period, d.cutoff, nodes,
                            question=question, text0=[text], deps=deps, unique=dict(prev.unique),
                            described={}, temporal_nodes=list(prev.temporal_nodes),
                            flags={"effective_obj_tracking": False,
                                   "effective_temporal_obj_tracking": False,
                                   "effective_interval_tracking": False},
                            transfer="spatial",
                            fact_scope=_fact_scope(prev.template, values, prev.unique))

    # -- new questions

    def _new_question(self, data, d: _Dialogue, t: int, rng) -> _Turn:
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
                raise _Reject("no_relation")
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
                raise _Reject("no_valid_interval")
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
            raise _Reject("no_valid_interval")
        p, (kind, ev) = cands[int(rng.integers(len(cands)))]
        if kind == "whole":
            phrase = T.WHOLE_VIDEO_PHRASES[int(rng.integers(len(T.WHOLE_VIDEO_PHRASES)))]
            return p, phrase, "none", [], None, {}, False
        ref = ev.obj
        described = {}
        if temporal == "last_unique_obj":
            poss, dep, effective = "its", "last_unique_obj_none", True
        elif temporal == "earlier_unique_obj":
            desc = _state_description(data, d, ref, rng)
            poss = f"{_earlier_word(rng)} {_np(desc, rng)} 's"
            dep = "earlier_unique_obj_none"
            effective = len(data.matching(desc, range(data.n))) > 1
        else:
            desc = _fresh_description(data, ref, range(data.n), rng)
            poss, dep, effective = f"the {_np(desc, rng)} 's", "none", False
            described[ref] = {T.OBJ1[k]: v for k, v in desc.items()}
        act = _action_phrase(data, d, ev)
        phrase = T.PERIOD_PHRASES[kind][0].replace("{obj} 's", poss).replace("{act}", act)
        tnodes = [{"type": "scene", "inputs": []},
                  *[{"type": f"filter_{_ATTR_NAMES[k]}", "inputs": [i],
                     "side_inputs": [data.attrs[ref][k]]} for i, k in enumerate(range(4))],
                  {"type": "unique", "inputs": [4]},
                  {"type": "find_interval", "inputs": [5], "side_inputs": [act]},
                  {"type": "relate_temporal", "inputs": [6], "side_inputs": [kind]}]
        return p, phrase, dep, tnodes, ref, described, effective

    def _instantiate(self, data, d, t, template: T.Template, temporal, body, rng) -> _Turn:
        period, phrase, tdep, tnodes, tobj, described, eff_t = self._period_choice(
            data, d, t, template, temporal, rng)
        values: dict = {}
        unique: dict = {}
        prev = d.turns[-1] if d.turns else None
        everyone = list(range(data.n))
        pieces: dict = {}   # rendered phrases
        odep, earlier_obj, eff_o = "none", None, False
        # object 1 (unique slot or filter)
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
                    raise _Reject("ill_posed")
                pieces["obj1"] = "it"
                odep, eff_o = "last_unique", True
            elif body == "earlier_unique":
                objs = [o for o in _earlier_candidates(d, t) if o in pool]
                if not objs:
                    raise _Reject("ill_posed")
                obj = objs[int(rng.integers(len(objs)))]
                desc = _state_description(data, d, obj, rng)
                pieces["obj1"] = f"{_earlier_word(rng)} {_np(desc, rng)}"
                odep, earlier_obj = "earlier_unique", obj
                eff_o = len(data.matching(desc, everyone)) > 1
            else:
                if not pool:
                    raise _Reject("ill_posed")
                obj = pool[int(rng.integers(len(pool)))]
                avoid = template.ask
                desc = _fresh_description(data, obj, everyone, rng, avoid=avoid)
                pieces["obj1"] = f"the {_np(desc, rng)}"
                described[obj] = {**described.get(obj, {}),
                                  **{T.OBJ1[k]: v for k, v in desc.items()}}
            unique[1] = obj
            if template.ask is not None:
                if T.ATTRIBUTE_SLOTS[template.ask] in d.state.get(obj, {}):
                    raise _Reject("redundant")
        if template.objects == 2 and not template.spatial:
            others = [i for i in data.identifiable if i != unique[1]]
            if not others:
                raise _Reject("ill_posed")
            obj2 = others[int(rng.integers(len(others)))]
            desc2 = _fresh_description(data, obj2, everyone, rng)
            pieces["obj2"] = f"the {_np(desc2, rng)}"
            described[obj2] = {T.OBJ1[k]: v for k, v in desc2.items()}
            unique[2] = obj2
        # slot values
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
        # filter slots (count / exist / the relational target)
        filter_slots = _filter_slots(template)
        if filter_slots is not None:
            src = int(rng.integers(data.n))
            if template.spatial and src == unique.get(1):
                src = (src + 1) % data.n
            k = int(rng.integers(0 if template.interval_type != "none" else 1, 3))
            chosen = sorted(rng.choice(4, size=k, replace=False).tolist()) if k else []
            for i, slot in enumerate(filter_slots):
                values[slot] = data.attrs[src][i] if i in chosen else ""
        if template.name == "one_hop_action_query":
            # object 2 is singled out among the objects related to object 1
            related = [i for i in everyone if i != unique[1] and self._related(
                data, unique[1], i, period, values["<R>"], d.cutoff)]
            cands = [i for i in related if i in data.identifiable]
            if not cands:
                raise _Reject("ill_posed")
            obj2 = cands[int(rng.integers(len(cands)))]
            desc2 = _fresh_description(data, obj2, related, rng, allow_empty=True)
            for i, slot in enumerate(T.OBJ2):
                values[slot] = desc2.get(i, "")
            unique[2] = obj2
            described[obj2] = {T.OBJ1[k]: v for k, v in desc2.items()}
        # resolved program: unique slots by their full attributes
        fill = dict(values)
        if 1 in unique and template.program[1]["type"] == "filter_unique":
            fill.update(_full_values(data, unique[1], T.OBJ1))
        if 2 in unique and not template.spatial:
            fill.update(_full_values(data, unique[2], T.OBJ2))
        for s in itertools.chain(T.OBJ1, T.OBJ2):
            values.setdefault(s, "")
            fill.setdefault(s, "")
        nodes = T.expand_program(template.program, fill)
        text = template.texts[int(rng.integers(len(template.texts)))]
        body_text = _render(text, values, pieces, template, rng)
        question = body_text if not phrase else f"{phrase} , {body_text}"
        deps = {"temporal": tdep, "object": odep, "attribute": "none", "spatial": "none"}
        flags = {"effective_obj_tracking": bool(eff_o),
                 "effective_temporal_obj_tracking": bool(eff_t),
                 "effective_interval_tracking": False}
        turn = self._finish(data, d, template, values, period, d.cutoff, nodes,
                            question=question, text0=list(template.texts), deps=deps,
                            unique=unique, described=described, temporal_nodes=tnodes,
                            temporal_obj=tobj, earlier_obj=earlier_obj, flags=flags,
                            fact_scope=_fact_scope(template, values, unique))
        if temporal in ("during", "before", "after"):
            _, before = self._run_quiet(data, nodes, prev.period, d.cutoff)
            turn.flags["effective_interval_tracking"] = before is not None \
                and before != turn.answer
        return turn

    def _related(self, data, ref, other, period, rel, cutoff) -> bool:
        try:
            return bool(_iv.spatial_relation(data.scene, ref, other, period, rel,
                                                cutoff=data.cutoff_frame(cutoff)))
        except InputError:
            return False

    # ------------------------------------------------------------------ JSON

    def _turn_json(self, data, d: _Dialogue, t: int, position: int) -> dict:
        turn: _Turn = d.turns[t]
        scene = data.scene
        state_before = _state_before(d, t)
        periods = [_period_json(x.period, x.cutoff) for x in d.turns[:t + 1]]
        program = _ex.with_outputs(turn.nodes, turn.outputs)
        temporal = self._temporal_outputs(data, d, t)
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
            "split": self.split,
            "cater_split": self.cater_split,
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
            "contained_objs": self._contained(data, turn),
            **{k: bool(v) for k, v in sorted(turn.flags.items())},
        }
        return out

    def _temporal_outputs(self, data, d: _Dialogue, t: int) -> list:
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

    def _contained(self, data, turn: _Turn) -> dict:
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


def _period_json(period, cutoff) -> Optional[list]:
    if period is None:
        return None
    s, e = period
    if e is None and cutoff is not None:
        e = cutoff
    return [None if s is None else s.to_json(), None if e is None else e.to_json()]


def _state_before(d: _Dialogue, t: int) -> dict:
    state: dict = {}
    for i, turn in enumerate(d.turns[:t]):
        for obj, attrs in turn.described.items():
            entry = state.setdefault(obj, {"original_turn": i + 1})
            entry.update(attrs)
        if turn.template.ask is not None and 1 in turn.unique:
            state.setdefault(turn.unique[1], {"original_turn": i + 1})[
                T.ATTRIBUTE_SLOTS[turn.template.ask]] = turn.answer
    return {str(k): copy.deepcopy(v) for k, v in state.items()}


def _earlier_candidates(d: _Dialogue, t: int) -> list[int]:
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


def _state_description(data, d: _Dialogue, obj: int, rng) -> dict:
    """A description of a state object from its mentioned attributes that no
    other state object matches (by true attributes); all mentioned ones if
    none is smaller."""
    entry = d.state[obj]
    known = {T.SLOT_ATTRIBUTES[k]: v for k, v in entry.items() if k.startswith("<")}
    idx = {a: i for i, a in enumerate(_ATTR_NAMES)}
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
        raise _Reject("ill_posed")
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
        if avoid is not None and _ATTR_NAMES.index(avoid) in sub:
            continue
        desc = {k: data.attrs[obj][k] for k in sub}
        if data.matching(desc, among) == [obj]:
            ok.append(desc)
    if not ok:
        raise _Reject("ill_posed")
    smallest = min(len(x) for x in ok)
    pool = [x for x in ok if len(x) == smallest] if rng.random() < 0.7 else ok
    return pool[int(rng.integers(len(pool)))]


def _word(value: str, rng) -> str:
    words = T.SYNONYMS.get(value, (value,))
    return words[int(rng.integers(len(words)))]


def _np(desc: Mapping[int, str], rng, plural: bool = False) -> str:
    """``{index: value}`` -> "big red cone" (shape last; "thing"/"object"
    without one)."""
    words = [_word(desc[k], rng) for k in (0, 1, 2) if desc.get(k)]
    noun = _word(desc.get(3, "") or "", rng)
    if plural:
        noun = T.PLURALS.get(noun, noun + "s")
    return " ".join(words + [noun])


def _earlier_word(rng) -> str:
    return T.EARLIER_PHRASES[int(rng.integers(len(T.EARLIER_PHRASES)))]


def _action_phrase(data, d: _Dialogue, ev) -> str:
    """"first flight" / "slide" (no ordinal when the object has only one
    visible movement of that action)."""
    noun = T.ACTION_FORMS[ev.action]["noun"][0]
    same = [e for e in data.events(d.cutoff)
            if e.obj == ev.obj and e.kind == f"start_{ev.action}"]
    if len(same) <= 1:
        return noun
    return f"{_ORDINAL_WORDS[min(ev.nth, 10) - 1]} {noun}"


def _render(text: str, values: Mapping, pieces: Mapping, template: T.Template, rng) -> str:
    """Fills a template text: object phrases, filters, actions, relation,
    ordinal and frequency; lower-cased, "?" spaced off as the release."""
    out = text
    for n, slots in (("obj1", T.OBJ1), ("obj2", T.OBJ2)):
        pat = "the " + " ".join(slots)
        if pat in out and n in pieces:
            out = out.replace(pat, pieces[n])
    for slots in (T.OBJ1, T.OBJ2):
        pat = " ".join(slots)
        desc = {i: values.get(s, "") for i, s in enumerate(slots) if values.get(s)}
        if pat + "s" in out:
            out = out.replace(pat + "s", _np(desc, rng, plural=True))
        if "the " + pat in out:
            out = out.replace("the " + pat, "the " + _np(desc, rng))
        if pat in out:
            out = out.replace(pat, _np(desc, rng))
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


def _summarise(dialogues, scenes, skipped, short, rejections) -> GenerationSummary:
    from fastvqa.data.dvd import (QUESTION_SUBTYPES, official_question_subtype)

    transfers: Counter = Counter()
    qtypes: Counter = Counter()
    updates = 0
    turns = 0
    for dialogue in dialogues:
        prior = None
        for turn in dialogue:
            turns += 1
            deps = turn["turn_dependencies"]
            if deps["temporal"] == "video_update":
                updates += 1
                transfers["temporal"] += 1
            if deps["attribute"] != "none":
                transfers["attribute"] += 1
            if deps["spatial"] != "none":
                transfers["spatial"] += 1
            prior = official_question_subtype(turn["template"]["text"][0], prior)
            qtypes[QUESTION_SUBTYPES.get(prior, str(prior))] += 1
    return GenerationSummary(scenes, skipped, short, len(dialogues), turns,
                             dict(rejections), updates, dict(transfers), dict(sorted(qtypes.items())))


# ----------------------------------------------------------------------------- API

def generate_dialogues(scenes: Sequence, *, seed: int, dialogues_per_scene: int = 10,
                       turns: int = 10, shard: Optional[tuple[int, int]] = None,
                       progress=False, **options: Any) -> GenerationResult:
    """DVD-style dialogues for ``scenes`` (:class:`DialogueGenerator` with
    ``seed``, ``dialogues_per_scene``, ``turns`` and ``options``; see it for
    the probabilities and limits), for shard ``(i, n)`` of them when given.
    Returns a :class:`GenerationResult` ``(dialogues, summary)``; write the
    dialogues with :func:`write_dialogues` (the released DVD JSON layout:
    a list of dialogues, each a list of turn dicts)."""
    gen = DialogueGenerator(seed=seed, dialogues_per_scene=dialogues_per_scene, turns=turns,
                            **options)
    return gen.generate(scenes, shard=shard, progress=progress)


def dialogues_to_json(dialogues: Sequence) -> str:
    """The dialogues as the JSON text :func:`write_dialogues` writes
    (deterministic: keys in insertion order, no floats)."""
    return json.dumps(list(dialogues), ensure_ascii=False, separators=(",", ":"))


def write_dialogues(dialogues: Sequence, path) -> Any:
    """Writes the dialogues to ``path`` (a new file; nothing is
    overwritten: :func:`fastvqa._outputs.write_new`). Returns the path."""
    from fastvqa._outputs import write_new

    return write_new(path, dialogues_to_json(dialogues) + "\n", what="dialogue file")


__all__ = ["AnswerBalancer", "DialogueGenerator", "Fact", "GenerationResult",
           "GenerationSummary", "REJECTION_REASONS", "dialogues_to_json", "generate_dialogues",
           "is_redundant", "passes_dependency_filter", "scene_seed", "shard_scenes",
           "write_dialogues"]
