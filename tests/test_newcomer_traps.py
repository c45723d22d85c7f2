# SPDX-License-Identifier: Apache-2.0
"""The mistakes a new user makes first (issue 29, "newcomer traps"): each ends
in a warning or a one-line error that names the likely cause, never in a
silent wrong number or a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fastvqa.cli import main
from tests.test_cli_errors import one_line_error

# ------------------------------------------------------------------ fixtures

# Two videos of 40 s and 60 s; gold spans in seconds.
GSUB = {"vA": {"duration": 40, "fps": 30, "location": {"0": [[4.0, 20.0]], "1": [[10.0, 30.0]]}},
        "vB": {"duration": 60, "fps": 30, "location": {"0": [[30.0, 60.0]]}}}
CSV_HEADER = "video_id,frame_count,width,height,question,answer,qid,type,a0,a1,a2,a3,a4\n"
CSV_ROWS = ["vA,1200,320,240,what first,x,0,TN,x,y,z,u,v\n",
            "vA,1200,320,240,what next,y,1,TC,x,y,z,u,v\n",
            "vB,1800,320,240,why,z,0,CW,x,y,z,u,v\n"]
# Fractions of each video: [0.1, 0.5] of 40 s is [4, 20] s (the gold span).
FRACTIONS = {"vA_0": [0.1, 0.5], "vA_1": [0.25, 0.75], "vB_0": [0.5, 1.0]}
SECONDS = {"vA_0": [4.0, 20.0], "vA_1": [10.0, 30.0], "vB_0": [30.0, 60.0]}


def write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


@pytest.fixture()
def nextgqa_dir(tmp_path):
    folder = tmp_path / "nextgqa"
    folder.mkdir()
    write(folder / "gsub_test.json", GSUB)
    (folder / "test.csv").write_text(CSV_HEADER + "".join(CSV_ROWS))
    return folder


def wildqa_records():
    return [{"question": f"q{i}?", "answer": "yes", "evidences": [{"1": [10.0 * i, 10.0 * i + 20]}],
             "duration": 120.0, "video_id": f"w{i}", "domain": "Nature",
             "question_type": ["Why"]} for i in range(3)]


def qvh_records():
    return [{"qid": i, "query": f"q{i}", "vid": f"v{i}", "duration": 150,
             "relevant_windows": [[20 + 2 * i, 60]]} for i in range(3)]


def jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ------------------------------------------- fractions given without --normalized


def test_nextgqa_fractions_without_normalized_warn(nextgqa_dir, tmp_path, capsys):
    from fastvqa.evaluation import nextgqa

    pred = write(tmp_path / "frac.json", FRACTIONS)
    result = nextgqa.evaluate(gt=nextgqa_dir, pred=pred)
    assert any("--normalized" in w for w in result.info["warnings"]), result.info
    assert main(["eval", "nextgqa", "--gt", str(nextgqa_dir), "--pred", str(pred)]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "--normalized" in err and "[0, 1]" in err, err
    # The same spans with --normalized are the gold spans: no such warning.
    scaled = nextgqa.evaluate(gt=nextgqa_dir, pred=pred, normalized=True)
    assert scaled.metrics["mIoU"] == pytest.approx(100.0)
    assert not any("--normalized" in w for w in scaled.info.get("warnings", []))
    # Seconds: nothing to say.
    secs = nextgqa.evaluate(gt=nextgqa_dir, pred=write(tmp_path / "s.json", SECONDS))
    assert not any("--normalized" in w for w in secs.info.get("warnings", []))


def test_deveqa_fractions_without_normalized_warn(tmp_path):
    from fastvqa.evaluation import nextgqa

    gt = write(tmp_path / "deveqa.json", [
        {"qid": "1", "video_id": "vA", "question": "q", "options": ["a", "b"], "answer": 0,
         "gt_span": [4.0, 20.0], "duration": 40.0},
        {"qid": "2", "video_id": "vB", "question": "q", "options": ["a", "b"], "answer": 1,
         "gt_span": [30.0, 60.0], "duration": 60.0}])
    pred = write(tmp_path / "p.json", {"vA_1": [0.1, 0.5], "vB_2": [0.5, 1.0]})
    result = nextgqa.evaluate_deveqa(gt=gt, pred=pred)
    assert any("--normalized" in w for w in result.info["warnings"]), result.info


def test_a_one_second_video_is_no_reason_to_warn(tmp_path):
    """Spans in [0, 1] on videos no longer than 1 s are seconds as well."""
    from fastvqa.evaluation import nextgqa

    gt = write(tmp_path / "gsub.json", {"v": {"duration": 1.0, "fps": 30,
                                              "location": {"0": [[0.1, 0.5]]}}})
    result = nextgqa.evaluate(gt=gt, pred=write(tmp_path / "p.json", {"v_0": [0.1, 0.5]}))
    assert not any("--normalized" in w for w in result.info.get("warnings", []))


def test_wildqa_evidence_fractions_warn_that_spans_are_seconds(tmp_path):
    from fastvqa.evaluation import wildqa

    gt = write(tmp_path / "test.json", wildqa_records())
    pred = write(tmp_path / "p.json", [[[0.1, 0.3]], [[0.2, 0.4]], []])
    result = wildqa.evaluate_evidence(gt=gt, pred=pred)
    assert any("[0, 1]" in w and "seconds" in w for w in result.info["warnings"]), result.info
    ok = wildqa.evaluate_evidence(gt=gt, pred=write(tmp_path / "s.json",
                                                    [[[0.0, 20.0]], [[10, 30]], []]))
    assert not any("[0, 1]" in w for w in ok.info.get("warnings", []))


def test_qvhighlights_fractions_warn_that_windows_are_seconds(tmp_path):
    from fastvqa.evaluation import qvhighlights

    gt = jsonl(tmp_path / "gt.jsonl", qvh_records())
    pred = jsonl(tmp_path / "p.jsonl", [{"qid": i, "pred_relevant_windows": [[0.1, 0.4, 0.9]]}
                                        for i in range(3)])
    result = qvhighlights.evaluate(gt=gt, pred=pred)
    assert any("[0, 1]" in w and "seconds" in w for w in result.info["warnings"]), result.info


# ------------------------------------------------------- --gt and --pred swapped


def test_nextgqa_gt_and_pred_swapped(nextgqa_dir, tmp_path, capsys):
    pred = write(tmp_path / "ground.json", SECONDS)
    gsub = nextgqa_dir / "gsub_test.json"
    assert main(["eval", "nextgqa", "--gt", str(pred), "--pred", str(gsub)]) == 2
    one_line_error(capsys, "eval", "swapped", "ground.json", "gsub_test.json")


def test_wildqa_gt_and_pred_swapped(tmp_path, capsys):
    gt = write(tmp_path / "test.json", wildqa_records())
    for task, pred in (("evidence", [[[1, 2]], [], []]), ("qa", ["yes", "no", "yes"])):
        p = write(tmp_path / f"{task}.json", pred)
        assert main(["eval", "wildqa", task, "--gt", str(p), "--pred", str(gt)]) == 2
        one_line_error(capsys, "eval", "swapped")


def test_qvhighlights_gt_and_pred_swapped(tmp_path, capsys):
    gt = jsonl(tmp_path / "gt.jsonl", qvh_records())
    pred = jsonl(tmp_path / "p.jsonl", [{"qid": i, "pred_relevant_windows": [[20, 60, 0.9]]}
                                        for i in range(3)])
    assert main(["eval", "qvhighlights", "--gt", str(pred), "--pred", str(gt)]) == 2
    one_line_error(capsys, "eval", "swapped")


def test_ground_truth_given_as_both(nextgqa_dir, capsys):
    gsub = str(nextgqa_dir / "gsub_test.json")
    assert main(["eval", "nextgqa", "--gt", gsub, "--pred", gsub]) == 2
    one_line_error(capsys, "eval", "--pred", "looks like ground truth")


def test_swapped_from_python_too(nextgqa_dir, tmp_path):
    from fastvqa.errors import InputError
    from fastvqa.evaluation import evaluate

    pred = write(tmp_path / "ground.json", SECONDS)
    with pytest.raises(InputError, match="swapped"):
        evaluate("nextgqa", gt=pred, pred=nextgqa_dir / "gsub_test.json")


# ------------------------------------------------------ the likeliest wrong files


def test_nextgqa_csv_given_as_gt(nextgqa_dir, tmp_path, capsys):
    pred = write(tmp_path / "ground.json", SECONDS)
    assert main(["eval", "nextgqa", "--gt", str(nextgqa_dir / "test.csv"),
                 "--pred", str(pred)]) == 2
    one_line_error(capsys, "eval", "gsub_test.json", "folder")


def test_audit_given_only_the_grounding_file(nextgqa_dir, capsys):
    assert main(["audit", "nextgqa", "--gt", str(nextgqa_dir / "gsub_test.json")]) == 2
    one_line_error(capsys, "audit", "test.csv", "folder")


def test_an_empty_prediction_file(nextgqa_dir, tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text("\n")
    assert main(["eval", "nextgqa", "--gt", str(nextgqa_dir), "--pred", str(empty)]) == 2
    one_line_error(capsys, "eval", "empty.json", "is empty")


def test_json_lines_given_where_one_json_document_is_expected(nextgqa_dir, tmp_path, capsys):
    pred = jsonl(tmp_path / "p.jsonl", [{"vA_0": [4, 20]}, {"vA_1": [10, 30]}])
    assert main(["eval", "nextgqa", "--gt", str(nextgqa_dir), "--pred", str(pred)]) == 2
    one_line_error(capsys, "eval", "JSON Lines")


def test_one_json_document_given_where_json_lines_are_expected(tmp_path):
    from fastvqa.data.errors import DataFormatError
    from fastvqa.data.io import iter_json_lines

    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps([{"key": "a", "response": "B"}], indent=2))
    with pytest.raises(DataFormatError, match="JSON Lines"):
        list(iter_json_lines(path))


def test_dvd_predictions_for_none_of_the_questions(tmp_path, capsys):
    from fastvqa.data import load_dvd
    from tests.conftest import shared_data_dir

    data = shared_data_dir()
    if data is None:
        pytest.skip("needs the public DVD dialogue (FASTVQA_TEST_DATA)")
    gt = data / "dvd" / "CLEVR_new_000002.json"
    assert load_dvd(gt)
    pred = write(tmp_path / "p.json", {"nothing_0": "2", "nothing_1": "3"})
    assert main(["eval", "dvd", "--gt", str(gt), "--pred", str(pred)]) == 2
    one_line_error(capsys, "eval", "p.json")


# ------------------------------------------------ every loader takes the folder


def test_every_loader_takes_the_folder_as_released_and_the_file(tmp_path):
    import fastvqa.data as data

    # WildQA: <folder>/<split>.json
    wq = tmp_path / "wildqa"
    wq.mkdir()
    write(wq / "test.json", wildqa_records())
    write(wq / "dev.json", wildqa_records()[:2])
    assert len(data.load_wildqa(wq)) == 3
    assert len(data.load_wildqa(wq, split="dev")) == 2
    assert len(data.load_wildqa(wq / "dev.json")) == 2
    with pytest.raises(FileNotFoundError, match="raw_dev.json"):
        data.load_wildqa(wq, split="raw_dev")
    # NExT-GQA: <folder>/gsub_<split>.json (+ <split>.csv)
    ng = tmp_path / "nextgqa"
    ng.mkdir()
    write(ng / "gsub_test.json", GSUB)
    assert len(data.load_nextgqa(ng)) == 3 and len(data.load_nextgqa(ng / "gsub_test.json")) == 3
    # DeVE-QA: <folder>/<split>.json or .jsonl
    dv = tmp_path / "deveqa"
    dv.mkdir()
    rows = [{"qid": str(i), "video_id": "v", "question": "q", "options": ["a", "b"],
             "answer": 0, "gt_span": [1, 2], "duration": 9.0} for i in range(2)]
    jsonl(dv / "test.jsonl", rows)
    assert len(data.load_deveqa(dv)) == 2 and len(data.load_deveqa(dv / "test.jsonl")) == 2
    # QVHighlights: <folder>/highlight_<split>_release.jsonl
    qv = tmp_path / "qvh"
    qv.mkdir()
    jsonl(qv / "highlight_val_release.jsonl", qvh_records())
    assert len(data.load_qvhighlights(qv)) == 3
    assert len(data.load_qvhighlights(qv / "highlight_val_release.jsonl")) == 3
    # ActivityNet Captions: <folder>/<split>.json
    an = tmp_path / "anet"
    an.mkdir()
    write(an / "val_1.json", {"v_x": {"duration": 10.0, "timestamps": [[1, 2]],
                                      "sentences": ["a man runs"]}})
    assert len(data.load_activitynet_captions(an, split="val_1")) == 1
    assert len(data.load_activitynet_captions(an / "val_1.json")) == 1
    # SOK-Bench and DVD read every question file of a folder.
    sk = tmp_path / "sok"
    sk.mkdir()
    write(sk / "q.json", {"question": "why?", "answer": {"direct": "because", "choices":
                                                          ["a", "b"], "right_choice": 1},
                          "video": "v1"})
    assert len(data.load_sokbench(sk)) == len(data.load_sokbench(sk / "q.json")) == 1


# --------------------------------------------------------------- audit progress


def test_audit_shows_progress(capsys, monkeypatch):
    from fastvqa import _progress
    from fastvqa.audit import audit
    from fastvqa.data.record import QARecord

    records = [QARecord(video_id=f"v{i % 7}", question_id=str(i), question=f"what is {i % 3}",
                        options=["red", "blue", "green"], answer=i % 3,
                        spans=np.zeros((0, 2))) for i in range(30)]
    monkeypatch.setattr(_progress, "stderr_is_terminal", lambda: True)
    audit(records, folds_k=3)
    err = capsys.readouterr().err
    assert "audit" in err, err
    audit(records, folds_k=3, progress=False)
    assert "audit" not in capsys.readouterr().err


# ------------------------------------------------------------------ fastvqa info


def _installed_torch():
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def test_info_names_the_torch_build_and_gpu(capsys):
    # The distribution's version (importlib.metadata) is the independent
    # reference: PyPI's CUDA wheel says "2.14.1" there while torch.__version__
    # says "2.14.1+cu130", so only the release part must agree; the build
    # comes from the CPU index's "+cpu" label, or from the wheel's own CUDA.
    version = _installed_torch()
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("torch "))
    if version is None:
        assert "not installed" in line
        return
    release = version.split("+")[0]
    assert line.split()[1].split("+")[0] == release, line
    if "+cpu" in version:
        assert "(CPU build); no GPU visible to torch" in line, line
    assert main(["info", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["torch"]["version"].split("+")[0] == release
    if "+cpu" in version:
        assert doc["torch"]["build"] == "cpu" and doc["torch"]["gpu_visible"] is False
    else:
        import torch

        if torch.version.cuda:
            assert doc["torch"]["build"] == "cuda" and doc["torch"]["cuda"] == torch.version.cuda
            assert f"(CUDA {torch.version.cuda} build)" in line, line


def test_info_without_torch_never_imports_it(monkeypatch):
    from fastvqa import cli

    monkeypatch.setattr(cli, "_importable", lambda module: module != "torch")
    report = cli._torch_report()
    assert report == {"version": None, "build": None, "cuda": None, "gpu_visible": None}
    assert cli._torch_text(report) == "not installed (fastvqa[torch])"


# -------------------------------------------------------- the tests' data folder


def test_the_data_folder_comes_from_fastvqa_test_data(tmp_path, monkeypatch):
    from tests import conftest

    monkeypatch.setenv("FASTVQA_TEST_DATA", str(tmp_path))
    assert conftest.shared_data_dir() == tmp_path
    monkeypatch.setenv("FASTVQA_TEST_DATA", str(tmp_path / "absent"))
    assert conftest.shared_data_dir() is None
    assert "FASTVQA_TEST_DATA" in conftest.SHARED_DATA_SKIP
