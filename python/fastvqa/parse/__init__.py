# SPDX-License-Identifier: Apache-2.0
"""Free text to answers and spans: the option a model's response chose and
the time span(s) it gave.

Three functions (:mod:`fastvqa.parse.options`, :mod:`fastvqa.parse.spans`
and this module), each returning a named result that says how it matched
(``how``: the name of the grammar rule, plus notes) or why it failed
(``error``; the other fields are then empty). A parse never guesses: text
that names two different options, or no option, is a failure.

- :func:`parse_option` -> :class:`OptionParse` ``(index, how, error)``:
  ``index`` is 0-based (A = 0);
- :func:`parse_spans` -> :class:`SpanParse` ``(spans, how, error)``:
  ``spans`` are ``(start, end)`` in **seconds**, both ends inclusive
  (``start <= end``), in the order the response gives them;
- :func:`parse_response` -> :class:`ResponseParse` ``(answer, spans)``: both
  from one response. Spans are found first and their text is blanked before
  the option is looked for, so ``"Answer: 2. From 10 to 12 seconds"`` reads
  option 2 and the span (10, 12), never option 10.

The grammar is a small table of named regular expressions per kind
(:data:`OPTION_RULES`, :data:`SPAN_RULES`); the rule's name is what ``how``
reports. Only a response's ``<answer>...</answer>`` content is read where it
has one, and ``<think>...</think>`` blocks never are. Markdown emphasis and code marks (``*``, ``_`` pairs, backticks) are
removed first; JSON (the whole response, a fenced `````json`` block or the
first ``{...}`` object in the text) is read before any text rule.

Replies are untrusted: every parse runs in time linear in the reply's
length (whitespace runs are squeezed to one character before any rule runs,
tags, fences and JSON are found by single scans) and never raises on a
``str``: deep nesting, numbers beyond any float, NaN or lone surrogates are
failures with their reason.

Option numbers: a number is an option's position, **1-based by default**
(``"2"`` is the second option, as options are numbered in prompts);
``index_base=0`` reads them 0-based (SOK-Bench's ``right_choice``). A number
outside the options is a failure, never wrapped. JSON integers follow the
same rule (they are text the model wrote, not an index file).
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence, Union

from fastvqa.parse._text import clean, squeeze
from fastvqa.parse.options import OPTION_RULES, OptionParse, option_args, option_of, parse_option
from fastvqa.parse.spans import SPAN_RULES, SpanParse, parse_spans, span_args, spans_and_ranges


class ResponseParse(NamedTuple):
    """An answer and spans from one response: ``answer`` is an
    :class:`OptionParse` (None when no options were given), ``spans`` a
    :class:`SpanParse`."""

    answer: Optional[OptionParse]
    spans: SpanParse


def parse_response(text: str, options: Union[None, Sequence[str], int] = None, *,
                   duration: Optional[float] = None, fps: Optional[float] = None,
                   normalized: bool = False, index_base: int = 1,
                   frame_times: Optional[Sequence[float]] = None) -> ResponseParse:
    """An answer and spans from one response ("Answer: (C). Evidence: 12.0s
    to 18.5s"): :func:`parse_spans` on the whole text, then
    :func:`parse_option` on the text with the spans' characters blanked, so a
    time is never read as an option number (nor a label as a time). JSON
    gives both at once (``{"answer": "B", "start": 12, "end": 18.5}``).

    ``answer`` is None when ``options`` is None; arguments and failures as in
    the two functions.
    """
    fn = "parse_response"
    text, duration, frames = span_args(text, duration, fps, fn, frame_times)
    spans, used = spans_and_ranges(text, duration, frames, normalized)
    if options is None:
        return ResponseParse(None, spans)
    n, texts, index_base = option_args(options, index_base, fn)
    return ResponseParse(option_of(text, _blanked(clean(text), used), n, texts, index_base),
                         spans)


def _blanked(text: str, ranges: list) -> str:
    """``text`` with each of the (sorted, disjoint) character ``ranges`` a
    space, in one pass, whitespace squeezed again (a reply of many spans
    would leave long runs of spaces)."""
    pieces, kept = [], 0
    for start, end in ranges:
        pieces += [text[kept:start], " "]
        kept = end
    pieces.append(text[kept:])
    return squeeze("".join(pieces))


def answer_text(text: str) -> str:
    r"""The free-text answer of a reply to an open question: what follows the
    first ``Answer:`` on its line, else the reply's first non-empty line
    (``""`` for an empty reply). One scan, linear in the reply.

    >>> answer_text("I watched it.\nAnswer: a red cube\nAt 1 s - 2 s.")
    'a red cube'
    >>> answer_text("  \nThe red cube.")
    'The red cube.'
    """
    lines = [line.strip() for line in text.splitlines()]
    for line in lines:
        head, sep, rest = line.partition(":")
        if sep and head.strip().lower() == "answer" and rest.strip():
            return rest.strip()
    return next((line for line in lines if line), "")


__all__ = ["OPTION_RULES", "OptionParse", "ResponseParse", "SPAN_RULES", "SpanParse",
           "answer_text", "parse_option", "parse_response", "parse_spans"]
