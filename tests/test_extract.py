# SPDX-License-Identifier: Apache-2.0
"""fastvqa.extract: recipes, the feature store, the local engine and the CLI,
on videos made by the demo's generator, with random-init models."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("av")
pytest.importorskip("safetensors")
torch = pytest.importorskip("torch")

from fastvqa.errors import InputError  # noqa: E402
from fastvqa.extract import FeatureStore, Recipe, StoreError, run  # noqa: E402
from fastvqa.extract.engine import parse_shard  # noqa: E402
from fastvqa.extract.models import resolve  # noqa: E402
from fastvqa.extract.recipes import get_recipe  # noqa: E402

FPS = 10  # the demo generator's frame rate (fastvqa.demo.synth.NATIVE_FPS)

FRAMES = Recipe(name="test-frames", sampler="fps:2", size=64, crop=(48, 64),
                mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), model="fastvqa:tiny-frames",
                batch=3, time="grid")
CLIPS = Recipe(name="test-clips", sampler="clips:8,4", size=(32, 40), input="clips",
               model="fastvqa:tiny-clips", batch=2, dtype="float16", time="frames")


def _write_videos(folder: Path, durations: dict) -> dict:
    from fastvqa.demo.synth import encode_video, make_scene

    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i, (name, duration) in enumerate(durations.items()):
        path = folder / f"{name}.mp4"
        path.parent.mkdir(parents=True, exist_ok=True)
        encode_video(path, make_scene(np.random.default_rng(i), duration), duration)
        paths[name] = path
    return paths


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    root = tmp_path_factory.mktemp("extract_videos")
    _write_videos(root, {"a": 6.0, "b": 5.0, "sub/c": 7.0, "d": 5.0})
    return root


def _files(store: Path) -> dict:
    return {p.relative_to(store).as_posix(): p.read_bytes()
            for p in sorted(store.rglob("*")) if p.is_file()}


def test_recipe_hash_is_sha256_of_the_canonical_json():
    fields = {"name": "test-clips", "sampler": "clips:8,4", "size": [32, 40], "crop": None,
              "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0], "input": "clips",
              "model": "fastvqa:tiny-clips", "layer": None, "dtype": "float16", "batch": 2,
              "time": "frames"}  # not "source": a citation decides no number
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    assert CLIPS.hash == hashlib.sha256(text.encode()).hexdigest()
    assert Recipe.from_dict(CLIPS.to_dict()) == CLIPS
    assert CLIPS.replace(batch=4).hash != CLIPS.hash
    assert CLIPS.replace(source="Le et al. 2021").hash == CLIPS.hash


@pytest.mark.parametrize("changes, message", [
    ({"input": "clips"}, "gives frames, but input is 'clips'"),
    ({"sampler": "uniform:8"}, "time 'grid' needs an fps: or seconds: sampler"),
    ({"std": (1.0, 0.0, 1.0)}, "std must be > 0"),
    ({"dtype": "float64"}, "dtype must be one of"),
    ({"batch": 0}, "batch must be an integer >= 1"),
])
def test_recipe_refuses_inconsistent_fields(changes, message):
    with pytest.raises(InputError, match=message):
        FRAMES.replace(**changes)


def test_builtin_recipes_cite_their_source_and_validate():
    from fastvqa.extract import RECIPES

    assert {"wildqa-i3d", "dvd-resnext3d", "devi-clip", "qvhighlights-clip"} <= set(RECIPES)
    for recipe in RECIPES.values():
        assert recipe.source and recipe.model
        assert Recipe.from_dict(recipe.to_dict()).hash == recipe.hash


def _reference_features(path: Path, recipe: Recipe) -> np.ndarray:
    """The recipe by hand: decode, scale and normalise in float64, lay out as
    the model expects, run the same random-init model one item at a time."""
    from fastvqa.video import read_frames
    from fastvqa.video.samplers import from_spec

    frames = read_frames(path, from_spec(recipe.sampler), size=recipe.size, crop=recipe.crop)
    x = frames.data.astype(np.float64) / 255.0
    x = (x - np.array(recipe.mean)) / np.array(recipe.std)
    x = np.moveaxis(x, -1, 1)  # channels after the item axis: (n, 3, H, W) / (n, 3, T, H, W)
    model = resolve(recipe.model).fn
    with torch.no_grad():
        out = [model(torch.from_numpy(x[i:i + 1]).float()).reshape(-1).numpy()
               for i in range(len(x))]
    return np.stack(out)


def test_frames_recipe_store_values_shapes_and_grid_times(videos, tmp_path):
    out = tmp_path / "store"
    summary = run(videos, FRAMES, out=out, workers=2, progress=False)
    assert (summary.written, summary.existing, summary.failed) == (4, 0, 0)
    store = FeatureStore(out)
    assert store.videos() == ["a", "b", "d", "sub/c"]
    got = store.load("a")
    # fps:2 over 6 s: 12 frames; grid times [k/2, (k+1)/2)
    assert got.features.shape == (12, 16) and got.features.dtype == np.float32
    np.testing.assert_array_equal(got.start, np.arange(12) / 2)
    np.testing.assert_array_equal(got.end, np.arange(1, 13) / 2)
    np.testing.assert_allclose(got.features, _reference_features(videos / "a.mp4", FRAMES),
                               rtol=1e-4, atol=1e-5)
    rec = got.record
    assert rec["status"] == "ok" and rec["recipe_hash"] == FRAMES.hash
    assert rec["source"] == "a.mp4" and rec["frames"] == 12
    assert rec["source_sha256"] == hashlib.sha256((videos / "a.mp4").read_bytes()).hexdigest()
    assert store.load("sub/c").features.shape == (14, 16)
    assert summary.items == 12 + 10 + 14 + 10


def test_clips_recipe_times_are_the_clip_frames_extent(videos, tmp_path):
    out = tmp_path / "store"
    run([videos / "b.mp4"], CLIPS, out=out, progress=False)
    got = FeatureStore(out).load("b")
    # 50 frames at 10 fps, clips of 8 every 4: floor((50 - 8) / 4) + 1 = 11 clips,
    # clip k = frames 4k .. 4k + 7, shown from 4k/10 s to (4k + 8)/10 s
    k = np.arange(11)
    assert got.features.shape == (11, 16) and got.features.dtype == np.float16
    np.testing.assert_allclose(got.start, 4 * k / FPS, atol=1e-9)
    np.testing.assert_allclose(got.end, (4 * k + 8) / FPS, atol=1e-9)
    ref = _reference_features(videos / "b.mp4", CLIPS).astype(np.float16)
    np.testing.assert_allclose(got.features.astype(np.float32), ref.astype(np.float32),
                               rtol=2e-3, atol=2e-3)


def test_rerun_skips_done_videos_and_other_recipe_or_model_is_refused(videos, tmp_path):
    out = tmp_path / "store"
    run(videos, FRAMES, out=out, progress=False)
    before = _files(out)
    again = run(videos, FRAMES, out=out, progress=False)
    assert (again.written, again.existing) == (0, 4)
    with pytest.raises(StoreError, match="another recipe"):
        run(videos, FRAMES.replace(batch=4), out=out, progress=False)
    with pytest.raises(StoreError, match="another model"):
        run(videos, FRAMES, out=out, model=torch.nn.Sequential(torch.nn.Flatten()),
            progress=False)
    assert _files(out) == before


def test_shards_union_equals_one_run_byte_for_byte(videos, tmp_path):
    whole = tmp_path / "whole"
    run(videos, FRAMES, out=whole, progress=False)
    union = {}
    for i in range(3):
        part = tmp_path / f"shard{i}"
        summary = run(videos, FRAMES, out=part, shard=f"{i}/3", progress=False)
        files = _files(part)
        assert summary.written == len(files) - 1  # store.json
        union.update(files)
    assert union == _files(whole)


def test_shard_from_torchrun_environment(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    assert parse_shard(None) == (3, 4)
    assert parse_shard("1/2") == (1, 2)
    for bad in ("2/2", "x/3", "1", "-1/3"):
        with pytest.raises(InputError, match="shard"):
            parse_shard(bad)


def test_undecodable_video_is_recorded_skipped_and_retried(videos, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.mp4").write_bytes((videos / "a.mp4").read_bytes())
    (folder / "broken.mp4").write_bytes(b"\x00not a video" * 100)
    out = tmp_path / "store"
    first = run(folder, FRAMES, out=out, progress=False)
    assert (first.written, first.failed) == (1, 1)
    store = FeatureStore(out)
    failures = store.failures()
    assert list(failures) == ["broken"] and failures["broken"]["status"] == "failed"
    assert "broken.mp4" in failures["broken"]["error"]
    second = run(folder, FRAMES, out=out, progress=False)
    assert (second.written, second.failed, second.skipped_failed) == (0, 0, 1)
    third = run(folder, FRAMES, out=out, retry_failed=True, progress=False)
    assert (third.failed, third.skipped_failed) == (1, 0)
    assert store.info()["failed"] == 1 and store.info()["videos"] == 1


def test_model_whose_output_size_changes_stops_the_run(videos, tmp_path):
    calls = []

    def unstable(x):
        calls.append(1)
        width = 3 if len(calls) == 1 else 4
        return torch.zeros(x.shape[0], width)

    out = tmp_path / "store"
    with pytest.raises(InputError, match="output size must not change"):
        run(videos, FRAMES.replace(batch=100), out=out, model=unstable, model_name="unstable",
            workers=1, progress=False)
    assert FeatureStore(out).videos() == ["a"]  # the first video, complete


def test_bad_inputs_are_one_line_errors(videos, tmp_path):
    with pytest.raises(InputError, match="no such video"):
        run([tmp_path / "missing.mp4"], FRAMES, out=tmp_path / "s1", progress=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no video files"):
        run(empty, FRAMES, out=tmp_path / "s2", progress=False)
    with pytest.raises(InputError, match="unknown recipe"):
        run(videos, "no-such-recipe", out=tmp_path / "s3", progress=False)
    with pytest.raises(InputError, match="would download"):
        run(videos, FRAMES, out=tmp_path / "s4", model="open_clip:ViT-B-32", progress=False)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="not empty"):
        run(videos, FRAMES, out=taken, progress=False)
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]


def _cli(*args, **kwargs):
    # The fastvqa these tests imported (an installed wheel, or a built checkout).
    import fastvqa

    env = {**os.environ, "PYTHONPATH": str(Path(fastvqa.__file__).resolve().parents[1])}
    return subprocess.Popen([sys.executable, "-m", "fastvqa.cli", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_cli_killed_run_resumes_to_the_same_bytes(tmp_path):
    folder = tmp_path / "in"
    _write_videos(folder, {f"v{i}": 5.0 for i in range(6)})
    clean = tmp_path / "clean"
    proc = _cli("extract", folder, "--recipe", "wildqa-i3d", "--model", "fastvqa:tiny-clips",
                "--out", clean, "--workers", "1", "--no-progress")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "6 videos written" in out

    store = tmp_path / "killed"
    proc = _cli("extract", folder, "--recipe", "wildqa-i3d", "--model", "fastvqa:tiny-clips",
                "--out", store, "--workers", "1", "--no-progress")
    deadline = time.monotonic() + 600
    while not list((store / "features").glob("*.safetensors")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    done = sorted(p.name for p in (store / "features").glob("*.safetensors"))
    assert 1 <= len(done) < 6, "the kill came too late to test resuming"
    for name in done:  # what exists is complete
        assert (store / "features" / name).read_bytes() == (clean / "features" / name).read_bytes()
    (store / "features" / ".v5.safetensors.0123456789ab.part").write_bytes(b"half")
    assert "v5.safetensors" not in done  # a video left to do: its leftover goes
    proc = _cli("extract", folder, "--recipe", "wildqa-i3d", "--model", "fastvqa:tiny-clips",
                "--out", store, "--workers", "1", "--no-progress")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert f"{len(done)} already in the store" in out
    assert _files(store) == _files(clean)


def test_cli_store_info_and_failed_exit_status(videos, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "b.mp4").write_bytes((videos / "b.mp4").read_bytes())
    (folder / "bad.mkv").write_bytes(b"junk")
    out = tmp_path / "store"
    proc = _cli("extract", folder, "--recipe", "imagenet-frames-1fps", "--model",
                "fastvqa:tiny-frames", "--out", out, "--no-progress")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err  # a video failed: recorded, and the status says so
    proc = _cli("store", "info", out, "--json")
    stdout, err = proc.communicate(timeout=120)
    info = json.loads(stdout)
    assert (info["videos"], info["failed"], info["features"]) == (1, 1, 5)
    assert info["recipe"] == "imagenet-frames-1fps" and info["feature_shape"] == [16]
    proc = _cli("extract", tmp_path / "nothing", "--recipe", "devi-clip", "--out",
                tmp_path / "s")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert err.strip().splitlines() == [f"fastvqa extract: error: {tmp_path / 'nothing'}: no "
                                        "such video file or folder"]


@pytest.mark.parametrize("name, shape, start, end", [
    # 50 frames at 10 fps; clip k = frames [4k, 4k+15]: 9 clips, [0.4k, 0.4k+1.6) s
    ("dvd-resnext3d", (9, 512), 0.4 * np.arange(9), 0.4 * np.arange(9) + 1.6),
    # one frame per second of 5 s, each standing for [k, k+1) s
    ("imagenet-frames-1fps", (5, 2048), np.arange(5.0), np.arange(5.0) + 1),
])
def test_builtin_recipes_with_their_random_init_torchvision_models(videos, tmp_path, name,
                                                                   shape, start, end):
    pytest.importorskip("torchvision", exc_type=ImportError)
    run([videos / "d.mp4"], name, out=tmp_path / "store", progress=False)
    store = FeatureStore(tmp_path / "store")
    got = store.load("d")
    assert got.features.shape == shape and got.features.dtype == np.float32
    assert np.isfinite(got.features).all() and got.features.std() > 0
    np.testing.assert_allclose(got.start, start, atol=1e-9)
    np.testing.assert_allclose(got.end, end, atol=1e-9)
    assert store.info()["recipe"] == name


def test_torchvision_model_loads_a_local_checkpoint(videos, tmp_path):
    torchvision = pytest.importorskip("torchvision", exc_type=ImportError)
    torch.manual_seed(1)  # not the seed 0 that a plain spec builds with
    other = torchvision.models.resnet18(weights=None)
    torch.save(other.state_dict(), tmp_path / "r18.pt")
    loaded = resolve(f"torchvision:resnet18@{tmp_path / 'r18.pt'}").module
    plain = resolve("torchvision:resnet18").module
    assert torch.equal(loaded.conv1.weight, other.conv1.weight)
    assert not torch.equal(plain.conv1.weight, other.conv1.weight)
    recipe = get_recipe("imagenet-frames-1fps")
    run([videos / "d.mp4"], recipe, model=f"torchvision:resnet18@{tmp_path / 'r18.pt'}",
        out=tmp_path / "a", progress=False)
    run([videos / "d.mp4"], recipe, model="torchvision:resnet18", out=tmp_path / "b",
        progress=False)
    a, b = (FeatureStore(tmp_path / s).load("d").features for s in "ab")
    assert a.shape == b.shape == (5, 512) and not np.allclose(a, b)
    with pytest.raises(InputError, match="weights would be downloaded"):
        resolve("torchvision:resnet18:IMAGENET1K_V1")


def test_spans_to_steps_by_hand():
    from fastvqa.extract import spans_to_steps

    start = np.arange(6) / 2  # steps [0, .5), [.5, 1), ..., [2.5, 3)
    end = start + 0.5
    spans = [[1.2, 2.6], [0.0, 0.5], [0.7, 0.7], [3.0, 4.0], [-2.0, -1.0], [np.nan, 1.0],
             [2.9, 9.0]]
    want = [[2, 5], [0, 0], [1, 1], [-1, -1], [-1, -1], [-1, -1], [5, 5]]
    np.testing.assert_array_equal(spans_to_steps(spans, start, end), want)


def test_store_dataset_batches_train_a_span_head(videos, tmp_path):
    from fastvqa.data import QARecord
    from fastvqa.extract import StoreDataset
    from fastvqa.nn import SpanHead

    out = tmp_path / "store"
    run(videos, FRAMES, out=out, progress=False)
    records = [QARecord("a", "q1", spans=np.array([[1.2, 2.6]])),
               QARecord("b", "q2", spans=np.array([[0.0, 1.0], [3.0, 4.5]])),
               QARecord("sub/c", "q3", spans=np.array([[5.0, 6.9]])),
               QARecord("gone", "q4", spans=np.array([[0.0, 1.0]]))]
    with pytest.warns(UserWarning, match="1 of 4 records have no features"):
        data = StoreDataset(out, records)
    assert len(data) == 3
    loader = torch.utils.data.DataLoader(data, batch_size=3, collate_fn=StoreDataset.collate)
    batch = next(iter(loader))
    # fps:2 grid steps: a 12, b 10, sub/c 14
    assert batch["features"].shape == (3, 14, 16) and batch["lengths"].tolist() == [12, 10, 14]
    assert batch["mask"].sum(1).tolist() == [12, 10, 14]
    assert batch["features"][1, 10:].abs().sum() == 0 and torch.isnan(batch["start"][0, 12:]).all()
    assert batch["gold"].tolist() == [[[2, 5], [-1, -1]], [[0, 1], [6, 8]], [[10, 13], [-1, -1]]]
    assert batch["videos"] == ["a", "b", "sub/c"] and batch["records"][2].question_id == "q3"

    torch.manual_seed(0)
    head = SpanHead(16)
    opt = torch.optim.Adam(head.parameters(), lr=0.05)
    losses = []
    for _ in range(60):
        s, e = head(batch["features"] * 10)
        loss = head.loss(s, e, batch["gold"], batch["lengths"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    # Near-uniform logits at first: -log(1/n) for the start and the end over each
    # row's own n steps (padding masked), averaged over rows and gold spans.
    uniform = np.mean([2 * np.log(12), 2 * np.log(10), 2 * np.log(14)])
    assert abs(losses[0] - uniform) < 0.1
    assert losses[-1] < losses[0] - 0.3  # it learns from the stored features


def test_store_dataset_without_matching_records_is_an_error(videos, tmp_path):
    from fastvqa.data import QARecord
    from fastvqa.extract import StoreDataset

    out = tmp_path / "store"
    run([videos / "d.mp4"], FRAMES, out=out, progress=False)
    with pytest.raises(InputError, match="none of the 1 records"):
        StoreDataset(out, [QARecord("zzz", "q")])
    item = StoreDataset(out)[0]
    assert item["video"] == "d" and item["features"].dtype == torch.float32
    assert item["gold"].shape == (0, 2) and item["record"] is None


@pytest.fixture
def local_ray():
    """A real Ray on this machine (two CPUs), stopped after the test."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_engine_store_equals_the_local_one(videos, tmp_path, local_ray):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.mp4").write_bytes((videos / f"{name}.mp4").read_bytes())
    (folder / "broken.mp4").write_bytes(b"\x00" * 64)
    local = tmp_path / "local"
    run(folder, CLIPS, out=local, progress=False)
    remote = tmp_path / "ray"
    summary = run(folder, CLIPS, out=remote, engine="ray", workers=1, progress=False)
    assert (summary.written, summary.failed) == (2, 1)
    assert summary.items == FeatureStore(local).info()["features"]
    assert _files(remote) == _files(local)  # features, failure record and header, byte for byte
    again = run(folder, CLIPS, out=remote, engine="ray", progress=False)
    assert (again.written, again.existing, again.skipped_failed) == (0, 2, 1)


def test_model_device_is_checked_before_any_work(videos, tmp_path):
    with pytest.raises(InputError, match="not a device"):
        run(videos, FRAMES, out=tmp_path / "s1", device="gpu", progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="torch sees no CUDA GPU"):
            run(videos, FRAMES, out=tmp_path / "s2", device="cuda", progress=False)
    assert not (tmp_path / "s1").exists() and not (tmp_path / "s2").exists()
    run([videos / "d.mp4"], FRAMES, out=tmp_path / "s3", device="cpu", progress=False)
    assert FeatureStore(tmp_path / "s3").record("d")["device"] == "cpu"


def test_a_run_removes_only_its_own_videos_leftovers(videos, tmp_path):
    out = tmp_path / "store"
    run([videos / "a.mp4"], FRAMES, out=out, progress=False)
    mine = out / "features" / ".b.safetensors.00112233aabb.part"
    other = out / "features" / ".elsewhere.safetensors.00112233aabb.part"  # another shard's
    mine.write_bytes(b"half")
    other.write_bytes(b"in flight")
    summary = run([videos / "a.mp4", videos / "b.mp4"], FRAMES, out=out, progress=False)
    assert (summary.written, summary.existing) == (1, 1)
    assert not mine.exists() and other.read_bytes() == b"in flight"
    assert FeatureStore(out).videos() == ["a", "b"]
