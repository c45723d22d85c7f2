# SPDX-License-Identifier: Apache-2.0
"""Session-wide video fixtures, made once with PyAV into a temporary folder."""

from __future__ import annotations

import pytest

from tests.video.fixtures import make_video, vfr_pts

N_FRAMES = 96

#: (codec, GOP sizes): all-intra, short and long GOPs for H.264 (with B-frames),
#: short and long for VP9, MJPEG is all-intra by nature.
MATRIX = [("h264", (1, 12, 48)), ("vp9", (5, 48)), ("mjpeg", (1,))]
VIDEO_IDS = [f"{codec}-{rate}-gop{gop}" for codec, gops in MATRIX
             for rate in ("cfr", "vfr") for gop in gops]


@pytest.fixture(scope="session")
def videos(tmp_path_factory):
    """``{id: VideoSpec}`` for every codec x CFR/VFR x GOP fixture."""
    pytest.importorskip("av")
    root = tmp_path_factory.mktemp("videos")
    from tests.video.fixtures import CODECS

    out = {}
    for codec, gops in MATRIX:
        for rate in ("cfr", "vfr"):
            for gop in gops:
                vid = f"{codec}-{rate}-gop{gop}"
                pts = vfr_pts(N_FRAMES, seed=gop) if rate == "vfr" else None
                out[vid] = make_video(root / f"{vid}{CODECS[codec][1]}", codec, n=N_FRAMES,
                                      gop=gop, pts=pts)
    return out


@pytest.fixture(scope="session")
def h264_video(videos):
    return videos["h264-cfr-gop12"]
