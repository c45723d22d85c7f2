# SPDX-License-Identifier: Apache-2.0
"""Session-wide video fixtures, made once with PyAV into a temporary folder."""

from __future__ import annotations

import pytest

from tests.video.fixtures import make_video, vfr_pts

N_FRAMES = 96

#: (codec, GOP sizes): all-intra, short and long GOPs for H.264 (with B-frames),
#: short and long for VP9, MJPEG is all-intra by nature.
#: H.264 in MPEG-TS (B-frames, CFR and VFR) and MPEG-2 in MPEG-PS (B-frames,
#: CFR only: MPEG-2 has no variable rate): demuxers that seek by dts.
MATRIX = [("h264", (1, 12, 48)), ("vp9", (5, 48)), ("mjpeg", (1,)), ("h264-ts", (12, 48)),
          ("mpeg2-ps", (12,))]
CFR_ONLY = ("mpeg2-ps",)
VIDEO_IDS = [f"{codec}-{rate}-gop{gop}" for codec, gops in MATRIX
             for rate in ("cfr", "vfr") if rate == "cfr" or codec not in CFR_ONLY for gop in gops]


@pytest.fixture(scope="session")
def videos(tmp_path_factory):
    """``{id: VideoSpec}`` for every codec x CFR/VFR x GOP fixture."""
    pytest.importorskip("av")
    root = tmp_path_factory.mktemp("videos")
    from tests.video.fixtures import suffix

    out = {}
    for vid in VIDEO_IDS:
        codec, rate, gop = vid.rsplit("-", 2)
        gop = int(gop[3:])
        pts = vfr_pts(N_FRAMES, seed=gop) if rate == "vfr" else None
        out[vid] = make_video(root / f"{vid}{suffix(codec)}", codec, n=N_FRAMES, gop=gop, pts=pts)
    return out


@pytest.fixture(scope="session")
def h264_video(videos):
    return videos["h264-cfr-gop12"]
