# SPDX-License-Identifier: Apache-2.0
"""Tiny test videos made with PyAV at test time, each frame carrying its own index.

Every frame is a grid of ``GRID_ROWS x GRID_COLS`` flat blocks; block ``b``
(row-major) is white when bit ``b`` of the frame index is set, else black, on
top of a slowly moving grey background that gives the encoder some motion to
code. Blocks are at least 16 px, so the bits survive H.264/VP9/MJPEG
compression, chroma subsampling and resizing; :func:`read_index` reads them
back from the centre half of each block. No video file is committed: tests
call :func:`make_video` (or the session fixtures in ``conftest.py``) into a
temporary folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

GRID_ROWS, GRID_COLS = 3, 4
BITS = GRID_ROWS * GRID_COLS  # indices up to 4095

#: codec -> (PyAV encoder, container suffix, pixel format)
CODECS = {
    "h264": ("libx264", ".mp4", "yuv420p"),
    "vp9": ("libvpx-vp9", ".webm", "yuv420p"),
    "mjpeg": ("mjpeg", ".mkv", "yuvj420p"),
}

#: MPEG transport and program streams, whose demuxers seek by dts (a binary
#: search over the file), not by pts: fixture name -> (PyAV encoder, suffix,
#: pixel format, FFmpeg decoder name). Both with B-frames.
STREAMS = {
    "h264-ts": ("libx264", ".ts", "yuv420p", "h264"),
    "mpeg2-ps": ("mpeg2video", ".mpg", "yuv420p", "mpeg2video"),
    # H.264 in MPEG-PS: several small frames share one PES packet and only
    # its first carries a timestamp (FFmpeg gives the others none).
    "h264-ps": ("libx264", ".mpg", "yuv420p", "h264"),
    # Raw H.264 (Annex B): no packet carries a timestamp.
    "h264-raw": ("libx264", ".h264", "yuv420p", "h264"),
}


def suffix(codec: str) -> str:
    """The container suffix :func:`make_video` uses for ``codec``."""
    return (CODECS.get(codec) or STREAMS[codec])[1]


@dataclass(frozen=True)
class VideoSpec:
    """What a fixture holds: ``pts`` (in ``time_base`` units) of each frame in
    display order, the frame rate it was encoded at, its codec and GOP size."""

    path: Path
    codec: str
    width: int
    height: int
    pts: tuple
    time_base: Fraction
    gop: int

    @property
    def timestamps(self) -> np.ndarray:
        return np.array([float(p * self.time_base) for p in self.pts])

    @property
    def n(self) -> int:
        return len(self.pts)


def draw_index(index: int, width: int, height: int) -> np.ndarray:
    """An ``(height, width, 3)`` uint8 RGB frame whose blocks spell ``index``."""
    if not 0 <= index < 2**BITS:
        raise ValueError(f"index {index} does not fit in {BITS} bits")
    # Background: a diagonal ramp that drifts with the index (real motion for the encoder).
    yy, xx = np.mgrid[0:height, 0:width]
    bg = ((xx + yy + 3 * index) % 64 + 96).astype(np.uint8)
    img = np.repeat(bg[:, :, None], 3, axis=2)
    for b in range(BITS):
        r, c = divmod(b, GRID_COLS)
        y0, y1 = r * height // GRID_ROWS, (r + 1) * height // GRID_ROWS
        x0, x1 = c * width // GRID_COLS, (c + 1) * width // GRID_COLS
        # A 2-px margin keeps the background visible between blocks.
        img[y0 + 2:y1 - 2, x0 + 2:x1 - 2] = 255 if (index >> b) & 1 else 0
    return img


def read_index(frame: np.ndarray) -> int:
    """The index drawn by :func:`draw_index` in an ``(H, W, 3)`` (or ``(H, W)``) frame,
    at any size (the grid scales with the frame)."""
    frame = np.asarray(frame)
    gray = frame.astype(np.float64).mean(axis=2) if frame.ndim == 3 else frame.astype(np.float64)
    height, width = gray.shape
    value = 0
    for b in range(BITS):
        r, c = divmod(b, GRID_COLS)
        y0, y1 = r * height / GRID_ROWS, (r + 1) * height / GRID_ROWS
        x0, x1 = c * width / GRID_COLS, (c + 1) * width / GRID_COLS
        qy, qx = (y1 - y0) / 4, (x1 - x0) / 4
        block = gray[int(y0 + qy):int(np.ceil(y1 - qy)), int(x0 + qx):int(np.ceil(x1 - qx))]
        if block.mean() > 127.5:
            value |= 1 << b
    return value


def vfr_pts(n: int, seed: int = 0, base: int = 33) -> list:
    """Irregular, strictly increasing millisecond pts: gaps of 1x to 4x ``base`` ms,
    including runs of short and long gaps (like a phone camera under load)."""
    rng = np.random.default_rng(seed)
    gaps = rng.choice([base // 2 + 1, base, base, 2 * base, 4 * base], size=n - 1)
    return [0] + list(np.cumsum(gaps).astype(int))


def make_video(
    path,
    codec: str = "h264",
    *,
    n: int = 60,
    fps: int = 30,
    gop: int = 10,
    width: int = 64,
    height: int = 48,
    pts: Optional[Sequence[int]] = None,
    bframes: bool = True,
    preset: str = "veryfast",
) -> VideoSpec:
    """Encode ``n`` index frames with ``codec`` (``h264``, ``vp9``, ``mjpeg``,
    or ``h264-ts`` / ``mpeg2-ps`` / ``h264-ps`` / ``h264-raw``: H.264 in
    MPEG-TS, MPEG-2 in MPEG-PS, H.264 in MPEG-PS, raw H.264).

    Constant frame rate by default (pts ``0, 1, 2, ...`` in ``1/fps``); pass
    ``pts`` (milliseconds, strictly increasing) for a variable frame rate file.
    ``gop`` is the keyframe interval (MJPEG: every frame is a keyframe).
    H.264 and MPEG-2 use B-frames unless ``bframes=False``, so display and
    decode order differ, the case where seeking decoders go wrong. MPEG-2
    takes constant frame rates only.
    """
    import av

    if codec in STREAMS:
        encoder, _, pix_fmt, decoder = STREAMS[codec]
    else:
        (encoder, _, pix_fmt), decoder = CODECS[codec], codec
    path = Path(path)
    if pts is None:
        time_base = Fraction(1, fps)
        pts = list(range(n))
    else:
        time_base = Fraction(1, 1000)
        pts = [int(p) for p in pts]
        n = len(pts)
    with av.open(str(path), mode="w") as out:
        stream = out.add_stream(encoder, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        stream.time_base = time_base
        stream.codec_context.time_base = time_base
        stream.codec_context.gop_size = gop
        options = {}
        if codec == "mpeg2-ps":
            options = {"g": str(gop), "bf": "2" if bframes else "0", "qscale": "3"}
        elif encoder == "libx264":
            options = {"preset": preset, "g": str(gop), "keyint_min": str(gop),
                       "sc_threshold": "0", "bf": "3" if bframes else "0"}
        elif codec == "vp9":
            options = {"g": str(gop), "keyint_min": str(gop), "deadline": "realtime",
                       "cpu-used": "8", "lag-in-frames": "0"}
        elif codec == "mjpeg":
            options = {"qscale": "3"}
        stream.codec_context.options = options
        for i, p in enumerate(pts):
            frame = av.VideoFrame.from_ndarray(draw_index(i, width, height), format="rgb24")
            frame = frame.reformat(format=pix_fmt)
            frame.pts = p
            frame.time_base = time_base
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return VideoSpec(path, decoder, width, height, tuple(pts), time_base,
                     1 if codec == "mjpeg" else gop)


def make_audio_only(path, seconds: float = 1.0) -> Path:
    """A small PCM ``.wav`` (or ``.mka``) file with no video stream."""
    import av

    path = Path(path)
    rate = 8000
    with av.open(str(path), mode="w") as out:
        stream = out.add_stream("pcm_s16le", rate=rate)
        stream.layout = "mono"
        t = np.arange(int(rate * seconds)) / rate
        samples = (np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16)[None, :]
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = rate
        frame.pts = 0
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def counting_frames(monkeypatch):
    """Wrap the backend's decode loop; returns the list of frames it yields."""
    from fastvqa.video import pyav_backend

    decoded = []
    real = pyav_backend._frames

    def counting(*args, **kwargs):
        for frame in real(*args, **kwargs):
            decoded.append(frame)
            yield frame

    monkeypatch.setattr(pyav_backend, "_frames", counting)
    return decoded
