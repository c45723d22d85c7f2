# SPDX-License-Identifier: Apache-2.0
"""``cli.main`` turns only the user's mistakes into the one-line exit-2 error:
the :mod:`fastvqa.errors` family (and the OS errors of a path, the "pip
install" ImportError). A plain ValueError or TypeError from inside fastvqa is a
bug and keeps its traceback, for every command alike."""

from __future__ import annotations

import pytest

from fastvqa.cli import main
from fastvqa.errors import InputError


def one_line_error(capsys, command, *needles):
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"fastvqa {command}: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.fixture()
def texts(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("what colour is the cube\nwhere does the ball go\nwhat colour is the cone\n")
    return path


@pytest.fixture()
def wildqa_gt(tmp_path):
    path = tmp_path / "gt.json"
    path.write_text("[]")
    return path


# ------------------------------------------------- (a) bad input: one line, exit 2

def test_decode_bad_sampler_is_one_line(tmp_path, capsys):
    pytest.importorskip("av")
    (tmp_path / "v.mp4").write_bytes(b"")
    assert main(["decode", str(tmp_path / "v.mp4"), "--sampler", "bogus:1",
                 "--out", str(tmp_path / "o.npz")]) == 2
    one_line_error(capsys, "decode", "unknown sampler 'bogus'")
    assert not (tmp_path / "o.npz").exists()


def test_decode_dali_without_a_gpu_is_refused_first(tmp_path, capsys, monkeypatch):
    """--backend dali on a machine without a GPU: one line before any work
    (it used to be a RuntimeError traceback once decoding started)."""
    pytest.importorskip("av")
    from fastvqa.video import api, device

    (tmp_path / "v.mp4").write_bytes(b"")
    monkeypatch.setattr(api, "_dali_available", lambda: True)
    monkeypatch.setattr(device, "gpu_visible", lambda: False)
    assert main(["decode", str(tmp_path / "v.mp4"), "--sampler", "uniform:2",
                 "--backend", "dali", "--out", str(tmp_path / "o.npz")]) == 2
    one_line_error(capsys, "decode", "no GPU is visible")
    monkeypatch.setattr(api, "_dali_available", lambda: False)
    assert main(["decode", str(tmp_path / "v.mp4"), "--sampler", "uniform:2",
                 "--backend", "dali", "--out", str(tmp_path / "o.npz")]) == 2
    one_line_error(capsys, "decode", "needs NVIDIA DALI", "pip install")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.mp4"]


def test_index_build_of_stop_words_is_one_line(tmp_path, capsys):
    pytest.importorskip("sklearn")
    (tmp_path / "t.txt").write_text("a b\nc\n")  # one-letter words only: no vocabulary
    assert main(["index", "build", "--texts", str(tmp_path / "t.txt"),
                 "--out", str(tmp_path / "ix")]) == 2
    one_line_error(capsys, "index", "TF-IDF cannot index these texts", "no indexable word")
    assert not (tmp_path / "ix").exists()


def test_index_build_blank_model_is_one_line(texts, tmp_path, capsys):
    """An empty --model is the user's mistake (it used to be a TypeError)."""
    assert main(["index", "build", "--texts", str(texts), "--encoder", "sentence",
                 "--model", " ", "--out", str(tmp_path / "ix")]) == 2
    one_line_error(capsys, "index", "model must be a non-empty string")
    assert not (tmp_path / "ix").exists()


def argparse_error(capsys, command, *needles):
    """argparse's own error: its usage, then one error line."""
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0] == err.strip().splitlines()[-1], err
    assert errors[0].startswith(f"fastvqa {command}: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in errors[0], err
    return errors[0]


def test_distractors_bad_option_is_one_line(wildqa_gt, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["distractors", "--benchmark", "wildqa", "--gt", str(wildqa_gt), "--tau", "2"])
    assert exc.value.code == 2
    argparse_error(capsys, "distractors", "argument --tau: must lie in [0, 1], got 2.0")


def test_duplicates_bad_threshold_is_one_line(texts, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["duplicates", str(texts), "--threshold", "0"])
    assert exc.value.code == 2
    argparse_error(capsys, "duplicates", "argument --threshold: must lie in (0, 1], got 0.0")


def test_demo_bad_option_is_one_line(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "o"), "--fps", "30"]) == 2
    one_line_error(capsys, "demo", "--fps must be between 0.1 and 10, got 30")
    assert not (tmp_path / "o").exists()


def test_library_validators_on_these_paths_raise_the_user_error_type():
    """The checks the commands reach raise InputError, which is still a
    ValueError for library callers."""
    from fastvqa.retrieval import DistractorMiner, TfidfEncoder, duplicate_groups
    from fastvqa.video import Fps, from_spec

    for call in (lambda: from_spec("fps:1e400"), lambda: from_spec("bogus:1"),
                 lambda: Fps(-1.0), lambda: TfidfEncoder(["a b", "c"]),
                 lambda: DistractorMiner(["q a", "q b"], ["x", "y"], n_neighbours=0),
                 lambda: duplicate_groups(["q a"], 0.0)):
        with pytest.raises(InputError):
            call()
    assert issubclass(InputError, ValueError)


# ------------------------------------- (b) a bug keeps its traceback, every command

def _boom(*args, **kwargs):
    raise ValueError("boom")


def test_decode_internal_value_error_propagates(tmp_path, monkeypatch):
    pytest.importorskip("av")
    import fastvqa.video as video

    # What _plan calls for each video: a ValueError there used to become
    # "fastvqa decode: error: ...: boom", exit 2.
    monkeypatch.setattr(video, "probe", _boom)
    with pytest.raises(ValueError, match="boom"):
        main(["decode", str(tmp_path / "v.mp4"), "--sampler", "uniform:2",
              "--out", str(tmp_path / "o.npz")])
    assert list(tmp_path.iterdir()) == []


def test_index_internal_value_error_propagates(texts, tmp_path, monkeypatch):
    pytest.importorskip("sklearn")
    import fastvqa.retrieval as retrieval

    monkeypatch.setattr(retrieval, "TfidfEncoder", _boom)
    with pytest.raises(ValueError, match="boom"):
        main(["index", "build", "--texts", str(texts), "--out", str(tmp_path / "ix")])
    assert not (tmp_path / "ix").exists()


def test_distractors_internal_value_error_propagates(wildqa_gt, tmp_path, monkeypatch):
    from fastvqa.retrieval import cli as retrieval_cli

    monkeypatch.setattr(retrieval_cli, "_load_records", _boom)
    with pytest.raises(ValueError, match="boom"):
        main(["distractors", "--benchmark", "wildqa", "--gt", str(wildqa_gt),
              "--out", str(tmp_path / "d.json")])
    assert not (tmp_path / "d.json").exists()


def test_duplicates_internal_value_error_propagates(texts, monkeypatch):
    from fastvqa.retrieval import duplicates

    monkeypatch.setattr(duplicates, "unique_question_count", _boom)
    with pytest.raises(ValueError, match="boom"):
        main(["duplicates", str(texts)])


def test_duplicates_internal_type_error_propagates(texts, monkeypatch):
    from fastvqa.retrieval import duplicates

    def type_bug(*args, **kwargs):
        raise TypeError("unsupported operand")

    monkeypatch.setattr(duplicates, "unique_question_count", type_bug)
    with pytest.raises(TypeError, match="unsupported operand"):
        main(["duplicates", str(texts)])


def test_demo_internal_value_error_propagates(tmp_path, monkeypatch):
    pytest.importorskip("av")
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    from fastvqa.demo import pipeline

    monkeypatch.setattr(pipeline, "decode", _boom)
    with pytest.raises(ValueError, match="boom"):
        main(["demo", "--out", str(tmp_path / "o"), "--videos", "1", "--duration", "5",
              "--backend", "pyav", "--no-progress"])
    assert not (tmp_path / "o").exists()


def test_debug_still_shows_a_user_error_traceback(tmp_path, monkeypatch):
    """FASTVQA_DEBUG=1 re-raises even the user's mistakes, for reporting."""
    monkeypatch.setenv("FASTVQA_DEBUG", "1")
    with pytest.raises(InputError, match="--fps must be between"):
        main(["demo", "--out", str(tmp_path / "o"), "--fps", "30"])
