# SPDX-License-Identifier: Apache-2.0
"""Loader for DVD dialogue files (facebookresearch/DVDialogues).

A DVD file holds a list of dialogues; each dialogue is a list of turns (10 in
the released data); each turn is a dict with ``question``, ``answer``,
``program``/``final_all_program``, ``template`` (``text``, ``interval_type``,
``cutoff``, ``used_periods``, ``used_objects`` ...), ``turn_dependencies``,
``template_filename`` and analysis flags (``effective_*``, ``contained_objs``).

One :class:`QARecord` is made per turn. The labels DVD's paper breaks accuracy
down by are derived here, once, with the rules of the official analysis code
(``dvd_codebase/data/analysis_utils.py`` and ``notebooks/explore_data.ipynb``),
and stored in ``record.extra`` under fastvqa's names (see :func:`load_dvd`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

import numpy as np

from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import iter_input_files, merge_records, stream_json
from fastvqa.data.record import QARecord

#: Official question-type label (analysis_utils.get_question_type) -> fastvqa name.
#: fastvqa uses the paper's type names (Table 2) in snake case.
QUESTION_TYPES = {
    "action count": "action_count",
    "action query": "action_query",
    "attr query": "attribute_query",
    "compare action sequence": "compare_action_seq",
    "compare action set": "compare_action_set",
    "compare int": "compare_action_freq",
    "obj count": "object_count",
    "obj exist": "object_exist",
}

#: Official sub-type label (analysis_utils.get_question_subtype) -> fastvqa name
#: ``"<type>.<sub-type>"``; types without sub-types keep the type name. The
#: official label ``"ation query (by freq)"`` carries a typo in the original code.
QUESTION_SUBTYPES = {
    "action count": "action_count",
    "action query (all actions)": "action_query.all_actions",
    "action query (by order)": "action_query.by_order",
    "ation query (by freq)": "action_query.by_frequency",
    "attr query (color)": "attribute_query.color",
    "attr query (material)": "attribute_query.material",
    "attr query (shape)": "attribute_query.shape",
    "attr query (size)": "attribute_query.size",
    "compare action seq (count)": "compare_action_seq.count",
    "compare action seq (exist)": "compare_action_seq.exist",
    "compare action set (count)": "compare_action_set.count",
    "compare action set (exist)": "compare_action_set.exist",
    "compare int (equal)": "compare_action_freq.equal",
    "compare int (less)": "compare_action_freq.less",
    "compare int (more)": "compare_action_freq.more",
    "obj count": "object_count",
    "obj exist": "object_exist",
}

#: ``template["interval_type"]`` (+ ``one_hop`` template file = spatial) -> name.
INTERVAL_TYPES = ("none", "atomic_non_spatial", "atomic_spatial", "compositional")

#: Topic-transfer kinds (paper §3.2 Type III), from ``turn_dependencies``.
TRANSFER_TYPES = ("attribute", "spatial", "temporal")

_DEPENDENCY_KEYS = ("temporal", "object", "attribute", "spatial")


class _TurnError(Exception):
    """Internal: a turn field is malformed (converted to DataFormatError)."""

    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field
        self.reason = reason


def official_question_type(text: str, prior: Optional[str]) -> Optional[str]:
    """The official question type of a template text (``template["text"][0]``).

    Reproduces ``analysis_utils.get_question_type``: keyword rules on the
    lower-cased first template text, tried in this order; a ``"what about"``
    follow-up takes the type of the previous turn (``prior``, already resolved,
    so chains of follow-ups resolve too). Returns None when no rule applies
    (the official code asserts there).

    >>> official_question_type("How many times does the cone slide?", None)
    'action count'
    >>> official_question_type("What about the sphere?", "obj count")
    'obj count'
    """
    t = text.lower()
    if "same set of activities" in t:
        return "compare action set"
    if "same sequence of activities" in t:
        return "compare action sequence"
    if "frequently" in t:
        return "compare int"
    if "how many times" in t:
        return "action count"
    if "how many" in t or "what number" in t:
        return "obj count"
    if "is there" in t:
        return "obj exist"
    if "what color" in t or "what material" in t or "what shape" in t or "what size" in t:
        return "attr query"
    if "what type of action" in t or "what is the" in t or "what types of action" in t:
        return "action query"
    if "what about" in t:
        return prior
    return None


def official_question_subtype(text: str, prior: Optional[str]) -> Optional[str]:
    """The official sub-type, reproducing ``analysis_utils.get_question_subtype``
    (same order of rules; ``<o>``/``<f>`` placeholders mark by-order /
    by-frequency action queries; ``"what about its color"`` etc. are attribute
    transfers; other ``"what about"`` follow-ups inherit ``prior``). Returns None
    when no rule applies.

    >>> official_question_subtype("What color is the <o> thing?", None)
    'attr query (color)'
    >>> official_question_subtype("What is the <o> action of the cone?", None)
    'action query (by order)'
    """
    t = text.lower()
    if "same set of activities" in t:
        return "compare action set (count)" if "how many" in t else "compare action set (exist)"
    if "same sequence of activities" in t:
        return "compare action seq (count)" if "how many" in t else "compare action seq (exist)"
    if "frequently" in t:
        for word, label in (("as frequently", "equal"), ("less frequently", "less"),
                            ("more frequently", "more")):
            if word in t:
                return f"compare int ({label})"
        return None  # the official code fails here (unbound variable)
    if "how many times" in t:
        return "action count"
    if "how many" in t or "what number" in t:
        return "obj count"
    if "is there" in t:
        return "obj exist"
    for attr in ("color", "material", "shape", "size"):
        if f"what {attr}" in t or f"what about its {attr}" in t:
            return f"attr query ({attr})"
    if "what type of action" in t or "what is the" in t or "what types of action" in t:
        if "<o>" in t:
            return "action query (by order)"
        if "<f>" in t:
            return "ation query (by freq)"
        return "action query (all actions)"
    if "what about" in t:
        return prior
    return None


def _interval_type(interval_type: Any, template_filename: str) -> str:
    # analysis_utils.get_question_complexity: atomic questions from the
    # one_hop templates are the spatial ones.
    if interval_type == "none":
        return "none"
    if interval_type == "atomic":
        return "atomic_spatial" if "one_hop" in template_filename else "atomic_non_spatial"
    if interval_type == "compositional":
        return "compositional"
    raise _TurnError("template.interval_type",
                     f"expected 'none', 'atomic' or 'compositional', got {interval_type!r}")


def _event_frame(event: Any, field: str) -> Optional[float]:
    """An event ``[object_id, "start_x"|"end_x", order, frame]`` -> its frame;
    None (video start/end) stays None."""
    if event is None:
        return None
    if not isinstance(event, (list, tuple)) or not event:
        raise _TurnError(field, f"expected an event [object, action, order, frame] or null, "
                                f"got {event!r}")
    frame = event[-1]
    if isinstance(frame, bool) or not isinstance(frame, (int, float)) or not math.isfinite(frame):
        raise _TurnError(field, f"expected a frame number as the event's last item, got {frame!r}")
    return float(frame)


def _or_distance(turn_idx: int, turn: dict, template: dict) -> int:
    """Long-term object-reference turn distance, as the official notebook's
    ``compute_long_term_or_turn_dist``: the largest ``turn_idx -
    original_turn + 1`` over the object referred to by an ``earlier_unique``
    object dependency and by an ``earlier_unique*`` temporal dependency; 0 when
    there is none (``turn_idx`` is 0-based, ``original_turn`` as stored)."""
    deps = turn["turn_dependencies"]
    used = template.get("used_objects")
    dists = [0]
    refs = []
    if deps["object"] == "earlier_unique":
        refs.append(("earlier_unique_obj", template.get("earlier_unique_obj")))
    if deps["temporal"] != "none" and "earlier_unique" in deps["temporal"]:
        refs.append(("temporal_obj_id", template.get("temporal_obj_id")))
    for name, obj in refs:
        if not isinstance(used, dict):
            raise _TurnError("template.used_objects", "expected an object dict (needed to measure "
                                                      "the object-reference distance)")
        entry = used.get(str(obj))
        if not isinstance(entry, dict) or "original_turn" not in entry:
            raise _TurnError(f"template.{name}", f"object {obj!r} is not in template.used_objects "
                                                 "with an 'original_turn'")
        original = entry["original_turn"]
        if isinstance(original, bool) or not isinstance(original, int):
            raise _TurnError("template.used_objects",
                             f"original_turn of object {obj!r} is not an integer: {original!r}")
        dists.append(turn_idx - original + 1)
    return max(dists)


def _effective_or_distance(turn_idx: int, turn: dict, distance: int) -> int:
    """The notebook's ``get_long_term_or_turn_dist(effective_or_only=True)``:
    -1 when the reference could be resolved from the video alone (neither
    ``effective_obj_tracking`` nor ``effective_temporal_obj_tracking`` set)."""
    if turn_idx == 0:
        return 0
    if distance != 0 and not (turn.get("effective_obj_tracking")
                              or turn.get("effective_temporal_obj_tracking")):
        return -1
    return distance


def _require(obj: dict, name: str, types: tuple, what: str, field: Optional[str] = None) -> Any:
    if name not in obj:
        raise _TurnError(field or name, "missing")
    value = obj[name]
    if isinstance(value, bool) and bool not in types:
        raise _TurnError(field or name, f"expected {what}, got {value!r}")
    if not isinstance(value, types):
        raise _TurnError(field or name, f"expected {what}, got {type(value).__name__}")
    return value


def _turn_record(turn: Any, d: int, t: int, prior: tuple, fps: float,
                 video_frames: float) -> tuple[QARecord, tuple]:
    if not isinstance(turn, dict):
        raise _TurnError("<turn>", f"expected a turn object, got {type(turn).__name__}")
    question = _require(turn, "question", (str,), "a string")
    if "answer" not in turn:
        raise _TurnError("answer", "missing")
    answer = turn["answer"]
    if answer is None or not isinstance(answer, (str, int, bool)):
        raise _TurnError("answer", f"expected a string, integer or boolean, got {answer!r}")
    split = _require(turn, "split", (str,), "a string")
    image = _require(turn, "image", (str,), "a string")
    template_filename = _require(turn, "template_filename", (str,), "a string")
    template = _require(turn, "template", (dict,), "an object")
    texts = _require(template, "text", (list,), "a list of strings", "template.text")
    if not texts or not isinstance(texts[0], str):
        raise _TurnError("template.text", "expected a non-empty list of strings")
    interval = _interval_type(_require(template, "interval_type", (str,), "a string",
                                       "template.interval_type"), template_filename)
    deps = _require(turn, "turn_dependencies", (dict,), "an object")
    for key in _DEPENDENCY_KEYS:
        if not isinstance(deps.get(key), str):
            reason = "missing" if key not in deps else f"expected a string, got {deps[key]!r}"
            raise _TurnError(f"turn_dependencies.{key}", reason)

    prior_type, prior_subtype = prior
    official_type = official_question_type(texts[0], prior_type)
    official_subtype = official_question_subtype(texts[0], prior_subtype)
    if official_type is None or official_subtype is None:
        follow = "a 'what about' follow-up without a previous turn" if "what about" in \
            texts[0].lower() else "no DVD question-type rule matches it"
        raise _TurnError("template.text", f"cannot classify {texts[0]!r}: {follow}")

    # The current turn's interval is the last used period (frames; None =
    # video start/end, mapped to frame 0 / ``video_frames`` as analysis_utils does).
    periods = template.get("used_periods")
    spans = np.zeros((0, 2), dtype=np.float64)
    period_frames = None
    if periods is not None:
        if not isinstance(periods, list):
            raise _TurnError("template.used_periods", "expected a list of periods")
        if periods and periods[-1] is not None:
            period = periods[-1]
            if not isinstance(period, (list, tuple)) or len(period) != 2:
                raise _TurnError("template.used_periods",
                                 f"expected [start_event, end_event], got {period!r}")
            start = _event_frame(period[0], "template.used_periods")
            end = _event_frame(period[1], "template.used_periods")
            start = 0.0 if start is None else start
            end = float(video_frames) if end is None else end
            if end < start:
                raise _TurnError("template.used_periods",
                                 f"period ends (frame {end:g}) before it starts (frame {start:g})")
            period_frames = [start, end]
            spans = np.array([[start / fps, end / fps]], dtype=np.float64)
    cutoff = _event_frame(template.get("cutoff"), "template.cutoff")

    or_dist = _or_distance(t, turn, template)
    transfers = []
    if deps["attribute"] != "none":
        transfers.append("attribute")
    if deps["spatial"] != "none":
        transfers.append("spatial")
    if deps["temporal"] == "video_update":
        transfers.append("temporal")

    extra = {k: v for k, v in turn.items() if k not in ("question", "answer")}
    extra.update(
        answer_raw=answer,
        dialogue_index=d,
        turn_index=t,
        turn_position=t + 1,
        question_type=QUESTION_TYPES[official_type],
        question_subtype=QUESTION_SUBTYPES[official_subtype],
        question_type_official=official_type,
        question_subtype_official=official_subtype,
        interval_type=interval,
        transfer_types=transfers,
        or_distance=or_dist,
        or_distance_effective=_effective_or_distance(t, turn, or_dist),
        period_frames=period_frames,
        cutoff_frame=cutoff,
    )
    record = QARecord(
        video_id=f"{split}-{image}",
        question_id=f"{d}_{t}",
        question=question,
        options=[],
        # The official code compares str(prediction) == str(answer).
        answer=str(answer),
        spans=spans,
        duration=None,
        extra=extra,
    )
    return record, (official_type, official_subtype)


def _load_file(path: Path, fps: float, video_frames: float) -> list[QARecord]:
    with stream_json(path) as doc:
        if doc.kind is not list:
            raise DataFormatError(doc.path, "expected a list of dialogues, got "
                                            f"{doc.kind.__name__}")
        return _dialogue_records(doc, doc.path, fps, video_frames)


def _dialogue_records(dialogues, path: Path, fps: float, video_frames: float) -> list[QARecord]:
    records: list[QARecord] = []
    for d, dialogue in dialogues:
        if not isinstance(dialogue, list):
            raise DataFormatError(path, "expected a dialogue (a list of turns), got "
                                  f"{type(dialogue).__name__}", record=f"dialogue {d}")
        prior: tuple = (None, None)
        for t, turn in enumerate(dialogue):
            try:
                record, prior = _turn_record(turn, d, t, prior, fps, video_frames)
            except _TurnError as err:
                raise DataFormatError(path, err.reason, record=f"dialogue {d} turn {t}",
                                      field=err.field) from None
            records.append(record)
    return records


def load_dvd(path: str | Path, *, fps: float = 24.0, video_frames: float = 301,
             pattern: str = "**/*.json") -> list[QARecord]:
    """Loads DVD dialogue JSON into one :class:`QARecord` per turn.

    Args:
        path: a dialogue file (a JSON list of dialogues, each a list of turn
            dicts), or a folder: every file matching ``pattern`` below it, in
            sorted path order, except ``metadata.json`` (the generator's
            vocabulary file, which sits beside dialogue files).
        fps: frames per second used to turn CATER frame ids into seconds
            (CATER renders at 24 fps).
        video_frames: the frame an open interval end (``None``) stands for;
            301 as in the official ``analysis_utils.get_start_end_time``.

    Records:
        - ``video_id`` = ``f"{split}-{image}"`` (e.g. ``"all_actions-CLEVR_new_000002"``;
          the official loader keys videos by CATER split and image the same way);
        - ``question_id`` = ``f"{dialogue}_{turn}"``, both 0-based positions in
          the file, so ``record.key`` is e.g. ``"all_actions-CLEVR_new_000002_0_3"``;
        - ``answer`` = ``str(answer)`` (``1`` -> ``"1"``, ``false`` -> ``"False"``),
          the string the official code compares predictions with;
        - ``spans`` = the turn's interval (``template.used_periods[-1]``) as
          ``[[start, end]]`` in seconds (frame / ``fps``; a ``None`` start is
          frame 0, a ``None`` end is ``video_frames``); empty when the turn has
          no period; ``duration`` is None (the file has none).

    ``extra`` keeps every turn field except ``question``/``answer`` as it was
    (``program``, ``final_all_program``, ``template``, ``turn_dependencies``,
    ``contained_objs``, ``effective_*`` ...) plus:

        - ``answer_raw``: the answer as stored (int, bool or str);
        - ``dialogue_index``, ``turn_index`` (0-based), ``turn_position`` (1-10);
        - ``question_type`` / ``question_subtype``: fastvqa names of the
          official labels (``QUESTION_TYPES`` / ``QUESTION_SUBTYPES``); the
          official labels are kept as ``question_type_official`` /
          ``question_subtype_official``. Keyword rules on ``template.text[0]``
          as in ``analysis_utils``; ``"what about"`` follow-ups take the
          previous turn's type;
        - ``interval_type``: ``"none"``, ``"atomic_non_spatial"``,
          ``"atomic_spatial"`` (atomic questions from ``one_hop`` templates) or
          ``"compositional"``;
        - ``transfer_types``: topic transfers of this turn: ``"attribute"``
          (``turn_dependencies.attribute`` not ``"none"``), ``"spatial"``
          (``.spatial`` not ``"none"``), ``"temporal"`` (``.temporal ==
          "video_update"``);
        - ``or_distance``: long-term object-reference turn distance (0: none),
          and ``or_distance_effective`` (-1 where the reference could be
          resolved from the video alone), as the official notebook computes them;
        - ``period_frames`` ([start, end] frames or None), ``cutoff_frame``
          (frame of the last visible event; None = whole video).

    Raises:
        DataFormatError: naming the file, ``"dialogue D turn T"`` and the field
            for bad JSON, a missing or mistyped field, a reversed period, a
            question text no DVD rule classifies, or a duplicate record key.
        FileNotFoundError: ``path`` does not exist or a folder holds no file.

    >>> import json, tempfile
    >>> deps = dict.fromkeys(("temporal", "object", "attribute", "spatial"), "none")
    >>> turn = {"question": "How many cones are there?", "answer": 2, "split": "all_actions",
    ...         "image": "CLEVR_new_000002", "template_filename": "object_count.json",
    ...         "template": {"text": ["How many <S> are there?"], "interval_type": "none",
    ...                      "used_periods": [[None, ["3", "end_slide", 1, 96]]]},
    ...         "turn_dependencies": deps}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "dialogues.json").write_text(json.dumps([[turn]]))
    ...     (r,) = load_dvd(d)
    >>> r.key, r.answer, r.spans, r.extra["question_type"]
    ('all_actions-CLEVR_new_000002_0_0', '2', array([[0., 4.]]), 'object_count')
    """
    if not (isinstance(fps, (int, float)) and math.isfinite(fps) and fps > 0):
        raise ValueError(f"load_dvd: fps must be a positive number, got {fps!r}")
    files = iter_input_files(path, pattern, exclude=("metadata.json",), what="dialogue file")
    return merge_records(files, lambda file: _load_file(file, float(fps), video_frames))
