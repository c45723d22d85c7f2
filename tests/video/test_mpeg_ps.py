# SPDX-License-Identifier: Apache-2.0
"""Streams whose packets do not all carry a timestamp (issue 29).

H.264 with B-frames in an MPEG program stream (``.mpg``/``.vob``): several
small frames share one PES packet and only its first carries a timestamp;
raw H.264 (``.h264``) carries none at all. PyAV decodes every frame of
both, so fastvqa must too, frame-exactly: the reference here is one plain
PyAV decode from the start (frame ``i`` is the ``i``-th frame out of the
decoder, which outputs in presentation order), and each frame also spells
its own number (:func:`tests.video.fixtures.draw_index`). MPEG-TS with
B-frames (every packet timed) is checked the same way.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests.video.fixtures import make_video, read_index

av = pytest.importorskip("av")

N = 48
FPS = 30

needs_x264 = pytest.mark.skipif("libx264" not in av.codecs_available,
                                reason="this PyAV's FFmpeg has no libx264 encoder")


def _muxer(name):
    return pytest.mark.skipif(name not in av.formats_available,
                              reason=f"this PyAV's FFmpeg has no {name!r} muxer")


def reference(path):
    """``(rgb frames, pts list)`` of one plain PyAV decode from the start."""
    with av.open(str(path)) as container:
        frames = list(container.decode(video=0))
        return (np.stack([f.to_ndarray(format="rgb24") for f in frames]),
                [f.pts for f in frames])


STREAMS = [pytest.param("h264-ps", marks=[needs_x264, _muxer("mpeg")]),
           pytest.param("h264-raw", marks=[needs_x264, _muxer("h264")]),
           pytest.param("h264-ts", marks=[needs_x264, _muxer("mpegts")])]


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    return {}


def _make(streams, tmp_path_factory, kind):
    from tests.video.fixtures import suffix

    if kind not in streams:
        root = tmp_path_factory.mktemp(kind)
        streams[kind] = make_video(root / f"b{suffix(kind)}", kind, n=N, fps=FPS, gop=12)
    return streams[kind]


@pytest.mark.parametrize("kind", STREAMS)
def test_probe_indexes_every_frame_pyav_decodes(streams, tmp_path_factory, kind):
    from fastvqa.video import probe

    spec = _make(streams, tmp_path_factory, kind)
    ref, ref_pts = reference(spec.path)
    assert len(ref) == N and [read_index(f) for f in ref] == list(range(N))
    index = probe(spec.path)
    assert len(index) == N
    # Where PyAV gives a frame a pts, the index has that very pts.
    for i, p in enumerate(ref_pts):
        if p is not None:
            assert index.pts[i] == p, i
    if kind == "h264-ps":
        assert any(p is None for p in ref_pts)  # the case of the issue
        # 90 kHz clock, 30 fps: 3000 ticks a frame (by hand), from the first frame.
        assert index.time_base == Fraction(1, 90000)
        np.testing.assert_array_equal(index.pts, ref_pts[0] + 3000 * np.arange(N))
    # Evenly spaced (the encoder wrote a constant rate) and strictly increasing.
    steps = np.diff(index.pts)
    assert steps.min() == steps.max() > 0
    assert index.keyframes[0] == 0 and set(index.keyframes) >= {0, 12, 24, 36}


@pytest.mark.parametrize("kind", STREAMS)
def test_samplers_give_pyavs_frames(streams, tmp_path_factory, kind):
    from fastvqa.video import Clips, Fps, Uniform, read_frames

    spec = _make(streams, tmp_path_factory, kind)
    ref, _ = reference(spec.path)
    for sampler in (Fps(1), Uniform(5), Clips(4, 8), np.arange(N), np.array([N - 1, 0, 25, 25])):
        out = read_frames(spec.path, sampler, backend="pyav")
        flat = np.asarray(out.indices).reshape(-1)
        data = out.data.reshape((-1,) + out.data.shape[-3:])
        np.testing.assert_array_equal(data, ref[flat])
        assert [read_index(f) for f in data] == list(flat)


@pytest.mark.parametrize("kind", STREAMS)
def test_random_access_in_the_middle(streams, tmp_path_factory, kind):
    """Frames from the middle, one call at a time and out of order, from one
    open decoder and with several decode workers: each is PyAV's frame."""
    from fastvqa.video import VideoDecoder, probe
    from fastvqa.video.pyav_backend import decode_pyav

    spec = _make(streams, tmp_path_factory, kind)
    ref, _ = reference(spec.path)
    with VideoDecoder(spec.path, backend="pyav") as decoder:
        for i in (25, 13, 40, 24, 0, 47, 30):
            out = decoder.get_frames_at([i])
            np.testing.assert_array_equal(out.data[0], ref[i])
            assert out.pts_seconds[0] == decoder.metadata.timestamps[i]
    index = probe(spec.path)
    want = np.array([45, 5, 30, 18, 40, 12, 2, 33])
    np.testing.assert_array_equal(decode_pyav(index, want, decode_workers=2), ref[want])


@needs_x264
@_muxer("mpeg")
def test_untimed_packets_decode_from_the_start_and_say_so(streams, tmp_path_factory, caplog):
    """The index of a stream with untimed packets says it is read in order
    from the start (no seek can be checked against its timestamps), in its
    repr and in the log."""
    import logging

    from fastvqa.video import probe

    spec = _make(streams, tmp_path_factory, "h264-ps")
    with caplog.at_level(logging.INFO, logger="fastvqa.video"):
        index = probe(spec.path)
    assert index.decode_from_start
    assert "decoded from the start" in repr(index)
    assert any("carry no timestamp" in r.getMessage() and str(spec.path) in r.getMessage()
               for r in caplog.records)
    assert not probe(_make(streams, tmp_path_factory, "h264-ts").path).decode_from_start


@needs_x264
@_muxer("mpeg")
def test_dali_asked_for_an_untimed_stream_is_one_line_error(streams, tmp_path_factory):
    """DALI finds frames by packet timestamps, which these files lack: asked
    for by name it is refused before any DALI import (so this runs on a
    machine without DALI), naming the backend that reads the file."""
    from fastvqa.video import VideoDecoder
    from fastvqa.video.errors import VideoError

    spec = _make(streams, tmp_path_factory, "h264-ps")
    with pytest.raises(VideoError, match=r"DALI cannot find its frames; read it with "
                                         r"backend='pyav'") as err:
        VideoDecoder(spec.path, backend="dali")
    assert str(spec.path) in str(err.value) and "\n" not in str(err.value)


@needs_x264
@_muxer("mpegts")
@pytest.mark.parametrize("cut_packets", [20, 41])
def test_a_transport_stream_cut_mid_gop_numbers_frames_as_pyav(tmp_path, cut_packets):
    """A recording that starts mid-GOP (MPEG-TS cut at a 188-byte packet):
    the packets before the first keyframe cannot be decoded (their
    references are gone) and PyAV outputs none of them; fastvqa's frame
    ``i`` is PyAV's frame ``i``, every one of them reads, none is refused."""
    from fastvqa.video import Uniform, probe, read_frames

    spec = make_video(tmp_path / "whole.ts", "h264-ts", n=N, fps=FPS, gop=12)
    cut = tmp_path / "cut.ts"
    cut.write_bytes(spec.path.read_bytes()[188 * cut_packets:])
    ref, ref_pts = reference(cut)
    first = read_index(ref[0])
    assert first in (12, 24) and [read_index(f) for f in ref] == list(range(first, N))
    index = probe(cut)
    assert len(index) == len(ref)
    np.testing.assert_array_equal(index.pts, ref_pts)
    for sampler in (np.arange(len(ref)), Uniform(7), np.array([len(ref) - 1, 0, 5])):
        out = read_frames(cut, sampler, backend="pyav")
        np.testing.assert_array_equal(out.data, ref[np.asarray(out.indices)])
