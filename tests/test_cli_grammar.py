# SPDX-License-Identifier: Apache-2.0
"""One grammar for every ``fastvqa`` command (issue 31, "One CLI grammar"):
the benchmark is the positional after the command word, ``--json`` is a flag
that prints JSON, files are written by ``--out FILE`` (format by suffix), and
the old spellings keep working for one release with one notice line."""

from __future__ import annotations

import argparse
import json

import pytest

from fastvqa._cli_grammar import REMOVAL
from fastvqa.cli import build_parser, main
from tests.test_eval_trust import files  # noqa: F401  (the fixture)

OLD_FLAGS = ("--benchmark", "--markdown", "--html", "--table", "--groups-out")


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def walk(parser=None, path=()):
    """(command words, parser) of every command and nested subcommand, each
    built by the lazy builders fastvqa.cli uses (build_parser builds all)."""
    parser = parser or build_parser()
    yield path, parser
    for word, child in _subparsers(parser).items():
        yield from walk(child, (*path, word))


def _visible(parser):
    return [a for a in parser._actions if a.option_strings and a.help is not argparse.SUPPRESS]


def _leaves():
    return [(path, p) for path, p in walk() if path and not _subparsers(p)]


def test_the_walk_reaches_every_nested_command():
    paths = {" ".join(path) for path, _ in walk()}
    for want in ("info", "eval nextgqa", "eval wildqa qa", "index search", "index build",
                 "store info", "store verify", "generate dvd", "generate events", "stats",
                 "audit", "distractors", "duplicates", "baseline wildqa qa"):
        assert want in paths, want


def test_no_visible_old_spelling():
    for path, parser in walk():
        for action in _visible(parser):
            for flag in OLD_FLAGS:
                assert flag not in action.option_strings, f"fastvqa {' '.join(path)}: {flag}"


def test_every_visible_json_is_a_flag():
    seen = 0
    for path, parser in walk():
        for action in _visible(parser):
            if "--json" not in action.option_strings:
                continue
            seen += 1
            where = f"fastvqa {' '.join(path)}"
            # A flag, or the flag that still takes the old FILE (never shown).
            assert action.nargs == 0 or getattr(action, "shown_as_flag", False), where
            help_text = parser.format_help()
            assert "[--json]" in " ".join(help_text.split()), where
            assert "--json JSON" not in help_text and "--json [" not in help_text, where
    assert seen >= 8


# Every leaf command that writes files, and so must have --out.
WRITERS = {"baseline", "decode", "index build", "distractors", "demo", "duplicates", "extract",
           "stats", "audit", "eval", "generate dvd", "generate events"}


def test_every_gt_takes_a_path_the_same_way():
    # --gt PATH: a file of the benchmark, or a folder (with --split); stats
    # pools several, given after one --gt or by repeating it.
    seen = 0
    for path, parser in walk():
        for action in _visible(parser):
            if "--gt" in action.option_strings:
                seen += 1
                assert action.metavar == "PATH", f"fastvqa {' '.join(path)}: --gt {action.metavar}"
                assert action.nargs in (None, "+"), f"fastvqa {' '.join(path)}: --gt nargs"
    assert seen >= 5


def test_stats_gt_can_be_repeated():
    from fastvqa.stats import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["wildqa", "--gt", "a.json", "--gt", "b.json", "c.json"])
    assert args.gt == ["a.json", "b.json", "c.json"]


def test_every_command_that_writes_files_has_out():
    for path, parser in _leaves():
        words = " ".join(path)
        if any(words == w or words.startswith(w + " ") for w in WRITERS):
            flags = {f for a in _visible(parser) for f in a.option_strings}
            assert "--out" in flags, f"fastvqa {words}"


def test_required_benchmark_shows_as_required_in_help():
    top = _subparsers(build_parser())
    for cmd in ("distractors", "stats", "audit"):
        usage = " ".join(top[cmd].format_usage().split())
        assert "[BENCHMARK]" not in usage and "[{" not in usage, usage
    usage = " ".join(top["duplicates"].format_usage().split())
    assert "[BENCHMARK] INPUT" in usage


# ------------------------------------------------------------ behaviour

def _notices(err: str) -> list[str]:
    return [line for line in err.splitlines() if REMOVAL in line]


def _one_error(capsys, argv, *needles) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    return err


def _sok(tmp_path):
    q = {"video": "x", "question": "what is it", "time_slot": [0, 10],
         "answer": {"direct": "a box", "choices": ["a", "b", "c", "d"], "right_choice": 0}}
    path = tmp_path / "sok.json"
    path.write_text(json.dumps({"type one": [q, {**q, "video": "y"}]}))
    return ["stats", "sokbench", "--gt", str(path)]


def test_stats_new_spellings(tmp_path, capsys):
    argv = _sok(tmp_path)
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["benchmark"] == "sokbench" and not _notices(err)
    assert main([*argv, "--table-format", "markdown"]) == 0
    assert capsys.readouterr().out.startswith("# sokbench")
    js, md = tmp_path / "s.json", tmp_path / "s.md"
    assert main([*argv, "--out", str(js), "--out", str(md)]) == 0
    assert not _notices(capsys.readouterr().err)
    assert json.loads(js.read_text())["benchmark"] == "sokbench"
    assert md.read_text().startswith("# sokbench")
    _one_error(capsys, [*argv, "--out", str(tmp_path / "s.html")], ".json, .md")
    _one_error(capsys, [*argv, "--out", str(js)], "refusing to overwrite")


@pytest.mark.parametrize("old, name", [("--json", "o.json"), ("--markdown", "o.md")])
def test_stats_old_spellings(tmp_path, capsys, old, name):
    argv = _sok(tmp_path)
    assert main([*argv, old, str(tmp_path / name)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("sokbench")  # the table is still printed
    assert (tmp_path / name).exists()
    suffix = name[1:]
    assert _notices(err) == [f"fastvqa stats: {old} FILE is now --out FILE (FILE ending in "
                             f"{suffix}); {REMOVAL}"]
    _one_error(capsys, [*argv, old, str(tmp_path / ("x" + name)), "--out",
                        str(tmp_path / "y.json")], f"{old} FILE is the old spelling of --out")


def test_stats_old_json_file_keeps_its_format(tmp_path, capsys):
    # The old --json FILE wrote JSON whatever the name; so it still does.
    argv = _sok(tmp_path)
    assert main([*argv, "--json", str(tmp_path / "o.txt")]) == 0
    assert json.loads((tmp_path / "o.txt").read_text())["benchmark"] == "sokbench"
    assert len(_notices(capsys.readouterr().err)) == 1


def _deveqa(tmp_path):
    from tests.test_audit import deveqa_sample

    return ["audit", "deveqa", "--gt", str(deveqa_sample(tmp_path)), "--folds", "3"]


def test_audit_spellings(tmp_path, capsys):
    argv = _deveqa(tmp_path)
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["n_questions"] == 6 and not _notices(err)
    js, page = tmp_path / "a.json", tmp_path / "a.html"
    assert main([*argv, "--out", str(js), "--out", str(page)]) == 0
    out, err = capsys.readouterr()
    assert "audit of deveqa" in out and not _notices(err)
    assert json.loads(js.read_text())["n_questions"] == 6 and "<html" in page.read_text()
    # the old spellings: still written, one notice line each
    js2, page2 = tmp_path / "b.json", tmp_path / "b.html"
    assert main([*argv, "--json", str(js2), "--html", str(page2)]) == 0
    notices = _notices(capsys.readouterr().err)
    assert notices == [
        f"fastvqa audit: --json FILE is now --out FILE (FILE ending in .json); {REMOVAL}",
        f"fastvqa audit: --html FILE is now --out FILE (FILE ending in .html); {REMOVAL}"]
    assert js2.exists() and page2.exists()
    _one_error(capsys, [*argv, "--html", str(tmp_path / "c.html"), "--out",
                        str(tmp_path / "c.json")], "--html FILE is the old spelling of --out")
    _one_error(capsys, [*argv, "--out", str(tmp_path / "c.md")], ".json, .html")


def _nextgqa(files) -> list[str]:  # noqa: F811
    pred = files["tmp"] / "pred.json"
    pred.write_text(json.dumps({"v1_0": [0, 20], "v1_1": [0, 20], "v2_0": [0, 40]}))
    return ["eval", "nextgqa", "--gt", str(files["nextgqa"]), "--pred", str(pred)]


def test_eval_out(files, capsys):  # noqa: F811
    argv = _nextgqa(files)
    md, js = files["tmp"] / "t.md", files["tmp"] / "t.json"
    assert main([*argv, "--out", str(md), "--out", str(js)]) == 0
    out, err = capsys.readouterr()
    assert not _notices(err)
    assert md.read_text().startswith("| benchmark")
    assert json.loads(js.read_text())["benchmark"]
    old = files["tmp"] / "old.tex"
    assert main([*argv, "--table", str(old)]) == 0
    assert _notices(capsys.readouterr().err) == [
        f"fastvqa eval: --table FILE is now --out FILE (FILE ending in .txt, .md, .tex or "
        f".csv); {REMOVAL}"]
    assert "\\toprule" in old.read_text()
    _one_error(capsys, [*argv, "--table", str(files["tmp"] / "a.md"), "--out",
                        str(files["tmp"] / "b.md")], "--table FILE is the old spelling")
    _one_error(capsys, [*argv, "--out", str(files["tmp"] / "a.html")], ".json, .txt")


def test_distractors_benchmark_spellings(files, capsys):  # noqa: F811
    gt = str(files["wildqa"] / "test.json")
    bank = ["--bank", str(files["wildqa"] / "dev.json"), "-k", "1"]
    assert main(["distractors", "wildqa", "--gt", gt, *bank]) == 0
    out, err = capsys.readouterr()
    new = json.loads(out)
    assert not _notices(err)
    assert main(["distractors", "--benchmark", "wildqa", "--gt", gt, *bank]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == new
    assert _notices(err) == [
        "fastvqa distractors: --benchmark NAME is now the positional BENCHMARK (fastvqa "
        f"distractors NAME ...); {REMOVAL}"]
    _one_error(capsys, ["distractors", "wildqa", "--benchmark", "wildqa", "--gt", gt],
               "the benchmark is given twice")
    _one_error(capsys, ["distractors", "--gt", gt], "name the benchmark")


def test_duplicates_spellings(files, tmp_path, capsys):  # noqa: F811
    texts = tmp_path / "q.txt"
    texts.write_text("what is it\nWhat is it?\nwho runs\n")
    assert main(["duplicates", str(texts), "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    folder = str(files["wildqa"])
    assert main(["duplicates", "wildqa", folder, "--json"]) == 0
    out, err = capsys.readouterr()
    counts = json.loads(out)
    assert counts and not _notices(err) and plain
    assert main(["duplicates", folder, "--benchmark", "wildqa", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == counts and len(_notices(err)) == 1
    groups = tmp_path / "g.json"
    assert main(["duplicates", str(texts), "--out", str(groups)]) == 0
    assert json.loads(groups.read_text())["groups"] and not _notices(capsys.readouterr().err)
    old = tmp_path / "old.json"
    assert main(["duplicates", str(texts), "--groups-out", str(old)]) == 0
    assert old.exists() and len(_notices(capsys.readouterr().err)) == 1
    _one_error(capsys, ["duplicates", "wildqa", folder, "--benchmark", "wildqa"],
               "given twice")
    _one_error(capsys, ["duplicates", str(texts), "--out", str(tmp_path / "g.csv")], ".json")
    _one_error(capsys, ["duplicates", "wildqa"], "names a benchmark")


def test_a_failed_run_prints_only_its_error(tmp_path, capsys):
    # The notice waits for success: a failing run keeps its one-line error.
    argv = _sok(tmp_path)
    taken = tmp_path / "taken.md"
    taken.write_text("mine")
    _one_error(capsys, [*argv, "--markdown", str(taken)], "refusing to overwrite")
    assert main([*argv]) == 0
    assert not _notices(capsys.readouterr().err)
