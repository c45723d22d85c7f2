# SPDX-License-Identifier: Apache-2.0
"""NExT-GQA and DeVE-QA loaders and prediction-file readers.

Counts on the real files come from docs/papers/deveqa.md §2.4 and
docs/anchors/eval.md §2.1; the malformed files are written here.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from fastvqa.data import DataFormatError, load_deveqa, load_nextgqa
from fastvqa.data.deveqa import INVALID_ANSWER, read_deveqa_predictions
from fastvqa.data.nextgqa import read_grounding_predictions, read_qa_predictions

HEADER = "video_id,frame_count,width,height,question,answer,qid,type,a0,a1,a2,a3,a4\n"


def write(path, text):
    path.write_text(text)
    return path


def gsub(tmp_path, data, name="gsub_test.json"):
    return write(tmp_path / name, json.dumps(data))


GOOD_GSUB = {"100": {"duration": 30, "fps": 29.97,
                     "location": {"2": [[1.0, 5.5]], "0": [[0, 3], [10.5, 12]]}},
             "7": {"duration": 12.5, "location": {"1": [[2, 4]]}}}
GOOD_CSV = (HEADER
            + '100,900,640,480,"why did the dog, then, run",to fetch,0,CW,'
              "sleep,eat,to fetch,run,sit\n"
            + "100,900,640,480,how,slowly,2,CH,slowly,fast,not,up,down\n"
            + "7,300,320,240,what next,cry,1,TN,laugh,cry,eat,jump,run\n"
            + "55,300,320,240,ungrounded,a,3,TC,a,b,c,d,e\n")


# ------------------------------------------------------------------ real files


def test_real_test_split_counts(shared_data):
    records = load_nextgqa(shared_data / "nextgqa", split="test")
    assert len(records) == 5553
    segs = Counter(r.spans.shape[0] for r in records)
    assert sum(v for k, v in segs.items() if k > 1) == 591
    assert segs == {1: 4962, 2: 362, 3: 125, 4: 65, 5: 15, 6: 9, 7: 5, 8: 3, 9: 1, 11: 2,
                    14: 2, 16: 2}
    assert len({r.video_id for r in records}) == 990
    assert Counter(r.extra["type"] for r in records) == {"CW": 2456, "TN": 1356, "TC": 852,
                                                          "CH": 796, "TP": 93}
    assert Counter(r.answer for r in records) == {0: 1113, 1: 1105, 2: 1133, 3: 1136, 4: 1066}
    lengths = np.concatenate([r.spans[:, 1] - r.spans[:, 0] for r in records])
    assert round(float(lengths.mean()), 2) == 6.70
    # gsub file order: the first video of the file, its qids in file order
    assert [r.key for r in records[:5]] == ["10109006686_0", "10109006686_2", "10109006686_3",
                                            "10109006686_4", "10109006686_6"]
    first = records[0]
    assert first.options[first.answer] == first.extra["answer_text"] == "watch plane landing"
    assert first.duration == 35.0 and first.extra["fps"] == 29.97
    assert first.extra["frame_count"] == 1041 and first.extra["width"] == 640
    # "happy" is listed twice (a3, a4): the first match is the answer
    dup = next(r for r in records if r.key == "3842638015_4")
    assert dup.answer == 3 and dup.options[3] == dup.options[4] == "happy"


def test_real_val_split_and_gsub_alone(shared_data):
    val = load_nextgqa(shared_data / "nextgqa", split="val")
    assert len(val) == 3358
    assert sum(r.spans.shape[0] > 1 for r in val) == 339
    alone = load_nextgqa(shared_data / "nextgqa" / "gsub_test.json")
    assert len(alone) == 5553
    assert alone[0].answer is None and alone[0].options == [] and alone[0].question == ""
    both = load_nextgqa([shared_data / "nextgqa" / "gsub_test.json",
                         shared_data / "nextgqa" / "test.csv"])
    assert [r.answer for r in both[:50]] == [r.answer for r in load_nextgqa(
        shared_data / "nextgqa")[:50]]


# ------------------------------------------------------------ synthetic files


def test_loads_synthetic_folder(tmp_path):
    gsub(tmp_path, GOOD_GSUB)
    write(tmp_path / "test.csv", GOOD_CSV)
    records = load_nextgqa(tmp_path)
    assert [r.key for r in records] == ["100_2", "100_0", "7_1"]
    assert records[1].question == "why did the dog, then, run"
    assert records[1].answer == 2
    assert records[1].spans.tolist() == [[0.0, 3.0], [10.5, 12.0]]
    assert records[1].spans.dtype == np.float64
    assert records[2].duration == 12.5 and records[2].extra["fps"] is None
    assert records[2].answer == 1 and records[2].extra["type"] == "TN"


def test_folder_without_csv_is_grounding_only(tmp_path):
    gsub(tmp_path, GOOD_GSUB, "gsub_val.json")
    records = load_nextgqa(tmp_path, split="val")
    assert len(records) == 3 and records[0].answer is None


def test_index_answers_as_in_nextqa(tmp_path):
    gsub(tmp_path, {"7": {"duration": 9, "location": {"1": [[2, 4]]}}})
    write(tmp_path / "test.csv", HEADER + "7,300,320,240,q,3,1,TN,a,b,c,d,e\n")
    assert load_nextgqa(tmp_path)[0].answer == 3


@pytest.mark.parametrize("data, match", [
    ([1, 2], "expected a JSON object"),
    ({"100": [1]}, r"record '100': expected an object"),
    ({"100": {"location": {}}}, r"record '100': field 'duration': missing"),
    ({"100": {"duration": "30", "location": {}}}, r"field 'duration': expected a number"),
    ({"100": {"duration": 30}}, r"field 'location': expected an object .* got nothing"),
    ({"100": {"duration": 30, "location": {"1": [1, 2]}}},
     r"field 'location.1\[0\]': expected a span"),
    ({"100": {"duration": 30, "location": {"1": [[1, "x"]]}}},
     r"field 'location.1\[0\]': expected numbers"),
    ({"100": {"duration": 30, "location": {"1": [[1, 2, 3]]}}}, r"expected a span"),
    ({"100": {"duration": 30, "location": {"1": [[True, 2]]}}}, r"expected numbers"),
    ({"100": {"duration": 30, "fps": "x", "location": {}}}, r"field 'fps'"),
    ({"100": {"duration": 30, "location": {"1": "[[1, 2]]"}}}, r"expected a list of"),
])
def test_malformed_gsub(tmp_path, data, match):
    path = gsub(tmp_path, data)
    with pytest.raises(DataFormatError, match=r"gsub_test\.json: .*" + match):
        load_nextgqa(path)


def test_bad_json_names_file_and_line(tmp_path):
    write(tmp_path / "gsub_test.json", '{"100": {"duration": 30,\n "location": }}')
    with pytest.raises(DataFormatError, match=r"gsub_test\.json: not valid JSON .*line 2"):
        load_nextgqa(tmp_path)


def test_non_finite_span_and_missing_files(tmp_path):
    write(tmp_path / "gsub_test.json", '{"1": {"duration": 3, "location": {"0": [[0, NaN]]}}}')
    with pytest.raises(DataFormatError, match="finite"):
        load_nextgqa(tmp_path)
    with pytest.raises(FileNotFoundError, match="gsub_val.json"):
        load_nextgqa(tmp_path, split="val")
    with pytest.raises(FileNotFoundError):
        load_nextgqa(tmp_path / "nope.json")
    with pytest.raises(ValueError, match="split"):
        load_nextgqa(tmp_path, split="dev")


@pytest.mark.parametrize("csv_text, match", [
    (HEADER.replace(",answer", ",ans") + "7,3,3,3,q,a,1,TN,a,b,c,d,e\n",
     r"field 'answer': missing column"),
    (HEADER + "7,300,320,240,q,zzz,1,TN,a,b,c,d,e\n",
     r"record 'line 2 \(7_1\)': field 'answer': answer 'zzz' is none of the options"),
    (HEADER + "7,300,320,240,q,a,1,TN,a,b,c,d,e\n7,300,320,240,q,a,1,TN,a,b,c,d,e\n",
     r"line 3 .* appears twice"),
    (HEADER + "7,many,320,240,q,a,1,TN,a,b,c,d,e\n", r"field 'frame_count': expected an integer"),
    (HEADER + "7,300,320,240,q,a,1,TN,a,b\n", r"expected 13 columns"),
    (HEADER + "8,300,320,240,q,a,1,TN,a,b,c,d,e\n", r"grounded question 7_1 .* has no row"),
])
def test_malformed_csv(tmp_path, csv_text, match):
    gsub(tmp_path, {"7": {"duration": 9, "location": {"1": [[2, 4]]}}})
    write(tmp_path / "test.csv", csv_text)
    with pytest.raises(DataFormatError, match=r"test\.csv: .*" + match):
        load_nextgqa(tmp_path)


# ------------------------------------------------------------ prediction files


def test_prediction_readers(tmp_path):
    spans = read_grounding_predictions(write(tmp_path / "g.json", '{"7_1": [1, 2.5]}'))
    assert spans == {"7_1": (1.0, 2.5)}
    qa = read_qa_predictions(write(tmp_path / "qa.json", '{"7_1": {"prediction": 2, "answer": 3.0},'
                                   ' "7_2": {"prediction": 1}}'))
    assert qa == {"7_1": {"prediction": 2, "answer": 3}, "7_2": {"prediction": 1, "answer": None}}


@pytest.mark.parametrize("reader, text, match", [
    (read_grounding_predictions, "[[1, 2]]", "expected a JSON object"),
    (read_grounding_predictions, '{"7_1": [1]}', r"record '7_1': field 'span': expected a span"),
    (read_grounding_predictions, '{"7_1": ["a", 2]}',
     r"record '7_1': field 'span': expected numbers"),
    (read_grounding_predictions, '{"7_1": [1, 2]', "not valid JSON"),
    (read_qa_predictions, '{"7_1": 2}', r"record '7_1': expected"),
    (read_qa_predictions, '{"7_1": {"answer": 2}}', r"field 'prediction': missing"),
    (read_qa_predictions, '{"7_1": {"prediction": "B"}}',
     r"field 'prediction': expected an integer"),
    (read_qa_predictions, '{"7_1": {"prediction": true}}', r"expected an integer"),
    (read_qa_predictions, '{"7_1": {"prediction": 1.5}}', r"expected an integer"),
    (read_qa_predictions, '{"7_1": {"prediction": 1, "answer": -3}}', r"field 'answer': .*>= 0"),
])
def test_prediction_file_errors(tmp_path, reader, text, match):
    with pytest.raises(DataFormatError, match=r"p\.json: .*" + match):
        reader(write(tmp_path / "p.json", text))


# ---------------------------------------------------------------------- DeVE-QA

DEVI = [
    {"qid": "q1", "video_id": "v_a", "question": "what?", "options":
        {"B": "y", "A": "x", "C": "z", "D": "w", "E": "u"}, "answer": "B",
     "gt_span": [3.0, 10.5], "duration": 60, "video_path": "a.mp4",
     "captions": [{"text": "t", "span": [0, 5], "level": 0}, {"text": "s", "span": [5, 9],
                                                            "level": 0}]},
    {"qid": "q2", "video_id": "v_a", "question": "why?", "options": ["x", "y", "z", "w", "u"],
     "answer": "z", "gt_span": None, "duration": 60},
    {"qid": 7, "video_id": "v_b", "question": "how?", "options": ["x", "y", "z"], "answer": 0,
     "gt_span": [[1, 2], [4, 5]]},
]


def test_deveqa_devi_layout_jsonl(tmp_path):
    path = write(tmp_path / "dv.jsonl", "\n".join(json.dumps(r) for r in DEVI) + "\n\n")
    recs = load_deveqa(path, durations={"v_b": 20})
    assert [r.key for r in recs] == ["v_a_q1", "v_a_q2", "v_b_7"]
    assert recs[0].options == ["x", "y", "z", "w", "u"] and recs[0].answer == 1
    assert recs[0].spans.tolist() == [[3.0, 10.5]]
    assert recs[0].extra["event_count"] == 2 and recs[0].extra["video_path"] == "a.mp4"
    assert recs[0].extra["schema"] == "devi"
    assert recs[1].answer == 2 and recs[1].spans.shape == (0, 2)
    assert recs[2].answer == 0 and recs[2].spans.shape == (2, 2) and recs[2].duration == 20.0


def test_deveqa_release_layout_with_durations_file(tmp_path):
    data = [{"vid": "v_1", "question": "how?", "answer": "dance",
             "distract_answers": ["sing", "run", "eat", "cry"], "timestamp": [1, 4]},
            {"vid": "v_2", "question": "who?", "answer": "a man",
             "distract_answers": ["b", "c", "d", "e"], "timestamp": [0, 2.5], "duration": 9}]
    path = write(tmp_path / "DeVE-QA_val.json", json.dumps(data))
    write(tmp_path / "durations.json", '{"v_1": 12.5, "v_2": {"duration": 99}}')
    recs = load_deveqa(path, durations=tmp_path / "durations.json")
    # no stored option order: answer and distractors sorted as strings
    assert recs[0].options == ["cry", "dance", "eat", "run", "sing"] and recs[0].answer == 1
    assert recs[0].question_id == "0" and recs[0].key == "v_1_0"
    assert recs[0].duration == 12.5 and recs[1].duration == 9.0
    assert recs[1].options[recs[1].answer] == "a man"


def test_deveqa_field_mapping_and_object_of_records(tmp_path):
    data = {"x1": {"vid": "v9", "q": "what?", "choices": ["a", "b"], "correct": 1,
                   "time": [2, 3], "events": [1, 2, 3], "note": "kept"}}
    path = write(tmp_path / "custom.json", json.dumps(data))
    recs = load_deveqa(path, fields={"video_id": "vid", "question": "q", "options": "choices",
                                     "answer": "correct", "gt_span": "time",
                                     "captions": "events"})
    r = recs[0]
    assert (r.question_id, r.video_id, r.question, r.answer) == ("x1", "v9", "what?", 1)
    assert r.spans.tolist() == [[2.0, 3.0]] and r.extra["event_count"] == 3
    assert r.extra["note"] == "kept"
    with pytest.raises(ValueError, match="unknown canonical field"):
        load_deveqa(path, fields={"span": "time"})
    with pytest.raises(ValueError, match="schema must be"):
        load_deveqa(path, schema="legacy")


@pytest.mark.parametrize("record, match", [
    ({"qid": "a", "video_id": "v", "options": ["x"], "answer": "q", "gt_span": [0, 1]},
     r"record 'a': field 'answer': answer 'q' matches none"),
    ({"qid": "a", "video_id": "v", "options": ["x"], "gt_span": [0, 1]},
     r"record 'a': field 'answer': missing"),
    ({"qid": "a", "options": ["x"], "answer": 0, "gt_span": [0, 1]},
     r"record 'a': field 'video_id': expected a video id"),
    ({"qid": "a", "video_id": "v", "options": ["x"], "answer": 0, "gt_span": [0, "1"]},
     r"record 'a': field 'gt_span': expected numbers"),
    ({"qid": "a", "video_id": "v", "options": ["x"], "answer": 0, "gt_span": [0, 1],
      "duration": "long"}, r"field 'duration': expected a number"),
    ({"qid": "a", "video_id": "v", "options": "x", "answer": 0, "gt_span": [0, 1]},
     r"field 'options': expected a list"),
    ({"qid": "a", "video_id": "v", "options": ["x"], "answer": 3, "gt_span": [0, 1]},
     r"field 'answer'"),
])
def test_deveqa_malformed_records(tmp_path, record, match):
    path = write(tmp_path / "d.json", json.dumps([record]))
    with pytest.raises(DataFormatError, match=r"d\.json: .*" + match):
        load_deveqa(path)


def test_deveqa_file_level_errors(tmp_path):
    with pytest.raises(DataFormatError, match=r"d\.jsonl: record 'line 2': not valid JSON"):
        load_deveqa(write(tmp_path / "d.jsonl", json.dumps(DEVI[0]) + "\n{oops\n"))
    with pytest.raises(DataFormatError, match="same qid appears twice"):
        load_deveqa(write(tmp_path / "e.json", json.dumps([DEVI[0], DEVI[0]])))
    with pytest.raises(DataFormatError, match="cannot tell the record layout"):
        load_deveqa(write(tmp_path / "f.json", '[{"id": 1}]'))
    with pytest.raises(DataFormatError, match="expected a list of question records"):
        load_deveqa(write(tmp_path / "g.json", "3"))


def test_deveqa_prediction_reader(tmp_path):
    lines = [{"qid": "q1", "answer": "B) a man", "span": [1, 2], "confidence": 0.3},
             {"qid": "q2", "answer": "?", "span": None},
             {"qid": 7, "answer": 2},
             {"key": "v_a_q9", "span": [0, 1]}]
    path = write(tmp_path / "p.jsonl", "\n".join(json.dumps(x) for x in lines))
    spans, answers = read_deveqa_predictions(path)
    assert spans == {"q1": (1.0, 2.0), "q2": None, "7": None, "v_a_q9": (0.0, 1.0)}
    assert answers == {"q1": 1, "q2": INVALID_ANSWER, "7": 2}
    g_spans, g_answers = read_deveqa_predictions(write(tmp_path / "g.json", '{"v_a_q1": [0, 3]}'))
    assert g_spans == {"v_a_q1": (0.0, 3.0)} and g_answers == {}
    with pytest.raises(DataFormatError, match=r"record 'q1': field 'qid': the same qid"):
        read_deveqa_predictions(write(tmp_path / "d.jsonl", '{"qid": "q1"}\n{"qid": "q1"}\n'))
    with pytest.raises(DataFormatError, match=r"record 1: field 'qid': missing"):
        read_deveqa_predictions(write(tmp_path / "m.json", '[{"qid": "a"}, {"span": [0, 1]}]'))


def test_deveqa_not_utf8(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"qid": "\xff"}\n')
    with pytest.raises(DataFormatError, match=r"d\.jsonl: (record 'line 1': )?not a UTF-8 text file"):
        load_deveqa(path)
