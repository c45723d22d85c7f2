# SPDX-License-Identifier: Apache-2.0
"""``fastvqa.data.load_wildqa``: the paper's dataset statistics (wildqa.md
4.6) from the real files, the long-evidence filter, and malformed files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastvqa.data import DataFormatError, QARecord, load_wildqa

# --------------------------------------------------------------------------
# Real data
# --------------------------------------------------------------------------


@pytest.fixture
def wildqa(shared_data):
    folder = shared_data / "wildqa"
    return {name: load_wildqa(folder / f"{name}.json") for name in ("dev", "test")} | {
        name: load_wildqa(folder / f"{name}.json", evidence_filter=True)
        for name in ("raw_dev", "raw_test")
    }


def ms(values):
    """Mean and population standard deviation, as the paper's tables print
    them (numpy's default ddof=0; the sample std misses several 2nd decimals)."""
    arr = np.asarray(values, dtype=np.float64)
    return round(float(arr.mean()), 2), round(float(arr.std()), 2)


def test_split_sizes(wildqa):
    # eval.md 1.1: dev 264 Q / 108 videos, test 652 Q / 261 videos.
    for name, (questions, videos) in {"dev": (264, 108), "test": (652, 261)}.items():
        records = wildqa[name]
        assert len(records) == questions
        assert len({r.video_id for r in records}) == videos
        assert all(isinstance(r, QARecord) for r in records)
        assert [r.question_id for r in records] == [str(i) for i in range(questions)]


def test_table_1_domains(wildqa):
    records = wildqa["dev"] + wildqa["test"]
    table_1 = {  # domain: (videos, questions)
        "Agriculture": (85, 109), "Human Survival": (95, 309), "Natural Disaster": (70, 187),
        "Geography": (46, 110), "Military": (73, 201),
    }
    for domain, (videos, questions) in table_1.items():
        mine = [r for r in records if r.extra["domain"] == domain]
        assert (len({r.video_id for r in mine}), len(mine)) == (videos, questions), domain
    assert (len({r.video_id for r in records}), len(records)) == (369, 916)


def test_tables_2_13_14_statistics(wildqa):
    # Answers and questions come from the released (filtered) files; the
    # Phase-2 evidence per answer needs the raw files' aligned lists, filtered.
    records = wildqa["dev"] + wildqa["test"]
    raw = wildqa["raw_dev"] + wildqa["raw_test"]
    videos: dict[str, int] = {}
    for r in records:
        videos[r.video_id] = videos.get(r.video_id, 0) + 1
    phase1_answers = [r.answer for r in records]
    phase2_answers = [a for r in records for a in r.extra["alter_answers"]]
    phase1_ev = [r.spans.shape[0] for r in raw]
    phase2_ev = [a.shape[0] for r in raw for a in r.extra["alter_spans_by_answer"]]
    phase1_len = [e - s for r in raw for s, e in r.spans]
    phase2_len = [e - s for r in raw for a in r.extra["alter_spans"] for s, e in a]

    # Table 2. The duration is averaged over questions (the paper's 71.22 ±
    # 26.47; over the 369 videos it would be 72.26 ± 27.02).
    assert ms([r.duration for r in records]) == (71.22, 26.47)
    assert ms(list(videos.values())) == (2.48, 1.38)
    assert ms([len(r.question.split()) for r in records]) == (7.09, 2.60)
    assert ms([len(r.extra["answers"]) for r in records]) == (2.22, 0.69)
    assert ms([len(a.split()) for a in phase1_answers + phase2_answers]) == (9.08, 8.15)
    assert ms(phase1_ev + phase2_ev) == (1.18, 0.80)
    assert len(phase1_len + phase2_len) == 2399
    assert ms(phase1_len + phase2_len) == (9.64, 10.96)
    # Table 13 (Phase 1).
    assert ms([len(a.split()) for a in phase1_answers]) == (8.62, 8.90)
    assert ms(phase1_ev) == (1.53, 0.76)
    assert ms(phase1_len) == (9.09, 13.45)
    # Table 14 (Phase 2): 1114 answers.
    assert len(phase2_answers) == len(phase2_ev) == 1114
    assert ms([len(r.extra["alter_answers"]) for r in records]) == (1.22, 0.69)
    assert ms([len(a.split()) for a in phase2_answers]) == (9.45, 7.46)
    assert ms(phase2_ev) == (0.89, 0.72)
    assert ms(phase2_len) == (10.43, 5.81)


def test_evidence_filter_reproduces_the_released_files(wildqa):
    # wildqa.md 4.3: the filter removed 249 test + 75 dev Phase-2 spans; after
    # it, 202 test and 61 dev questions lose the answer/evidence alignment.
    for split, removed, misaligned in (("test", 249, 202), ("dev", 75, 61)):
        released, raw = wildqa[split], wildqa[f"raw_{split}"]
        n_before = sum(len(a) for r in raw for a in r.extra["alter_evidences"])
        n_after = sum(a.shape[0] for r in raw for a in r.extra["alter_spans"])
        assert n_before - n_after == removed
        assert sum(r.extra["alter_spans_by_answer"] is None for r in released) == misaligned
        assert all(r.extra["alter_spans_by_answer"] is not None for r in raw)
        for a, b in zip(released, raw):
            assert len(a.extra["alter_spans"]) == len(b.extra["alter_spans"])
            for x, y in zip(a.extra["alter_spans"], b.extra["alter_spans"]):
                np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(a.spans, b.spans)  # Phase 1 is never filtered


def test_phase1_spans_are_kept_as_stored(wildqa, shared_data):
    # wildqa.md 4.3: 109 test + 42 dev Phase-1 spans exceed duration / 4 and
    # remain. eval.md 1.1: dev has 9 spans ending after the duration (its "24"
    # for test does not reproduce: the test file holds 30, counted from the
    # JSON below); they are kept, unclipped.
    for split, long_spans in (("test", 109), ("dev", 42)):
        records = wildqa[split]
        assert sum(int(np.sum(r.spans[:, 1] - r.spans[:, 0] > r.duration / 4))
                   for r in records) == long_spans
        with open(shared_data / "wildqa" / f"{split}.json") as f:
            raw = json.load(f)
        for r, q in zip(records, raw):
            assert r.spans.tolist() == [v for ev in q["evidences"] for v in ev.values()]
        past_end = sum(e > q["duration"] for q in raw for ev in q["evidences"]
                       for _, e in ev.values())
        assert sum(int(np.sum(r.spans[:, 1] > r.duration)) for r in records) == past_end
        if split == "dev":
            assert past_end == 9


def test_record_fields(wildqa):
    first = wildqa["test"][0]
    assert first.key == "4k-Relaxation_11-manual_0"
    assert first.question == "What kind of water features are there"
    assert first.answer == "There is a creek and a pond"
    assert first.spans.dtype == np.float64 and first.spans.tolist() == [[0.0, 6.816]]
    assert first.duration == 120.0
    assert first.extra["evidences"] == [{"0": [0.0, 6.816]}]  # raw dicts kept
    assert first.extra["domain"] == "Geography"
    assert first.extra["question_type"] == ["Existence"]
    assert first.extra["answers"][0] == first.answer
    assert len(first.extra["answers"]) == 4
    assert [a.tolist() for a in first.extra["alter_spans"]] == [[[36.096, 52.895999999999994]],
                                                                 [[0.0, 11.04]]]
    assert first.extra["evidence_filter"] is False


# --------------------------------------------------------------------------
# Synthetic files
# --------------------------------------------------------------------------


def _question(**changes):
    q = {
        "question": "Is it raining?", "answer": "Yes. ", "alter_answers": ["No", "Maybe"],
        "evidences": [{"0": [1.0, 2.5]}, {"1": [4.0, 9.0]}],
        "alter_evidences": [[[0.0, 30.0], [3.0, 4.0]], [[0.0, 40.0]]],
        "duration": 100.0, "video_id": "v1", "domain": "Military",
        "question_type": ["Existence"], "worker_id": "W",
    }
    q.update(changes)
    return q


def _write(tmp_path, data, name="test.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_synthetic_file_and_filter(tmp_path):
    path = _write(tmp_path, [_question(), _question(video_id="v2", alter_answers=[])])
    plain = load_wildqa(path)
    assert plain[0].spans.tolist() == [[1.0, 2.5], [4.0, 9.0]]
    assert plain[0].answer == "Yes. "  # as stored
    assert plain[0].extra["worker_id"] == "W"  # unknown fields kept
    assert [a.tolist() for a in plain[0].extra["alter_spans"]] == [[[0.0, 30.0], [3.0, 4.0]],
                                                                    [[0.0, 40.0]]]
    filtered = load_wildqa(path, evidence_filter=True)
    # 30 > 100 / 4 and 40 > 25 are dropped; the second annotator is left empty
    # and removed, as filter_long_span.py does; the aligned view keeps it.
    assert [a.tolist() for a in filtered[0].extra["alter_spans"]] == [[[3.0, 4.0]]]
    assert [a.shape for a in filtered[0].extra["alter_spans_by_answer"]] == [(1, 2), (0, 2)]
    assert filtered[0].extra["alter_evidences"] == _question()["alter_evidences"]  # untouched
    assert filtered[1].extra["alter_spans_by_answer"] is None  # 2 lists, 0 answers
    # a span of exactly duration / 4 stays (strict >)
    edge = load_wildqa(_write(tmp_path, [_question(alter_evidences=[[[10.0, 35.0]]],
                                                   alter_answers=["x"])], "edge.json"),
                       evidence_filter=True)
    assert [a.tolist() for a in edge[0].extra["alter_spans"]] == [[[10.0, 35.0]]]


def test_optional_fields_may_be_absent(tmp_path):
    q = _question()
    for name in ("alter_answers", "alter_evidences", "domain", "question_type"):
        del q[name]
    (record,) = load_wildqa(_write(tmp_path, [q]))
    assert record.extra["answers"] == ["Yes. "]
    assert record.extra["alter_spans"] == [] and record.extra["alter_spans_by_answer"] == []
    assert load_wildqa(_write(tmp_path, [], "empty.json")) == []


@pytest.mark.parametrize("content, record, field, reason", [
    ("[{", None, None, "not valid JSON"),
    ({"0": {}}, None, None, "expected a JSON list"),
    ([["not", "an", "object"]], 0, None, "expected an object"),
    ([_question(), _question(question=None)], 1, "question", "expected a string"),
    ([_question(duration="72")], 0, "duration", "expected a number"),
    ([_question(duration=-3.0)], 0, "duration", "positive"),
    ([_question(duration=True)], 0, "duration", "expected a number"),
    ([{k: v for k, v in _question().items() if k != "video_id"}], 0, "video_id", "missing"),
    ([_question(evidences={"0": [1, 2]})], 0, "evidences", "expected a list"),
    ([_question(evidences=[[1.0, 2.0]])], 0, "evidences[0]", "one-key object"),
    ([_question(evidences=[{"0": [1.0, 2.0], "1": [3.0, 4.0]}])], 0, "evidences[0]",
     "one-key object"),
    ([_question(evidences=[{"0": [5.0, 2.0]}])], 0, "evidences[0]['0']", "0 <= start <= end"),
    ([_question(evidences=[{"0": [1.0, 2.0, 3.0]}])], 0, "evidences[0]['0']", "[start, end]"),
    ([_question(evidences=[{"0": ["1", 2.0]}])], 0, "evidences[0]['0']", "[start, end]"),
    ('[{"question": "q", "answer": "a", "evidences": [{"0": [NaN, 2]}], "duration": 5,'
     ' "video_id": "v"}]', 0, "evidences[0]['0']", "finite"),
    ([_question(alter_answers=[1])], 0, "alter_answers[0]", "expected a string"),
    ([_question(alter_evidences=[[[-1.0, 2.0]]])], 0, "alter_evidences[0][0]",
     "0 <= start <= end"),
    ([_question(alter_evidences=[[1.0, 2.0]])], 0, "alter_evidences[0][0]", "[start, end]"),
    ([_question(alter_evidences=[{"0": [1.0, 2.0]}])], 0, "alter_evidences[0]",
     "expected a list"),
])
def test_malformed_files_name_file_record_and_field(tmp_path, content, record, field, reason):
    path = _write(tmp_path, content, "broken_test.json")
    with pytest.raises(DataFormatError) as info:
        load_wildqa(path)
    err = info.value
    message = str(err)
    assert "broken_test.json" in message and reason in message
    assert err.record == record and err.field == field
    if record is not None:
        assert f"record {record}" in message
    if field is not None:
        assert f"field {field!r}" in message


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_wildqa(tmp_path / "nope.json")
