# SPDX-License-Identifier: Apache-2.0
"""What both parsers share: markdown removed, the JSON a response holds."""

from __future__ import annotations

import json
import re
from typing import Any

from fastvqa.errors import InputTypeError

_MARKDOWN = re.compile(r"\*\*|__|`+|^#+\s*", re.MULTILINE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def clean(text: str) -> str:
    """The response without fenced blocks' marks and markdown emphasis."""
    return _MARKDOWN.sub("", text.replace("\u2013", "-").replace("\u2014", "-"))


def find_json(text: str, embedded: tuple = (dict,)) -> tuple[Any, str]:
    """``(value, "")``: the JSON a response holds: its fenced block, the
    whole text (either one starting with ``{`` or ``[``), or the first
    decodable value of an ``embedded`` type (``dict``: ``{...}``; ``list``:
    ``[...]``) inside the text. ``(None, why)`` where there is none: the last
    decoding error, or ``"no JSON value"``."""
    decoder = json.JSONDecoder()
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1).strip()] if fenced else []
    candidates.append(text.strip())
    error = "no JSON value"
    for candidate in candidates:
        if candidate[:1] in "{[":
            try:
                return json.loads(candidate), ""
            except ValueError as err:
                error = f"invalid JSON ({err})"
    opening = "".join(c for t, c in ((dict, "{"), (list, "[")) if t in embedded)
    for m in re.finditer(f"[{re.escape(opening)}]", text):
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(value, embedded):
            return value, ""
    return None, error


def json_value(text: str) -> Any:
    """The JSON a response holds: its fenced block, the whole text, or the
    first decodable ``{...}`` object in it; None where there is none."""
    return find_json(text)[0]


_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)


def check_text(text: Any, fn: str) -> str:
    """The part of a response to parse: the content of its ``<answer>``
    tags where it has them, else the text without ``<think>`` blocks (a
    reasoning model's deliberation names options it then rejects)."""
    if not isinstance(text, str):
        raise InputTypeError(f"{fn}: text must be a str, got {type(text).__name__}")
    tagged = _ANSWER_TAG.findall(text)
    return " ".join(tagged) if tagged else _THINK.sub(" ", text)

