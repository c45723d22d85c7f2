# SPDX-License-Identifier: Apache-2.0
"""What both parsers share: markdown removed, whitespace squeezed, the
``<answer>``/``<think>`` tags read, the JSON a response holds.

Model replies are untrusted: everything here runs in time linear in the
reply's length (no regular expression whose attempts at successive
positions can each scan far; tags, fences and JSON are found by a single
left-to-right scan) and nothing raises on any ``str``.
"""

from __future__ import annotations

import json
import re
from array import array
from typing import Any, Optional

from fastvqa.errors import InputTypeError

_MARKDOWN = re.compile(r"\*\*|__|`+|^#+\s*", re.MULTILINE)
# a run of two or more whitespace characters, or one that is not a space
_SPACES = re.compile(r"\s{2,}|[^\S ]")
_WS = re.compile(r"\s*")


def squeeze(text: str) -> str:
    """``text`` with each run of whitespace as one character: ``"\\n"`` where
    the run holds a newline, else ``" "``. The rules' ``\\s*`` then match at
    most one character, so no pattern backtracks over a long run (the
    grammar never needs two spaces in a row)."""
    return _SPACES.sub(lambda m: "\n" if "\n" in m.group() else " ", text)


def clean(text: str) -> str:
    """The response without markdown emphasis and code marks, dashes as
    ``-``, whitespace squeezed (:func:`squeeze`)."""
    return squeeze(_MARKDOWN.sub("", text.replace("\u2013", "-").replace("\u2014", "-")))


# ------------------------------------------------------------------ JSON

#: Embedded ``{...}`` candidates nested deeper than this inside are not
#: decoded (a model's JSON nests a few levels); the bound keeps the total
#: decoding work within ``(_MAX_NESTING + 1) x`` the reply's length.
_MAX_NESTING = 32
#: JSON integers longer than this are beyond any float (1e300 < 1.8e308):
#: read as +-inf, which the span rules refuse as not finite, instead of an
#: int that float() cannot convert or str() cannot print.
_MAX_INT_DIGITS = 300
_INSIDE = re.compile(r'[{}\[\]"]')
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_CLOSES = {"}": "{", "]": "["}
#: how many times the text the rescans after an unclosed brace may read
_RESCAN = 2


def _json_int(digits: str) -> Any:
    if len(digits) - digits.startswith("-") > _MAX_INT_DIGITS:
        return float("-inf") if digits.startswith("-") else float("inf")
    return int(digits)


def _loads(text: str) -> tuple[Any, Optional[str]]:
    """``(value, None)`` or ``(None, why)``; never raises."""
    try:
        return json.loads(text, parse_int=_json_int), None
    except RecursionError:
        return None, "JSON nested too deeply to read"
    except ValueError as err:
        return None, f"invalid JSON ({err})"


def _fenced(text: str) -> Optional[str]:
    """The stripped content of the first ```` ``` ```` (or ```` ```json ````)
    fenced block, None where there is none."""
    start = text.find("```")
    if start < 0:
        return None
    body = start + 3
    if text.startswith(("json", "JSON"), body):
        body += 4
    body = _WS.match(text, body).end()
    end = text.find("```", body)
    # no closing fence after the first opening one: none after a later one either
    return None if end < 0 else text[body:end].strip()


def _regions(text: str, openers: str):
    """Yields ``(start, end)`` of bracketed regions that may hold a JSON
    value of the kinds ``openers`` (``"{"``, ``"["``), leftmost start first.

    A left-to-right scan: outside any region only an opener counts (quotes
    there are prose); inside, brackets nest and ``"..."`` strings are
    skipped whole. A region is a candidate when it closes with its own kind
    and nests at most :data:`_MAX_NESTING` deep. Where a quote inside a
    region never closes (prose such as ``{ it's 5" tall``), the scan starts
    again just after the outermost open region's opener, as a decoder tried
    at every brace would; the rescans together read at most :data:`_RESCAN`
    times the text, so the whole stays linear."""
    opener = re.compile("[" + re.escape(openers) + "]")
    budget = _RESCAN * len(text)
    pos, first, later = 0, True, set()
    while True:
        starts, heights = array("q"), array("q")
        kinds = bytearray()
        begin, unterminated = pos, False
        while True:
            m = (_INSIDE if starts else opener).search(text, pos)
            if m is None:
                break
            c, pos = m.group(), m.end()
            if c == '"':
                rest = _STRING_REST.match(text, pos)
                if rest is None:
                    unterminated = True  # nothing after it closes in this reading
                    break
                pos = rest.end()
            elif c in "{[":
                starts.append(m.start())
                heights.append(0)
                kinds.append(ord(c))
            else:
                start, height, kind = starts.pop(), heights.pop(), chr(kinds.pop())
                if heights:
                    heights[-1] = max(heights[-1], height + 1)
                if kind == _CLOSES[c] and kind in openers and height <= _MAX_NESTING:
                    later.add((start, pos))
                if not starts and first:
                    # every region before this point is known: hand them out
                    yield from sorted(later)
                    later.clear()
        budget -= len(text) - begin
        if not (unterminated and starts) or budget <= 0:
            break
        pos, first = starts[0] + 1, False  # rescans' regions interleave: all at the end
    yield from sorted(later)


def find_json(text: str, embedded: tuple = (dict,)) -> tuple[Any, str]:
    """``(value, "")``: the JSON a response holds: its fenced block, the
    whole text (either one starting with ``{`` or ``[``), or the first
    decodable value of an ``embedded`` type (``dict``: ``{...}``; ``list``:
    ``[...]``) inside the text, by the position it starts at. ``(None,
    why)`` where there is none: the last decoding error of the fenced block
    or the whole text, or ``"no JSON value"``.

    Linear in ``len(text)``. Integers of more than 300 digits read as
    +-inf; a value nested too deeply for Python's decoder is an error, not
    an exception. Inside the text, a ``"`` within an unclosed ``{`` starts
    a string as JSON reads it, so an object after such a quote may be
    missed."""
    fenced = _fenced(text)
    candidates = [fenced] if fenced is not None else []
    candidates.append(text.strip())
    error = "no JSON value"
    for candidate in candidates:
        if candidate[:1] in "{[":
            value, why = _loads(candidate)
            if why is None:
                return value, ""
            error = why
    openers = "".join(c for t, c in ((dict, "{"), (list, "[")) if t in embedded)
    if openers:
        for start, end in _regions(text, openers):
            value, why = _loads(text[start:end])
            if why is None and isinstance(value, embedded):
                return value, ""
    return None, error


def json_value(text: str) -> Any:
    """The JSON a response holds: its fenced block, the whole text, or the
    first decodable ``{...}`` object in it; None where there is none."""
    return find_json(text)[0]


# ------------------------------------------------------------------ tags

_TAG = re.compile(r"<(/?)(answer|think)>", re.IGNORECASE)


def _blocks(text: str, name: str):
    """Yields ``(opening, closing)`` tag matches of each ``<name>`` block:
    an opening tag closed by the first closing tag after it (an opening tag
    inside is content); a last opening tag never closed comes with None."""
    opened = None
    for m in _TAG.finditer(text):
        if m.group(2).lower() != name:
            continue
        if not m.group(1) and opened is None:
            opened = m
        elif m.group(1) and opened is not None:
            yield opened, m
            opened = None
    if opened is not None:
        yield opened, None


def _answers(text: str) -> list:
    """The contents of the closed ``<answer>...</answer>`` blocks."""
    return [text[o.end():c.start()] for o, c in _blocks(text, "answer") if c is not None]


def _without_think(text: str) -> str:
    """``text`` with each ``<think>`` block (to its first ``</think>``, or to
    the end where it is never closed) replaced by a space."""
    pieces, kept = [], 0
    for opening, closing in _blocks(text, "think"):
        pieces += [text[kept:opening.start()], " "]
        if closing is not None:
            kept = closing.end()
        else:  # as the regex ``<think>.*?$`` did: a final newline stays
            kept = len(text) - 1 if text.endswith("\n") else len(text)
    pieces.append(text[kept:])
    return "".join(pieces)


def check_text(text: Any, fn: str) -> str:
    """The part of a response to parse: the content of its ``<answer>``
    tags where it has them, else the text without ``<think>`` blocks (a
    reasoning model's deliberation names options it then rejects)."""
    if not isinstance(text, str):
        raise InputTypeError(f"{fn}: text must be a str, got {type(text).__name__}")
    tagged = _answers(text)
    return " ".join(tagged) if tagged else _without_think(text)
