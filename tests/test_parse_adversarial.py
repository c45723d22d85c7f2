# SPDX-License-Identifier: Apache-2.0
"""``fastvqa.parse`` on hostile model replies: time linear in the reply's
length, no exception escaping, never a silently wrong number.

Time is checked as a ratio, never against the wall clock: each adversarial
1 MB reply must parse within ``RATIO`` times what a plain 1 MB reply of prose
takes in the same test process (the pre-fix parser took minutes to hours on
these shapes: cubic on whitespace runs, quadratic on repeated tags, braces
and spans). Expected values are written by hand from the rules in the
module's docstrings.
"""

from __future__ import annotations

import json
import time

import pytest

from fastvqa.parse import OptionParse, SpanParse, parse_option, parse_response, parse_spans

OPTS = ["pick up the ball", "wave his hand", "run away", "sit down", "laugh"]
SIZE = 1_000_000
#: generous: an adversarial reply may take this many times a plain one
RATIO = 12.0
NOT_FINITE = "a span endpoint is not a finite number"
NO_SPAN = "no time span found in the response"


def _fill(unit: str, size: int = SIZE) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _seconds(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


@pytest.fixture(scope="module")
def plain_seconds() -> float:
    """The time to parse a plain 1 MB reply (best of three)."""
    plain = _fill("He walks to the door and then he waves at the camera, smiling. ")
    return min(_seconds(parse_response, plain, OPTS) for _ in range(3))


# Each a 1 MB reply (``SIZE`` characters) of one hostile shape.
SHAPES = {
    "spaces_before_reason": "B" + " " * (SIZE - 20) + " because he waves",
    "spaces_then_bang": " " * (SIZE - 1) + "!",
    "newlines_then_bang": "\n" * (SIZE - 1) + "!",
    "mixed_whitespace": _fill(" \t\n \r"),
    "answer_tags": _fill("<answer>"),
    "answer_close_tags": _fill("</answer><answer>x"),
    "think_tags": _fill("<think>"),
    "open_braces": _fill("{"),
    "open_brackets": _fill("["),
    "braces_keys": _fill('{"a":'),
    "braces_then_strings": _fill('{"a": "'),
    "brace_quote": _fill('{"{'),
    "unclosed_quote_prose": _fill("{ it's 5\" tall "),
    "balanced_deep": "{" * (SIZE // 2) + "}" * (SIZE // 2),
    "bracket_pairs_deep": _fill("[1, 2"),
    "fences": _fill("```"),
    "fence_then_spaces": "```json" + " " * (SIZE - 7),
    "digits": _fill("1"),
    "digits_then_seconds": _fill("1")[:-10] + " to 2 sec",
    "colons": _fill(":"),
    "clock_chain": _fill("0:0"),
    "clock_chain_2": _fill("00:00:"),
    "decimal_chain": _fill("1."),
    "thousands_chain": _fill("1,000,"),
    "exponent_chain": _fill("1e1e"),
    "dashes": "1" + "-" * (SIZE - 2) + "x",
    "parens": _fill("("),
    "paren_digits": "(" + "1" * (SIZE - 1),
    "answer_words": _fill("the answer is "),
    "answer_colons": _fill("Answer: "),
    "start_words": _fill("start is "),
    "start_digits": "start is " + "1" * (SIZE - 9),
    "from_words": _fill("from "),
    "frames_words": _fill("frames "),
    "option_words": _fill("option "),
    "spaced_tokens": _fill("1 - "),
    "spaced_letters": _fill("B "),
    "stars": _fill("*"),
    "backticks": _fill("`"),
    "hashes": _fill("#"),
    "distinct_spans": "".join(f"[{i}, {i + 1}] " for i in range(80_000))[:SIZE],
    "many_from_to": _fill("from 1 to 2 seconds. "),
    "bracket_labels": _fill("(A) (B) "),
    # durations in several units, and spans named by two event verbs
    "compound_chain": _fill("1 min 2 s "),
    "compound_glued": _fill("1h2m3s"),
    "compound_digits": "1 h " + "1" * (SIZE - 10) + " s",
    "compound_ands": _fill("1 minute and "),
    "verb_pairs": _fill("starts sliding at 1 s and stops at "),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_adversarial_reply_parses_in_linear_time(name, plain_seconds):
    text = SHAPES[name]
    assert len(text) >= SIZE - 20
    # parse_response runs parse_spans' code whole, then parse_option's on
    # the text with the spans blanked; parse_option alone reads it unblanked
    start = time.perf_counter()
    got = parse_response(text, OPTS, duration=100.0, fps=2.0)
    option = parse_option(text, OPTS)
    took = time.perf_counter() - start
    # two parses against one: the budget is per parse
    assert took / 2 <= RATIO * plain_seconds, (name, took, plain_seconds)
    for answer in (got.answer, option):
        assert isinstance(answer, OptionParse)
        assert (answer.index is None) != (answer.error is None)
    assert isinstance(got.spans, SpanParse)
    assert bool(got.spans.spans) != (got.spans.error is not None)


# ------------------------------------------------------------ no exception


@pytest.mark.parametrize("text", [
    "[" * 100_000,
    "{" * 100_000,
    '{"a":' * 100_000,
    "```json\n" + "[" * 100_000 + "\n```",
    "Answer: B " + '{"a": [' * 50_000,
])
def test_deep_nesting_is_a_counted_failure(text):
    got = parse_response(text, 5)
    assert got.spans == SpanParse([], "", NO_SPAN)
    want = 1 if text.startswith("Answer: B") else None
    assert got.answer.index == want and (got.answer.error is None) == (want is not None)


def test_deep_nesting_reports_why():
    got = parse_response("[" * 100_000, 5)
    assert got.answer == OptionParse(None, "", "no option found in the response")
    assert got.spans == SpanParse([], "", NO_SPAN)


@pytest.mark.parametrize("text", [
    '{"start": 1' + "0" * 400 + ', "end": 2}',     # an int beyond any float
    '{"start": 1, "end": 1' + "0" * 5000 + "}",     # beyond int's str-digit limit
    '{"start": NaN, "end": 2}',
    '{"start": 1, "end": Infinity}',
    '{"start": -Infinity, "end": 2}',
    '{"start": 1e400, "end": 2}',
    '{"spans": [[1, 1' + "0" * 400 + "]]}",
    "from 1 to 1" + "0" * 400 + " seconds",         # huge digit string in text
])
def test_huge_and_special_numbers_are_failures(text):
    got = parse_spans(text)
    assert got == SpanParse([], "", NOT_FINITE)
    assert parse_response(text, OPTS).spans == got


def test_huge_int_answer_is_no_option():
    got = parse_option('{"answer": 1' + "0" * 400 + "}", OPTS)
    # a label is one or two digits: a 401-digit number is none
    assert got == OptionParse(None, "", "no option found in the response")


@pytest.mark.parametrize("text", [
    '{"answer": "\\ud800B"}', '{"answer": "B", "start": "\\udfff", "end": 2}',
    "B \ud800", "\udc00 from 1 to 2 seconds",
])
def test_lone_surrogates_do_not_raise(text):
    got = parse_response(text, OPTS)
    assert isinstance(got.answer, OptionParse) and isinstance(got.spans, SpanParse)


def test_lone_surrogate_values():
    assert parse_response("Answer: B \ud800", OPTS).answer == OptionParse(1, "answer_phrase", None)
    assert parse_spans("\udc00 from 1 to 2 seconds").spans == [(1.0, 2.0)]
    assert parse_spans('{"start": "\\udfff", "end": 2}').error == "'\\udfff' is not a time"


def test_a_long_non_time_string_error_is_short():
    got = parse_spans('{"start": "' + "x" * 100_000 + '", "end": 2}')
    assert got.spans == [] and got.error.endswith("is not a time")
    assert len(got.error) < 200


# ------------------------------------------------------------ wrong numbers


@pytest.mark.parametrize("text, want", [
    ("from 1e2 to 150 seconds", [(100.0, 150.0)]),
    ("from 1.5e1s to 2e1s", [(15.0, 20.0)]),
    ("from 0 to 1,500 seconds", [(0.0, 1500.0)]),
    ("between 1,000 and 2,000 ms", [(1.0, 2.0)]),
    ("from １２ to １５ seconds", [(12.0, 15.0)]),       # full-width digits are digits
    ("[1,200]", [(1.0, 200.0)]),                        # a list, not one thousands number
    ("The relevant moment is [10,20].", [(10.0, 20.0)]),
    ("It happens at 1-2s,3-4s.", [(1.0, 2.0), (3.0, 4.0)]),
    ("from 12 to 15.", [(12.0, 15.0)]),
])
def test_numbers_are_read_whole(text, want):
    got = parse_spans(text)
    assert got.error is None, got
    assert got.spans == want


@pytest.mark.parametrize("text", [
    "from -3 to 5 seconds",       # never (3, 5)
    "from 1.5.3 to 4 seconds",    # never (3, 4) nor (1.5, ...)
    "from 1 to 2.5.3 seconds",    # never (1, 2.5)
    "from 0 to 1,5 seconds",      # a decimal comma: never (0, 1)
    "-3 - 5 s",
    "x1e2 to 150s",
])
def test_partial_numbers_are_refused(text):
    assert parse_spans(text) == SpanParse([], "", NO_SPAN)


def test_exponent_in_a_unit_range():
    assert parse_spans("1e2s - 1.5e2s") == SpanParse([(100.0, 150.0)], "unit_range", None)


# ------------------------------------------------------------ JSON finding


@pytest.mark.parametrize("text, want", [
    ('Result: {"final_answer": "E"} (I am fairly sure)', 4),
    ('{ I think {"answer": "C"}', 2),                       # an unclosed brace before it
    ('{see} {"answer": "B"}', 1),                            # a failed object before it
    ('It is 5" tall. {"answer": "D"}', 3),                   # a prose quote before it
    ('{ it is 5" tall {"answer": "D"}', 3),                  # ... inside an unclosed brace
    ('{"outer": {"answer": "A"}, "x": }', 0),                # invalid outer, valid inner
    ('{"answer": "B", "note": "use {x} and ]"}', 1),         # brackets inside strings
])
def test_embedded_json_is_still_found(text, want):
    assert parse_option(text, OPTS) == OptionParse(want, "json", None)


def test_find_json_lists_for_the_event_builders():
    from fastvqa.parse._text import find_json

    assert find_json('Here: [[1, 2], {"q": "a"}] done', (list, dict)) == ([[1, 2], {"q": "a"}], "")
    assert find_json("no json here", (list, dict)) == (None, "no JSON value")
    value, why = find_json("[" * 100_000, (list, dict))
    assert value is None and "nested too deeply" in why


# ------------------------------------------------------------ --pred-text


def test_pred_text_counts_adversarial_lines_as_failures(tmp_path):
    from tests.test_eval_pred_text import CSV, GSUB, eval_json, write_json, write_lines

    gt = tmp_path / "gt"
    gt.mkdir()
    write_json(gt / "gsub_test.json", GSUB)
    (gt / "test.csv").write_text(CSV)
    rows = [
        {"key": "v1_0", "response": "The answer is (B). It happens from 2s to 8s."},
        {"key": "v1_1", "response": "[" * 100_000},
        {"key": "v1_2", "response": '{"answer": "A", "start": 1' + "0" * 400 + ', "end": 6}'},
        {"key": "v2_0", "response": "B" + " " * 200_000 + " because he waves"},
        {"key": "v2_1", "response": "<answer>" * 20_000 + "from 1e2 to 150 seconds"},
    ]
    responses = write_lines(tmp_path / "responses.jsonl", rows)
    got = eval_json("nextgqa", "--gt", gt, "--pred-text", responses)
    parse = got["info"]["parse"]
    # by hand: v1_0 parses both; v1_1 neither; v1_2 the answer A, its span is
    # not finite; v2_0 the answer B (this csv's option texts are "a".."e",
    # and "b" is a whole word of the response), no span;
    # v2_1: the <answer> tags never close, so the whole text is read: no
    # option, the span (100, 150) clamped to v2's 40 s
    assert parse["responses"] == 5
    assert (parse["answer_failures"], parse["span_failures"]) == (2, 3)


def test_pred_text_parser_crash_is_a_counted_failure(monkeypatch):
    from fastvqa.evaluation import text_predictions

    def boom(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(text_predictions, "parse_response", boom)
    got = text_predictions._parse(text_predictions.Response(1, "k", "B"), OPTS, None,
                                  fps=None, normalized=False, index_base=1)
    why = "the parser failed on this response (RecursionError)"
    assert got.answer == OptionParse(None, "", why)
    assert got.spans == SpanParse([], "", why)


@pytest.mark.parametrize("line, message", [
    (json.dumps({"key": "v1_0", "response": {"text": "B"}}),
     "field 'response': expected a string or null, got dict"),
    ('{"key": "v1_0", "response": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "nested too deeply"),
    (json.dumps({"key": "v1_0", "response": ["B"]}),
     "field 'response': expected a string or null, got list"),
])
def test_bad_responses_lines_are_one_line_errors(tmp_path, line, message):
    from fastvqa.data.errors import DataFormatError
    from fastvqa.evaluation.text_predictions import read_responses

    path = tmp_path / "r.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DataFormatError) as err:
        read_responses(path, ("key",))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_huge_response_line_is_read(tmp_path):
    from fastvqa.evaluation.text_predictions import read_responses

    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"key": "a", "response": "B" * 2_000_000}) + "\n")
    (got,) = read_responses(path, ("key",))
    assert got.key == "a" and len(got.text) == 2_000_000
