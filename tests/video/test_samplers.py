# SPDX-License-Identifier: Apache-2.0
"""Samplers on hand-built indexes, with hand-computed frame indices (no decoding, no PyAV)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from fastvqa.video import (Clips, Fps, Hierarchical, Outside, SecondWindows, Uniform, VideoIndex,
                           Within, from_spec)
from fastvqa.video.pyav_backend import _plan_seeks


def make_index(timestamps, duration=None, keyframes=(0,)):
    ts = np.asarray(timestamps, dtype=np.float64)
    if duration is None:
        duration = float(ts[-1] - ts[0] + (ts[1] - ts[0] if len(ts) > 1 else 0.1))
    tb = Fraction(1, 1000)
    return VideoIndex(path="synthetic.mp4", codec="h264", width=64, height=48,
                      duration=duration, fps=0.0, timestamps=ts,
                      keyframes=np.asarray(keyframes, dtype=np.int64), time_base=tb,
                      pts=np.round(ts * 1000).astype(np.int64))


CFR = make_index(np.arange(25) / 10.0)  # 25 frames at 10 fps, 2.5 s


def ids(sampler, index=CFR):
    return sampler.indices(index).tolist()


def test_fps_takes_the_frame_on_screen():
    assert ids(Fps(1)) == [0, 10, 20]
    assert ids(Fps(4)) == [0, 2, 5, 7, 10, 12, 15, 17, 20, 22]
    assert ids(Fps(1, offset=0.5)) == [5, 15]
    assert ids(Fps(20)) == [i // 2 for i in range(50)]  # faster than the video: repeats


def test_fps_variable_frame_rate_uses_timestamps():
    vfr = make_index([0.0, 0.1, 0.5, 0.55, 1.5], duration=2.0)
    assert ids(Fps(1), vfr) == [0, 3]  # at t=1 the frame shown since 0.55 s
    assert ids(Fps(2), vfr) == [0, 2, 3, 4]


def test_time_equal_to_a_timestamp_selects_that_frame_despite_rounding():
    # pts * time_base in float64 is not exact; 1/30 s frames at t = k/30 must still match.
    tb = Fraction(1, 15360)
    ts = np.arange(60) * 512 * float(tb)
    index = make_index(ts, duration=2.0)
    assert ids(Fps(30), index) == list(range(60))
    assert ids(Uniform(30), index) == [2 * k + 1 for k in range(30)]  # midpoints hit frames exactly


def test_nonzero_start_is_time_zero():
    shifted = make_index(np.arange(25) / 10.0 + 7.3)
    assert ids(Fps(1), shifted) == [0, 10, 20]
    assert ids(Uniform(2).within(1.0, 2.0), shifted) == [12, 17]


def test_uniform_center_and_linspace():
    assert ids(Uniform(5)) == [2, 7, 12, 17, 22]  # floor((2k + 1) * 25 / 10)
    assert ids(Uniform(4, mode="linspace")) == [0, 8, 16, 24]
    assert ids(Uniform(1, mode="linspace")) == [0]
    assert ids(Uniform(50)) == [i // 2 for i in range(50)]


def test_clips_dvd_and_padding():
    cater = make_index(np.arange(301) / 24.0)
    idx = Clips(16, 4).indices(cater).reshape(-1, 16)
    assert idx.shape == (72, 16)  # floor((301 - 16) / 4) + 1
    assert idx[0].tolist() == list(range(16)) and idx[-1].tolist() == list(range(284, 300))
    assert (Clips(16, 4, 1) == Clips(16, 4))
    twelve = make_index(np.arange(12) / 10.0)
    assert ids(Clips(4, 3, 2), twelve) == [0, 2, 4, 6, 3, 5, 7, 9]
    assert ids(Clips(4, 3, 2, pad_last=True), twelve) == [0, 2, 4, 6, 3, 5, 7, 9, 6, 8, 10, 11]
    three = make_index(np.arange(3) / 10.0)
    assert ids(Clips(4, 4), three) == []
    assert ids(Clips(4, 4, pad_last=True), three) == [0, 1, 2, 2]


def test_second_windows_edge_replication_in_order():
    assert ids(SecondWindows(4)) == [0, 0, 0, 10, 0, 0, 10, 20, 0, 10, 20, 20]
    long = make_index(np.arange(300) / 10.0)  # 30 s: 30 one-second frames
    w = SecondWindows().indices(long).reshape(30, 16)
    assert w[0].tolist() == [0] * 9 + [10, 20, 30, 40, 50, 60, 70]  # [t-8, t+7] clamped
    assert w[10].tolist() == [20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170]
    assert w[29].tolist() == [210, 220, 230, 240, 250, 260, 270, 280] + [290] * 8
    assert np.all(np.diff(w, axis=1) >= 0)


def test_hierarchical_tiling_policies():
    h = Hierarchical((1.0, 2.0), (2, 3))
    assert ids(h) == [2, 7, 12, 17, 21, 23, 3, 10, 16, 20, 22, 24]
    assert ids(Hierarchical((1.0, 2.0), (2, 3), last="drop")) == [2, 7, 12, 17, 3, 10, 16]
    assert ids(Hierarchical((1.0, 2.0), (2, 3), last="merge")) == [2, 7, 13, 21, 4, 12, 20]
    rows = Hierarchical((15, 35, 65), (5, 7, 13)).segments(127.0)
    assert [sum(r[0] == lvl for r in rows) for lvl in range(3)] == [9, 4, 2]  # DeVE-QA example
    assert rows[8][1:3] == (120.0, 127.0)
    assert len(Hierarchical((15, 35, 65), (5, 7, 13), last="drop").segments(127.0)) == 8 + 3 + 1
    assert len(Hierarchical((15,), (5,)).indices(make_index(np.arange(50) / 10.0))) == 5


def test_outside_and_within():
    assert ids(Outside((1.0, 2.0), 4)) == [1, 5, 9, 23]
    assert ids(Outside((0.0, 1.0), 3)) == [12, 17, 22]  # right side only: t = 1.25, 1.75, 2.25
    with pytest.raises(ValueError, match="no frame lies outside"):
        Outside((0.0, 3.0), 2).indices(CFR)
    assert ids(Uniform(2).within(1.0, 2.0)) == [12, 17]
    assert ids(Fps(2).within(0.55, 1.6)) == [5, 10, 15]
    assert ids(Clips(2, 2).within(1.0, 1.5)) == [10, 11, 12, 13]
    assert ids(Fps(1).within(2.0)) == [20]
    with pytest.raises(ValueError, match="outside"):
        Fps(1).within(5.0, 6.0).indices(CFR)


@pytest.mark.parametrize("make, exc", [
    (lambda: Fps(0), ValueError), (lambda: Fps(-1), ValueError), (lambda: Fps("1"), TypeError),
    (lambda: Uniform(0), ValueError), (lambda: Uniform(2.5), TypeError),
    (lambda: Uniform(3, mode="edges"), ValueError), (lambda: Clips(0, 4), ValueError),
    (lambda: Clips(16, True), TypeError), (lambda: SecondWindows(0), ValueError),
    (lambda: Hierarchical((15, 35), (5,)), ValueError),
    (lambda: Hierarchical((15,), (5,), last="pad"), ValueError),
    (lambda: Outside((5, 2), 3), ValueError), (lambda: Outside((1, 2), 0), ValueError),
    (lambda: Fps(1).within(3, 3), ValueError), (lambda: Within([1, 2], 0, 1), TypeError),
])
def test_bad_arguments(make, exc):
    with pytest.raises(exc):
        make()


def test_from_spec():
    assert from_spec("fps:1") == Fps(1.0)
    assert from_spec("fps:2,0.5") == Fps(2.0, 0.5)
    assert from_spec("uniform:16") == Uniform(16)
    assert from_spec("uniform:8,linspace") == Uniform(8, "linspace")
    assert from_spec("clips:16,4,1") == Clips(16, 4, 1)
    assert from_spec("seconds:16") == SecondWindows(16)
    assert from_spec("hierarchical:15,35,65/5,7,13") == Hierarchical((15.0, 35.0, 65.0), (5, 7, 13))
    assert from_spec("hierarchical:5,15,45/5,7,13/drop").last == "drop"
    assert from_spec("outside:10,20,8") == Outside((10.0, 20.0), 8)
    assert from_spec("uniform:4@1-2") == Uniform(4).within(1.0, 2.0)
    for bad in ("fps", "bogus:1", "uniform:x", "clips:16,0", "hierarchical:15"):
        with pytest.raises(ValueError, match="sampler spec"):
            from_spec(bad)


def test_seek_plan_only_when_cheaper():
    index = make_index(np.arange(40) / 10.0, keyframes=(0, 10, 20, 30))
    # 2: first keyframe (no seek); 5: decode on; 15: keyframe 10 is ahead -> seek;
    # 16: decode on; 35: keyframe 30 ahead -> seek.
    assert _plan_seeks(index, np.array([2, 5, 15, 16, 35])) == [(2, 10), (4, 30)]
    # Keyframe 20 is the very next frame after 19: decode on, no seek.
    assert _plan_seeks(index, np.array([12, 19, 21])) == [(0, 10)]
    assert _plan_seeks(index, np.array([9, 10])) == []
    assert _plan_seeks(index, np.array([8, 21])) == [(1, 20)]


@pytest.mark.parametrize("make, count", [
    (lambda: Fps(1e9), "2,500,000,000"),  # 1e9 fps over 2.5 s
    (lambda: Fps(1e9).within(0.5, 1.5), "1,000,000,000"),
    (lambda: Uniform(10**8), "100,000,000"),
    (lambda: Outside((0.5, 1.0), 10**8), "100,000,000"),
    (lambda: Clips(10**8, 1), "100,000,000"),
    (lambda: SecondWindows(10**8), "300,000,000"),  # 3 windows (fps 1 over 2.5 s)
    (lambda: Hierarchical((1e-9,), (5,)), "12,500,000,005"),  # (floor(2.5/1e-9) + 1) * 5
])
def test_huge_requests_are_refused_before_allocating(make, count):
    """``fps:1e9`` used to allocate the indices (and then 74.5 GiB of frames)."""
    from fastvqa.video.samplers import MAX_INDICES

    with pytest.raises(ValueError, match=f"{count} frame indices .* exceed the limit of "
                                         f"{MAX_INDICES:,}"):
        make().indices(CFR)


def test_the_index_limit_is_not_hit_by_real_requests():
    from fastvqa.video.samplers import MAX_INDICES

    hour = make_index(np.arange(30 * 3600) / 30.0)  # one hour at 30 fps
    assert len(Fps(30).indices(hour)) == 30 * 3600 < MAX_INDICES
    assert len(Clips(16, 4).indices(hour)) == ((30 * 3600 - 16) // 4 + 1) * 16


def test_one_sampler_registry_feeds_from_spec_the_cli_and_the_docs(monkeypatch, capsys):
    """The spec list used to be copied in five places and from_spec was an if chain."""
    from dataclasses import dataclass
    from pathlib import Path

    from fastvqa import cli
    from fastvqa.video import samplers
    from fastvqa.video.samplers import Sampler, register_sampler

    monkeypatch.setattr(samplers, "SAMPLERS", dict(samplers.SAMPLERS))

    @register_sampler("every", syntax="every:K", example="every:3", help="every K-th frame",
                      parse=lambda args: Every(int(args)))
    @dataclass(frozen=True)
    class Every(Sampler):
        k: int

        def _local(self, tl):
            return np.arange(0, tl.n, self.k, dtype=np.int64)

    assert from_spec("every:3") == Every(3)
    assert from_spec("every:3@1-2") == Every(3).within(1.0, 2.0)
    with pytest.raises(ValueError, match=r"unknown sampler 'evry' \(fps, uniform, .*every\)"):
        from_spec("evry:3")
    with pytest.raises(ValueError, match="already registered"):
        register_sampler("every", syntax="", example="", help="")(Every)
    parser = cli.build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["decode", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "every:K" in shown and "every:3" in shown and "hierarchical:LENGTHS/FRAMES" in shown
    # The docs list every built-in sampler's example spec.
    docs = (Path(__file__).resolve().parents[2] / "docs" / "video.md").read_text()
    for name, entry in samplers.SAMPLERS.items():
        if name != "every":
            assert f"`{entry.example}`" in docs, entry.example
