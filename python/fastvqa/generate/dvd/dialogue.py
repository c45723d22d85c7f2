# SPDX-License-Identifier: Apache-2.0
"""DVD's dialogue generator (dvd.md §1.4, §3.3-§3.5): ten-turn dialogues over
CATER-format scenes, with cross-turn relations, answer balancing and the
redundancy and dependency filters, written in the released DVD JSON layout.

This module drives the generation (:class:`DialogueGenerator`,
:func:`generate_dialogues`: scenes, dialogues, turns, retries, the summary);
the pieces it calls live beside it:

- :mod:`~fastvqa.generate.dvd.candidates`: drafting one candidate turn
  (topic transfers, new questions, periods, object references);
- :mod:`~fastvqa.generate.dvd.filters`: the acceptance filters (answer
  sub-space, :class:`AnswerBalancer`, :func:`is_redundant`,
  :func:`passes_dependency_filter`) and :data:`REJECTION_REASONS`;
- :mod:`~fastvqa.generate.dvd.render`: question text and the released JSON
  layout (:func:`dialogues_to_json`, :func:`write_dialogues`);
- :mod:`~fastvqa.generate.dvd.state`: the per-scene caches and the turns and
  dialogue being drafted.

The filters' and the writers' names are re-exported here.

One dialogue, turn by turn:

1. Turn 1 picks the video cutoff ``T0``
   (:meth:`DialogueGenerator.sample_cutoff`: an action's start or end more
   than ``cutoff_spacing`` = 50 frames after the video start and before its
   end; none: the whole video) and asks an independent
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
   (:func:`passes_dependency_filter`) and, where its first cutoff left room
   for a video update, it has at least ``min_video_updates`` (1) of them (the
   paper: "each DVD dialogue contains at least 1 turn and maximum 3 turns in
   which the video input is updated"); up to ``max_attempts`` dialogues are
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

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa.errors import InputError, InputTypeError
from fastvqa.generate.dvd.candidates import CandidateSampler, sample_cutoff
from fastvqa.generate.dvd.filters import (REJECTION_REASONS, AnswerBalancer, Fact, Reject,
                                          check_candidate, is_redundant,
                                          passes_dependency_filter)
from fastvqa.generate.dvd.render import dialogues_to_json, turn_json, write_dialogues
from fastvqa.generate.dvd.state import Draft, SceneData, record_turn


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



# ----------------------------------------------------------------------------- generator

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
        min_video_updates: a dialogue whose first cutoff is not the video
            end is kept only with at least this many video updates (1, the
            paper's observation; 0 turns the filter off).
        max_tries: candidates per turn before the dialogue is given up (60);
        max_attempts: dialogues tried per scene (100, as the released code).
        split / cater_split: the ``split`` (CATER split, part of every record
            key) and ``cater_split`` fields written.
    """

    def __init__(self, *, seed: int, dialogues_per_scene: int = 10, turns: int = 10,
                 p_extend: float = 0.3, cutoff_spacing: int = 50, balance_reset: int = 250,
                 threshold: int = 10, p_attribute: float = 0.7, p_spatial: float = 0.7,
                 p_relation: float = 0.5, p_reference: float = 0.5, p_dependent: float = 0.98,
                 p_whole: float = 0.1, p_skip_none: float = 0.8, min_video_updates: int = 1,
                 max_tries: int = 60,
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
        self.min_video_updates = _checks.integer(min_video_updates, op, "min_video_updates",
                                                 minimum=0)
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

    def _sampler(self) -> CandidateSampler:
        return CandidateSampler(
            p_extend=self.p_extend, p_attribute=self.p_attribute, p_spatial=self.p_spatial,
            p_relation=self.p_relation, p_reference=self.p_reference,
            p_dependent=self.p_dependent, p_whole=self.p_whole, p_skip_none=self.p_skip_none,
            threshold=self.threshold, cutoff_spacing=self.cutoff_spacing)

    def _scene(self, scene, position: int, balancer: AnswerBalancer, rejections: Counter):
        data = SceneData(scene, self.threshold)
        if len(data.identifiable) < 2:
            return None
        rng = np.random.default_rng(scene_seed(self.seed, scene.name))
        sampler = self._sampler()
        kept: list = []
        for _ in range(self.max_attempts):
            if len(kept) >= self.dialogues_per_scene:
                break
            dialogue = self._dialogue(data, rng, sampler, balancer, rejections)
            if dialogue is None:
                rejections["turn_unfilled"] += 1
                continue
            turns = [turn_json(data, dialogue, t, position, split=self.split,
                               cater_split=self.cater_split)
                     for t in range(len(dialogue.turns))]
            if not passes_dependency_filter(turns):
                rejections["dependency_filter"] += 1
                continue
            if dialogue.turns and dialogue.turns[0].cutoff is not None and sum(
                    x.transfer == "temporal" for x in dialogue.turns) < self.min_video_updates:
                rejections["no_video_update"] += 1
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
        return sample_cutoff(scene, rng, previous, self.cutoff_spacing)

    # ------------------------------------------------------------------ dialogue

    def _dialogue(self, data: SceneData, rng, sampler: CandidateSampler,
                  balancer: AnswerBalancer, rejections: Counter) -> Optional[Draft]:
        """One dialogue of ``turns`` turns, each the first of up to
        ``max_tries`` candidates that the filters accept; None when some
        turn gets none."""
        d = Draft(cutoff=self.sample_cutoff(data.scene, rng, None))
        for t in range(self.turns):
            turn = None
            for _ in range(self.max_tries):
                try:
                    turn = sampler.candidate(data, d, t, rng)
                    check_candidate(turn, d, balancer)
                    break
                except Reject as r:
                    rejections[r.reason] += 1
                    turn = None
            if turn is None:
                return None
            d.turns.append(turn)
            d.pending.setdefault(turn.template.name, Counter())[turn.answer] += 1
            if turn.transfer is None:
                d.used.add(turn.template.name)
            d.cutoff = turn.cutoff
            record_turn(d.state, turn, t + 1)
        return d


def _summarise(dialogues, scenes, skipped, short, rejections) -> GenerationSummary:
    from fastvqa.data.dvd import QUESTION_SUBTYPES, official_question_subtype

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
    return GenerationSummary(scenes, skipped, short, len(dialogues), turns, dict(rejections),
                             updates, dict(transfers), dict(sorted(qtypes.items())))


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



__all__ = ["AnswerBalancer", "DialogueGenerator", "Fact", "GenerationResult",
           "GenerationSummary", "REJECTION_REASONS", "dialogues_to_json", "generate_dialogues",
           "is_redundant", "passes_dependency_filter", "scene_seed", "shard_scenes",
           "write_dialogues"]
