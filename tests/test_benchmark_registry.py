# SPDX-License-Identifier: Apache-2.0
"""The one benchmark registry (fastvqa.data.benchmarks): every benchmark read
by name through load_benchmark on small files written here, one-line errors
naming what is accepted, every command's --split/--gt help taken from it, and
no other module mapping benchmark names to loaders."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

import fastvqa
from fastvqa.cli import main
from fastvqa.data.benchmarks import (BENCHMARKS, BenchmarkInfo, check_split, gt_help,
                                     load_benchmark, split_help, split_path)
from fastvqa.errors import InputError

GSUB = {"vA": {"duration": 40, "fps": 30, "location": {"0": [[4.0, 20.0]], "1": [[10.0, 30.0]]}},
        "vB": {"duration": 60, "fps": 30, "location": {"0": [[30.0, 60.0]]}}}
CSV = ("video_id,frame_count,width,height,question,answer,qid,type,a0,a1,a2,a3,a4\n"
       "vA,1200,320,240,what first,x,0,TN,x,y,z,u,v\n"
       "vA,1200,320,240,what next,y,1,TC,x,y,z,u,v\n"
       "vB,1800,320,240,why,z,0,CW,x,y,z,u,v\n")


def _json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj))


def _jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _wildqa(n: int, tag: str) -> list:
    return [{"question": f"{tag} q{i}?", "answer": "yes", "evidences": [{"1": [1.0, 2.0]}],
             "duration": 30.0, "video_id": f"{tag}{i}"} for i in range(n)]


def _deveqa(n: int, tag: str) -> list:
    return [{"qid": f"{tag}{i}", "video_id": "v", "question": f"{tag} q{i}", "options": ["a", "b"],
             "answer": 0, "gt_span": [1, 2], "duration": 9.0} for i in range(n)]


def _qvh(n: int, tag: str) -> list:
    return [{"qid": i, "query": f"{tag} q{i}", "vid": f"v{i}", "duration": 150,
             "relevant_windows": [[20, 60]]} for i in range(n)]


def _dvd_turn(question: str) -> dict:
    return {"split": "all_actions", "image": "CLEVR_new_000001", "question": question,
            "answer": 1, "template_filename": "zero_hop_1.json",
            "template": {"text": ["How many <Z> things are there?"], "interval_type": "none",
                         "cutoff": None, "used_periods": [None], "used_objects": {}},
            "turn_dependencies": {"temporal": "none", "object": "none", "attribute": "none",
                                  "spatial": "none"}}


def _sokbench(video: str, question: str) -> dict:
    return {"video": video, "question": question,
            "answer": {"direct": "a cup", "choices": ["a cup", "a pen"], "right_choice": 0}}


@pytest.fixture()
def folders(tmp_path) -> dict[str, Path]:
    """One folder per benchmark, laid out as released: the test split holds
    the questions named ``test ...``, another split (where there is one)
    those named ``other ...``."""
    out = {name: tmp_path / name for name in BENCHMARKS}
    for folder in out.values():
        folder.mkdir()
    _jsonl(out["deveqa"] / "test.jsonl", _deveqa(2, "test"))
    _json(out["deveqa"] / "dev.json", _deveqa(1, "other"))
    _json(out["dvd"] / "a.json", [[_dvd_turn("test how many things ?"),
                                   _dvd_turn("test how many cubes ?")]])
    _json(out["dvd"] / "metadata.json", {"not": "dialogues"})
    _json(out["nextgqa"] / "gsub_test.json", GSUB)
    (out["nextgqa"] / "test.csv").write_text(CSV.replace("what", "test what")
                                             .replace(",why,", ",test why,"))
    _json(out["nextgqa"] / "gsub_val.json", {"vA": GSUB["vA"]})
    _jsonl(out["qvhighlights"] / "highlight_test_release.jsonl", _qvh(3, "test"))
    _jsonl(out["qvhighlights"] / "val.jsonl", _qvh(1, "other"))
    _json(out["sokbench"] / "a.json", _sokbench("v1", "test what is held"))
    _json(out["sokbench"] / "b.json", _sokbench("v2", "test what is worn"))
    _json(out["wildqa"] / "test.json", _wildqa(3, "test"))
    _json(out["wildqa"] / "dev.json", _wildqa(2, "other"))
    return out


# Questions of the test split, by hand from the files above.
TEST_COUNTS = {"deveqa": 2, "dvd": 2, "nextgqa": 3, "qvhighlights": 3, "sokbench": 2,
               "wildqa": 3}
OTHER = {"deveqa": ("dev", 1), "qvhighlights": ("val", 1), "wildqa": ("dev", 2),
         "nextgqa": ("val", 2)}


def test_every_benchmark_has_an_entry_and_a_test_here():
    assert set(TEST_COUNTS) == set(BENCHMARKS)
    assert all(isinstance(b, BenchmarkInfo) and b.name == n for n, b in BENCHMARKS.items())


@pytest.mark.parametrize("name", sorted(TEST_COUNTS))
def test_load_benchmark_reads_a_folder_as_released_and_its_file(folders, name):
    records = load_benchmark(name, folders[name])
    assert len(records) == TEST_COUNTS[name]
    # The grounding-only gsub JSON has no questions; every other layout names them.
    if name != "nextgqa":
        assert all(r.question.startswith("test") for r in records), [r.question for r in records]
    assert [r.key for r in load_benchmark(name, split_path(name, folders[name]))] == \
        [r.key for r in records]
    if name in OTHER:
        split, n = OTHER[name]
        assert len(load_benchmark(name, folders[name], split)) == n


def test_the_loaders_own_options_pass_through(folders):
    gt = folders["deveqa"] / "dev.json"
    assert load_benchmark("deveqa", gt, schema="devi")[0].question == "other q0"
    durations = folders["deveqa"] / "durations.json"
    _json(durations, {"v": 12.0})
    assert load_benchmark("deveqa", folders["deveqa"], "dev", durations=durations)
    assert len(load_benchmark("wildqa", folders["wildqa"], evidence_filter=True)) == 3


def test_a_sokbench_folder_is_read_whole_as_its_evaluation_reads_it(folders):
    """Question ids start with the file's stem, so two files never clash:
    the keys ``fastvqa eval sokbench`` scores predictions by."""
    keys = [r.key for r in load_benchmark("sokbench", folders["sokbench"])]
    assert keys == ["v1_a/0", "v2_b/0"]


def test_loaders_are_looked_up_where_they_are_exported(folders, monkeypatch):
    import fastvqa.data

    monkeypatch.setattr(fastvqa.data, "load_wildqa", lambda path, **kw: ["read", path])
    assert load_benchmark("wildqa", folders["wildqa"], "dev") == [
        "read", folders["wildqa"] / "dev.json"]


def test_exported_from_fastvqa_data():
    import fastvqa.data

    assert fastvqa.data.load_benchmark is load_benchmark
    assert fastvqa.data.BenchmarkInfo is BenchmarkInfo
    assert {"load_benchmark", "BenchmarkInfo"} <= set(fastvqa.data.__all__)


# ------------------------------------------------------------------ errors

def _one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text
    return text


def test_unknown_benchmark_names_the_known_ones(folders):
    with pytest.raises(InputError) as info:
        load_benchmark("msrvtt", folders["wildqa"])
    text = _one_line(info.value)
    assert "unknown benchmark 'msrvtt'" in text
    assert all(name in text for name in BENCHMARKS)


@pytest.mark.parametrize("name, split, accepted", [
    ("wildqa", "val", "test, dev, raw_test, raw_dev"),
    ("nextgqa", "train", "test, val"),
])
def test_unknown_split_names_the_accepted_ones(folders, name, split, accepted):
    with pytest.raises(InputError) as info:
        load_benchmark(name, folders[name], split)
    text = _one_line(info.value)
    assert text.startswith(f"split for {name} ") and accepted in text and repr(split) in text


def test_a_split_is_a_file_stem_and_its_file_must_be_there(folders):
    with pytest.raises(InputError, match=r"split must name a file of the folder"):
        check_split("deveqa", "../test")
    assert check_split("deveqa", "my_split") == "my_split"
    with pytest.raises(FileNotFoundError) as info:
        load_benchmark("deveqa", folders["deveqa"], "train")
    text = _one_line(info.value)
    assert "no train.json or train.jsonl in this folder" in text
    assert "found dev.json, test.jsonl" in text
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_benchmark("dvd", folders["dvd"] / "absent.json")
    # A benchmark without splits reads its folder whole, whatever the split.
    assert len(load_benchmark("sokbench", folders["sokbench"], "anything")) == 2


def test_cli_errors_come_from_the_registry(folders, capsys):
    from tests.test_cli_errors import one_line_error

    assert main(["duplicates", str(folders["wildqa"]), "--benchmark", "wildqa",
                 "--split", "train"]) == 2
    one_line_error(capsys, "duplicates", "--split for wildqa", "test, dev, raw_test, raw_dev",
                   "train.json does not exist")
    assert main(["stats", "deveqa", "--gt", str(folders["deveqa"]), "--split", "val"]) == 2
    one_line_error(capsys, "stats", "no val.json or val.jsonl in this folder")


# ------------------------------------------------------------------ help texts

def _help(capsys, *argv) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_split_names_and_layouts_in_every_help_come_from_the_registry(capsys):
    answered = [n for n, b in BENCHMARKS.items() if b.answers]
    audit = _help(capsys, "audit")
    assert _flat(split_help(answered, "a --gt folder")) in audit
    assert "test|dev|raw_test|raw_dev" in audit and "test|val" in audit
    assert _flat(gt_help(answered)) in audit
    assert "nextgqa val, wildqa dev" in audit  # the registry's training splits
    distractors = _help(capsys, "distractors")
    assert _flat(split_help(answered)) in distractors and _flat(gt_help(answered)) in distractors
    assert _flat(split_help(BENCHMARKS)) in _help(capsys, "duplicates")
    stats = _help(capsys, "stats")
    assert "wildqa test|dev|raw_test|raw_dev: <split>.json" in stats
    assert "dev.json + test.json" in stats
    wildqa = _help(capsys, "eval", "wildqa", "qa")
    assert _flat(split_help(["wildqa"], "a --gt folder")) in wildqa
    assert _flat(BENCHMARKS["wildqa"].gt) in wildqa
    for name in ("nextgqa", "deveqa", "dvd", "sokbench", "qvhighlights"):
        assert _flat(BENCHMARKS[name].gt) in _help(capsys, "eval", name), name


def test_a_new_entry_and_its_loader_are_all_a_benchmark_needs(tmp_path, monkeypatch):
    """What docs/adding_a_benchmark.md promises: the entry and the loader,
    and load_benchmark, the split check and the help know the benchmark."""
    import fastvqa.data
    import fastvqa.data.benchmarks as registry

    entry = replace(BENCHMARKS["wildqa"], name="egoqa", loader="load_egoqa",
                    splits=("test", "val"), files=("{split}.json",))
    monkeypatch.setitem(registry.BENCHMARKS, "egoqa", entry)
    monkeypatch.setattr(fastvqa.data, "load_egoqa", lambda path: [path.name], raising=False)
    (tmp_path / "val.json").write_text("[]")
    assert load_benchmark("egoqa", tmp_path, "val") == ["val.json"]
    with pytest.raises(InputError, match="split for egoqa"):
        load_benchmark("egoqa", tmp_path, "dev")
    assert "egoqa test|val: <split>.json" in split_help(["egoqa"])


# ------------------------------------------------------------------ one path

PACKAGE = Path(fastvqa.__file__).resolve().parent
LOADERS = "|".join(b.loader for b in BENCHMARKS.values())


def test_no_other_module_maps_benchmark_names_to_loaders():
    """load_benchmark is the only path from a benchmark name to records:
    outside fastvqa/data no module calls a benchmark's loader, imports one,
    or keeps a name -> loader table."""
    call = re.compile(rf"\b({LOADERS})\s*\(")
    imported = re.compile(rf"^\s*from fastvqa\.data[\w.]* import .*\b({LOADERS})\b", re.M)
    table = re.compile(r"\bLOADERS\b|getattr\(\s*fastvqa\.data\s*,|\bload_\{")
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("data/"):
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in (call, imported, table):
            found += [f"{rel}: {m.group(0).strip()}" for m in pattern.finditer(text)]
    assert found == []


def test_union_length_lives_with_the_ragged_helpers():
    from fastvqa import ragged, stats

    assert stats.union_length is ragged.union_length
    assert ragged.union_length([[0, 2], [1, 3], [5, 6]]) == 4.0
