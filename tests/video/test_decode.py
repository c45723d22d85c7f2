# SPDX-License-Identifier: Apache-2.0
"""Frame-exact decoding with PyAV: every sampler x codec x CFR/VFR x GOP, read back from the pixels."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("av")

from fastvqa.video import (Clips, Fps, Hierarchical, Outside, SecondWindows, Uniform, probe,  # noqa: E402
                           read_batch, read_frames)
from fastvqa.video.pyav_backend import decode_pyav  # noqa: E402
from tests.video.conftest import N_FRAMES, VIDEO_IDS  # noqa: E402
from tests.video.fixtures import read_index  # noqa: E402

SAMPLERS = {
    "fps1": Fps(1),
    "fps7.5": Fps(7.5),
    "uniform16": Uniform(16),
    "uniform9-linspace": Uniform(9, mode="linspace"),
    "clips16x4": Clips(16, 4),
    "clips4x10x3-pad": Clips(4, 10, 3, pad_last=True),
    "seconds16": SecondWindows(16),
    "seconds5@4fps": SecondWindows(5, fps=4),
    "hierarchical": Hierarchical((0.5, 1.2, 2.5), (2, 3, 5)),
    "outside": Outside((0.7, 1.9), 9),
    "uniform5-within": Uniform(5).within(0.9, 2.1),
    "fps3-within-tail": Fps(3).within(2.0),
}


def pixel_indices(frames):
    return [read_index(f) for f in frames]


@pytest.mark.parametrize("video_id", VIDEO_IDS)
def test_probe_matches_the_encoder(videos, video_id):
    spec = videos[video_id]
    index = probe(spec.path)
    assert len(index) == N_FRAMES
    assert (index.width, index.height) == (spec.width, spec.height)
    assert index.codec == spec.codec
    np.testing.assert_allclose(index.timestamps, spec.timestamps, atol=1e-3)
    assert index.keyframes[0] == 0
    if spec.gop == 1:
        assert index.keyframes.tolist() == list(range(N_FRAMES))
    elif spec.codec == "h264":  # x264 with scenecut off: exactly every gop frames
        assert index.keyframes.tolist() == list(range(0, N_FRAMES, spec.gop))


@pytest.mark.parametrize("sampler_id", list(SAMPLERS))
@pytest.mark.parametrize("video_id", VIDEO_IDS)
def test_frames_are_exactly_the_requested_ones(videos, video_id, sampler_id):
    spec = videos[video_id]
    sampler = SAMPLERS[sampler_id]
    out = read_frames(spec.path, sampler, backend="pyav")
    expected = sampler.indices(probe(spec.path))
    assert out.indices.dtype == np.int64 and out.indices.tolist() == expected.tolist()
    assert out.frames.shape == (len(expected), spec.height, spec.width, 3)
    assert out.frames.dtype == np.uint8
    assert pixel_indices(out.frames) == expected.tolist()
    np.testing.assert_allclose(out.timestamps, spec.timestamps[expected], atol=1e-3)


@pytest.mark.parametrize("video_id", ["h264-cfr-gop12", "h264-vfr-gop48", "vp9-vfr-gop5", "mjpeg-cfr-gop1"])
def test_any_order_with_repeats(videos, video_id):
    spec = videos[video_id]
    index = probe(spec.path)
    rng = np.random.default_rng(0)
    for _ in range(5):
        want = rng.integers(0, N_FRAMES, size=12)
        assert pixel_indices(decode_pyav(index, want)) == want.tolist()
    want = np.array([N_FRAMES - 1, 0, N_FRAMES - 1, 47, 48, 47])
    assert pixel_indices(decode_pyav(index, want)) == want.tolist()
    assert decode_pyav(index, np.zeros(0, np.int64)).shape == (0, spec.height, spec.width, 3)


def test_resize_crop_layout_dtype(h264_video):
    path = h264_video.path
    sampler = Uniform(6)
    resized = read_frames(path, sampler, size=24)  # 64x48 -> shorter side 24 -> 24x32
    assert resized.frames.shape == (6, 24, 32, 3)
    assert pixel_indices(resized.frames) == resized.indices.tolist()
    cropped = read_frames(path, sampler, size=24, crop=(20, 16))
    np.testing.assert_array_equal(cropped.frames, resized.frames[:, 2:22, 8:24])
    exact = read_frames(path, sampler, size=(30, 40))
    assert exact.frames.shape == (6, 30, 40, 3)
    assert pixel_indices(exact.frames) == exact.indices.tolist()
    nchw = read_frames(path, sampler, size=24, layout="NCHW", dtype="float32")
    assert nchw.frames.shape == (6, 3, 24, 32) and nchw.frames.dtype == np.float32
    np.testing.assert_allclose(nchw.frames, resized.frames.transpose(0, 3, 1, 2) / 255.0, atol=1e-6)
    # Antialiased shrink stays close to a box average of the full frame.
    full = read_frames(path, sampler).frames.astype(np.float64)
    box = full.reshape(6, 24, 2, 32, 2, 3).mean(axis=(2, 4))
    assert np.abs(box - resized.frames).mean() < 12
    with pytest.raises(ValueError, match="does not fit"):
        read_frames(path, sampler, size=24, crop=30)
    with pytest.raises(ValueError, match="layout"):
        read_frames(path, sampler, layout="HWC")


def test_explicit_indices_and_errors(h264_video):
    out = read_frames(h264_video.path, np.array([5, 3, 5]))
    assert pixel_indices(out.frames) == [5, 3, 5]
    with pytest.raises(ValueError, match="out of range"):
        read_frames(h264_video.path, np.array([N_FRAMES]))
    with pytest.raises(TypeError, match="sampler"):
        read_frames(h264_video.path, "uniform:4")


def test_read_batch_in_order_with_errors(videos, tmp_path):
    paths = [videos[v].path for v in VIDEO_IDS[:6]]
    bad = tmp_path / "empty.mp4"
    bad.write_bytes(b"")
    outs = read_batch(paths + [bad], Uniform(4), workers=3, on_error="return", progress=False)
    for path, out in zip(paths, outs):
        assert pixel_indices(out.frames) == Uniform(4).indices(probe(path)).tolist()
    from fastvqa.video import VideoError

    assert isinstance(outs[-1], VideoError) and "empty" in str(outs[-1])
    with pytest.raises(VideoError, match="empty"):
        read_batch([bad] + paths, Uniform(4), workers=2, progress=False)


def test_read_batch_progress_counter(videos, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name.startswith("tqdm"):
            raise ImportError("no tqdm here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    paths = [videos[v].path for v in VIDEO_IDS[:3]]
    read_batch(paths, Fps(1), workers=2, progress=True)
    assert capsys.readouterr().err == ""  # stderr is not a terminal: nothing in the log
    import fastvqa._progress

    monkeypatch.setattr(fastvqa._progress, "stderr_is_terminal", lambda: True)
    read_batch(paths, Fps(1), workers=2, progress=True)
    assert "decoding: 3/3" in capsys.readouterr().err


def test_auto_backend_without_dali_is_pyav(monkeypatch):
    from fastvqa.video import api

    monkeypatch.setattr(api, "_dali_available", lambda: False)
    assert api.resolve_backend("auto") == "pyav"
    monkeypatch.setattr(api, "_dali_available", lambda: True)
    monkeypatch.setattr(api, "_gpu_visible", lambda: False)
    assert api.resolve_backend("auto") == "pyav"
    assert api.resolve_backend("auto", "cpu") == "pyav"
    with pytest.raises(ValueError, match="backend"):
        api.resolve_backend("ffmpeg")


def test_dataset_shards_by_worker_and_rank(videos, monkeypatch):
    torch = pytest.importorskip("torch")
    from fastvqa.video import VideoDataset
    from fastvqa.video import dataset as ds_mod

    paths = [str(videos[v].path) for v in VIDEO_IDS[:5]]
    ds = VideoDataset(paths, Uniform(3), size=24)
    items = list(ds)
    assert [it["path"] for it in items] == paths
    assert items[0]["frames"].shape == (3, 24, 32, 3) and items[0]["frames"].dtype == torch.uint8
    assert items[0]["indices"].tolist() == Uniform(3).indices(probe(paths[0])).tolist()
    # Two ranks x one worker: disjoint, covering.
    seen = []
    for rank in (0, 1):
        monkeypatch.setattr(ds_mod, "_rank_world", lambda group=None, r=rank: (r, 2))
        seen.append([it["path"] for it in ds])
    assert seen == [paths[0::2], paths[1::2]]
    monkeypatch.setattr(ds_mod, "_rank_world", lambda group=None: (0, 1))
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    assert sorted(it["path"] for it in loader) == sorted(paths)
