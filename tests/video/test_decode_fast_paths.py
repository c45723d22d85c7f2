# SPDX-License-Identifier: Apache-2.0
"""The PyAV backend's shortcuts (frame threads, non-reference pictures skipped
for unwanted frames, one swscale context per call) give exactly the frames of
a plain PyAV decode of every frame, picked afterwards."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("av")

from fastvqa.video import probe  # noqa: E402
from fastvqa.video.api import geometry_for  # noqa: E402
from fastvqa.video.pyav_backend import decode_pyav  # noqa: E402
from tests.video.conftest import N_FRAMES  # noqa: E402
from tests.video.fixtures import counting_frames  # noqa: E402

#: H.264 in MP4 and MPEG-TS (B-frames, short and long GOPs, CFR and VFR) and
#: MPEG-2 in MPEG-PS: the codecs whose non-reference pictures are skipped.
SKIPPING = ["h264-cfr-gop12", "h264-vfr-gop48", "h264-cfr-gop48", "h264-ts-cfr-gop12",
            "h264-ts-vfr-gop48", "mpeg2-ps-cfr-gop12"]


def plain_pick(path, want, size=None, crop=None):
    """Decode every frame with PyAV at its defaults, in display order, no seek;
    convert the wanted ones (``size``: ``(H, W)`` swscale bilinear, then
    ``crop = (top, left, h, w)``), in the order of ``want``."""
    import av

    wanted = set(int(i) for i in want)
    kept = {}
    with av.open(str(path)) as c:
        for i, frame in enumerate(c.decode(video=0)):
            if i in wanted:
                if size is None:
                    kept[i] = frame.to_ndarray(format="rgb24")
                else:
                    kept[i] = frame.reformat(width=size[1], height=size[0], format="rgb24",
                                             interpolation="BILINEAR").to_ndarray()
    out = np.stack([kept[int(i)] for i in want])
    if crop is not None:
        top, left, h, w = crop
        out = out[:, top:top + h, left:left + w]
    return out


def wanted_sets():
    rng = np.random.default_rng(1)
    return [rng.integers(0, N_FRAMES, size=12),  # random, with repeats, any order
            np.arange(1, N_FRAMES, 2),  # every other frame: most B-frames kept
            np.arange(50, 62),  # one run across a keyframe
            np.array([N_FRAMES - 1]), np.array([3]), np.array([47, 13, 94, 2])]


@pytest.mark.parametrize("threads", [None, "NONE", "SLICE", "FRAME"])
@pytest.mark.parametrize("video_id", SKIPPING)
def test_skipping_and_threads_keep_frames_exact(videos, video_id, threads):
    path = videos[video_id].path
    index = probe(path)
    for want in wanted_sets():
        np.testing.assert_array_equal(decode_pyav(index, want, threads=threads),
                                      plain_pick(path, want))


@pytest.mark.parametrize("video_id", SKIPPING)
def test_unwanted_non_reference_pictures_are_not_decoded(videos, video_id, monkeypatch):
    """With skipping, fewer pictures come out of the decoder than without it
    (SKIP_NONREF emptied), and the frames are the same."""
    from fastvqa.video import pyav_backend

    path = videos[video_id].path
    index = probe(path)
    want = np.array([10, 40, 70, 95])
    decoded = counting_frames(monkeypatch)
    with_skip = decode_pyav(index, want)
    skipped_count = len(decoded)
    decoded.clear()
    monkeypatch.setattr(pyav_backend, "SKIP_NONREF", frozenset())
    without = decode_pyav(index, want)
    assert skipped_count < len(decoded), (skipped_count, len(decoded))
    np.testing.assert_array_equal(with_skip, without)
    np.testing.assert_array_equal(with_skip, plain_pick(path, want))


@pytest.mark.parametrize("video_id", ["h264-vfr-gop48", "vp9-cfr-gop5", "mpeg2-ps-cfr-gop12",
                                      "mjpeg-cfr-gop1"])
def test_resize_in_one_swscale_context_equals_per_frame_reformat(videos, video_id):
    """64x48, shorter side 24 -> 24x32 (bilinear in swscale), centre crop 20x16."""
    path = videos[video_id].path
    index = probe(path)
    geometry = geometry_for(index, size=24, crop=(20, 16))
    assert geometry.resize == (24, 32) and geometry.crop == (2, 8, 20, 16)
    for want in wanted_sets():
        np.testing.assert_array_equal(decode_pyav(index, want, geometry=geometry),
                                      plain_pick(path, want, size=(24, 32), crop=(2, 8, 20, 16)))


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("video_id", ["h264-cfr-gop12", "h264-ts-vfr-gop48", "vp9-cfr-gop5",
                                      "mpeg2-ps-cfr-gop12"])
def test_decode_workers_split_the_runs_exactly(videos, video_id, workers, monkeypatch):
    """Several decoders, each on a group of runs, give the plain decode's frames;
    with the minimum group lowered, the 96-frame fixtures really are split."""
    from fastvqa.video import pyav_backend

    monkeypatch.setattr(pyav_backend, "MIN_GROUP_FRAMES", 1)
    path = videos[video_id].path
    index = probe(path)
    opened = []
    real = pyav_backend._Reader.__init__

    def counting(self, *args, **kwargs):
        opened.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(pyav_backend._Reader, "__init__", counting)
    split = 0
    for want in wanted_sets():
        opened.clear()
        np.testing.assert_array_equal(decode_pyav(index, want, decode_workers=workers),
                                      plain_pick(path, want))
        u = np.unique(want)
        groups = pyav_backend._split_runs(index, u, dict(pyav_backend._plan_seeks(index, u)),
                                          workers)
        assert len(groups) <= workers and len(opened) == len(groups)  # one decoder each
        split += len(groups) > 1
    assert split >= (1 if workers > 1 else 0) and (workers > 1 or split == 0)
    with pytest.raises(ValueError, match="decode_workers"):
        decode_pyav(index, [1], decode_workers=0)


def test_split_runs_balances_whole_runs(h264_video, monkeypatch):
    """GOP 12, 96 frames: frame 1 of each GOP wanted, 8 runs of 2 frames to decode."""
    from fastvqa.video import pyav_backend
    from fastvqa.video.pyav_backend import _plan_seeks, _split_runs

    index = probe(h264_video.path)
    wanted = np.arange(1, 96, 12)
    plan = dict(_plan_seeks(index, wanted))
    assert sorted(plan) == list(range(1, 8))  # a seek before each but the first
    assert _split_runs(index, wanted, plan, 2) == [(0, 8)]  # 16 frames: not worth a decoder
    monkeypatch.setattr(pyav_backend, "MIN_GROUP_FRAMES", 1)
    assert _split_runs(index, wanted, plan, 1) == [(0, 8)]
    assert _split_runs(index, wanted, plan, 2) == [(0, 4), (4, 8)]  # 8 frames each
    assert _split_runs(index, wanted, plan, 4) == [(0, 2), (2, 4), (4, 6), (6, 8)]


def test_read_batch_gives_each_file_one_decoder_when_files_run_in_parallel(videos, monkeypatch):
    from fastvqa.video import Uniform, VideoDecoder, pyav_backend, read_batch

    seen = []
    real = pyav_backend.decode_pyav

    def spy(*args, **kwargs):
        seen.append(kwargs.get("decode_workers"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pyav_backend, "decode_pyav", spy)
    paths = [videos["h264-cfr-gop12"].path, videos["h264-cfr-gop48"].path]
    out = read_batch(paths, Uniform(4), backend="pyav", workers=2)
    assert seen == [1, 1]
    for path, frames in zip(paths, out):
        np.testing.assert_array_equal(frames.data, plain_pick(path, frames.indices))
    seen.clear()
    read_batch(paths[:1], Uniform(4), backend="pyav", workers=2)  # one file: its own default
    with VideoDecoder(paths[0], backend="pyav", decode_workers=3) as dec:
        dec.get_frames_at([5, 60])
    assert seen == [None, 3]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("video_id", SKIPPING + ["vp9-cfr-gop5"])
def test_decoding_from_the_probes_container_is_exact(videos, video_id, workers, monkeypatch):
    """``VideoDecoder`` decodes its first read from the container the probe
    left open at the end of the stream (one open, not two); every read (the
    first one included, from the first GOP too) gives the plain decode's
    frames."""
    import av

    from fastvqa.video import VideoDecoder, pyav_backend

    monkeypatch.setattr(pyav_backend, "MIN_GROUP_FRAMES", 1)
    path = videos[video_id].path
    opens = []
    real_open = av.open
    monkeypatch.setattr(av, "open", lambda *a, **k: opens.append(1) or real_open(*a, **k))
    for want in wanted_sets():
        expected = plain_pick(path, want)
        opens.clear()
        with VideoDecoder(path, backend="pyav", decode_workers=workers) as dec:
            got = dec.get_frames_at(want).data
            first = len(opens)
            np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(dec.get_frames_at(want[::-1]).data, expected[::-1])
        groups = pyav_backend._split_runs(dec.metadata, np.unique(want), dict(
            pyav_backend._plan_seeks(dec.metadata, np.unique(want))), workers)
        # the probe's open serves a one-group read; several decoders each open
        # their own (with their share of the cores as threads)
        assert first == (1 if len(groups) == 1 else 1 + len(groups)) \
            or dec.metadata.decode_from_start


def test_probe_open_closes_its_container_on_error(tmp_path, monkeypatch):
    import av

    from fastvqa.video import VideoError
    from fastvqa.video.index import probe_open

    bad = tmp_path / "text.mp4"
    bad.write_text("not a video")
    with pytest.raises(VideoError):
        probe_open(bad)
    audio = tmp_path / "a.mp4"
    from tests.video.fixtures import make_audio_only

    make_audio_only(audio)
    closed = []
    real_open = av.open

    def tracking(*a, **k):
        container = real_open(*a, **k)
        real_close = container.close
        closed.append(False)
        slot = len(closed) - 1

        class Wrapped:
            def __getattr__(self, name):
                return getattr(container, name)

            def close(self):
                closed[slot] = True
                real_close()

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.close()

        return Wrapped()

    monkeypatch.setattr(av, "open", tracking)
    with pytest.raises(VideoError, match="no video stream"):
        probe_open(audio)
    assert closed == [True]


@pytest.mark.parametrize("cores, workers, per", [(2, 2, 1), (8, 2, 4), (3, 2, 1), (16, 3, 5)])
def test_several_decoders_share_the_cores(videos, cores, workers, per, monkeypatch):
    """Each of ``workers`` decoders gets ``cores // workers`` FFmpeg threads
    (at least one): a read never runs more decoding threads than cores."""
    from fastvqa.video import VideoDecoder, pyav_backend

    monkeypatch.setattr(pyav_backend, "MIN_GROUP_FRAMES", 1)
    monkeypatch.setattr(pyav_backend.os, "cpu_count", lambda: cores)
    counts = []
    real_open = pyav_backend._Reader._open

    def spy(self, container=None):
        real_open(self, container)
        counts.append(self.stream.codec_context.thread_count)

    monkeypatch.setattr(pyav_backend._Reader, "_open", spy)
    path = videos["h264-cfr-gop12"].path
    want = np.array([10, 46, 94])  # three runs of 11 frames from their keyframes
    with VideoDecoder(path, backend="pyav", decode_workers=workers) as dec:
        groups = pyav_backend._split_runs(dec.metadata, want, dict(
            pyav_backend._plan_seeks(dec.metadata, want)), workers)
        assert len(groups) > 1
        counts.clear()
        np.testing.assert_array_equal(dec.get_frames_at(want).data, plain_pick(path, want))
    assert counts == [per] * len(groups)


def test_several_decoders_fill_one_output_in_request_order(videos, monkeypatch):
    """Decoders sharing a read store each frame straight into the caller's
    array, in the request's order, repeats included, and the read allocates
    no other frame-sized array (no per-decoder parts joined after)."""
    from fastvqa.video import pyav_backend

    monkeypatch.setattr(pyav_backend, "MIN_GROUP_FRAMES", 1)
    path = videos["h264-cfr-gop12"].path
    index = probe(path)
    want = np.array([94, 10, 46, 10, 95, 47, 94, 11])  # unsorted, repeats, three runs
    groups = []
    real = pyav_backend._decode_groups
    monkeypatch.setattr(pyav_backend, "_decode_groups",
                        lambda index, gs, **kw: (groups.append(len(gs)), real(index, gs, **kw)))
    frame_bytes = index.height * index.width * 3
    allocated = []
    real_empty = np.empty

    def counting_empty(shape, *args, **kw):
        out = real_empty(shape, *args, **kw)
        if out.nbytes >= frame_bytes:
            allocated.append(out.shape)
        return out

    monkeypatch.setattr(pyav_backend.np, "empty", counting_empty)
    got = decode_pyav(index, want, decode_workers=2)
    monkeypatch.setattr(pyav_backend.np, "empty", real_empty)
    assert groups and groups[0] > 1
    assert allocated == [(len(want), index.height, index.width, 3)]
    np.testing.assert_array_equal(got, plain_pick(path, want))
