# SPDX-License-Identifier: Apache-2.0
"""The time spans a response gave: :func:`parse_spans` and its rules
(:data:`SPAN_RULES`); see :mod:`fastvqa.parse`."""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple, Optional, Sequence

from fastvqa._checks import optional_real
from fastvqa.errors import InputError
from fastvqa.parse._text import check_text, clean, json_value


class SpanParse(NamedTuple):
    """The time spans a response gave.

    ``spans``: ``(start, end)`` pairs in seconds, ends inclusive, ``start <=
    end``, in the response's order, duplicates dropped (empty on failure).
    ``how``: the rule(s) that matched, ``"+"``-joined in order of first use,
    then notes after ``"; "``: ``"fractions of the video"``, ``"frames at F
    fps"``, ``"swapped reversed span"``, ``"clamped to duration"``.
    ``error``: why the parse failed (``None`` on success).

    Example:
        >>> parse_spans("no idea")
        SpanParse(spans=[], how='', error='no time span found in the response')
    """

    spans: list
    how: str
    error: Optional[str]


# A number is read whole or not at all: digits (thousands grouped as
# "1,500" or not), decimals and an exponent ("1e2" is 100), never a piece of
# a longer one: the guard after it refuses "2" of "1e2", "2.5" of "2.5.3".
# A second endpoint is also no "1" of a decimal comma ("1,5"); a first one
# may be, as in the list "[1,5]".
_DIGITS = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?"
_NUM = _DIGITS + r"(?!\d|\.\d|[eE][+-]?\d)"
_NUM_B = _DIGITS + r"(?!\d|[.,]\d|[eE][+-]?\d)"
# where a number may begin: not inside a word or number, not after a minus
# sign ("-3" is never 3), nor after "1," (a thousands group)
_BEGIN = r"(?<![\dA-Za-z.:\-\u2212])(?<!\d,)"
_CLOCK = r"(?<![\d:.])(?:\d{1,2}:)?\d{1,2}:\d{2}(?:\.\d+|,\d{3}(?![\d:]))?(?!\d|:\d|\.\d)"
_UNIT = r"(?:milliseconds?|msecs?|ms|seconds?|secs?|s|minutes?|mins?|hours?|hrs?)\b"
# A duration in several units, "1 min 5 s", "1m30s", "1 hour 2 minutes",
# "2 minutes and 3.5 seconds": whole hours and minutes, then seconds; at
# least two parts (one part is a plain number with its unit).
_H = r"(?:hours?|hrs?|h)"
_M = r"(?:minutes?|mins?|m)"
_S = r"(?:seconds?|secs?|s)"
_AND = r"(?:\s*,?\s*and\s+|\s*,\s*|\s*)"
_COMPOUND = (rf"(?:\d+\s*{_H}{_AND}\d+\s*{_M}(?:{_AND}{_NUM}\s*{_S})?"
             rf"|\d+\s*{_H}{_AND}{_NUM}\s*{_S}|\d+\s*{_M}{_AND}{_NUM}\s*{_S})\b")


def _time(num: str) -> str:
    return rf"(?:{_CLOCK}|{_COMPOUND}|{num}\s*%|{num}(?:\s*{_UNIT})?)"


_TIME = _time(_NUM)
_TIME_B = _time(_NUM_B)
_SEP = r"\s*(?:-+>?|~|\u2192|\bto\b|\buntil\b|\btill\b|\bthrough\b)\s*"


def _pair(left: str, sep: str, right: str, a: str = _TIME, b: str = _TIME_B) -> str:
    return rf"{left}(?P<a>{a}){sep}(?P<b>{b}){right}"


_Q = r"[\"']?"
#: what joins "start"/"end" to its time: "start: 3", "start=3", "starts at 3",
#: "the start time for this event is 3" (a few words, no digits, before is/at)
_SAYS = r"(?:\s*[:=]\s*|[^\d\n.:=]{0,30}?\b(?:is|at|of)\s+)"
#: Span rules; every match in the text is a span (overlaps go to the match
#: that starts first, then the longer one).
SPAN_RULES: dict[str, re.Pattern] = {
    # "start: 3.0, end: 7.5", "Start time: 00:01:18\nEnd time: 00:01:23",
    # "Starting time: 0.8 seconds\nEnding time: 1.1 seconds", "starts at
    # 00:00:18 and ends at 00:00:23", "the start time for this event is 0
    # seconds, and the end time is 12 seconds" (the phrasings lmms-eval's
    # Charades-STA parser reads)
    "start_end": re.compile(
        rf"(?i)\b(?:start|begin|began|commenc)(?:s|ed|ing|ning|e|es)?(?:[ _]?time)?{_Q}{_SAYS}{_Q}"
        rf"(?P<a>{_TIME}){_Q}[\s\S]{{0,60}}?\b(?:end|stop|finish|ceas|halt)"
        rf"(?:s|ed|ing|ped|ping|es|e)?(?:[ _]?time)?{_Q}{_SAYS}{_Q}(?P<b>{_TIME_B})"),
    # "frames 30 to 90", "from frame 30 to frame 90"
    "frame_range": re.compile(
        r"(?i)\b(?:from\s+|between\s+)?frames?\s*(?:#|no\.?\s*)?(?P<a>\d+)(?!\.\d)"
        r"\s*(?:-|\bto\b|\band\b|\bthrough\b)\s*(?:frames?\s*(?:#|no\.?\s*)?)?"
        r"(?P<b>\d+)(?!\d|[.,]\d)"),
    # "from 12 to 15 seconds", "from 1:05 until 1:20"
    "from_to": re.compile(_pair(r"(?i)\bfrom\s+", r"\s*(?:-|\bto\b|\buntil\b|\btill\b)\s*", "")),
    # "between 1:05 and 1:20"
    "between_and": re.compile(_pair(r"(?i)\bbetween\s+", r"\s*(?:\band\b|-|\bto\b)\s*", "")),
    # "[10.2, 34.5]", "(12s - 15s)"
    "bracket_pair": re.compile(_pair(r"[\[(]\s*", r"\s*(?:,|-|\bto\b)\s*", r"\s*[\])]")),
    # "00:01:18 to 00:01:23", "1:05-1:20", "at 0:12-0:15"
    "clock_range": re.compile(_pair("", _SEP, "", _CLOCK, _CLOCK)),
    # "10.2s - 34.5s", "12-15 seconds", "20.8 - 30.0 seconds"
    "unit_range": re.compile(_pair(_BEGIN, _SEP, "", rf"(?:{_COMPOUND}|{_NUM}(?:\s*{_UNIT})?)",
                                   rf"(?:{_COMPOUND}|{_NUM_B}\s*{_UNIT})")),
    # "25% to 50% of the video"
    "percent_range": re.compile(_pair(_BEGIN, _SEP, "", rf"{_NUM}\s*%", rf"{_NUM_B}\s*%")),
    # "0.25 to 0.5" (only where numbers are fractions: normalized, or the
    # response says "fraction"/"normalized"/"proportion")
    "fraction_range": re.compile(_pair(_BEGIN, _SEP, r"(?![\d.:%]|\s*%)", _NUM, _NUM_B)),
}
_WHOLE_TIME = re.compile(_TIME_B, re.I)
_NUMBER_UNIT = re.compile(rf"({_DIGITS})\s*(\w*)")
_FRACTION_WORDS = re.compile(r"(?i)\b(?:fractions?|normali[sz]ed|proportions?)\b")
_SCALE = {"ms": 1e-3, "msec": 1e-3, "msecs": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
          "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0, "m": 60.0,
          "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0}
# a number or a word: every match succeeds once begun, so findall is linear
_COMPOUND_PIECE = re.compile(rf"{_DIGITS}|[A-Za-z]+")


class _Value(NamedTuple):
    number: float
    kind: str  # "seconds" (a unit or a clock), "bare", "percent"
    scale: float


def _value(token: str) -> _Value:
    token = token.strip()
    if ":" in token:
        parts = token.replace(",", ".").split(":")
        seconds = 0.0
        for part in parts:
            seconds = seconds * 60.0 + float(part)
        return _Value(seconds, "seconds", 1.0)
    pieces = [p for p in _COMPOUND_PIECE.findall(token) if p.lower() != "and"]
    if len(pieces) > 2:  # "1 min 5 s" (number, unit, number, unit): the parts' sum
        numbers, units = pieces[0::2], pieces[1::2]
        return _Value(sum(float(n.replace(",", "")) * _SCALE.get(u.lower(), 1.0)
                          for n, u in zip(numbers, units)), "seconds", 1.0)
    m = _NUMBER_UNIT.match(token)
    number = float(m.group(1).replace(",", ""))
    if token.endswith("%"):
        return _Value(number / 100.0, "percent", 1.0)
    unit = m.group(2).lower()
    if not unit:
        return _Value(number, "bare", 1.0)
    return _Value(number, "seconds", _SCALE.get(unit, 1.0))


class _Found(NamedTuple):
    start: int
    end: int
    rule: str
    a: str
    b: str


def _text_spans(text: str, fractions: bool) -> list[_Found]:
    found = []
    for name, rule in SPAN_RULES.items():
        if name == "fraction_range" and not fractions:
            continue
        found += [_Found(m.start(), m.end(), name, m.group("a"), m.group("b"))
                  for m in rule.finditer(text)]
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[_Found] = []
    for f in found:
        if not kept or f.start >= kept[-1].end:
            kept.append(f)
    return kept


def _json_spans(value: Any) -> Optional[list]:
    """``[(a, b), ...]`` raw endpoint values from JSON, or None where the JSON
    holds no span."""
    if isinstance(value, list):
        if len(value) == 2 and all(_scalar(v) for v in value):
            return [tuple(value)]
        if value and all(isinstance(v, list) and len(v) == 2 and all(_scalar(x) for x in v)
                         for v in value):
            return [tuple(v) for v in value]
        return None
    if not isinstance(value, dict):
        return None
    for key in ("spans", "segments", "timestamps", "evidence", "span", "segment", "timestamp"):
        if key in value:
            got = _json_spans(value[key])
            if got is not None:
                return got
    for a, b in (("start", "end"), ("start_time", "end_time"), ("begin", "end")):
        if a in value and b in value and _scalar(value[a]) and _scalar(value[b]):
            return [(value[a], value[b])]
    return None


def _scalar(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _seconds_of(a: Any, b: Any, rule: str, *, fractions: bool, duration, frames,
                notes: list) -> tuple[float, float]:
    """Raw endpoints -> seconds; raises ``_Fail`` with the reason. ``frames``:
    None, the frame rate, or the tuple of the shown frames' times."""
    values = []
    for v in (a, b):
        if not isinstance(v, str):
            try:
                values.append(_Value(float(v), "bare", 1.0))
            except OverflowError:  # an int beyond any float
                raise _Fail(_NOT_FINITE) from None
        elif _WHOLE_TIME.fullmatch(v.strip()):
            values.append(_value(v))
        else:
            shown = v if len(v) <= 60 else v[:60] + "..."
            raise _Fail(f"{shown!r} is not a time")
    if rule == "frame_range":
        if frames is None:
            raise _Fail("frame indices need the frame rate (fps) or the frames' times")
        if isinstance(frames, tuple):
            return _frame_times(values[0].number, values[1].number, frames, notes)
        _note(notes, f"frames at {frames:g} fps")
        return values[0].number / frames, values[1].number / frames
    # a bare first value takes the second's unit: "12 to 15 seconds", "1 to 2 min"
    if values[0].kind == "bare" and values[1].kind == "seconds":
        values[0] = values[0]._replace(kind="seconds", scale=values[1].scale)
    out = []
    for v in values:
        if v.kind == "percent" or (v.kind == "bare" and fractions):
            if duration is None:
                raise _Fail("fractions of the video need the video's duration")
            if v.number > 1.0:
                raise _Fail(f"{v.number:g} is not a fraction of the video (above 1)")
            _note(notes, "fractions of the video")
            out.append(v.number * duration)
        else:
            out.append(v.number * v.scale)
    return out[0], out[1]


def _frame_times(a: float, b: float, times: tuple, notes: list) -> tuple[float, float]:
    """Frames ``a`` and ``b``, numbered from 1 as the prompt showed them, at
    their own times (a sampler's frames need not be evenly spaced)."""
    out = []
    for k in (a, b):
        if k != int(k) or not 1 <= k <= len(times):
            raise _Fail(f"frame {k:g} is not one of the {len(times)} frames shown "
                        "(numbered from 1)")
        out.append(times[int(k) - 1])
    _note(notes, "frames at their timestamps")
    return out[0], out[1]


class _Fail(Exception):
    pass


_NOT_FINITE = "a span endpoint is not a finite number"


def _note(notes: list, note: str) -> None:
    if note not in notes:
        notes.append(note)


def _finish(raw: list, rules: list, *, fractions, duration, frames) -> SpanParse:
    notes: list = []
    spans: list = []
    seen: set = set()  # a set: a reply may give many thousands of spans
    try:
        for (a, b), rule in zip(raw, rules):
            start, end = _seconds_of(a, b, rule, fractions=fractions, duration=duration,
                                     frames=frames, notes=notes)
            if not (math.isfinite(start) and math.isfinite(end)):
                raise _Fail(_NOT_FINITE)
            if start < 0 or end < 0:
                raise _Fail("a span endpoint is negative")
            if start > end:
                start, end = end, start
                _note(notes, "swapped reversed span")
            if duration is not None and end > duration:
                start, end = min(start, duration), duration
                _note(notes, "clamped to duration")
            if (start, end) not in seen:
                seen.add((start, end))
                spans.append((start, end))
    except _Fail as err:
        return SpanParse([], "", str(err))
    how = "+".join(dict.fromkeys(rules))
    # the notes in one fixed order, whatever order the spans raised them in
    order = ("frames", "fractions", "swapped", "clamped")
    notes.sort(key=lambda s: next(i for i, w in enumerate(order) if s.startswith(w)))
    return SpanParse(spans, "; ".join([how, *notes]), None)


def spans_and_ranges(text: str, duration, frames, normalized: bool) -> tuple[SpanParse, list]:
    """The parse and the character ranges of ``clean(text)`` it used
    (``frames`` as :func:`span_args` returns it)."""
    fractions = bool(normalized)
    raw = _json_spans(json_value(text))
    if raw is not None:
        return _finish(raw, ["json"] * len(raw), fractions=fractions, duration=duration,
                       frames=frames), []
    cleaned = clean(text)
    fractions = fractions or bool(_FRACTION_WORDS.search(cleaned))
    found = _text_spans(cleaned, fractions)
    if not found:
        return SpanParse([], "", "no time span found in the response"), []
    parse = _finish([(f.a, f.b) for f in found], [f.rule for f in found],
                    fractions=fractions, duration=duration, frames=frames)
    return parse, [(f.start, f.end) for f in found]


def span_args(text, duration, fps, fn: str, frame_times=None) -> tuple[str, Optional[float], Any]:
    """``(the text to parse, duration, frames)``, checked; ``frames`` is None,
    the frame rate, or the frames' times as a tuple of floats."""
    text = check_text(text, fn)
    duration = optional_real(duration, fn, "duration", minimum=0.0, finite=True)
    fps = optional_real(fps, fn, "fps", positive=True, finite=True)
    if frame_times is None:
        return text, duration, fps
    if fps is not None:
        raise InputError(f"{fn}: give fps or frame_times, not both")
    try:
        times = tuple(float(t) for t in frame_times)
    except (TypeError, ValueError):
        raise InputError(f"{fn}: frame_times must be a sequence of seconds") from None
    if not all(math.isfinite(t) and t >= 0 for t in times):
        raise InputError(f"{fn}: frame_times must be finite seconds >= 0")
    return text, duration, times


def parse_spans(text: str, *, duration: Optional[float] = None, fps: Optional[float] = None,
                normalized: bool = False,
                frame_times: Optional[Sequence[float]] = None) -> SpanParse:
    """The time span(s) a response gave, in seconds.

    Args:
        text: the model's response.
        duration: the video's length in seconds: fractions and percentages
            of the video are scaled by it, and spans are clamped to
            ``[0, duration]`` (``how`` says "clamped to duration").
        fps: frames per second of the frames the model was shown: frame
            indices ("frames 30 to 90") become ``index / fps`` seconds.
        frame_times: instead of ``fps``, the times (seconds) of the frames
            the model was shown, numbered from 1 as a prompt numbers them
            ("Frame 1 at 0.50 s: ..."): frame ``k`` is ``frame_times[k - 1]``,
            so a sampler's uneven times are kept; a frame number outside
            ``1..len(frame_times)`` is a failure.
        normalized: bare numbers (no unit, no clock) are fractions of the
            video; also switched on by the words "fraction", "normalized"
            or "proportion" in the response. Numbers with a unit and clock
            times stay seconds; percentages are always fractions.

    Rules (:data:`SPAN_RULES`), all applied, every match a span: ``json``
    (``{"start": 1, "end": 2}``, ``{"spans": [[1, 2], [5, 6]]}``, ``[[1, 2]]``,
    ``[1, 2]``; values may be time strings), ``start_end`` ("start: 3.0,
    end: 7.5", "starts at 0:18 and ends at 0:23"), ``frame_range``, ``from_to``, ``between_and``,
    ``bracket_pair`` ("[10.2, 34.5]"), ``clock_range`` ("00:01:18 to
    00:01:23", "1:05-1:20", "00:01:18.500 - 00:01:23.250"), ``unit_range``
    ("10.2s - 34.5s", "12-15 seconds": the second value needs a unit; a bare
    first value takes it), ``percent_range``, and, only for fractions,
    ``fraction_range`` ("0.25 to 0.5"). Clock times are ``[[h:]m:]s`` with
    optional decimals; units are ms, s, min. A bare number that is no
    fraction is seconds. Numbers are read whole or not at all: "1e2" is 100,
    "1,500" is 1500, full-width digits are digits; "-3" (negative), "2.5.3"
    and, as an end, "1,5" (a decimal comma) are no numbers, so the span is
    not found rather than read as 3, 2.5 or 1. Clock times inside longer
    digit runs ("123:45") are none either.

    A reversed span is swapped (noted). The same span given twice is kept
    once. Returns :class:`SpanParse`; failure (``spans`` empty, ``error``
    set): no span found, frame indices without ``fps``, fractions without
    ``duration`` or above 1, an endpoint that is no finite number (NaN,
    Infinity, 1e400, an integer beyond any float) or negative. Linear in
    ``len(text)``; never raises for a ``str`` ``text``. Raises :class:`~fastvqa.errors.InputTypeError`
    for a non-str ``text``, :class:`~fastvqa.errors.InputError` for a
    ``duration`` or ``fps`` that is not a positive finite number.

    Example:
        >>> parse_spans("The event happens from 0:12 to 0:20.")
        SpanParse(spans=[(12.0, 20.0)], how='from_to', error=None)
        >>> parse_spans("[0.2, 0.5]", duration=60.0, normalized=True)
        SpanParse(spans=[(12.0, 30.0)], how='json; fractions of the video', error=None)
        >>> parse_spans("frames 30 to 90", fps=30).spans
        [(1.0, 3.0)]
        >>> parse_spans("from frame 2 to frame 3", frame_times=[0.5, 4.0, 9.25]).spans
        [(4.0, 9.25)]
    """
    text, duration, frames = span_args(text, duration, fps, "parse_spans", frame_times)
    return spans_and_ranges(text, duration, frames, normalized)[0]


__all__ = ["SPAN_RULES", "SpanParse", "parse_spans"]
