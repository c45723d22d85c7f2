# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval dvd|sokbench`` and ``fastvqa baseline dvd|sokbench``: round trips."""

from __future__ import annotations

import json

import pytest

from fastvqa.cli import main


def _eval_json(capsys, *argv):
    capsys.readouterr()
    assert main(["eval", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _baseline(tmp_path, *argv, name="pred.json"):
    out = tmp_path / name
    assert main(["baseline", *argv, "--out", str(out)]) == 0
    return out, json.loads(out.read_text())


# --- DVD ------------------------------------------------------------------------------

@pytest.fixture
def dvd_file(shared_data):
    return str(shared_data / "dvd" / "CLEVR_new_000002.json")


def test_dvd_answer_prior_round_trip(dvd_file, tmp_path, capsys):
    out, preds = _baseline(tmp_path, "dvd", "answer-prior", "--gt", dvd_file)
    # The file's answers: "0" three times, "False"/"True" twice, three singletons.
    assert set(preds.values()) == {"0"} and len(preds) == 10
    result = _eval_json(capsys, "dvd", "--gt", dvd_file, "--pred", str(out))
    assert result["benchmark"] == "dvd"
    assert result["metrics"]["Acc"] == 30.0
    assert result["metrics"]["Acc/type=object_count"] == 100.0
    assert result["metrics"]["Acc/type=compare_action_freq"] == 0.0


def test_dvd_qtype_frequent_round_trip(dvd_file, tmp_path, capsys):
    # By sub-type: every sub-type has one answer except compare-seq count
    # (1 and 2; the tie goes to "1", first in the official answer order) -> 9/10.
    out, preds = _baseline(tmp_path, "dvd", "qtype-frequent", "--gt", dvd_file)
    assert preds["all_actions-CLEVR_new_000002_0_1"] == "1"
    assert _eval_json(capsys, "dvd", "--gt", dvd_file, "--pred", str(out))["metrics"]["Acc"] == 90.0
    # By type: compare_action_freq (False, True, True) -> "True": 1 of 3 lost more -> 8/10.
    out, _ = _baseline(tmp_path, "dvd", "qtype-frequent", "--by", "type", "--gt", dvd_file,
                       name="by_type.json")
    metrics = _eval_json(capsys, "dvd", "--gt", dvd_file, "--pred", str(out))["metrics"]
    assert metrics["Acc"] == 80.0
    assert metrics["Acc/type=compare_action_freq"] == pytest.approx(200.0 / 3.0)


def test_dvd_qtype_random_is_seeded_and_stays_in_each_answer_space(dvd_file, tmp_path, capsys):
    from fastvqa.data import load_dvd
    from fastvqa.metrics.dialogue import answer_subspace

    records = {r.key: r for r in load_dvd(dvd_file)}
    _, a = _baseline(tmp_path, "dvd", "qtype-random", "--gt", dvd_file, "--seed", "3", name="a")
    _, b = _baseline(tmp_path, "dvd", "qtype-random", "--gt", dvd_file, "--seed", "3", name="b")
    assert a == b and set(a) == set(records)
    for key, answer in a.items():
        assert answer in answer_subspace(records[key].extra["question_subtype"])
    _, t = _baseline(tmp_path, "dvd", "qtype-random", "--by", "type", "--gt", dvd_file, name="t")
    for key, answer in t.items():
        assert answer in answer_subspace(records[key].extra["question_type"])
    # Observed answer sets: every sub-type but compare-seq count has a single
    # observed answer, which is then always right.
    out, o = _baseline(tmp_path, "dvd", "qtype-random", "--answer-set", "observed",
                       "--gt", dvd_file, name="o.json")
    singles = [k for k, r in records.items()
               if r.extra["question_subtype"] != "compare_action_seq.count"]
    assert all(o[k] == records[k].answer for k in singles)
    assert _eval_json(capsys, "dvd", "--gt", dvd_file, "--pred", str(out))["metrics"]["Acc"] >= 80.0


def test_dvd_answer_prior_from_a_training_file(dvd_file, tmp_path, capsys):
    turn = {"split": "all_actions", "image": "CLEVR_new_000777", "question": "is there a cube ?",
            "answer": True, "template_filename": "zero_hop_1.json",
            "template": {"text": ["Is there a <S>?"], "interval_type": "none",
                         "used_periods": [], "cutoff": None},
            "turn_dependencies": {"temporal": "none", "object": "none", "attribute": "none",
                                  "spatial": "none"}}
    train = tmp_path / "train.json"
    train.write_text(json.dumps([[turn, turn, dict(turn, answer=0)]]))
    out, preds = _baseline(tmp_path, "dvd", "answer-prior", "--gt", dvd_file,
                           "--train", str(train))
    assert set(preds.values()) == {"True"}
    # "True" answers turns 5 and 6 of the sample.
    assert _eval_json(capsys, "dvd", "--gt", dvd_file, "--pred", str(out))["metrics"]["Acc"] == 20.0


def test_dvd_list_predictions_per_question_and_plot(dvd_file, tmp_path, capsys):
    from fastvqa.data import load_dvd

    pred = tmp_path / "oracle.json"
    pred.write_text(json.dumps([r.extra["answer_raw"] for r in load_dvd(dvd_file)]))
    pq, png = tmp_path / "pq.jsonl", tmp_path / "acc.png"
    assert main(["eval", "dvd", "--gt", dvd_file, "--pred", str(pred),
                 "--per-question", str(pq), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "dvd" and out.splitlines()[1].split()[:2] == ["Acc", "100.0"]
    rows = [json.loads(line) for line in pq.read_text().splitlines()]
    assert len(rows) == 10 and all(row["correct"] for row in rows)
    assert rows[7]["transfer"] == "spatial" and rows[7]["prior_correct"] is True
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Nothing the user has is overwritten.
    before = png.read_bytes()
    assert main(["eval", "dvd", "--gt", dvd_file, "--pred", str(pred), "--plot", str(png)]) == 2
    assert png.read_bytes() == before


def test_dvd_extra_breakdowns_on_request(dvd_file, tmp_path, capsys):
    from fastvqa.data import load_dvd

    pred = tmp_path / "pred.json"
    # Right on turns 1, 3, 4, 5, 7, 9 (the file's answers: 1, 2, False, False, True,
    # True, 0, 0, 0, flying,rotating).
    pred.write_text(json.dumps([1, "1", False, "False", "True", "False", "0", "1", "0",
                                "flying"]))
    default = _eval_json(capsys, "dvd", "--gt", dvd_file, "--pred", str(pred))["metrics"]
    assert not any(k.startswith(("Acc/contained", "Acc/length", "Acc/relation"))
                   for k in default)
    full = _eval_json(capsys, "dvd", "--gt", dvd_file, "--pred", str(pred), "--by", "all",
                      "--all-lengths", "--all-relations")["metrics"]
    assert {k: v for k, v in full.items() if k in default} == default  # the same rows first
    assert full["Acc/contained=1"] == pytest.approx(200 / 3)  # turns 3, 4 right, 6 wrong
    assert full["Acc/length=90-100%"] == 50.0 and full["Acc/relation=during"] == 100.0
    some = _eval_json(capsys, "dvd", "--gt", dvd_file, "--pred", str(pred), "--by",
                      "contained")["metrics"]
    assert set(some) - set(default) == {"Acc/contained=0", "Acc/contained=1"}
    assert len(load_dvd(dvd_file)) == 10
    with pytest.raises(SystemExit):
        main(["eval", "dvd", "--gt", dvd_file, "--pred", str(pred), "--by", "size"])
    assert "expected a comma-separated list" in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON"),
    ('"1"', "expected a JSON object"),
    ('{"x_0_0": "1"}', "no prediction key matches"),
    ('["1", "2"]', "2 predictions for 10 records"),
    ('{"all_actions-CLEVR_new_000002_0_0": {"a": 1}}', "expected an answer string, got dict"),
])
def test_dvd_bad_prediction_files(dvd_file, tmp_path, capsys, content, message):
    pred = tmp_path / "bad_pred.json"
    pred.write_text(content)
    assert main(["eval", "dvd", "--gt", dvd_file, "--pred", str(pred)]) == 2
    err = capsys.readouterr().err
    assert "bad_pred.json" in err and message in err


# --- SOK-Bench --------------------------------------------------------------------------

@pytest.fixture
def sok_file(shared_data):
    return str(shared_data / "sokbench" / "example_question.json")


def test_sokbench_random_answer_round_trip(sok_file, tmp_path, capsys):
    out, preds = _baseline(tmp_path, "sokbench", "random-answer", "--gt", sok_file, "--seed", "5")
    _, again = _baseline(tmp_path, "sokbench", "random-answer", "--gt", sok_file, "--seed", "5",
                         name="again.json")
    # Keyed as `eval sokbench` keys its per-question rows: <video>_<question_id>.
    key = "Nlo-leQLQqs_0"
    assert preds == again and list(preds) == [key] and preds[key] in range(4)
    result = _eval_json(capsys, "sokbench", "--gt", sok_file, "--pred", str(out))
    assert result["benchmark"] == "sokbench"
    assert result["metrics"]["Acc"] == (100.0 if preds[key] == 3 else 0.0)
    assert result["info"]["index_outputs"] == 1


@pytest.mark.parametrize("pred, argv, acc, method", [
    ({"0": "(D)"}, [], 100.0, "parsed"),
    ({"Nlo-leQLQqs_0": "(A)"}, [], 0.0, "parsed"),
    (["3"], [], 100.0, "parsed"),
    ({"0": "4"}, ["--index-base", "1"], 100.0, "parsed"),
    ({"0": "The soup would lack the savory and rich taste that something broth brings to the "
           "dish."}, [], 100.0, "bleu"),
])
def test_sokbench_free_text_predictions(sok_file, tmp_path, capsys, pred, argv, acc, method):
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(pred))
    pq = tmp_path / "pq.jsonl"
    result = _eval_json(capsys, "sokbench", "--gt", sok_file, "--pred", str(path),
                        "--per-question", str(pq), *argv)
    assert result["metrics"]["Acc"] == acc
    assert json.loads(pq.read_text())["method"] == method


def test_sokbench_only_null_predictions_is_an_error(sok_file, tmp_path, capsys):
    # A null is a missing prediction (scored wrong); a file of nothing but
    # nulls is a score over nothing: refused, not a table of 0.
    path = tmp_path / "pred.json"
    path.write_text(json.dumps({"0": None}))
    capsys.readouterr()
    assert main(["eval", "sokbench", "--gt", sok_file, "--pred", str(path)]) == 2
    assert "none of the 1 questions has a prediction" in capsys.readouterr().err


def test_sokbench_bleu_smoothing_option_and_plot(sok_file, tmp_path, capsys):
    path = tmp_path / "pred.json"
    path.write_text(json.dumps({"0": "lack the texture"}))
    png = tmp_path / "sok.png"
    result = _eval_json(capsys, "sokbench", "--gt", sok_file, "--pred", str(path),
                        "--bleu-smoothing", "method1", "--plot", str(png))
    assert result["info"]["bleu"]["smoothing"] == "method1"
    assert result["info"]["bleu_fallbacks"] == 1
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("content, message", [
    ('{"0": true}', "expected an option index (integer) or text, got true"),
    ('{"0": 2.0}', "got 2.0"),
    ('{"q9": 1}', "no prediction key matches"),
    ("[1, 2]", "2 predictions for 1 records"),
    ("7", "expected a JSON object"),
])
def test_sokbench_bad_prediction_files(sok_file, tmp_path, capsys, content, message):
    pred = tmp_path / "bad_pred.json"
    pred.write_text(content)
    assert main(["eval", "sokbench", "--gt", sok_file, "--pred", str(pred)]) == 2
    err = capsys.readouterr().err
    assert "bad_pred.json" in err and message in err


def test_bad_ground_truth_is_a_clean_error(tmp_path, capsys):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps({"question": "q", "video": "v", "answer": {"choices": ["a"],
                                                                         "right_choice": 1}}))
    pred = tmp_path / "pred.json"
    pred.write_text("{}")
    assert main(["eval", "sokbench", "--gt", str(gt), "--pred", str(pred)]) == 2
    err = capsys.readouterr().err
    assert "gt.json: record '0': field 'answer.right_choice'" in err
