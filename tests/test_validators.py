# SPDX-License-Identifier: Apache-2.0
"""One validator family (fastvqa._checks.choice/flag, which the evaluation
functions' option-first spellings call) and one reader of a multiple-choice
reply (fastvqa.parse.parse_option; fastvqa.metrics.parse_option_index is its
``rules="labels"`` reading with 0-based numbers)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import numpy as np
import pytest

import fastvqa._checks as checks_module
import fastvqa.evaluation as evaluation_module
import fastvqa.metrics.multiple_choice as multiple_choice_module
import fastvqa.parse.options as options_module
from fastvqa import _checks
from fastvqa.errors import CommandError, InputError, InputTypeError
from fastvqa.evaluation import choice, flag
from fastvqa.metrics import parse_option_index
from fastvqa.parse import parse_option

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "fastvqa"


@pytest.mark.parametrize("module", [checks_module, options_module, multiple_choice_module])
def test_module_examples_run(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_evaluation_examples_run():
    # only choice's: the module's other docstrings hold no examples of their own
    tests = [t for t in doctest.DocTestFinder().find(evaluation_module)
             if t.name.endswith(".choice")]
    runner = doctest.DocTestRunner()
    for test in tests:
        runner.run(test)
    assert tests and runner.failures == 0


# ------------------------------------------------------------------ validators

_SHAPE = re.compile(r"^(?P<who>.+?)(?: must be|: expected) one of ip, l2, got 'cos'$")


def test_both_choice_spellings_share_the_message_shape_and_pick_the_class():
    with pytest.raises(InputError) as library:
        _checks.choice("cos", "Index", "metric", ("ip", "l2"))
    with pytest.raises(CommandError) as command:
        choice("metric", "cos", ("ip", "l2"))
    assert type(library.value) is InputError and isinstance(library.value, ValueError)
    assert str(library.value) == "Index: metric must be one of ip, l2, got 'cos'"
    assert str(command.value) == "metric: expected one of ip, l2, got 'cos'"
    assert _SHAPE.match(str(library.value)).group("who") == "Index: metric"
    assert _SHAPE.match(str(command.value)).group("who") == "metric"
    # the option-first spelling is the value-first one with the command's class
    with pytest.raises(CommandError, match="^metric: expected one of ip, l2, got 'cos'$"):
        _checks.choice("cos", "metric", "", ("ip", "l2"), error=CommandError)


@pytest.mark.parametrize("value", [True, False, 2, "0", None])
def test_choice_refuses_bools_and_strangers_in_both_spellings(value):
    assert _checks.choice(1, "f", "index_base", (0, 1)) == 1
    assert choice("index_base", 0, (0, 1)) == 0
    with pytest.raises(InputError, match=r"^f: index_base must be one of 0, 1, got "):
        _checks.choice(value, "f", "index_base", (0, 1))
    with pytest.raises(CommandError, match=r"^index_base: expected one of 0, 1, got "):
        choice("index_base", value, (0, 1))


def test_choice_keeps_the_callers_exception_class():
    from fastvqa.retrieval.index import IndexFileError

    with pytest.raises(IndexFileError, match="^x: bad: kind must be one of flat, got 'ivf'$"):
        _checks.choice("ivf", "", "x: bad: kind", ("flat",), error=IndexFileError)


@pytest.mark.parametrize("value", [1, 0, "yes", None, np.bool_(True)])
def test_flag_refuses_non_bools(value):
    assert _checks.flag(True, "f", "strict") is True and flag("--strict", False) is False
    with pytest.raises(InputTypeError, match=r"^f: strict must be True or False, got "):
        _checks.flag(value, "f", "strict")
    with pytest.raises(CommandError, match=r"^strict: expected True or False, got "):
        flag("strict", value)


@pytest.mark.parametrize("call, message", [
    (lambda: __import__("fastvqa.nn", fromlist=["SpanHead"]).SpanHead(4, multi_span="max"),
     "SpanHead: multi_span must be one of first, mean, logsumexp, got 'max'"),
    (lambda: __import__("fastvqa.video.api", fromlist=["x"]).resolve_backend("ffmpeg", "cpu"),
     "backend must be one of auto, pyav, dali, got 'ffmpeg'"),
])
def test_former_value_errors_stay_value_errors(call, message):
    try:
        call()
    except ImportError as err:  # torch or the video stack missing here
        pytest.skip(str(err))
    except ValueError as err:
        assert isinstance(err, InputError) and str(err) == message
    else:
        pytest.fail("no error")


# These belong to other engineers' work in progress; they join the family there.
_NOT_YET: tuple = ()


def test_one_check_says_must_be_one_of():
    said = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "_checks.py" or rel.startswith(_NOT_YET):
            continue
        if "must be one of" in path.read_text(encoding="utf-8"):
            said.append(rel)
    assert said == [], f"use fastvqa._checks.choice in {said}"


# ------------------------------------------------------------------ option parser

REPLIES = ["2", "(2)", "[2]", "2.", "2)", "B", "(B)", "B.", "B)", "B:", "(b)",
           "(C) The soup would lack ...", "C. The soup", "3) text", "D: the last one",
           "[1] first", "answer: 2", "Answer: 1", "The answer is (C).",
           "I think the answer is D", "Option B", "choice 3.", "the correct option - A, because",
           "A soup", "3.5 cups of broth", "add 2 cups", "choice a lot", "The answer is I", "E",
           "answers: 2", ""]


@pytest.mark.parametrize("reply", REPLIES)
@pytest.mark.parametrize("base", [0, 1])
def test_parse_option_index_is_parse_option_with_labels_rules(reply, base):
    got = parse_option(reply, 4, index_base=base, rules="labels")
    assert parse_option_index(reply, 4, index_base=base) == got.index
    assert (got.error is None) == (got.index is not None)


@pytest.mark.parametrize("reply", ["2", "(2)", "B", "(B)", "C. The soup", "3) text", "answer: 2",
                                   "The answer is (C).", "Option B", "choice 3.", "[1] first"])
def test_both_readers_agree_on_an_in_range_label_given_the_same_base(reply):
    # parse_option numbers from 1 by default, parse_option_index from 0
    for base in (0, 1):
        assert parse_option(reply, 4, index_base=base).index == \
            parse_option_index(reply, 4, index_base=base)
    assert parse_option(reply, 4).index == parse_option_index(reply, 4, index_base=1)


@pytest.mark.parametrize("reply, full, labels", [
    ("b", 1, None),  # a bare lower-case letter: fastvqa's rules only
    ("7", None, 6),  # a number beyond the options: kept (scored wrong) by the labels
    ("the cat", 1, None),  # an option's text: fastvqa's rules only
    ("The answer is A or B", None, 0),  # ambiguous for fastvqa; the labels: the first
])
def test_the_readings_that_differ_stay_reachable(reply, full, labels):
    assert parse_option(reply, ["the dog", "the cat", "x", "y"]).index == full
    assert parse_option(reply, 4, rules="labels").index == labels


def test_the_rules_option_is_checked():
    with pytest.raises(InputError, match="^parse_option: rules must be one of full, labels, "
                                         "got 'sokbench'$"):
        parse_option("B", 4, rules="sokbench")
    with pytest.raises(InputTypeError, match="^parse_option: text must be a string, got int$"):
        parse_option(3, 4, rules="labels")
