# SPDX-License-Identifier: Apache-2.0
"""Frame-exact decoding with PyAV: every sampler x codec x CFR/VFR x GOP, read back from the pixels."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("av")

from fastvqa.video import (Clips, Fps, Hierarchical, Outside, SecondWindows, Uniform, probe,  # noqa: E402
                           read_batch, read_frames)
from fastvqa.video.pyav_backend import decode_pyav  # noqa: E402
from tests.video.conftest import N_FRAMES, VIDEO_IDS  # noqa: E402
from tests.video.fixtures import counting_frames, make_video, read_index, suffix, vfr_pts  # noqa: E402

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


_SEQUENTIAL = {}


def sequential_decode(path):
    """Every frame of ``path`` in display order, from one plain PyAV pass from
    the start (no seek): the reference a seeking decoder must equal exactly."""
    import av

    key = str(path)
    if key not in _SEQUENTIAL:
        with av.open(key) as c:
            _SEQUENTIAL[key] = np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])
    return _SEQUENTIAL[key]


def relative(ts):
    return np.asarray(ts) - ts[0]


@pytest.mark.parametrize("video_id", VIDEO_IDS)
def test_probe_matches_the_encoder(videos, video_id):
    spec = videos[video_id]
    index = probe(spec.path)
    assert len(index) == N_FRAMES
    assert (index.width, index.height) == (spec.width, spec.height)
    assert index.codec == spec.codec
    if spec.path.suffix in (".ts", ".mpg"):  # the muxers delay the start (0.07 s, 0.5 s)
        assert index.timestamps[0] > 0
        np.testing.assert_allclose(relative(index.timestamps), spec.timestamps, atol=1e-3)
    else:
        np.testing.assert_allclose(index.timestamps, spec.timestamps, atol=1e-3)
    assert index.keyframes[0] == 0
    if spec.gop == 1:
        assert index.keyframes.tolist() == list(range(N_FRAMES))
    elif spec.codec == "h264":  # x264 with scenecut off: exactly every gop frames
        assert index.keyframes.tolist() == list(range(0, N_FRAMES, spec.gop))


@pytest.mark.parametrize("codec", ["h264", "mjpeg", "h264-ts"])
@pytest.mark.parametrize("rate", [Fraction(10), Fraction(30000, 1001)], ids=["10", "ntsc"])
def test_probe_reports_the_exact_rate(tmp_path, codec, rate):
    """Before: fps 9.999999999999998 for a 10 fps MP4 (measured from float
    timestamps in 1/10240 s), 29.9587 for 30000/1001 in Matroska's 1 ms
    timestamps; now the container's rational rate, and fps is float(rate)."""
    spec = make_video(tmp_path / f"v{suffix(codec)}", codec, n=12, fps=rate, gop=4)
    index = probe(spec.path)
    assert index.rate == rate and isinstance(index.rate, Fraction)
    assert index.fps == (10.0 if rate == 10 else 29.97002997002997)
    assert type(index.fps) is float


def test_probe_rate_of_a_variable_frame_rate_file(tmp_path):
    """A VFR file: rate is the average FFmpeg states (avg_frame_rate), exact,
    not its r_frame_rate guess (2000 here)."""
    import av

    spec = make_video(tmp_path / "vfr.mp4", n=20, pts=vfr_pts(20))
    index = probe(spec.path)
    with av.open(str(spec.path)) as c:
        want = c.streams.video[0].average_rate
    assert 10 < want < 30 and want.denominator > 1  # a true average, not a round guess
    assert index.rate == want and index.fps == float(want)


@pytest.mark.parametrize("sampler_id", list(SAMPLERS))
@pytest.mark.parametrize("video_id", VIDEO_IDS)
def test_frames_are_exactly_the_requested_ones(videos, video_id, sampler_id):
    spec = videos[video_id]
    sampler = SAMPLERS[sampler_id]
    out = read_frames(spec.path, sampler, backend="pyav")
    flat = sampler.indices(probe(spec.path))
    # Clip samplers keep their clip axis: (n_clips, frames_per_clip, H, W, 3).
    clip = getattr(sampler, "length", None) or getattr(sampler, "window", None)
    lead = (len(flat) // clip, clip) if clip else (len(flat),)
    assert out.indices.dtype == np.int64 and out.indices.shape == lead
    assert out.indices.reshape(-1).tolist() == flat.tolist()
    assert out.data.shape == lead + (spec.height, spec.width, 3)
    assert out.data.dtype == np.uint8
    data = out.data.reshape((-1, spec.height, spec.width, 3))
    assert pixel_indices(data) == flat.tolist()
    # Bit-exact against a sequential decode of the whole file.
    reference = sequential_decode(spec.path)
    assert len(reference) == N_FRAMES
    np.testing.assert_array_equal(data, reference[flat])
    assert out.pts_seconds.shape == out.duration_seconds.shape == lead
    np.testing.assert_allclose(relative(np.r_[probe(spec.path).timestamps[0],
                                              out.pts_seconds.reshape(-1)]),
                               np.r_[0.0, spec.timestamps[flat]], atol=1e-3)
    # Durations: the encoder's frame intervals (the last one: the median interval).
    gaps = np.diff(spec.timestamps)
    want = np.append(gaps, np.median(gaps))[flat]
    np.testing.assert_allclose(out.duration_seconds.reshape(-1), want, atol=1e-3)


@pytest.mark.parametrize("video_id", ["h264-cfr-gop12", "h264-vfr-gop48", "vp9-vfr-gop5",
                                      "mjpeg-cfr-gop1", "h264-ts-cfr-gop12", "h264-ts-vfr-gop48",
                                      "mpeg2-ps-cfr-gop12"])
def test_any_order_with_repeats(videos, video_id):
    spec = videos[video_id]
    index = probe(spec.path)
    reference = sequential_decode(spec.path)
    rng = np.random.default_rng(0)
    for _ in range(5):
        want = rng.integers(0, N_FRAMES, size=12)
        np.testing.assert_array_equal(decode_pyav(index, want), reference[want])
    want = np.array([N_FRAMES - 1, 0, N_FRAMES - 1, 47, 48, 47])
    np.testing.assert_array_equal(decode_pyav(index, want), reference[want])
    # Every single frame on its own: each needs a seek (to its keyframe).
    for w in range(N_FRAMES):
        np.testing.assert_array_equal(decode_pyav(index, [w])[0], reference[w])
    assert decode_pyav(index, np.zeros(0, np.int64)).shape == (0, spec.height, spec.width, 3)


def test_resize_crop_layout_dtype(h264_video):
    path = h264_video.path
    sampler = Uniform(6)
    resized = read_frames(path, sampler, size=24)  # 64x48 -> shorter side 24 -> 24x32
    assert resized.data.shape == (6, 24, 32, 3)
    assert pixel_indices(resized.data) == resized.indices.tolist()
    cropped = read_frames(path, sampler, size=24, crop=(20, 16))
    np.testing.assert_array_equal(cropped.data, resized.data[:, 2:22, 8:24])
    exact = read_frames(path, sampler, size=(30, 40))
    assert exact.data.shape == (6, 30, 40, 3)
    assert pixel_indices(exact.data) == exact.indices.tolist()
    nchw = read_frames(path, sampler, size=24, layout="NCHW", dtype="float32")
    assert nchw.data.shape == (6, 3, 24, 32) and nchw.data.dtype == np.float32
    np.testing.assert_allclose(nchw.data, resized.data.transpose(0, 3, 1, 2) / 255.0, atol=1e-6)
    # Antialiased shrink stays close to a box average of the full frame.
    full = read_frames(path, sampler).data.astype(np.float64)
    box = full.reshape(6, 24, 2, 32, 2, 3).mean(axis=(2, 4))
    assert np.abs(box - resized.data).mean() < 12
    with pytest.raises(ValueError, match="does not fit"):
        read_frames(path, sampler, size=24, crop=30)
    with pytest.raises(ValueError, match="layout"):
        read_frames(path, sampler, layout="HWC")


def test_explicit_indices_and_errors(h264_video):
    out = read_frames(h264_video.path, np.array([5, 3, 5]))
    assert pixel_indices(out.data) == [5, 3, 5]
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
        assert pixel_indices(out.data) == Uniform(4).indices(probe(path)).tolist()
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


def _rotated_video(path, degrees, n=24):
    """H.264 index frames with a display matrix asking for ``degrees`` (CCW)."""
    from fractions import Fraction

    import av

    from tests.video.fixtures import draw_index

    with av.open(str(path), mode="w") as out:
        stream = out.add_stream("libx264", rate=24)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.codec_context.options = {"g": "8", "bf": "2", "preset": "veryfast"}
        if degrees is not None:
            stream.set_display_rotation(degrees)
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(draw_index(i, 64, 48), format="rgb24")
            frame = frame.reformat(format="yuv420p")
            frame.pts, frame.time_base = i, Fraction(1, 24)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


@pytest.mark.parametrize("degrees, turns", [(None, 0), (0, 0), (90, 1), (180, 2), (-90, 3),
                                            (270, 3)])
def test_rotation_metadata(tmp_path, degrees, turns):
    """Default: coded orientation (the frame's own pixels, rotation ignored, as
    documented). rotate=True: np.rot90 by the display matrix's quarter turns
    (counter-clockwise), size and crop in the displayed orientation."""
    from fastvqa.video import display_rotation

    path = _rotated_video(tmp_path / f"rot{degrees}.mp4", degrees)
    index = probe(path)
    assert (index.width, index.height) == (64, 48)  # probe reports the coded size
    assert display_rotation(path) == 90 * turns
    want = np.array([5, 0, 17, 5])
    coded = read_frames(path, want, backend="pyav")
    assert coded.data.shape == (4, 48, 64, 3)
    assert pixel_indices(coded.data) == want.tolist()
    shown = read_frames(path, want, backend="pyav", rotate=True)
    np.testing.assert_array_equal(shown.data, np.rot90(coded.data, turns, axes=(1, 2)))
    # size and crop refer to what is shown: 24 on the shorter side, then 20x16 (HxW).
    small = read_frames(path, want, backend="pyav", rotate=True, size=24, crop=(20, 16))
    expect_hw = (20, 16)
    assert small.data.shape[1:3] == expect_hw
    # The shown shorter side is 24 either way: coded 48x64 (HxW) becomes 24x32, then turns.
    resized_coded = read_frames(path, want, backend="pyav", size=(24, 32))
    turned = np.rot90(resized_coded.data, turns, axes=(1, 2))
    h, w = turned.shape[1:3]
    top, left = int(round((h - 20) / 2)), int(round((w - 16) / 2))
    np.testing.assert_array_equal(small.data, turned[:, top:top + 20, left:left + 16])
    with pytest.raises(ValueError, match="PyAV backend only"):
        read_frames(path, want, backend="dali", rotate=True)


@pytest.mark.parametrize("video_id", [v for v in VIDEO_IDS if not v.startswith("mpeg2-ps")])
def test_seeks_are_trusted_where_timestamps_are_exact(videos, video_id, monkeypatch):
    """MP4, Matroska, WebM and MPEG-TS keep the probe's timestamps after a seek:
    decoding never falls back to a pass from the start (which would be exact
    but slow)."""
    from fastvqa.video import pyav_backend

    def no_reopen(self):
        raise AssertionError("fell back to a sequential pass")

    monkeypatch.setattr(pyav_backend._Reader, "reopen", no_reopen)
    index = probe(videos[video_id].path)
    want = np.array([90, 5, 60, 30, 75, 45, 15])
    np.testing.assert_array_equal(decode_pyav(index, want),
                                  sequential_decode(videos[video_id].path)[want])


@pytest.mark.parametrize("video_id", ["h264-cfr-gop12", "h264-vfr-gop12", "h264-ts-cfr-gop12",
                                      "h264-ts-vfr-gop48", "vp9-cfr-gop5"])
def test_a_seek_lands_on_its_own_keyframe(videos, video_id, monkeypatch):
    """Seeking MP4 by dts lands one keyframe early (a GOP decoded for nothing);
    MPEG-TS by pts lands past it: each demuxer gets the timestamp it seeks by."""
    decoded = counting_frames(monkeypatch)
    index = probe(videos[video_id].path)
    want = index.keyframes[1::2] if len(index.keyframes) > 3 else index.keyframes[1:]
    assert len(want) >= 1  # every other keyframe: a seek before each
    np.testing.assert_array_equal(decode_pyav(index, want),
                                  sequential_decode(videos[video_id].path)[want])
    assert len(decoded) <= 3 * len(want), len(decoded)


def test_mpeg_ps_at_dvd_like_sizes_seeks_without_falling_back(tmp_path, monkeypatch):
    """MPEG-2 in MPEG-PS with frames large enough to start their own PES packet
    (as on DVDs): every seek is trusted (no pass from the start) and exact."""
    from fractions import Fraction

    import av

    from fastvqa.video import pyav_backend
    from tests.video.fixtures import draw_index

    path = tmp_path / "dvd.mpg"
    rng = np.random.default_rng(0)
    with av.open(str(path), "w", format="mpeg") as out:
        stream = out.add_stream("mpeg2video", rate=25)
        stream.width, stream.height, stream.pix_fmt = 352, 288, "yuv420p"
        stream.codec_context.options = {"g": "12", "bf": "2", "qscale": "2"}
        for i in range(N_FRAMES):
            img = draw_index(i, 352, 288).astype(np.int16) + rng.integers(-20, 20, (288, 352, 1))
            frame = av.VideoFrame.from_ndarray(np.clip(img, 0, 255).astype(np.uint8),
                                               format="rgb24").reformat(format="yuv420p")
            frame.pts, frame.time_base = i, Fraction(1, 25)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)

    def no_reopen(self):
        raise AssertionError("fell back to a sequential pass")

    monkeypatch.setattr(pyav_backend._Reader, "reopen", no_reopen)
    index = probe(path)
    reference = sequential_decode(path)
    assert len(index) == len(reference) == N_FRAMES
    want = np.array([90, 5, 60, 30, 75, 45, 15, 95, 0])
    np.testing.assert_array_equal(decode_pyav(index, want), reference[want])
    for w in range(0, N_FRAMES, 7):
        np.testing.assert_array_equal(decode_pyav(index, [w])[0], reference[w])
