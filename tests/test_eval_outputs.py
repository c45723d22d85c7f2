# SPDX-License-Identifier: Apache-2.0
"""Reproducible outputs: the ``--json`` run record (version, mode, command,
input sha256s) and the per-question rows (prediction, ground truth, question
type), each checked against an independent computation (hashlib on the
file, the version in pyproject.toml, the raw input files)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import pytest

from fastvqa.cli import main
from tests.test_eval_trust import CSV, DEVEQA, GSUB, QVH, SOKBENCH, files  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def _json(capsys, argv: list) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_json_run_record_nextgqa(files, capsys):
    gt = files["nextgqa"]
    pred = _write(files["tmp"] / "pred.json", {"v1_0": [0, 20], "v1_1": [5, 10], "v2_0": [0, 40]})
    qa = _write(files["tmp"] / "qa.json", {k: {"prediction": 0, "answer": 1}
                                           for k in ("v1_0", "v1_1", "v2_0")})
    argv = ["eval", "nextgqa", "--gt", str(gt), "--pred", str(pred), "--qa", str(qa), "--json"]
    doc = _json(capsys, argv)
    import fastvqa

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert doc["fastvqa_version"] == fastvqa.__version__
    if fastvqa.__version__:  # a development build may not know its version ("")
        assert doc["fastvqa_version"] == version
    assert doc["mode"] == "nextgqa"
    assert doc["command"] == ["fastvqa", *argv]
    assert doc["inputs"]["pred"] == {"path": str(pred), "sha256": _sha(pred)}
    assert doc["inputs"]["qa"] == {"path": str(qa), "sha256": _sha(qa)}
    # A folder: one sha256 per file in it, by relative path, sorted.
    want = {p.name: _sha(p) for p in sorted(gt.iterdir())}
    assert doc["inputs"]["gt"] == {"path": str(gt), "files": want}
    assert list(doc["inputs"]["gt"]["files"]) == ["gsub_test.json", "test.csv"]
    # No timestamp: the same run gives the same document.
    assert _json(capsys, argv) == doc


def test_json_run_record_mode_and_optional_inputs(files, capsys):
    gt = files["deveqa"]
    pred = _write(files["tmp"] / "pred.json", {"v1_a": [0, 10], "v2_b": [2, 6]})
    argv = ["eval", "deveqa", "--gt", str(gt), "--pred", str(pred), "--mode", "deveqa-repo",
            "--json"]
    doc = _json(capsys, argv)
    assert doc["mode"] == "deveqa-repo"
    assert set(doc["inputs"]) == {"gt", "pred"}  # no --qa, no --durations
    assert doc["inputs"]["gt"]["sha256"] == _sha(gt)
    # The folder form nests: a sub-folder's files are "sub/name".
    sub = files["sokbench"] / "more"
    sub.mkdir()
    _write(sub / "extra.json", SOKBENCH)
    doc = _json(capsys, ["eval", "sokbench", "--gt", str(files["sokbench"]), "--pred",
                         str(_write(files["tmp"] / "s.json", [0, 2])), "--json"])
    assert doc["inputs"]["gt"]["files"] == {
        "more/extra.json": _sha(sub / "extra.json"),
        "questions.json": _sha(files["sokbench"] / "questions.json")}
    assert doc["mode"] is None  # sokbench has one set of rules


def test_per_question_rows_nextgqa_carry_prediction_truth_and_type(files, capsys):
    gt = files["nextgqa"]
    spans = {"v1_0": [0, 20], "v2_0": [1.5, 40]}  # v1_1 has no prediction
    pred = _write(files["tmp"] / "pred.json", spans)
    qa = _write(files["tmp"] / "qa.json", {"v1_0": {"prediction": 3, "answer": 1},
                                           "v2_0": {"prediction": 0, "answer": 0}})
    out = files["tmp"] / "pq.jsonl"
    assert main(["eval", "nextgqa", "--gt", str(gt), "--pred", str(pred), "--qa", str(qa),
                 "--per-question", str(out)]) == 0
    types = {f"{line.split(',')[0]}_{line.split(',')[6]}": line.split(",")[7]
             for line in CSV.splitlines()[1:]}  # video_id, qid, type columns
    rows = {row["key"]: row for row in _rows(out)}
    assert set(rows) == {"v1_0", "v1_1", "v2_0"}
    for key, row in rows.items():
        vid, qid = key.split("_")
        assert row["ground_truth"] == GSUB[vid]["location"][qid]
        assert row["prediction"] == spans.get(key)
        assert row["question_type"] == types[key]
    assert (rows["v1_0"]["predicted_answer"], rows["v1_0"]["answer"]) == (3, 1)
    assert rows["v1_1"]["predicted_answer"] is None


def test_per_question_rows_other_benchmarks(files, capsys):
    tmp = files["tmp"]
    # SOK-Bench: the option index predicted, the right_choice, the question type
    out = tmp / "sok.jsonl"
    assert main(["eval", "sokbench", "--gt", str(files["sokbench"]), "--pred",
                 str(_write(tmp / "s.json", [1, 2])), "--per-question", str(out)]) == 0
    rows = _rows(out)
    raw = SOKBENCH["counterfactual"]
    assert [r["prediction"] for r in rows] == [1, 2]
    assert [r["ground_truth"] for r in rows] == [q["answer"]["right_choice"] for q in raw]
    assert [r["question_type"] for r in rows] == ["counterfactual"] * 2
    # WildQA answers: the answer string, the Phase-1 answer, the question type
    out = tmp / "wq.jsonl"
    raw = json.loads((files["wildqa"] / "test.json").read_text())
    assert main(["eval", "wildqa", "qa", "--gt", str(files["wildqa"]), "--pred",
                 str(_write(tmp / "a.json", ["Yes", "No"])), "--per-question", str(out)]) == 0
    rows = _rows(out)
    assert [r["prediction"] for r in rows] == ["Yes", "No"]
    assert [r["ground_truth"] for r in rows] == [q["answer"] for q in raw]
    assert [r["question_type"] for r in rows] == [q["question_type"] for q in raw]
    # QVHighlights: the windows, the relevant windows, no question type
    out = tmp / "qvh-rows.jsonl"
    windows = [[[0, 8, 0.9]], [[30, 90, 0.5], [0, 10, 0.1]]]
    sub = [{"qid": q["qid"], "pred_relevant_windows": w} for q, w in zip(QVH, windows)]
    assert main(["eval", "qvhighlights", "--gt", str(files["qvhighlights"]), "--pred",
                 str(_write(tmp / "sub.json", sub)), "--per-question", str(out)]) == 0
    rows = _rows(out)
    assert [r["prediction"] for r in rows] == windows
    assert [r["ground_truth"] for r in rows] == [q["relevant_windows"] for q in QVH]
    assert all("question_type" not in r for r in rows)


def test_per_question_rows_dvd(shared_data, tmp_path):
    gt = shared_data / "dvd" / "CLEVR_new_000002.json"
    pred = _write(tmp_path / "p.json", ["0"] * 10)
    out = tmp_path / "dvd.jsonl"
    assert main(["eval", "dvd", "--gt", str(gt), "--pred", str(pred),
                 "--per-question", str(out)]) == 0
    rows = _rows(out)
    raw = json.loads(gt.read_text())
    turns = [turn for dialog in raw["dialogs"] for turn in dialog["dialog"]] \
        if isinstance(raw, dict) and "dialogs" in raw else None
    assert [r["prediction"] for r in rows] == ["0"] * 10
    assert sum(r["ground_truth"] == "0" for r in rows) == 3  # Acc 30 (test_eval_dvd_sokbench)
    assert all(r["question_type"] for r in rows)
    if turns is not None:
        assert [r["ground_truth"] for r in rows] == [str(t["answer"]) for t in turns]
