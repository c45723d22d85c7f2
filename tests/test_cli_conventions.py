# SPDX-License-Identifier: Apache-2.0
"""One set of conventions for every ``fastvqa`` command (issue 12, "CLI
conventions"): benchmark names from one list, every default shown in
``--help``, ``--seed`` only where something is random, ``--format`` only for
what a command writes, and numbers checked by the shared converters."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fastvqa.data.benchmarks import BENCHMARK_NAMES
from fastvqa.cli import build_parser, main

# Written out from the modules that read each benchmark (fastvqa.data's
# loaders, fastvqa.evaluation's registrations), not from the code under test.
EXPECTED_NAMES = ("deveqa", "dvd", "nextgqa", "qvhighlights", "sokbench", "wildqa")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    for action in parser._actions:
        if flag in action.option_strings:
            return action
    raise AssertionError(f"{parser.prog} has no {flag}")


def walk(parser=None, path=()):
    """(command words, parser) of every leaf command."""
    parser = parser or build_parser()
    subs = _subparsers(parser)
    if not subs:
        yield path, parser
    for word, child in subs.items():
        yield from walk(child, (*path, word))


# ------------------------------------------------------ one benchmark name each

def test_the_one_list():
    assert BENCHMARK_NAMES == EXPECTED_NAMES


def test_every_command_takes_names_from_the_one_list():
    top = _subparsers(build_parser())
    eval_names = tuple(_subparsers(top["eval"]))
    baseline_names = tuple(_subparsers(top["baseline"]))
    distractors = _option(top["distractors"], "--benchmark").choices
    duplicates = _option(top["duplicates"], "--benchmark").choices
    assert eval_names == EXPECTED_NAMES
    assert baseline_names == EXPECTED_NAMES
    # QVHighlights' queries have no answers to mine distractors from.
    assert tuple(distractors) == tuple(n for n in EXPECTED_NAMES if n != "qvhighlights")
    assert tuple(duplicates) == EXPECTED_NAMES
    # WildQA's two tasks are a further word, not two benchmark names.
    assert sorted(_subparsers(_subparsers(top["eval"])["wildqa"])) == ["evidence", "qa"]
    assert sorted(_subparsers(_subparsers(top["baseline"])["wildqa"])) == ["evidence", "qa"]


def test_the_registry_refuses_a_name_outside_the_list():
    from fastvqa.evaluation import Benchmark, register_benchmark

    with pytest.raises(ValueError, match="BENCHMARK_NAMES"):
        register_benchmark(Benchmark("wildqa-qa", "h", lambda p: None, lambda a: None))


def _argparse_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, err  # argparse prints its usage above the one line
    return errors[0]


@pytest.mark.parametrize("argv", [
    ["eval", "wildqa-qa", "--gt", "g", "--pred", "p"],
    ["baseline", "foo", "x"],
    ["distractors", "--benchmark", "foo", "--gt", "g"],
    ["distractors", "--benchmark", "qvhighlights", "--gt", "g"],
    ["duplicates", "q.txt", "--benchmark", "foo"],
])
def test_an_unknown_name_lists_the_valid_ones(capsys, argv):
    line = _argparse_error(capsys, argv)
    assert "invalid choice" in line
    valid = [n for n in EXPECTED_NAMES if not (argv[0] == "distractors" and n == "qvhighlights")]
    assert all(repr(n) in line for n in valid), line


# ------------------------------------------------------ every default shown

def _defaulted_options(parser):
    """Options with a default worth showing: not None, not SUPPRESS, not an
    on/off flag (``nargs == 0``: off unless given)."""
    return [a for a in parser._actions if a.option_strings and a.nargs != 0
            and a.default is not None and a.default is not argparse.SUPPRESS]


def _help_of(parser, action) -> str:
    formatter = parser._get_formatter()
    return " ".join(formatter._format_action(action).split())


def test_every_command_uses_the_one_formatter():
    from fastvqa.cli import HelpFormatter

    for path, parser in walk():
        assert parser.formatter_class is HelpFormatter, path


def test_every_default_is_shown_once():
    checked = 0
    for path, parser in walk():
        for action in _defaulted_options(parser):
            text = _help_of(parser, action)
            where = f"fastvqa {' '.join(path)} {action.option_strings[-1]}: {text}"
            assert f"(default: {action.default})" in text, where
            # No hand-written copy beside argparse's own.
            assert text.count("default") == 1, where
            checked += 1
    assert checked > 50  # every eval/baseline/demo/distractors option with a default


def test_help_shows_defaults_in_the_output(capsys):
    with pytest.raises(SystemExit):
        main(["distractors", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for text in ("distractors per question (default: 3)", "(default: 0.8)",
                 "(default: tfidf)"):
        assert text in out


# ------------------------------------------------------ --seed where random

# Read from the code: the commands that draw random numbers (random.Random or
# np.random.default_rng seeded by --seed). Every other baseline is
# deterministic: full-video and centre-half are fixed spans, answer-prior,
# qtype-frequent and common count answers (ties broken by order), q-retrieval
# and closest take the nearest training question (ties: the earliest).
RANDOM_COMMANDS = {
    ("baseline", "deveqa", "random-answer"), ("baseline", "deveqa", "random-span"),
    ("baseline", "nextgqa", "random-answer"), ("baseline", "nextgqa", "random-span"),
    ("baseline", "dvd", "qtype-random"),
    ("baseline", "qvhighlights", "random"),
    ("baseline", "sokbench", "random-answer"),
    ("baseline", "wildqa", "evidence", "random"), ("baseline", "wildqa", "qa", "random"),
    ("demo",),  # the synthetic benchmark's scenes, questions and options
    ("distractors",),  # the option shuffles of --options
    ("generate", "dvd"), ("generate", "events"),  # the builders' draws
    ("audit",),  # the shuffled assignment of videos to cross-validation folds
}


def test_seed_exactly_where_something_is_random():
    with_seed = {path for path, parser in walk()
                 if any("--seed" in a.option_strings for a in parser._actions)}
    assert with_seed == RANDOM_COMMANDS


def test_a_deterministic_baseline_refuses_seed(tmp_path, capsys):
    line = _argparse_error(capsys, ["baseline", "qvhighlights", "full-video", "--gt", "g",
                                    "--out", str(tmp_path / "o.json"), "--seed", "1"])
    assert "unrecognized arguments: --seed 1" in line


# ------------------------------------------------------ --format: what is written

def test_format_always_means_the_output_format():
    """``--format`` names what a command writes (``decode``: npz, png, jpg),
    never how an input is read: ``duplicates`` reads a benchmark's file with
    ``--benchmark`` (0.1: ``--format``)."""
    with_format = {}
    for path, parser in walk():
        for action in parser._actions:
            if "--format" in action.option_strings:
                with_format[path] = action
    assert set(with_format) == {("decode",)}
    action = with_format[("decode",)]
    assert tuple(action.choices) == ("npz", "png", "jpg")
    assert action.help.startswith("output format of --out")


def test_duplicates_format_is_gone(capsys, tmp_path):
    line = _argparse_error(capsys, ["duplicates", str(tmp_path / "q.txt"), "--format", "dvd"])
    assert "unrecognized arguments: --format dvd" in line


# ------------------------------------------------------ numbers: shared converters

def test_no_plain_int_or_float_option():
    """Every numeric option goes through a converter of fastvqa._argtypes (or
    a local one of the same kind), never a bare ``type=int``/``float`` that
    takes 0, negatives or NaN where they mean nothing."""
    for path, parser in walk():
        for action in parser._actions:
            assert action.type not in (int, float), (path, action.option_strings)


def _p(name):
    return str(Path("/nonexistent") / name)


@pytest.mark.parametrize("argv, option, bad", [
    (["index", "search", _p("ix"), "--query", "q"], "-k", "0"),
    (["distractors", "--benchmark", "wildqa", "--gt", _p("g")], "-k", "0"),
    (["distractors", "--benchmark", "wildqa", "--gt", _p("g")], "-k", "-3"),
    (["distractors", "--benchmark", "wildqa", "--gt", _p("g")], "--neighbours", "0"),
    (["distractors", "--benchmark", "wildqa", "--gt", _p("g")], "--options", "1"),
    (["distractors", "--benchmark", "wildqa", "--gt", _p("g")], "--seed", "-1"),
    (["distractors", "--benchmark", "wildqa", "--gt", _p("g")], "--tau", "nan"),
    (["distractors", "--benchmark", "wildqa", "--gt", _p("g")], "--diversity", "1.5"),
    (["duplicates", _p("q.txt")], "--threshold", "0"),
    (["duplicates", _p("q.txt")], "--threshold", "inf"),
    (["decode", _p("v.mp4"), "--sampler", "uniform:2", "--out", _p("o.npz")], "--workers", "0"),
    (["eval", "qvhighlights", "--gt", _p("g"), "--pred", _p("p")], "--max-pred-windows", "-1"),
    (["eval", "nextgqa", "--gt", _p("g"), "--pred", _p("p")], "--decimals", "21"),
    (["eval", "sokbench", "--gt", _p("g"), "--pred", _p("p")], "--index-base", "2"),
    (["eval", "wildqa", "evidence", "--gt", _p("g"), "--pred", _p("p")], "--pad-to-batch", "0"),
    (["baseline", "wildqa", "evidence", "random", "--gt", _p("g"), "--out", _p("o")],
     "--spans", "0"),
    (["baseline", "sokbench", "random-answer", "--gt", _p("g"), "--out", _p("o")],
     "--seed", "x"),
    (["demo", "--out", _p("d")], "--videos", "0"),
    (["demo", "--out", _p("d")], "--fps", "-1"),
])
def test_bad_numbers_are_one_line_naming_the_option(capsys, argv, option, bad):
    line = _argparse_error(capsys, [*argv, option, bad])
    assert f"argument {option}" in line or f"/{option}:" in line, line
    assert bad in line, line
