# SPDX-License-Identifier: Apache-2.0
"""fastvqa.data.io: JSON read entry by entry (issue 11, "large inputs") and
the one "file or folder" helper the loaders share.

References are the standard library's ``json.loads`` on the whole text (same
values, same error messages) and hand-written expectations.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fastvqa
from fastvqa.data import io as dio
from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import iter_input_files, merge_records, read_json, stream_json

# ------------------------------------------------------------ stream_json


def _random_value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice([0, -7, 3.25, 1e-7, -2.5e300, "", "x", 'q"uo\\te', "\u00e9\u4e2d\n",
                           True, False, None, 2**62])
    if r < 0.65:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{rng.randint(0, 5)}": _random_value(rng, depth + 1)
            for _ in range(rng.randint(0, 4))}


def _documents():
    rng = random.Random(11)
    docs = ['{}', '[]', ' \n[ ]\t', '"text"', '42', '-0.5e-3', 'null', 'true',
            '{"a": [1, 2.5], "b": {"c": null}, "a": 3}',  # a repeated key: json keeps the last
            '[1e400, -1e400]']                            # inf, as json.loads gives
    for _ in range(120):
        docs.append(json.dumps(_random_value(rng), indent=rng.choice([None, 0, 2]),
                               ensure_ascii=rng.random() < 0.5))
    return docs


@pytest.mark.parametrize("chunk", [1, 2, 5, 64, 1 << 20])
def test_stream_json_reads_what_json_loads_reads(tmp_path, monkeypatch, chunk):
    """Every value, at every chunk size (values cut anywhere by the chunk
    boundary: numbers, literals, strings, escapes)."""
    monkeypatch.setattr(dio, "_CHUNK", chunk)
    path = tmp_path / "doc.json"
    for doc in _documents():
        path.write_text(doc, encoding="utf-8")
        assert read_json(path) == json.loads(doc), doc
        with stream_json(path) as stream:
            ref = json.loads(doc)
            assert stream.kind is type(ref)
            entries = list(stream)
        if isinstance(ref, dict):
            assert dict(entries) == ref
            assert [k for k, _ in entries] == [k for k, _ in json.loads(
                doc, object_pairs_hook=lambda pairs: pairs)]
        elif isinstance(ref, list):
            assert entries == list(enumerate(ref))
        else:
            assert entries == [] and stream.value == ref


def test_stream_json_strips_a_utf8_bom(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"a": [1, 2]}).encode())
    assert read_json(path) == {"a": [1, 2]}


BROKEN = ['{', '[', '{"a" 1}', '{"a": 1 "b": 2}', '{"a": 1,}', '[1, 2,]', '[1 2]',
          '{1: 2}', '[1, 2] x', '{"a": 1}}', '[tru]', '[1, -]', '{"a": "open', '["\\u12"]',
          '["\\x"]', '[1.]', '{"a": [1, {"b": }]}', '[1,\n 2,\n\n  oops]', '{"k":\n[1, 2}',
          '"a" "b"', '[1, 2', '{"a": [1, 2]']


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_syntax_errors_carry_json_loads_message_line_and_column(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(dio, "_CHUNK", chunk)
    path = tmp_path / "bad.json"
    for doc in BROKEN:
        with pytest.raises(json.JSONDecodeError) as ref:
            json.loads(doc)
        path.write_text(doc)
        with pytest.raises(DataFormatError) as got:
            read_json(path)
        assert str(got.value) == f"bad.json: not valid JSON ({ref.value})", doc


def test_an_empty_file_is_called_empty(tmp_path):
    """An empty or all-blank file is "empty", not json.loads' "Expecting
    value: line 1 column 1" (issue 29: the first thing a newcomer meets)."""
    path = tmp_path / "bad.json"
    for doc in ("", "   ", "\n\n"):
        path.write_text(doc)
        with pytest.raises(DataFormatError, match=r"^bad.json: is empty \(no JSON in it\)"):
            read_json(path)


def test_deep_nesting_huge_integers_and_bad_bytes_are_one_line_errors(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataFormatError, match=r"^deep\.json: JSON nested too deeply"):
        read_json(path)
    path.write_text('{"a": [1, ' + "9" * 5000 + "]}")
    with pytest.raises(DataFormatError, match=r"^deep\.json: holds the integer 999999999999"
                                              r"\.\.\.999999 \(5000 digits\), too large"):
        read_json(path)
    path.write_text("[" + str(2**63) + "]")
    with pytest.raises(DataFormatError, match="holds the integer 9223372036854775808, too large"):
        read_json(path)
    path.write_bytes(b'["a", "\xff"]')
    with pytest.raises(DataFormatError, match=r"^deep\.json: not a UTF-8 text file \(byte 0xff"):
        read_json(path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_non_regular_files_are_refused_before_reading():
    with pytest.raises(DataFormatError, match="zero: not a regular file"):
        stream_json("/dev/zero")


def test_a_rejected_entry_yields_to_a_syntax_error_further_on(tmp_path):
    """A whole-file parse reported the syntax error before any entry was
    checked; streamed, the syntax error still wins."""
    path = tmp_path / "p.json"
    path.write_text('{"a": "bad entry", "b": [1, 2], "c": oops}')
    with pytest.raises(DataFormatError, match=r"not valid JSON \(Expecting value: line 1 "
                                              r"column 38 \(char 37\)\)"):
        with stream_json(path) as doc:
            for key, value in doc:
                raise DataFormatError(path, "rejected", record=key)
    path.write_text('{"a": "bad entry", "b": [1, 2]}')
    with pytest.raises(DataFormatError, match="record 'a': rejected"):
        with stream_json(path) as doc:
            for key, value in doc:
                raise DataFormatError(path, "rejected", record=key)


# ----------------------------------------------------- bounded memory

_RSS_SCRIPT = textwrap.dedent("""
    import resource, sys
    from fastvqa.data.deveqa import read_deveqa_predictions
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    spans, answers = read_deveqa_predictions(sys.argv[1])
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(len(spans), len(answers), (after - before) // 1024)
""")


def _grounded_predictions(path: Path, n: int) -> None:
    """DeVi-style grounded predictions with what models write beside the
    answer (candidate spans with scores, the raw generated text), about
    1.1 KB a record: none of it is kept by the loader."""
    rng = random.Random(5)
    filler = " ".join(["the person picks up the red cup and walks to the door"] * 18)
    with path.open("w") as f:
        f.write("[")
        for i in range(n):
            s = round(rng.uniform(0, 100), 6)
            f.write(("," if i else "") + json.dumps({
                "qid": f"q{i}", "answer": "ABCDE"[i % 5], "span": [s, round(s + 7.5, 6)],
                "candidates": [{"span": [s, s + k], "score": round(rng.random(), 6)}
                               for k in range(4)],
                "raw_output": filler}))
        f.write("]")


def test_a_large_prediction_file_is_read_in_bounded_memory(tmp_path):
    """35 MB of grounded predictions: parsed whole, the text and every record's
    objects (about 100 MB) were in memory at once; read entry by entry, only
    each record's span and answer are kept (a few MB) beside a 1 MiB buffer."""
    path = tmp_path / "pred.json"
    n = 27_000
    _grounded_predictions(path, n)
    assert 25e6 < path.stat().st_size < 40e6
    package_root = str(Path(fastvqa.__file__).resolve().parents[1])
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [package_root,
                                                       os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, str(path)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    n_spans, n_answers, growth_mib = map(int, proc.stdout.split())
    assert n_spans == n_answers == n
    assert growth_mib < 25, f"peak RSS grew by {growth_mib} MiB reading a 35 MB file"


def test_streamed_predictions_equal_the_whole_file_reference(tmp_path):
    from fastvqa.data.deveqa import read_deveqa_predictions

    path = tmp_path / "pred.json"
    _grounded_predictions(path, 40)
    spans, answers = read_deveqa_predictions(path)
    ref = json.loads(path.read_text())
    assert spans == {r["qid"]: tuple(r["span"]) for r in ref}
    assert answers == {r["qid"]: "ABCDE".index(r["answer"]) for r in ref}


# ------------------------------------------------ file-or-folder inputs


class _Rec:
    def __init__(self, key):
        self.key = key


def _load_keys(path: Path):
    return [_Rec(k) for k in json.loads(path.read_text())]


def test_a_folder_of_files_merges_in_sorted_order(tmp_path):
    (tmp_path / "b.json").write_text('["k3"]')
    (tmp_path / "a.json").write_text('["k1", "k2"]')
    (tmp_path / "notes.txt").write_text("not JSON, not matched")
    (tmp_path / "metadata.json").write_text('["k1"]')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.json").write_text('["k4"]')
    files = iter_input_files(tmp_path, "*.json", exclude=("metadata.json",))
    assert [f.name for f in files] == ["a.json", "b.json"]
    assert [r.key for r in merge_records(files, _load_keys)] == ["k1", "k2", "k3"]
    deep = iter_input_files(tmp_path, "**/*.json", exclude=("metadata.json",))
    assert [f.relative_to(tmp_path).as_posix() for f in deep] == ["a.json", "b.json",
                                                                   "sub/c.json"]
    assert iter_input_files(tmp_path / "a.json") == [tmp_path / "a.json"]


def test_a_key_in_two_files_is_an_error_naming_both(tmp_path):
    (tmp_path / "a.json").write_text('["k1", "k2"]')
    (tmp_path / "b.json").write_text('["k3", "k2"]')
    with pytest.raises(DataFormatError) as err:
        merge_records(iter_input_files(tmp_path), _load_keys)
    message = str(err.value)
    assert message.startswith("b.json: record 'k2': duplicate record key 'k2' (also in ")
    assert str(tmp_path / "a.json") in message


def test_an_empty_folder_or_a_missing_path_is_an_error(tmp_path):
    (tmp_path / "readme.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match=r"holds no dialogue file matching '\*\.json'"):
        iter_input_files(tmp_path, what="dialogue file")
    with pytest.raises(FileNotFoundError, match="absent.json does not exist"):
        iter_input_files(tmp_path / "absent.json")


def test_sokbench_and_dvd_folders_use_the_shared_rules(tmp_path):
    from fastvqa.data.dvd import load_dvd
    from fastvqa.data.sokbench import load_sokbench

    question = {"question": "q", "video": "v", "answer": {"choices": ["a", "b"],
                                                         "right_choice": 1}}
    sok = tmp_path / "sok"
    sok.mkdir()
    (sok / "one.json").write_text(json.dumps({"typeA": [question]}))
    (sok / "two.json").write_text(json.dumps([question]))
    (sok / "skip.txt").write_text("{")
    records = load_sokbench(sok)
    assert [r.key for r in records] == ["v_one/typeA_0", "v_two/0"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="holds no SOK-Bench question file"):
        load_sokbench(empty)

    turn = {"split": "s", "image": "img", "question": "q", "answer": 2,
            "template_filename": "zero_hop_1.json",
            "template": {"text": ["How many things are there?"], "interval_type": "none"},
            "turn_dependencies": {"temporal": "none", "object": "none", "attribute": "none",
                                  "spatial": "none"}}
    dvd = tmp_path / "dvd"
    (dvd / "deeper").mkdir(parents=True)
    (dvd / "a.json").write_text(json.dumps([[turn]]))
    (dvd / "deeper" / "b.json").write_text(json.dumps([[turn]]))
    (dvd / "metadata.json").write_text("{}")
    with pytest.raises(DataFormatError, match=r"b\.json: record 's-img_0_0': duplicate record "
                                              r"key 's-img_0_0' \(also in .*a\.json\)"):
        load_dvd(dvd)


def test_the_collector_is_paused_only_inside_the_block(tmp_path):
    import gc

    path = tmp_path / "p.json"
    path.write_text('{"a": [1, 2], "b": [3, 4]}')
    assert gc.isenabled()
    with stream_json(path) as doc:
        assert not gc.isenabled()
        assert dict(doc) == {"a": [1, 2], "b": [3, 4]}
    assert gc.isenabled()
    with pytest.raises(DataFormatError, match="rejected"):
        with stream_json(path) as doc:
            raise DataFormatError(path, "rejected")
    assert gc.isenabled()
    path.write_text('{"a": [1, 2], "b": oops}')
    with pytest.raises(DataFormatError, match="not valid JSON"):
        read_json(path)
    assert gc.isenabled()


# A key the top-level object repeats: json.load (the official scripts) keeps
# the last value at the first key's place. The stream parses runs of about
# 1 MiB, so the two occurrences are put more than a run apart, and near.
@pytest.mark.parametrize("filler", [0, 3000])
def test_a_repeated_top_level_key_keeps_its_last_value_as_json_load(tmp_path, filler):
    from fastvqa.data import load_activitynet_captions, load_deveqa

    def record(qid, answer, span):
        return {"qid": qid, "video_id": "v_a", "question": "what?", "options": ["x", "y", "z"],
                "answer": answer, "gt_span": span, "duration": 60}

    pad = "p" * 400  # ~0.5 KB a filler record: 3000 of them span over a run
    mapping = {"k0": record("q0", 0, [1.0, 2.0])}
    text = '{"k0": ' + json.dumps(mapping["k0"])
    for i in range(filler):
        rec = record(f"f{i}", 1, [0.0, 1.0])
        rec["question"] = pad
        text += f', "f{i}": ' + json.dumps(rec)
    text += ', "k0": ' + json.dumps(record("q0", 2, [3.0, 4.0])) + "}"
    path = tmp_path / "gt.json"
    path.write_text(text)
    expected = json.loads(text)  # the reference: one "k0", the last, first in order
    recs = load_deveqa(path)
    assert len(recs) == len(expected) == filler + 1
    assert recs[0].question_id == "q0" and recs[0].answer == 2
    assert recs[0].spans.tolist() == [[3.0, 4.0]]

    video = {"duration": 10.0, "timestamps": [[0.0, 1.0]], "sentences": ["first"]}
    last = {"duration": 10.0, "timestamps": [[2.0, 3.0]], "sentences": ["last"]}
    text = '{"v_x": ' + json.dumps(video)
    for i in range(filler):
        text += f', "v_f{i}": ' + json.dumps({"duration": 5.0, "timestamps": [[0.0, 1.0]],
                                              "sentences": [pad]})
    text += ', "v_x": ' + json.dumps(last) + "}"
    path = tmp_path / "anet.json"
    path.write_text(text)
    anet = load_activitynet_captions(path)
    assert len(anet) == len(json.loads(text)) == filler + 1
    assert anet[0].video_id == "v_x" and anet[0].question == "last"
    assert anet[0].spans.tolist() == [[2.0, 3.0]]
