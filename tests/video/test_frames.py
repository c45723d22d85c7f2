# SPDX-License-Identifier: Apache-2.0
"""``Frames`` (fixed fields, clip axis, layouts, durations) and ``VideoDecoder``.

Before: ``read_frames`` returned ``Frames(frames, timestamps, indices)`` whose
``frames`` was NumPy or a CUDA tensor depending on which backend ``auto``
found on the machine, clip samplers came back flat (``(752, H, W, 3)`` for
``Clips(16, 4)``), there were no durations, and every read probed again.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("av")

from fastvqa.video import Clips, Frames, SecondWindows, Uniform, VideoDecoder, probe, read_frames  # noqa: E402

from tests.video.fixtures import read_index  # noqa: E402


def pixel_indices(frames):
    return [read_index(f) for f in frames]


def test_frames_has_fixed_named_fields():
    assert Frames._fields == ("data", "pts_seconds", "duration_seconds", "indices")


def test_clip_samplers_keep_the_clip_axis(h264_video):
    n = len(probe(h264_video.path))  # 96 frames: (96 - 16) // 4 + 1 = 21 clips
    out = read_frames(h264_video.path, Clips(16, 4), backend="pyav")
    h, w = h264_video.height, h264_video.width
    assert out.data.shape == (21, 16, h, w, 3)
    assert out.indices.shape == out.pts_seconds.shape == out.duration_seconds.shape == (21, 16)
    # clip k is frames 4k .. 4k + 15, by hand
    np.testing.assert_array_equal(out.indices, 4 * np.arange(21)[:, None] + np.arange(16))
    assert pixel_indices(out.data[3]) == list(range(12, 28))
    nchw = read_frames(h264_video.path, Clips(16, 4), backend="pyav", layout="NCHW")
    assert nchw.data.shape == (21, 16, 3, h, w)
    np.testing.assert_array_equal(nchw.data[2, 5], out.data[2, 5].transpose(2, 0, 1))
    windows = read_frames(h264_video.path, SecondWindows(4).within(1.0, 3.0), backend="pyav")
    assert windows.data.shape[1:] == (4, h, w, 3) and windows.indices.shape[1] == 4
    assert n == 96
    # No clip fits: an empty clip axis, not a flat (0, ...) array.
    short = read_frames(h264_video.path, Clips(200, 1), backend="pyav")
    assert short.data.shape == (0, 200, h, w, 3) and short.indices.shape == (0, 200)


def test_timestamps_and_durations_in_seconds(h264_video):
    out = read_frames(h264_video.path, np.array([0, 1, 50, 95]), backend="pyav")
    assert out.pts_seconds.dtype == out.duration_seconds.dtype == np.float64
    # the fixture is 30 fps: 1/30 s per frame, each frame k at k / 25
    ts = h264_video.timestamps
    np.testing.assert_allclose(out.pts_seconds - probe(h264_video.path).start,
                               ts[[0, 1, 50, 95]] - ts[0], atol=1e-6)
    np.testing.assert_allclose(out.duration_seconds, np.diff(ts).mean(), atol=1e-6)


def test_data_type_depends_on_the_device_only(h264_video, monkeypatch):
    """auto with the default device="cpu" is PyAV (NumPy) even where DALI and a GPU exist."""
    from fastvqa.video import api

    monkeypatch.setattr(api, "_dali_available", lambda: True)
    monkeypatch.setattr(api, "_gpu_visible", lambda: True)
    assert api.resolve_backend("auto") == "pyav"
    assert api.resolve_backend("auto", None) == "pyav"
    assert api.resolve_backend("auto", "cuda") == "dali"
    out = read_frames(h264_video.path, Uniform(2))
    assert isinstance(out.data, np.ndarray)


def test_decoder_probes_once_and_mirrors_torchcodec(h264_video, monkeypatch):
    from fastvqa.video import api

    calls = []
    real, real_open = api.probe, api.probe_open
    monkeypatch.setattr(api, "probe", lambda p: calls.append(p) or real(p))
    # the PyAV path probes with probe_open (keeping the container to decode from)
    monkeypatch.setattr(api, "probe_open", lambda p: calls.append(p) or real_open(p))
    dec = VideoDecoder(h264_video.path, backend="pyav", size=24)
    assert len(dec) == 96 and dec.rate == Fraction(30) and isinstance(dec.rate, Fraction)
    assert dec.metadata.rate == Fraction(30)
    assert dec[0].shape == (24, 32, 3) and pixel_indices(dec[-1][None]) == [95]
    assert pixel_indices(dec[10:40:10]) == [10, 20, 30]
    got = dec.get_frames_at([7, 3, 7])
    assert isinstance(got, Frames) and pixel_indices(got.data) == [7, 3, 7]
    assert dec.get_frames_in_range(5, 9, 2).indices.tolist() == [5, 7]
    start = dec.metadata.start
    # frame k is on screen during [k / 30, (k + 1) / 30): by hand
    played = dec.get_frames_played_at([start, start + 0.033, start + 1 / 30, start + 3.199])
    assert played.indices.tolist() == [0, 0, 1, 95]
    assert pixel_indices(dec.read(Uniform(4)).data) == [12, 36, 60, 84]
    assert len(calls) == 1
    with pytest.raises(IndexError, match="out of range"):
        dec[96]
    with pytest.raises(ValueError, match="out of range"):
        dec.get_frames_at([0, 96])
    with pytest.raises(ValueError, match=r"time 3\.2"):
        dec.get_frames_played_at([start + 3.2])
    with pytest.raises(ValueError, match="frame range"):
        dec.get_frames_in_range(5, 200)
    with pytest.raises(TypeError, match="integers or slices"):
        dec[1.5]
    with pytest.raises(TypeError, match="1-D"):
        dec.get_frames_at(3)
    with pytest.raises(TypeError, match="integers"):
        dec.get_frames_at([0.5])
    with pytest.raises(ValueError, match="time nan"):
        dec.get_frames_played_at([float("nan")])
    assert dec.get_frames_played_at(start).indices.tolist() == [0]


def test_decoder_checks_its_options_before_reading(h264_video):
    with pytest.raises(ValueError, match="layout"):
        VideoDecoder(h264_video.path, layout="HWC")
    with pytest.raises(ValueError, match="dtype"):
        VideoDecoder(h264_video.path, dtype="int8")
    with pytest.raises(ValueError, match="does not fit"):
        VideoDecoder(h264_video.path, size=24, crop=40)


@pytest.mark.parametrize("codec", ["h264", "h264-ts"])
def test_seconds_are_the_exact_rationals_rounded_once(tmp_path, codec):
    """NTSC 30000/1001: frame k is at exactly k * 1001 / 30000 s; the nearest
    double to that, not pts * float(time_base) (an ulp off for some k)."""
    from tests.video.fixtures import make_video, suffix

    rate = Fraction(30000, 1001)
    spec = make_video(tmp_path / f"ntsc{suffix(codec)}", codec, n=40, fps=rate, gop=8)
    dec = VideoDecoder(spec.path, backend="pyav")
    assert dec.rate == rate
    tb = dec.metadata.time_base
    out = dec.get_frames_at(np.arange(40))
    want = [float(Fraction(int(p)) * tb) for p in dec.metadata.pts]
    assert out.pts_seconds.tolist() == want  # exactly, element by element
    gaps = [float(Fraction(int(b) - int(a)) * tb) for a, b in zip(dec.metadata.pts,
                                                                   dec.metadata.pts[1:])]
    assert out.duration_seconds[:-1].tolist() == gaps
    assert gaps[0] == float(Fraction(1001, 30000))


@pytest.mark.parametrize("video_id", ["h264-cfr-gop12", "h264-vfr-gop48", "vp9-vfr-gop5",
                                      "mjpeg-cfr-gop1", "h264-ts-vfr-gop48", "mpeg2-ps-cfr-gop12"])
def test_one_open_decoder_serves_many_reads_exactly(videos, video_id):
    """The container stays open between reads; every read still gives exactly
    its frames, bit for bit, whatever the previous read left behind."""
    from tests.video.test_decode import sequential_decode

    spec = videos[video_id]
    reference = sequential_decode(spec.path)
    rng = np.random.default_rng(7)
    reads = [np.array([0]), np.array([95, 94]), np.array([3, 3, 60]), np.arange(10, 20),
             np.array([0, 95]), rng.integers(0, 96, 9), np.array([50]), np.array([49])]
    with VideoDecoder(spec.path, backend="pyav") as dec:
        containers = []
        for want in reads:
            np.testing.assert_array_equal(dec.get_frames_at(want).data, reference[want])
            containers.append(dec._file._reader.container)
        if not video_id.startswith("mpeg2-ps"):  # (MPEG-PS may reopen: its seeks are not trusted)
            assert all(c is containers[0] for c in containers)  # one container throughout
    assert dec._file._reader is None  # closed by the with block
    np.testing.assert_array_equal(dec[7], reference[7])  # reopened on demand
