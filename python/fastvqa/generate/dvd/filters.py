# SPDX-License-Identifier: Apache-2.0
"""DVD's acceptance filters (dvd.md §3.5): what refuses a candidate turn, a
finished dialogue or a scene, and why.

- :func:`check_candidate`: a drafted turn's answer must lie in its
  template's answer sub-space, the turn must not be redundant in the
  dialogue (:func:`is_redundant`) and answer balancing must accept it
  (:class:`AnswerBalancer`); else :class:`Reject` with the reason;
- :func:`passes_dependency_filter`: a finished dialogue's turns 2-10 each
  carry a cross-turn relation.

The reasons (:data:`REJECTION_REASONS`) are the generation summary's keys.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any, Mapping, NamedTuple, Optional, Sequence

from fastvqa.generate.dvd import templates as T
from fastvqa.metrics.dialogue import ANSWER_SUBSPACES

#: Why candidates, dialogues and scenes are rejected (the summary's keys).
#: Per candidate turn: ``ill_posed``, ``answer_outside_space``,
#: ``balancing``, ``redundant``, ``no_valid_interval``, ``no_relation`` (a
#: turn after the first that could carry no cross-turn relation, refused with
#: probability ``p_dependent``), ``unresolved_reference`` (the turn's
#: program as written, its references resolved through the dialogue history
#: by :mod:`~fastvqa.generate.dvd.history`, does not give the answer: a
#: pronoun or "earlier mentioned" phrase that the history leaves ambiguous);
#: per dialogue:
#: ``turn_unfilled`` (no candidate passed for some turn),
#: ``dependency_filter``, ``no_video_update`` (fewer video updates than
#: ``min_video_updates`` where the first cutoff left room for one); per
#: scene: ``scene_unidentifiable`` (fewer than two objects singled out by
#: their attributes).
REJECTION_REASONS = ("ill_posed", "answer_outside_space", "balancing", "redundant",
                     "no_valid_interval", "no_relation", "unresolved_reference", "turn_unfilled",
                     "dependency_filter", "no_video_update", "scene_unidentifiable")

_DEPENDENCY_KEYS = ("temporal", "object", "attribute", "spatial")


class Reject(Exception):
    """A candidate turn is refused; ``reason`` is one of
    :data:`REJECTION_REASONS`. Internal to the generator: it never reaches
    the caller."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


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


def check_candidate(turn, draft, balancer: AnswerBalancer) -> None:
    """Raises :class:`Reject` unless the drafted ``turn``
    (:class:`~fastvqa.generate.dvd.state.Turn`) may follow the turns of
    ``draft`` (:class:`~fastvqa.generate.dvd.state.Draft`): its answer in
    the template's sub-space, not redundant, accepted by ``balancer``
    (counting the draft's pending answers)."""
    space = ANSWER_SUBSPACES[turn.template.question_subtype]
    if turn.answer not in space:
        raise Reject("answer_outside_space")
    obj = turn.unique.get(1)
    if is_redundant(turn.fact, [x.fact for x in draft.turns if x.fact is not None],
                    asked=turn.template.ask, obj=obj, known=draft.state,
                    question_key=turn.key, earlier_keys=[x.key for x in draft.turns]):
        raise Reject("redundant")
    if not balancer.accepts(turn.template.name, turn.answer, space, draft.pending):
        raise Reject("balancing")


__all__ = ["AnswerBalancer", "Fact", "REJECTION_REASONS", "Reject", "check_candidate",
           "is_redundant", "passes_dependency_filter"]
