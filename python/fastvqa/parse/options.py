# SPDX-License-Identifier: Apache-2.0
"""The option a response chose: :func:`parse_option` and its rules
(:data:`OPTION_RULES`, and :data:`LABEL_RULES` for SOK-Bench's label-only
reading); see :mod:`fastvqa.parse`. It is fastvqa's one reader of a
multiple-choice reply: :func:`fastvqa.metrics.parse_option_index` is
``parse_option(..., rules="labels")`` with SOK-Bench's 0-based numbers."""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple, Optional, Sequence, Union

from fastvqa._checks import choice, integer, string
from fastvqa.errors import InputTypeError
from fastvqa.parse._text import check_text, clean, json_value

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class OptionParse(NamedTuple):
    """The option a response chose.

    ``index``: the 0-based option index, or None when the parse failed
    (with ``rules="labels"`` a number beyond the options is kept: the index
    may then be negative or ``>=`` the number of options).
    ``how``: the rule that matched (``"answer_phrase"``, ``"json"``...), ``""``
    on failure. ``error``: why the parse failed (``None`` on success).
    """

    index: Optional[int]
    how: str
    error: Optional[str]


def _label(n: str) -> str:
    # A label: a bracketed letter or number, a capital letter standing alone,
    # a lower-case letter closed by ")" or ":", or a number (not "3.5").
    return (rf"(?:\(\s*(?P<{n}b>[A-Za-z]|\d{{1,2}})\s*\)|\[\s*(?P<{n}s>[A-Za-z]|\d{{1,2}})\s*\]"
            rf"|(?P<{n}c>[A-Z])(?![\w'])|(?P<{n}l>[a-z])(?=\s*[):])"
            rf"|(?P<{n}n>\d{{1,2}})(?![\d\w]|\.\d))")


_ALT = r"\s*(?:\bor\b|/|\band\b|&)\s*"
_RANK = r"(?:(?:final|correct|best|right)\s+)?"
_VERB = r"(?:is|would\s+be|should\s+be|will\s+be)"
#: Option rules, in the order they are tried (with the option-text checks
#: between them, see :func:`parse_option`); the first that finds labels
#: decides, and several different labels within it are ambiguous (a failure).
OPTION_RULES: dict[str, re.Pattern] = {
    # "The answer is (B)", "Answer: B", "correct option is 2", "I choose C"
    "answer_phrase": re.compile(
        rf"(?i:\b{_RANK}answer\b(?:\s+{_VERB})?\s*(?:[:=\-]\s*)?"
        rf"|\b{_RANK}(?:option|choice)\s*(?:\s{_VERB}\s*(?:[:=\-]\s*)?|[:=\-]\s*)"
        r"|\bI\s+(?:would\s+)?(?:choose|pick|select|go\s+with)\s+)"
        r"(?:(?i:option|choice|letter)\s+(?P<ak>[A-Za-z])(?![\w'])|(?i:(?:option|choice|letter)\s+)?"
        + _label("a") + r"|(?P<ae>[a-z])(?=\s*[.)]?\s*$))" + rf"(?:{_ALT}{_label('x')})?", re.M),
    # the whole response is one label: "B", "(b)", "2.", "B)"
    "whole_label": re.compile(r"^\s*(?:" + _label("a") + r"|(?P<al2>[a-z]))\s*[.):]?\s*$"),
    # "A or B", "B/C": two labels and nothing else
    "label_list": re.compile(r"^\s*" + _label("a") + _ALT + _label("x") + r"\s*[.]?\s*$"),
    # a label leading free text: "B. The man", "(C) red", "2) ..."
    "leading_label": re.compile(
        r"^\s*(?:\(\s*(?P<ab>[A-Za-z]|\d{1,2})\s*\)|\[\s*(?P<as>[A-Za-z]|\d{1,2})\s*\]"
        r"|(?P<ac>[A-Z]|\d{1,2})[.):,])\s+\S"),
    # "option b", "choice 3" anywhere
    "option_keyword": re.compile(r"(?i:\b(?:option|choice)\s+)(?:(?P<al>[a-zA-Z])|(?P<an>\d{1,2}))"
                                 r"(?![\w]|\.\d)"),
    # a bracketed capital anywhere: "I think (C) fits"
    "bracket_label": re.compile(r"\(\s*(?P<ac>[A-Z])\s*\)"),
}
#: The label forms of ``rules="labels"`` (SOK-Bench: "parse an integer as the
#: choice"), in the order tried on the stripped response; the first label that
#: names an option decides (no ambiguity check). A number of any length is a
#: label; a letter is one when a capital or bracketed ("(b)").
LABEL_RULES: dict[str, re.Pattern] = {
    # the whole response is a number: "2", "(2)", "[2]", "2.", "2)"
    "whole_number": re.compile(r"^[(\[]?\s*(\d+)\s*[)\]]?\s*[.:]?$"),
    # ... or a letter: "B", "(B)", "B.", "B)", "B:", "(b)"
    "whole_label": re.compile(r"^(?:[(\[]\s*([A-Za-z])\s*[)\]]|([A-Z])\s*[).:]?)\s*[.:]?$"),
    # a label leading free text, then whitespace: "(B) The soup", "2) ...", "B: ..."
    # ("A soup" and "3.5 cups" are not labels)
    "leading_label": re.compile(
        r"^(?:\(\s*(\d+|[A-Za-z])\s*\)|\[\s*(\d+|[A-Za-z])\s*\]|(\d+|[A-Z])[.):])\s+\S"),
    # "answer: 2", "The answer is (C)", "Option B", "choice 3." anywhere, in order
    "answer_phrase": re.compile(
        r"\b(?i:answer|option|choice)(?:\s+(?i:is))?\s*[:\-]?\s*"
        r"(?:\(\s*(\d+|[A-Za-z])\s*\)|\[\s*(\d+|[A-Za-z])\s*\]|(\d+|[A-Z]))"
        r"(?=$|[\s.,:;!?)\]])"),
}
_LONE_LETTER = re.compile(r"\s*[(\[]?\s*([A-Za-z])\s*[)\]]?\s*[.):]?\s*")
_REFUSAL = re.compile(r"\b(?:cannot|can't|can not|unable to|not possible to|impossible to)\s+"
                      r"(?:be\s+)?(?:determine|tell|answer|say|know|decide|identify|sure)"
                      r"|\bnone of the (?:above|options)\b|\bnot enough information\b", re.I)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _read_label(label: str, n: int, index_base: int, *,
                keep_numbers: bool = False) -> tuple[Optional[int], Optional[str]]:
    """A label -> (0-based index, None), (None, error), or (None, None) for a
    letter beyond the options (a stray capital such as "I", not a choice).
    ``keep_numbers``: a number beyond the options is still its index (a
    choice that scores wrong, as SOK-Bench reads it), not an error."""
    if label.isdigit():
        index = int(label) - index_base
        if keep_numbers or 0 <= index < n:
            return index, None
        base = "1-based" if index_base == 1 else "0-based"
        return None, f"option number {label} is out of range for {n} options ({base})"
    index = _LETTERS.index(label.upper())
    return (index, None) if index < n else (None, None)


def _labels_of(m: re.Match) -> list[str]:
    return [v for k, v in m.groupdict().items() if v is not None]


def _by_text(text: str, options: Sequence[str], exact: bool) -> list[int]:
    """Options whose normalised text is the response's (``exact``) or, else,
    contained in it as whole words; an option inside another found option's
    text is dropped (the longer one explains it)."""
    said = _norm(text)
    texts = [_norm(o) for o in options]
    if exact:
        return [i for i, t in enumerate(texts) if t and t == said]
    found = [i for i, t in enumerate(texts) if t and re.search(rf"(?<!\w){re.escape(t)}(?!\w)", said)]
    return [i for i in found
            if not any(j != i and texts[i] != texts[j] and texts[i] in texts[j] for j in found)]


def _decide(indices: list[int], errors: list[str], how: str) -> Optional[OptionParse]:
    """One option chosen: the parse; several: ambiguous; none: the first
    error, or None (the next rule is tried)."""
    chosen = sorted(set(indices))
    if len(chosen) == 1:
        return OptionParse(chosen[0], how, None)
    if len(chosen) > 1:
        names = ", ".join(_LETTERS[i] for i in chosen)
        return OptionParse(None, "", f"ambiguous: {how} names options {names}")
    if errors:
        return OptionParse(None, "", errors[0])
    return None


def _rule_labels(name: str, text: str, n: int, index_base: int) -> tuple[list, list]:
    indices, errors = [], []
    for m in OPTION_RULES[name].finditer(text):
        for label in _labels_of(m):
            index, error = _read_label(label, n, index_base)
            if index is not None:
                indices.append(index)
            elif error:
                errors.append(error)
    return indices, errors


def _option_rules(text: str, n: int, texts: Optional[Sequence[str]],
                  index_base: int) -> OptionParse:
    decided = _decide(*_rule_labels("answer_phrase", text, n, index_base), "answer_phrase")
    if decided is not None:
        return decided
    # The whole response: a label, or an option's text; both readings must agree.
    labels, errors = _rule_labels("whole_label", text, n, index_base)
    exact = _by_text(text, texts, exact=True) if texts is not None else []
    if labels and exact and set(labels) != set(exact):
        return OptionParse(None, "", f"ambiguous: the response is label "
                           f"{_LETTERS[labels[0]]} and the text of option {_LETTERS[exact[0]]}")
    for how, indices, errs in (("whole_label", labels, errors), ("option_text", exact, [])):
        decided = _decide(indices, errs, how)
        if decided is not None:
            return decided
    lone = _LONE_LETTER.fullmatch(text)
    if lone and _LETTERS.index(lone.group(1).upper()) >= n:
        return OptionParse(None, "", f"letter {lone.group(1)} is beyond the {n} options "
                                     f"(A-{_LETTERS[n - 1]})")
    for name in ("label_list", "leading_label", "option_keyword", "bracket_label"):
        decided = _decide(*_rule_labels(name, text, n, index_base), name)
        if decided is not None:
            return decided
    if texts is not None:
        decided = _decide(_by_text(text, texts, exact=False), [], "option_text")
        if decided is not None:
            return decided
    if _REFUSAL.search(text):
        return OptionParse(None, "", "the response declines to choose an option")
    return OptionParse(None, "", "no option found in the response")


def _first_label(text: str, n: int, index_base: int) -> OptionParse:
    """The first label of :data:`LABEL_RULES` on the stripped ``text`` that
    names an option."""
    text = text.strip()
    for how, rule in LABEL_RULES.items():
        for m in rule.finditer(text):
            label = next(g for g in m.groups() if g)
            index, _ = _read_label(label, n, index_base, keep_numbers=True)
            if index is not None:
                return OptionParse(index, how, None)
    return OptionParse(None, "", "no option label found in the response")


def _json_answer(value: Any, n: int, texts, index_base: int) -> Optional[OptionParse]:
    if not isinstance(value, dict):
        return None
    for key in ("answer", "final_answer", "option", "choice", "prediction", "pred"):
        if key not in value:
            continue
        answer = value[key]
        if isinstance(answer, bool) or answer is None:
            break
        if isinstance(answer, int):
            answer = str(answer)
        if isinstance(answer, str):
            got = _option_rules(clean(answer), n, texts, index_base)
            return got._replace(how="json") if got.index is not None else got
        break
    return None


def _options_arg(options: Union[Sequence[str], int], fn: str) -> tuple[int, Optional[list]]:
    if isinstance(options, (str, bytes)) or isinstance(options, bool):
        raise InputTypeError(f"{fn}: options must be a sequence of option texts or a count, "
                             f"got {type(options).__name__}")
    if isinstance(options, int):
        return integer(options, fn, "options", minimum=1), None
    texts = [str(o) for o in options]
    if not texts:
        raise InputTypeError(f"{fn}: options must not be empty")
    return len(texts), texts


def parse_option(text: str, options: Union[Sequence[str], int], *, index_base: int = 1,
                 rules: Literal["full", "labels"] = "full") -> OptionParse:
    """The option a response chose, as a 0-based index.

    Args:
        text: the model's response.
        options: the option texts, in order (A = the first), or their number
            (then only labels can match, not option text).
        index_base: 1 (default): option number ``k`` is index ``k - 1``, as
            options are numbered in prompts; 0: number ``k`` is index ``k``.
            Letters are always A = 0.
        rules: ``"full"`` (default): the rules below. ``"labels"``: only the
            labels of :data:`LABEL_RULES`, SOK-Bench's reading (used by
            :func:`fastvqa.metrics.parse_option_index`): the stripped response
            as given (no ``<answer>``/``<think>`` or markdown handling, no JSON,
            no option text, no refusals), the first label naming an option
            decides, a bare lower-case letter is no label, and a number beyond
            the options is kept as its (wrong) index rather than refused.

    >>> parse_option("The answer is (B).", ["a dog", "a cat"])
    OptionParse(index=1, how='answer_phrase', error=None)
    >>> parse_option("2", 4).index  # 1-based: the second option
    1
    >>> parse_option("7", 4, rules="labels").index  # beyond 4 options, kept
    6

    Rules (:data:`OPTION_RULES`), tried in order; the first that finds a
    label decides: ``json`` (an ``"answer"``/``"option"``/``"choice"``...
    field of JSON in the response), ``answer_phrase`` ("The answer is (B)",
    "Answer: B", "correct option is 2", "I choose C"), ``whole_label`` (the
    response is only "B", "(b)", "2."), ``option_text`` (the response is an
    option's text, case and punctuation aside), ``label_list`` ("A or B":
    ambiguous), ``leading_label`` ("B. The man..."), ``option_keyword``
    ("option b" anywhere), ``bracket_label`` ("(C)" anywhere), then
    ``option_text`` by containment (exactly one option's text appears in the
    response as whole words; an option inside a longer found option is
    dropped).

    A capital letter beyond the options ("I") is not a label; a number
    beyond them is an error. A lower-case letter is a label only bracketed,
    before ``)`` or ``:``, alone, or after "option"/"choice" ("the answer is
    a dog" names no option).

    Returns :class:`OptionParse`. Failure (``index`` None, ``error`` set):
    two different options within the deciding rule ("ambiguous: ..."), an
    out-of-range number, a refusal ("I cannot determine..."), or nothing found.
    Raises :class:`~fastvqa.errors.InputTypeError` for a non-str ``text`` or
    bad ``options``; :class:`~fastvqa.errors.InputError` for ``index_base``
    other than 0 or 1.
    """
    fn = "parse_option"
    if choice(rules, fn, "rules", ("full", "labels")) == "labels":
        text = string(text, fn, "text")
        n, _, index_base = option_args(options, index_base, fn)
        return _first_label(text, n, index_base)
    text = check_text(text, fn)
    n, texts, index_base = option_args(options, index_base, fn)
    return option_of(text, clean(text), n, texts, index_base)


def option_args(options, index_base, fn: str) -> tuple[int, Optional[list], int]:
    """``(number of options, their texts or None, index_base)``, checked."""
    return (*_options_arg(options, fn), _index_base(index_base, fn))


def option_of(text: str, cleaned: str, n: int, texts: Optional[list],
              index_base: int) -> OptionParse:
    """The JSON answer of ``text``, else the rules on ``cleaned`` (the text
    without markdown, spans blanked where the caller found some)."""
    found = _json_answer(json_value(text), n, texts, index_base)
    return found if found is not None else _option_rules(cleaned, n, texts, index_base)


def _index_base(value: Any, fn: str) -> int:
    return choice(integer(value, fn, "index_base"), fn, "index_base", (0, 1))


# ------------------------------------------------------------------ spans


__all__ = ["LABEL_RULES", "OPTION_RULES", "OptionParse", "parse_option"]
