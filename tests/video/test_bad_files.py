# SPDX-License-Identifier: Apache-2.0
"""Bad files give a VideoError naming the file and the reason; nothing crashes or hangs;
resident memory stays flat over hundreds of decodes."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("av")

from fastvqa.video import Fps, Uniform, VideoError, probe, read_frames  # noqa: E402
from fastvqa.video.pyav_backend import decode_pyav  # noqa: E402
from tests.video.fixtures import CODECS, make_audio_only, make_video  # noqa: E402


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    return {codec: make_video(root / f"good{CODECS[codec][1]}", codec, n=90, gop=10)
            for codec in CODECS}


def _variant(spec, tmp_path, kind):
    data = spec.path.read_bytes()
    path = tmp_path / f"{kind}_{spec.path.name}"
    if kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:  # corrupt: 600 bytes of garbage in the middle
        mid = len(data) // 2
        garbage = np.random.default_rng(0).integers(0, 256, 600, dtype=np.uint8).tobytes()
        path.write_bytes(data[: mid - 300] + garbage + data[mid + 300:])
    return path


def _assert_error(path, reason_words):
    for call in (lambda: probe(path), lambda: read_frames(path, Uniform(4))):
        with pytest.raises(VideoError) as info:
            call()
        err = info.value
        assert isinstance(err, ValueError)
        assert os.fspath(path) in str(err) and err.path == os.fspath(path)
        assert any(w in err.reason for w in reason_words), err.reason


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("kind", ["truncated", "corrupt"])
def test_truncated_and_corrupt(good, tmp_path, codec, kind):
    path = _variant(good[codec], tmp_path, kind)
    _assert_error(path, ["truncated", "corrupt"])


def test_empty_missing_folder_audio_text(tmp_path):
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    _assert_error(empty, ["empty file"])
    _assert_error(tmp_path / "missing.mp4", ["no such file"])
    _assert_error(tmp_path, ["directory"])
    _assert_error(make_audio_only(tmp_path / "tone.wav"), ["no video stream (audio only"])
    text = tmp_path / "notes.mp4"
    text.write_text("this is not a video\n" * 20)
    _assert_error(text, ["not a readable video container"])


def test_corruption_found_while_decoding(good, tmp_path):
    """A corrupt H.264 file indexed with strict=False fails in the decoder, cleanly."""
    path = _variant(good["h264"], tmp_path, "corrupt")
    index = probe(path, strict=False)
    with pytest.raises(VideoError, match="corrupt or truncated|never came out"):
        decode_pyav(index, np.arange(len(index)))


def test_file_cut_after_probing(good, tmp_path):
    path = tmp_path / "cut.webm"
    data = good["vp9"].path.read_bytes()
    path.write_bytes(data)
    index = probe(path)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(VideoError, match="never came out"):
        decode_pyav(index, [len(index) - 1])


def _rss_bytes() -> int:
    try:
        import psutil

        return psutil.Process().memory_info().rss
    except ImportError:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not (os.path.exists("/proc/self/statm") or os.name == "nt"),
                    reason="needs /proc/self/statm (Linux) or psutil")
def test_memory_flat_over_many_files(good, tmp_path):
    """2,000 decodes (plus 1,000 bad-file errors) of short fixtures: resident memory flat.

    Runs in about 10 s on two cores (measured growth: ~0.3 MiB). Leaks of
    unclosed containers/decoders (the usual kind) grow by tens of KiB or more
    per file, i.e. far above the 24 MiB bound over 3,000 files.
    """
    bad = tmp_path / "empty.mp4"
    bad.write_bytes(b"")
    truncated = _variant(good["vp9"], tmp_path, "truncated")
    paths = [good[c].path for c in CODECS]

    def round_(n):
        for i in range(n):
            out = read_frames(paths[i % 3], Uniform(3) if i % 2 else Fps(2))
            assert len(out.indices)
            if i % 4 == 0:
                for p in (bad, truncated):
                    with pytest.raises(VideoError):
                        read_frames(p, Uniform(2))

    round_(60)  # warm-up: allocator pools, codec tables, lazy imports
    before = _rss_bytes()
    round_(2000)
    growth = _rss_bytes() - before
    assert growth < 24 * 2**20, f"resident memory grew by {growth / 2**20:.1f} MiB"


def test_packets_without_timestamps_are_indexed_by_decoding(tmp_path):
    """H.264 in MPEG-PS: several small frames share one PES packet and only its
    first carries a timestamp; FFmpeg gives the rest none. Once refused, now
    indexed by decoding (tests/video/test_mpeg_ps.py checks the frames)."""
    pytest.importorskip("av")
    from fastvqa.video import probe
    from tests.video.fixtures import make_video

    spec = make_video(tmp_path / "h264.mpg", "h264-ps", n=48, gop=12)
    index = probe(spec.path)
    assert len(index) == 48 and index.decode_from_start


def test_a_truncated_untimed_stream_is_one_line_error(tmp_path):
    """Raw H.264 (no packet timed) cut mid-frame: the decode that indexes it
    reports the damage as a VideoError naming the file (strict), and
    ``strict=False`` indexes the frames that decode."""
    pytest.importorskip("av")
    from fastvqa.video import Uniform, VideoError, probe, read_frames
    from tests.video.fixtures import make_video

    spec = make_video(tmp_path / "whole.h264", "h264-raw", n=48, gop=12)
    data = spec.path.read_bytes()
    cut = tmp_path / "cut.h264"
    cut.write_bytes(data[:len(data) // 2 + 7])
    with pytest.raises(VideoError, match=r"cut\.h264: corrupt or truncated data") as err:
        probe(cut)
    assert "\n" not in str(err.value)
    index = probe(cut, strict=False)
    assert 0 < len(index) < 48
    assert read_frames(cut, Uniform(3), index=index, backend="pyav").data.shape[0] == 3
