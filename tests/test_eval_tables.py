# SPDX-License-Identifier: Apache-2.0
"""Tables as Markdown, LaTeX and CSV (``MetricResult.format_table(fmt=...)``,
``fastvqa eval --table-format`` / ``--table FILE``), and ``--per-question``
writing the format its file name says, or refusing before any work."""

from __future__ import annotations

import csv
import io
import json
import math
import tomllib
from pathlib import Path

import pytest

from fastvqa.cli import main
from fastvqa.metrics import MetricResult
from tests.test_eval_trust import files  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[1]


def _cells(line: str) -> list[str]:
    """The cells of one Markdown pipe-table row."""
    assert line.startswith("|") and line.endswith("|"), line
    return [c.strip() for c in line[1:-1].split("|")]


def _result() -> MetricResult:
    return MetricResult("demo", {"mIoU": 21.14159, "IoU@0.5": 8.6749, "Acc_x": math.nan},
                        info={"mode": "nextgqa", "counts": {"Acc_x": 0}})


def test_markdown_table():
    lines = _result().format_table(decimals=2, fmt="markdown").splitlines()
    assert len(lines) == 3
    assert _cells(lines[0]) == ["benchmark", "mIoU", "IoU@0.5", "Acc_x"]
    assert set(lines[1]) <= set("|-: ")  # the header rule
    assert _cells(lines[2]) == ["demo", "21.14", "8.67", "n/a (n=0)"]


def test_latex_table_is_booktabs_with_escaped_names():
    text = _result().format_table(decimals=1, fmt="latex")
    lines = [ln.strip() for ln in text.splitlines()]
    assert lines[0] == r"\begin{tabular}{lrrr}" and lines[-1] == r"\end{tabular}"
    assert lines[1] == r"\toprule" and lines[3] == r"\midrule" and lines[5] == r"\bottomrule"
    head = [c.strip() for c in lines[2].removesuffix(r"\\").split("&")]
    row = [c.strip() for c in lines[4].removesuffix(r"\\").split("&")]
    assert head == ["benchmark", "mIoU", "IoU@0.5", r"Acc\_x"]  # _ escaped for LaTeX
    assert row == ["demo", "21.1", "8.7", "n/a (n=0)"]


def test_csv_table_and_plain_unchanged():
    text = _result().format_table(decimals=3, fmt="csv")
    assert list(csv.reader(io.StringIO(text))) == [["benchmark", "mIoU", "IoU@0.5", "Acc_x"],
                                                   ["demo", "21.142", "8.675", ""]]
    assert _result().format_table(decimals=1) == _result().format_table(1, "plain")
    assert _result().format_table().splitlines() == [
        "demo", "mIoU  IoU@0.5      Acc_x", "21.1      8.7  n/a (n=0)", "mode: nextgqa"]
    with pytest.raises(ValueError, match="fmt must be one of plain, markdown, latex, csv"):
        _result().format_table(fmt="html")


def test_tabulate_is_a_dependency():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.replace(" ", "").startswith("tabulate>=") for d in deps), deps


def _nextgqa(files) -> list[str]:
    pred = files["tmp"] / "pred.json"
    pred.write_text(json.dumps({"v1_0": [0, 20], "v1_1": [0, 20], "v2_0": [0, 40]}))
    return ["eval", "nextgqa", "--gt", str(files["nextgqa"]), "--pred", str(pred)]


# IoU = IoP = 1/2, 1/2, 1: means 66.7; every one >= 0.3 and >= 0.5 (the official >=)
WANT = ["nextgqa", "66.7", "100.0", "100.0", "66.7", "100.0", "100.0"]


@pytest.mark.parametrize("fmt", ["markdown", "latex", "csv"])
def test_cli_table_format_and_table_file(files, capsys, fmt):
    """IoP of [0, 20] on [0, 10] is 1/2, on [10, 20] 1/2; [0, 40] on itself 1."""
    argv = _nextgqa(files)
    capsys.readouterr()
    assert main([*argv, "--table-format", fmt]) == 0
    printed = capsys.readouterr().out.rstrip("\n")
    suffix = {"markdown": ".md", "latex": ".tex", "csv": ".csv"}[fmt]
    table = files["tmp"] / f"table{suffix}"
    assert main([*argv, "--table", str(table)]) == 0  # the format from the suffix
    assert table.read_text() == printed + "\n"
    if fmt == "markdown":
        rows = [_cells(ln) for ln in printed.splitlines()]
        assert rows[0][1:] == ["mIoP", "IoP@0.3", "IoP@0.5", "mIoU", "IoU@0.3", "IoU@0.5"]
        assert rows[2] == WANT
    elif fmt == "csv":
        assert list(csv.reader(io.StringIO(printed)))[1] == WANT
    else:
        row = printed.splitlines()[4].strip().removesuffix(r"\\")
        assert [c.strip() for c in row.split("&")] == WANT


def test_cli_plain_table_file_is_the_printed_table(files, capsys):
    argv = _nextgqa(files)
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    table = files["tmp"] / "t.TXT"
    assert main([*argv, "--table", str(table)]) == 0
    assert table.read_text() == printed


def _refused(capsys, argv, needle):
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # refused before any scoring
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], captured.err
    return lines[0]


@pytest.mark.parametrize("name", ["t.html", "t", "t.markdown"])
def test_cli_table_file_with_an_unknown_suffix_is_refused(files, capsys, name):
    line = _refused(capsys, [*_nextgqa(files), "--table", str(files["tmp"] / name)],
                    "a table file ends in .txt, .md, .tex, .csv")
    assert not (files["tmp"] / name).exists() and name in line


def test_cli_json_and_table_format_conflict(files, capsys):
    line = _refused(capsys, [*_nextgqa(files), "--json", "--table-format", "latex"],
                    "--table-format formats the printed table")
    assert "--json prints JSON instead" in line


@pytest.mark.parametrize("suffix", [".csv", ".CSV", ".json", ".jsonl", ".md"])
def test_per_question_format_by_suffix(files, capsys, suffix):
    out = files["tmp"] / f"pq{suffix}"
    assert main([*_nextgqa(files), "--per-question", str(out)]) == 0
    text = out.read_text()
    keys = ["v1_0", "v1_1", "v2_0"]
    if suffix.lower() == ".csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        assert [r["key"] for r in rows] == keys and rows[0]["IoU"] == "0.5"
        assert json.loads(rows[0]["prediction"]) == [0, 20]  # a list as JSON text
    elif suffix == ".json":
        rows = json.loads(text)
        assert isinstance(rows, list) and [r["key"] for r in rows] == keys
        assert rows[2]["IoU"] == 1.0
    elif suffix == ".jsonl":
        rows = [json.loads(line) for line in text.splitlines()]
        assert [r["key"] for r in rows] == keys and rows[0]["ground_truth"] == [[0, 10]]
    else:
        lines = text.splitlines()
        head = _cells(lines[0])
        rows = [dict(zip(head, _cells(ln))) for ln in lines[2:]]
        assert [r["key"] for r in rows] == keys and rows[2]["IoU"] == "1.0"


@pytest.mark.parametrize("name", ["pq.txt", "pq", "pq.parquet"])
def test_per_question_unknown_suffix_is_refused(files, capsys, name):
    line = _refused(capsys, [*_nextgqa(files), "--per-question", str(files["tmp"] / name)],
                    "a per-question file ends in .csv, .json, .jsonl, .md")
    assert not (files["tmp"] / name).exists() and name in line


def test_write_per_question_api_formats(tmp_path):
    r = MetricResult("demo", {"m": 1.0}, {"key": ["a", "b"], "IoU": [0.5, math.nan]})
    r.write_per_question(tmp_path / "rows.data", fmt="json")  # fmt wins over the suffix
    assert json.loads((tmp_path / "rows.data").read_text()) == [{"key": "a", "IoU": 0.5},
                                                                {"key": "b", "IoU": None}]
    with pytest.raises(ValueError, match="fmt must be one of csv, json, jsonl, markdown"):
        r.write_per_question(tmp_path / "x.csv", fmt="xlsx")
    with pytest.raises(ValueError, match="a per-question file ends in"):
        r.write_per_question(tmp_path / "x.txt")
    assert not (tmp_path / "x.txt").exists() and not (tmp_path / "x.csv").exists()
