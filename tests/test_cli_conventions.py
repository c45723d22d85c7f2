# SPDX-License-Identifier: Apache-2.0
"""One set of conventions for every ``fastvqa`` command (issue 12, "CLI
conventions"): benchmark names from one list, every default shown in
``--help``, ``--seed`` only where something is random, ``--format`` only for
what a command writes, and numbers checked by the shared converters."""

from __future__ import annotations

import argparse

import pytest

from fastvqa._argtypes import BENCHMARK_NAMES
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
