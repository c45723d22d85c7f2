# SPDX-License-Identifier: Apache-2.0
"""The shared evaluation pieces: MetricResult, QARecord/CSR, DataFormatError, CLI plumbing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fastvqa.data import DataFormatError, QARecord, spans_to_csr
from fastvqa.metrics import MetricResult


def test_metric_result_is_a_mapping_with_full_precision():
    r = MetricResult("demo", {"mIoU": 21.1412345, "IoU@0.5": 8.68}, {"IoU": np.array([0.2, 0.4])},
                     {"mode": "nextgqa", "evaluated": 2})
    assert dict(r) == {"mIoU": 21.1412345, "IoU@0.5": 8.68}
    assert r["mIoU"] == 21.1412345 and len(r) == 2 and list(r) == ["mIoU", "IoU@0.5"]
    with pytest.raises(KeyError, match="no metric 'mAP'; available: mIoU, IoU@0.5"):
        r["mAP"]
    table = r.format_table(decimals=1)
    assert "21.1" in table and "8.7" in table and "mode: nextgqa" in table
    assert json.loads(json.dumps(r.to_dict()))["metrics"]["mIoU"] == 21.1412345


def test_metric_result_nan_becomes_null_in_json():
    r = MetricResult("demo", {"Acc@QA": math.nan})
    assert r.to_dict()["metrics"]["Acc@QA"] is None
    # A value over nothing is "n/a" in the table, never a number.
    assert r.format_table().splitlines()[-1].strip() == "n/a"


def test_per_question_files_and_no_overwrite(tmp_path):
    r = MetricResult("demo", {"mIoU": 50.0},
                     {"key": ["a_1", "b_2"], "IoU": np.array([0.5, math.nan])})
    jsonl = r.write_per_question(tmp_path / "pq.jsonl")
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert rows == [{"key": "a_1", "IoU": 0.5}, {"key": "b_2", "IoU": None}]
    csv_path = r.write_per_question(tmp_path / "pq.csv")
    assert csv_path.read_text().splitlines()[0] == "key,IoU"
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        r.write_per_question(jsonl)
    assert jsonl.read_text().count("\n") == 2  # untouched


def test_spans_to_csr_handles_empty_rows():
    flat, offsets = spans_to_csr([[[0, 1], [2, 3]], [], [[4.5, 6]]])
    assert flat.dtype == np.float64 and flat.shape == (3, 2)
    assert offsets.tolist() == [0, 2, 2, 3]
    flat, offsets = spans_to_csr([])
    assert flat.shape == (0, 2) and offsets.tolist() == [0]


def test_record_key_and_defaults():
    r = QARecord(video_id="2440175990", question_id="7")
    assert r.key == "2440175990_7" and r.spans.shape == (0, 2) and r.options == []


def test_data_format_error_names_file_record_and_field():
    err = DataFormatError("/x/gsub_test.json", "expected a number, got 'abc'", record="244",
                          field="duration")
    assert str(err) == "gsub_test.json: record '244': field 'duration': expected a number, got 'abc'"
    assert isinstance(err, ValueError)
    assert str(DataFormatError("f.json", "not JSON")) == "f.json: not JSON"


def test_cli_help_lists_commands(capsys):
    from fastvqa.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "info" in out and "eval" in out and "baseline" in out
