# SPDX-License-Identifier: Apache-2.0
"""The reply readers of the question builders and of DeVi (the paper's
"Q: ... A: ..." lines, numbered refined captions) read untrusted model
replies: they must give what their first, regex definitions gave on every
reply, in time linear in the reply (those regexes were quadratic on many
"Q:" lines and on long whitespace runs)."""

from __future__ import annotations

import random
import re
import time

import pytest

from fastvqa.devi.pipeline import Caption, parse_contextualised
from fastvqa.generate.events.deveqa import _qa_lines, parse_qa_reply

# The definition the scan replaced, kept as the reference (short inputs only).
_REFERENCE_QA = re.compile(
    r"(?:^|\n)\s*(?:\d+[.)]\s*)?Q\d*\s*[:.]\s*(?P<q>.+?)\s*(?:\n\s*)?"
    r"A\d*\s*[:.]\s*(?P<a>.+?)\s*(?=\n\s*(?:\d+[.)]\s*)?Q\d*\s*[:.]|\Z)", re.DOTALL)


def _reference_qa(text: str) -> list:
    return [(m.group("q").strip(), m.group("a").strip()) for m in _REFERENCE_QA.finditer(text)]


def test_qa_lines_read_a_usual_reply():
    reply = ("Here are the questions:\n1. Q: What does the man do first?\nA: He waves.\n"
             "2. Q: What happens after?\n   A: The car leaves.\n\nQ3: Why?\nA3. Because.")
    assert _qa_lines(reply) == [("What does the man do first?", "He waves."),
                                ("What happens after?", "The car leaves."),
                                ("Why?", "Because.")]


def test_qa_lines_equal_the_regex_definition_on_random_replies():
    tokens = ["Q:", "A:", "Q1.", "A2:", "1.", "2)", "\n", "\n", " ", " ", "x", "yes",
              "What", "?", "Q", "A", ".", ":", "\t", "A .", "Q :"]
    rnd = random.Random(0)
    for _ in range(20000):
        text = "".join(rnd.choice(tokens) for _ in range(rnd.randint(0, 30)))
        assert _qa_lines(text) == _reference_qa(text), repr(text)


def _ratio(fn, adversarial: str, plain: str) -> float:
    """Best-of-3 time of ``fn(adversarial)`` over that of ``fn(plain)``."""
    def best(text):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn(text)
            times.append(time.perf_counter() - t0)
        return min(times)
    return best(adversarial) / max(best(plain), 1e-4)


_MB = 1 << 20
_PLAIN = ("Q: What does the man in the red shirt do first? A: He waves at the camera "
          "and then walks to the car.\n")


@pytest.mark.parametrize("shape", [
    "\nQ: x",              # many questions, no answer: each scanned to the end before
    " ",                   # a long blank run inside a question
    "\n",                  # blank lines
    "A",                   # answer letters without a colon
    "Q:",                  # markers glued together
    "1. ",
])
def test_qa_lines_take_time_linear_in_the_reply(shape):
    adversarial = ("Q: a" + shape * (_MB // len(shape)))[:_MB] + " A: b"
    plain = (_PLAIN * (_MB // len(_PLAIN) + 1))[:_MB]
    # Linear: within a small factor of a plain reply of the same length (the
    # regex took minutes here; the scan is within 2x of the plain reply).
    assert _ratio(lambda t: parse_qa_reply(t, 60.0), adversarial, plain) < 25


def _captions(k: int) -> list:
    return [Caption(scale=5, start=float(i), end=float(i + 1), text=f"caption {i}")
            for i in range(k)]


def test_numbered_lines_replace_captions():
    refined, synopsis = parse_contextualised("(1) a man waves\n2. he leaves   \n"
                                             "Synopsis: a man waves and leaves", _captions(3))
    assert [c.text for c in refined] == ["a man waves", "he leaves", "caption 2"]
    assert synopsis == "a man waves and leaves"


def test_numbered_lines_with_huge_numbers_or_blank_text_are_ignored():
    # int() of a 5,000-digit string raises ValueError (Python's digit limit).
    refined, _ = parse_contextualised("1" * 5000 + ". text\n2.    \n", _captions(2))
    assert [c.text for c in refined] == ["caption 0", "caption 1"]


@pytest.mark.parametrize("line", ["1. x" + " " * _MB + "y", "(" + "1" * _MB, "1." + " " * _MB])
def test_numbered_lines_take_time_linear_in_the_reply(line):
    plain = ("(1) a man in a red shirt waves at the camera\n" * (_MB // 40))[:_MB]
    assert _ratio(lambda t: parse_contextualised(t, _captions(3)), line, plain) < 25
