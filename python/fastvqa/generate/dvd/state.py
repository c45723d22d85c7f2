# SPDX-License-Identifier: Apache-2.0
"""What DVD's dialogue generator (:mod:`~fastvqa.generate.dvd.dialogue`) holds
while it builds a dialogue: one scene's caches (:class:`SceneData`), a drafted
turn (:class:`Turn`) and the dialogue in progress (:class:`Draft`).

Not to be confused with :class:`~fastvqa.generate.dvd.executor.DialogueState`,
the executor's view of earlier turns while it runs one program.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from fastvqa.generate.dvd import intervals as _iv
from fastvqa.generate.dvd import templates as T
from fastvqa.generate.dvd.filters import Fact

#: The attributes of :attr:`SceneData.attrs`, in their order (the order of
#: the template slots ``<Z> <C> <M> <S>``).
ATTR_NAMES = ("size", "color", "material", "shape")


def _attr_tuple(o) -> tuple:
    return (o.size, o.color, o.material, o.shape)


class SceneData:
    """Per-scene caches: events and periods per cutoff, identifiable objects.

    ``attrs``: per object, its attributes in :data:`ATTR_NAMES` order;
    ``identifiable``: the objects no other object shares all four with."""

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
        of those, the ones a phrase can name, as ``(period, phrase_kind)``
        pairs (:func:`phrase_kind`)."""
        key = (self.cutoff_frame(cutoff), interval_type == "atomic")
        if key not in self._named:
            atomic, comp = self.periods(cutoff)
            allowed = [p for p in comp if not key[1] or p in atomic]
            named = [(p, k) for p in allowed for k in [phrase_kind(p)] if k is not None]
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


def phrase_kind(period) -> Optional[tuple[str, Any]]:
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


@dataclass
class Turn:
    """One drafted turn: what it asks, over which period, and what it
    established (for the filters and the JSON layout)."""

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
    # the body program's references: the raw node it replaces
    # ("earlier_obj_ref", "unique_obj_ref") -> the program that resolves it
    # through the dialogue history (track_object / refer_object "them" ...)
    refs: dict = field(default_factory=dict)
    body_state: Any = None            # executor DialogueState the body was run with
    final_nodes: list = field(default_factory=list)   # temporal + body, references spliced
    final_outputs: list = field(default_factory=list)
    ref_programs: dict = field(default_factory=dict)  # "earlier"/"last" -> nodes with _output
    input_map: dict = field(default_factory=dict)     # template node -> body node
    sampled: Optional[int] = None     # the object "among them" singles out


@dataclass
class Draft:
    """A dialogue being built: its current cutoff, accepted turns, object
    state, pending answer-balancing counts and the templates used."""

    cutoff: Any
    turns: list = field(default_factory=list)
    state: dict = field(default_factory=dict)   # obj -> {"original_turn", "<Z>"...}
    pending: dict = field(default_factory=dict)  # template -> Counter
    used: set = field(default_factory=set)


def record_turn(state: dict, turn: Turn, number: int) -> None:
    """Adds what turn ``number`` (1-based) mentioned to the object ``state``
    (``{obj: {"original_turn": n, "<Z>": value, ...}}``): the attributes its
    descriptions named and the attribute it asked, with its answer."""
    for obj, attrs in turn.described.items():
        entry = state.setdefault(obj, {"original_turn": number})
        entry.update(attrs)
    if turn.template.ask is not None and 1 in turn.unique:
        state.setdefault(turn.unique[1], {"original_turn": number})[
            T.ATTRIBUTE_SLOTS[turn.template.ask]] = turn.answer


__all__ = ["ATTR_NAMES", "Draft", "SceneData", "Turn", "phrase_kind", "record_turn"]
