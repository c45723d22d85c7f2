# SPDX-License-Identifier: Apache-2.0
"""The feature store trusts nothing it reads: foreign and damaged files,
malformed records and headers, full disks, long names, concurrent creation,
random weights said aloud, and progress lines off a terminal (issue 29)."""

from __future__ import annotations

import errno
import hashlib
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("av")
st = pytest.importorskip("safetensors.numpy")
torch = pytest.importorskip("torch")

from fastvqa.errors import InputError  # noqa: E402
from fastvqa.extract import FeatureStore, Recipe, StoreError, run  # noqa: E402

FRAMES = Recipe(name="test-frames", sampler="fps:2", size=64, crop=(48, 64),
                model="fastvqa:tiny-frames", batch=3, time="grid")
OTHER = FRAMES.replace(name="other-frames", sampler="fps:1")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    from fastvqa.demo.synth import encode_video, make_scene

    root = tmp_path_factory.mktemp("trust_videos")
    for i, (name, duration) in enumerate({"a": 5.0, "b": 4.0}.items()):
        encode_video(root / f"{name}.mp4", make_scene(np.random.default_rng(i), duration),
                     duration)
    return root


def _store(videos, tmp_path, recipe=FRAMES, name="store"):
    out = tmp_path / name
    run(videos, recipe, out=out, progress=False)
    return out


def _cli(*args):
    import fastvqa

    env = {**os.environ, "PYTHONPATH": str(Path(fastvqa.__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "fastvqa.cli", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("warning:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------ foreign files
def test_a_foreign_recipe_file_is_refused_named_and_repaired(videos, tmp_path, capsys):
    """Before: b.safetensors of another recipe, copied in, counted as done."""
    from fastvqa.extract import StoreDataset

    mine = _store([videos / "a.mp4"], tmp_path)
    theirs = _store([videos / "b.mp4"], tmp_path, OTHER, "theirs")
    shutil.copy(theirs / "features" / "b.safetensors", mine / "features" / "b.safetensors")
    store = FeatureStore(mine)
    with pytest.raises(StoreError, match=r"b\.safetensors.*other-frames.*fps:1.*test-frames"):
        store.load("b")
    with pytest.raises(StoreError, match="other-frames"):
        StoreDataset(mine)[1]
    with pytest.raises(StoreError, match=r"other-frames.*--repair"):
        run(videos, FRAMES, out=mine, progress=False)
    summary = run(videos, FRAMES, out=mine, progress=False, repair=True)
    assert (summary.written, summary.existing) == (1, 1)  # b again, with this recipe
    assert store.load("b").record["recipe_hash"] == FRAMES.hash
    moved = mine / "quarantine" / "features" / "b.safetensors"
    assert moved.read_bytes() == (theirs / "features" / "b.safetensors").read_bytes()
    assert "quarantine" in capsys.readouterr().err


def test_a_file_of_another_model_is_refused(videos, tmp_path):
    mine = _store([videos / "a.mp4"], tmp_path)
    other = tmp_path / "other"
    run([videos / "b.mp4"], FRAMES, out=other, progress=False,
        model=torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(9216, 4)))
    shutil.copy(other / "features" / "b.safetensors", mine / "features" / "b.safetensors")
    with pytest.raises(StoreError, match="model 'Sequential'.*'fastvqa:tiny-frames'"):
        FeatureStore(mine).record("b")


# ------------------------------------------------------------ damaged files
def test_a_damaged_file_is_reported_and_repaired(videos, tmp_path):
    """Before: a raw SafetensorError, and every rerun blocked."""
    out = _store(videos, tmp_path)
    path = out / "features" / "b.safetensors"
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(StoreError, match=r"b\.safetensors.*damaged"):
        FeatureStore(out).load("b")
    rc, _, err = _cli("extract", videos, "--recipe", "imagenet-frames-1fps", "--out",
                      tmp_path / "x", "--model", "fastvqa:tiny-frames", "--no-progress")
    assert rc == 0, err
    bad = tmp_path / "x" / "features" / "a.safetensors"
    bad.write_bytes(b"\x00" * 20)
    args = ("extract", videos, "--recipe", "imagenet-frames-1fps", "--out", tmp_path / "x",
            "--model", "fastvqa:tiny-frames", "--no-progress")
    rc, _, err = _cli(*args)
    assert rc == 2 and "damaged" in _one_line(err) and "--repair" in err
    rc, out_text, err = _cli(*args, "--repair")
    assert rc == 0, err
    assert "1 videos written" in out_text
    assert (tmp_path / "x" / "quarantine" / "features" / "a.safetensors").read_bytes() == \
        b"\x00" * 20


def test_a_flipped_data_byte_is_caught_by_the_checksum_and_store_verify(videos, tmp_path):
    out = _store(videos, tmp_path)
    rc, text, err = _cli("store", "verify", out)
    assert rc == 0, err
    assert "2 ok" in text
    path = out / "features" / "a.safetensors"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01  # the last byte is array data, after the header
    path.write_bytes(bytes(raw))
    with pytest.raises(StoreError, match=r"a\.safetensors.*damaged.*checksum"):
        FeatureStore(out).load("a")
    shutil.copy(_store([videos / "b.mp4"], tmp_path, OTHER, "o") / "features" / "b.safetensors",
                out / "features" / "b.safetensors")
    rc, text, err = _cli("store", "verify", out)
    assert rc == 1
    assert "damaged" in text and "a.safetensors" in text
    assert "foreign" in text and "b.safetensors" in text
    assert "0 ok, 1 damaged, 1 foreign" in text
    summary = run(videos, FRAMES, out=out, progress=False, repair=True)
    assert (summary.written, summary.existing) == (2, 0)
    rc, text, err = _cli("store", "verify", out)
    assert rc == 0 and "2 ok, 0 damaged, 0 foreign" in text, text + err


# ------------------------------------------------------- malformed records
def _write_raw(path: Path, meta: dict, features=None) -> None:
    features = np.zeros((2, 3), np.float32) if features is None else features
    path.write_bytes(st.save({"features": features, "start": np.zeros(2), "end": np.ones(2)},
                             metadata=meta))


@pytest.mark.parametrize("meta", [
    {"fastvqa": "[1, 2]"},
    {"fastvqa": json.dumps({"video": "b", "status": "ok", "recipe_hash": FRAMES.hash,
                            "model": "fastvqa:tiny-frames"})},  # no shape
    {"fastvqa": "[" * 100000},
    {},
])
def test_malformed_file_records_are_one_line_errors(videos, tmp_path, meta):
    out = _store([videos / "a.mp4"], tmp_path)
    _write_raw(out / "features" / "b.safetensors", meta)
    store = FeatureStore(out)
    for call in (lambda: store.record("b"), lambda: store.load("b"), store.info,
                 store.manifest):
        with pytest.raises(StoreError, match=r"b\.safetensors"):
            call()
    rc, _, err = _cli("store", "info", out)
    assert rc == 2 and "b.safetensors" in _one_line(err)


@pytest.mark.parametrize("recipe", ['"test-frames"', "[" * 100000 + "]" * 100000,
                                    '{"name": ["x"]}'])
def test_malformed_store_headers_are_one_line_errors(videos, tmp_path, recipe):
    out = _store([videos / "a.mp4"], tmp_path)
    head = out / "store.json"
    obj = json.loads(head.read_text())
    obj["recipe"] = "@RECIPE@"
    head.write_text(json.dumps(obj).replace('"@RECIPE@"', recipe))
    with pytest.raises(StoreError, match="store.json"):
        FeatureStore(out).info()
    rc, _, err = _cli("store", "info", out)
    assert rc == 2 and "store.json" in _one_line(err)


def test_a_failure_record_that_is_a_list_is_a_one_line_error(videos, tmp_path):
    out = _store([videos / "a.mp4"], tmp_path)
    (out / "failed").mkdir()
    (out / "failed" / "b.json").write_text("[1, 2]")
    with pytest.raises(StoreError, match=r"b\.json"):
        FeatureStore(out).failures()
    with pytest.raises(StoreError, match=r"b\.json.*--repair"):
        run(videos, FRAMES, out=out, progress=False)
    summary = run(videos, FRAMES, out=out, progress=False, repair=True)
    assert summary.written == 1 and FeatureStore(out).videos() == ["a", "b"]
    rc, _, err = _cli("store", "info", out)
    assert rc == 0, err


# ------------------------------------------------------------ disk and names
def test_a_full_disk_is_a_one_line_error_and_a_rerun_completes(videos, tmp_path, monkeypatch):
    import builtins

    import fastvqa._outputs as outputs

    real_open = builtins.open

    class Full:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def full_open(path, mode="r", *a, **k):
        f = real_open(path, mode, *a, **k)
        return Full(f) if str(path).endswith(".part") and "safetensors" in str(path) else f

    monkeypatch.setattr(outputs, "open", full_open, raising=False)
    out = tmp_path / "store"
    with pytest.raises(StoreError, match="No space left on device"):
        run(videos, FRAMES, out=out, progress=False)
    assert not [p for p in out.rglob("*") if p.name.endswith(".part")]
    assert FeatureStore(out).videos() == []
    monkeypatch.undo()
    summary = run(videos, FRAMES, out=out, progress=False)
    assert summary.written == 2


@pytest.mark.parametrize("length", [240, 255])
def test_long_legal_video_names_are_stored(videos, tmp_path, length):
    """Before: a 240-character name gave a temporary name over 255 bytes."""
    folder = tmp_path / "in"
    folder.mkdir()
    name = "v" * (length - 4) + ".mp4"
    (folder / name).write_bytes((videos / "b.mp4").read_bytes())
    summary = run(folder, FRAMES, out=tmp_path / "s", progress=False)
    assert summary.written == 1
    store = FeatureStore(tmp_path / "s")
    assert store.videos() == [name[:-4]]
    assert store.load(name[:-4]).features.shape == (8, 16)  # fps:2 over 4 s
    assert all(len(p.name.encode()) <= 255 for p in (tmp_path / "s").rglob("*"))
    assert run(folder, FRAMES, out=tmp_path / "s", progress=False).existing == 1


# --------------------------------------------------------- concurrent create
def _create(path, barrier, header, results):
    barrier.wait(timeout=60)
    try:
        FeatureStore.create(path, header)
        results.put("ok")
    except Exception as err:  # reported to the parent, which asserts on it
        results.put(f"{type(err).__name__}: {err}")


def test_concurrent_create_is_atomic_and_idempotent(tmp_path):
    """Before: 14 in 450 tries failed with 'not empty and holds no store.json'."""
    ctx = multiprocessing.get_context("fork")
    header = {"recipe": FRAMES.to_dict(), "recipe_hash": FRAMES.hash,
              "model": "fastvqa:tiny-frames", "model_sha256": None}
    got = []
    for attempt in range(25):
        barrier, results = ctx.Barrier(4), ctx.Queue()
        path = tmp_path / f"s{attempt}"
        procs = [ctx.Process(target=_create, args=(path, barrier, header, results))
                 for _ in range(4)]
        for p in procs:
            p.start()
        got += [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert sorted(q.name for q in path.iterdir()) == ["store.json"]
    assert got == ["ok"] * 100, [g for g in got if g != "ok"][:3]
    other = {**header, "recipe": OTHER.to_dict(), "recipe_hash": OTHER.hash}
    with pytest.raises(StoreError, match="test-frames.*other-frames"):
        FeatureStore.create(tmp_path / "s0", other)



def test_create_decides_from_one_listing(tmp_path, monkeypatch):
    """The interleaving CI once hit (1 in 100 above): another process links
    store.json into place between a look for it (absent) and the listing of
    the folder (store.json there, so "not empty, no store.json"). Replayed
    here by making every look for store.json miss: the decision must rest
    on one listing alone."""
    header = {"recipe": FRAMES.to_dict(), "recipe_hash": FRAMES.hash,
              "model": "fastvqa:tiny-frames", "model_sha256": None}
    path = tmp_path / "s"
    FeatureStore.create(path, header)
    (path / "features").mkdir()  # what the winner's first write makes next
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists",
                        lambda self, *a, **k: False if self.name == "store.json"
                        else real_exists(self, *a, **k))
    assert FeatureStore.create(path, header).header["recipe_hash"] == FRAMES.hash

def test_a_recipe_mismatch_names_both_recipes(videos, tmp_path):
    out = _store([videos / "a.mp4"], tmp_path)
    with pytest.raises(StoreError, match=r"test-frames \(sampler fps:2.*other-frames "
                                         r"\(sampler fps:1"):
        run(videos, OTHER, out=out, progress=False)


# ---------------------------------------------------------------- weights
def test_random_weights_are_said_recorded_and_shown(videos, tmp_path, capsys):
    out = _store([videos / "a.mp4"], tmp_path)
    err = capsys.readouterr().err
    assert "RANDOM weights" in err and "fastvqa:tiny-frames" in err
    assert json.loads((out / "store.json").read_text())["weights"] == "random"
    assert FeatureStore(out).info()["weights"] == "random"
    rc, text, _ = _cli("store", "info", out)
    assert rc == 0 and "weights   random" in text


def test_a_module_from_python_records_its_weights_hash(videos, tmp_path):
    from fastvqa.extract.models import weights_sha256

    module = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(9216, 4))
    run([videos / "a.mp4"], FRAMES, out=tmp_path / "s", model=module, progress=False)
    assert FeatureStore(tmp_path / "s").info()["weights"] == \
        f"module {weights_sha256(module)}"


def test_missing_torchvision_error_names_the_pip_install(monkeypatch):
    from fastvqa.extract.models import resolve

    monkeypatch.setitem(sys.modules, "torchvision", None)  # import fails
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    want = f"pip install 'torchvision=={major - 2}.{minor + 15}.*'"  # 2.13 -> 0.28
    with pytest.raises(InputError, match=want.replace(".", r"\.").replace("*", r"\*")):
        resolve("torchvision:r3d_18")


def test_checkpoint_weights_are_recorded_by_their_sha256(videos, tmp_path):
    pytest.importorskip("torchvision", exc_type=ImportError)
    from fastvqa.extract.models import resolve

    ckpt = tmp_path / "r18.pt"
    torch.save(resolve("torchvision:resnet18").module.state_dict(), ckpt)
    model = resolve(f"torchvision:resnet18@{ckpt}")
    assert model.weights == f"checkpoint {hashlib.sha256(ckpt.read_bytes()).hexdigest()}"


# ---------------------------------------------------------------- progress
class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_progress_off_a_terminal_prints_periodic_lines(capsys):
    from fastvqa._progress import Progress

    clock = Clock()
    bar = Progress(900, True, desc="extract", unit="video", interval=30, clock=clock)
    clock.t += 10
    bar.update(40)  # 10 s: under the interval, nothing
    clock.t += 20
    bar.update(80)  # 30 s, 120 done: 4 videos/s, 780 left: 195 s
    clock.t += 5
    bar.update(10)  # 5 s after the last line: nothing
    clock.t += 145
    bar.update(770)  # 180 s, all done: 5 videos/s
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["extract: 120/900 videos, 13.3%, 4.0 videos/s, eta 3m15s",
                     "extract: 900/900 videos, 100.0%, 5.0 videos/s, done in 3m00s"]


def test_progress_off_a_terminal_is_quiet_for_short_work(capsys):
    from fastvqa._progress import Progress

    clock = Clock()
    with Progress(5, True, desc="short", interval=30, clock=clock) as bar:
        clock.t += 29
        bar.update(5)
    assert capsys.readouterr().err == ""


def test_extract_off_a_terminal_logs_progress_lines(videos, tmp_path, monkeypatch, capsys):
    """Before: an 18-minute extract into a log printed nothing at all."""
    monkeypatch.setenv("FASTVQA_PROGRESS_INTERVAL", "0")
    run(videos, FRAMES, out=tmp_path / "s")
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b[" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("extracting:")]
    assert lines[0].startswith("extracting: 1/2 videos, 50.0%")
    assert lines[-1].startswith("extracting: 2/2 videos, 100.0%") and "done in" in lines[-1]
