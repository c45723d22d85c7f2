# SPDX-License-Identifier: Apache-2.0
"""Tiny self-describing videos for the DALI backend tests, written with PyAV.

Each frame carries its index in its pixels: the top half is eight vertical
bars, bar ``b`` white when bit ``b`` of the index is set, black otherwise (big
blocks survive any codec, resize or rounding); the bottom half is a smooth
colour ramp that moves with the index, for pixel comparisons between decoders.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

WIDTH, HEIGHT = 160, 96
BITS = 8


def frame_pixels(i: int, width: int = WIDTH, height: int = HEIGHT) -> np.ndarray:
    img = np.zeros((height, width, 3), np.uint8)
    bar = width // BITS
    for b in range(BITS):
        if (i >> b) & 1:
            img[: height // 2, b * bar:(b + 1) * bar] = 255
    y, x = np.mgrid[height // 2:height, 0:width]
    img[height // 2:, :, 0] = (x * 255 // width + 3 * i) % 256
    img[height // 2:, :, 1] = (y * 255 // height) % 256
    img[height // 2:, :, 2] = 128
    return img


def read_indices(frames) -> np.ndarray:
    """The index written in each ``(n, H, W, 3)`` frame (resized frames too)."""
    frames = np.asarray(frames)
    h, w = frames.shape[1:3]
    row = frames[:, h // 4, :, :].astype(np.float64).mean(axis=-1)  # (n, W)
    centres = ((np.arange(BITS) + 0.5) * w / BITS).astype(int)
    bits = row[:, centres] > 128
    return (bits * (1 << np.arange(BITS))).sum(axis=1).astype(np.int64)


def write_video(path, codec: str, n: int = 48, fps: int = 24, gop: int = 12) -> None:
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height = WIDTH, HEIGHT
        stream.pix_fmt = "yuvj420p" if codec == "mjpeg" else "yuv420p"
        if codec != "mjpeg":
            stream.gop_size = gop
        if codec == "libx264":
            stream.options = {"bf": "2"}  # B-frames: display order != decode order
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(frame_pixels(i), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


@dataclass
class StandIn:
    """The fields of ``fastvqa.video.VideoIndex`` the DALI backend reads."""

    path: str
    codec: str
    width: int
    height: int
    duration: float
    fps: float
    timestamps: np.ndarray
    keyframes: np.ndarray
    time_base: Fraction


def probe(path) -> StandIn:
    """A ``VideoIndex`` stand-in from demuxed packets (no decoding)."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        pts, keys = [], []
        for packet in container.demux(stream):
            if packet.pts is None:
                continue
            pts.append(packet.pts)
            keys.append(packet.is_keyframe)
        order = np.argsort(pts, kind="stable")
        tb = stream.time_base
        timestamps = np.asarray(pts, np.float64)[order] * float(tb)
        keyframes = np.flatnonzero(np.asarray(keys)[order]).astype(np.int64)
        ctx = stream.codec_context
        duration = float(timestamps[-1] - timestamps[0]) if len(timestamps) else 0.0
        fps = float(stream.average_rate) if stream.average_rate else 0.0
        return StandIn(str(path), ctx.name, ctx.width, ctx.height, duration, fps,
                       timestamps, keyframes, tb)


def decode_all_pyav(path) -> np.ndarray:
    """Every frame, in presentation order, as PyAV converts it to RGB."""
    import av

    with av.open(str(path)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    return np.stack(frames)
