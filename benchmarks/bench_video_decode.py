# SPDX-License-Identifier: Apache-2.0
"""Benchmark fastvqa's PyAV decoding path against decoding every frame with PyAV.

Fixture (made at run time with PyAV, cached in the temp folder; ``--fixture``
to choose the file): 60 s of 1280x720 H.264 (libx264 ``veryfast``, B-frames
on), 30 fps, a keyframe every second (GOP 30), a scrolling textured picture.

Cases, each timed end to end from the file path (fastvqa's time includes its
probe of the packets):

- ``uniform16``: 16 frames uniformly (``Uniform(16)``, segment midpoints) as
  RGB at full size. fastvqa: ``read_frames(path, Uniform(16), backend="pyav")``
  (seeks to the keyframe before a wanted frame only when that is cheaper than
  decoding on, converts only kept frames). Baseline: decode every frame with
  PyAV at its defaults (slice threading, the fastest setting on this fixture
  for a full decode), count them, convert the 16 wanted ones to RGB (the
  baseline is given the indices for free). Target: >= 5x.
- ``fps1``: 1 frame per second (``Fps(1)``, 60 frames), resize shorter side
  to 256 + centre crop 224. fastvqa: ``read_frames(..., size=256, crop=224)``
  (YUV -> RGB and resize in one swscale call per kept frame). Baseline: decode
  every frame, convert every frame to RGB (``to_ndarray("rgb24")``), keep
  the 1-fps ones, resize them with PyAV (swscale bilinear) and crop.
  Target: >= 2x.
- torchcodec (``VideoDecoder(seek_mode="exact").get_frames_at``, resize with
  ``torch.nn.functional.interpolate(antialias=True)``) is added where it
  imports; no target.

Before timing, each baseline must give the same frames as fastvqa
(``uniform16``: identical pixels; ``fps1``: the same frame indices and pixels
within 3 grey levels on average, since resizing from YUV and from RGB round
differently); otherwise the script exits 1.

Usage: python benchmarks/bench_video_decode.py [--fixture FILE] [--repeats 3] [--out DIR]
"""

from __future__ import annotations

import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402

NAME = "video_decode"
TARGETS = {"uniform16": 5.0, "fps1": 2.0}
SECONDS, FPS, WIDTH, HEIGHT, GOP = 60, 30, 1280, 720, 30


def make_fixture(path: Path, seconds: int, width: int = WIDTH, height: int = HEIGHT) -> None:
    import av

    rng = np.random.default_rng(0)
    # A smooth random texture, twice the frame width, scrolled 6 px per frame.
    coarse = rng.integers(0, 256, size=(height // 16 + 1, 2 * width // 16 + 1, 3)).astype(np.float32)
    texture = np.kron(coarse, np.ones((16, 16, 1), np.float32))[:height, : 2 * width]
    yy = np.linspace(0, 1, height, dtype=np.float32)[:, None, None]
    texture = (0.6 * texture + 100 * yy).clip(0, 255).astype(np.uint8)
    tmp = path.with_suffix(".partial.mp4")
    with av.open(str(tmp), mode="w") as out:
        stream = out.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.time_base = Fraction(1, FPS)
        stream.codec_context.options = {"preset": "veryfast", "g": str(GOP),
                                        "keyint_min": str(GOP), "sc_threshold": "0"}
        for i in range(seconds * FPS):
            x = (6 * i) % width
            img = np.ascontiguousarray(texture[:, x:x + width])
            img[40:120, 40:40 + 12 * 40] = 0  # a frame counter in 12 binary blocks
            for b in range(12):
                if (i >> b) & 1:
                    img[40:120, 40 + 40 * b:40 + 40 * b + 36] = 255
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    tmp.replace(path)


# ------------------------------------------------------------------- baselines


def decode_all_keep(path, wanted):
    """Decode every frame (PyAV's defaults), convert only the wanted ones."""
    import av

    wanted_set = set(int(i) for i in wanted)
    kept = {}
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        for i, frame in enumerate(c.decode(stream)):
            if i in wanted_set:
                kept[i] = frame.to_ndarray(format="rgb24")
    return np.stack([kept[int(i)] for i in wanted])


def decode_all_convert_resize(path, wanted, out_hw, crop):
    """Decode every frame, convert every frame to RGB, keep the wanted, resize + crop them."""
    import av

    wanted_set = set(int(i) for i in wanted)
    kept = {}
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        for i, frame in enumerate(c.decode(stream)):
            rgb = frame.to_ndarray(format="rgb24")
            if i in wanted_set:
                kept[i] = rgb
    h, w = out_hw
    top, left = int(round((h - crop) / 2.0)), int(round((w - crop) / 2.0))
    out = []
    for i in wanted:
        small = av.VideoFrame.from_ndarray(kept[int(i)], format="rgb24").reformat(
            width=w, height=h, interpolation="BILINEAR").to_ndarray(format="rgb24")
        out.append(small[top:top + crop, left:left + crop])
    return np.stack(out)


def torchcodec_fns(path, uniform_idx, fps_idx, out_hw, crop):
    try:
        import torch
        from torchcodec.decoders import VideoDecoder
    except ImportError:
        return None

    def uniform():
        dec = VideoDecoder(str(path), seek_mode="exact", dimension_order="NHWC")
        return dec.get_frames_at(uniform_idx.tolist()).data.numpy()

    def fps1():
        dec = VideoDecoder(str(path), seek_mode="exact", dimension_order="NCHW")
        x = dec.get_frames_at(fps_idx.tolist()).data.float()
        x = torch.nn.functional.interpolate(x, size=out_hw, mode="bilinear", antialias=True)
        h, w = out_hw
        top, left = int(round((h - crop) / 2.0)), int(round((w - crop) / 2.0))
        return x[:, :, top:top + crop, left:left + crop].round().clamp(0, 255).byte()

    return uniform, fps1


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.set_defaults(repeats=3, warmup=1)
    p.add_argument("--fixture", type=Path,
                   default=Path(tempfile.gettempdir()) / f"fastvqa_bench_{HEIGHT}p_{SECONDS}s.mp4",
                   help="the H.264 fixture (made if missing)")
    args = p.parse_args()
    if args.device != "cpu":
        print("bench_video_decode: the PyAV path is CPU only (DALI/NVDEC rows: scripts/gpu_check.sh)",
              file=sys.stderr)
        return 2
    from fastvqa.video import Fps, Uniform, probe, read_frames
    from fastvqa.video.geometry import output_size

    path = args.fixture
    if not path.exists():
        t0 = time.perf_counter()
        make_fixture(path, SECONDS)
        print(f"made {path} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    index = probe(path)
    size, crop = 256, 224
    out_hw = output_size(index.height, index.width, size)
    uniform_idx, fps_idx = Uniform(16).indices(index), Fps(1).indices(index)
    config = {"fixture": str(path), "frames": len(index), "duration_s": index.duration,
              "size": f"{index.width}x{index.height}", "codec": index.codec,
              "keyframes": len(index.keyframes), "bytes": path.stat().st_size,
              "uniform16_indices": uniform_idx.tolist(), "fps1_frames": len(fps_idx),
              "busy": args.busy}
    env = H.environment("cpu")

    fv_uniform = lambda: read_frames(path, Uniform(16), backend="pyav").data  # noqa: E731
    fv_fps1 = lambda: read_frames(path, Fps(1), size=size, crop=crop, backend="pyav").data  # noqa: E731
    base_uniform = lambda: decode_all_keep(path, uniform_idx)  # noqa: E731
    base_fps1 = lambda: decode_all_convert_resize(path, fps_idx, out_hw, crop)  # noqa: E731

    # Same frames first.
    a, b = fv_uniform(), base_uniform()
    if not np.array_equal(a, b):
        H.fail_check(args.out, NAME, config, env, "uniform16: fastvqa and decode-everything "
                     f"differ (mean abs diff {np.abs(a.astype(int) - b).mean():.2f})")
    a, b = fv_fps1(), base_fps1()
    diff = np.abs(a.astype(np.int16) - b).mean(axis=(1, 2, 3))
    if a.shape != b.shape or diff.max() > 3.0:
        H.fail_check(args.out, NAME, config, env,
                     f"fps1: frames differ (shapes {a.shape} vs {b.shape}, worst mean abs diff "
                     f"{diff.max():.2f})")
    config["fps1_max_mean_abs_diff"] = float(diff.max())
    tc = torchcodec_fns(path, uniform_idx, fps_idx, out_hw, crop)

    cases = {
        "uniform16": (len(uniform_idx), fv_uniform,
                      [("PyAV decode all, keep 16", base_uniform)], 0),
        "fps1": (len(fps_idx), fv_fps1,
                 [("PyAV decode all + RGB all, resize kept", base_fps1)], 1),
    }
    for case, (work, fv, baselines, k) in cases.items():
        impls = [H.Impl(case, "fastvqa read_frames (pyav)", "path", fv)]
        for label, fn in baselines:
            impls.append(H.Impl(case, label, "path", fn, ref=("fastvqa read_frames (pyav)", "path"),
                                target=TARGETS[case]))
        if tc is not None:
            impls.append(H.Impl(case, "torchcodec get_frames_at (exact)", "path", tc[k],
                                ref=("fastvqa read_frames (pyav)", "path")))
        timed = H.time_all(impls, args)
        H.report(f"{NAME}_{case}",
                 f"{case}: {index.width}x{index.height} H.264, {len(index)} frames, "
                 f"{len(index.keyframes)} keyframes; {work} frames out; median of "
                 f"{args.repeats} repeats (IQR); frames/s = frames out / median",
                 impls, timed, work=work, rate_unit="frames/s", config=config, env=env,
                 out_dir=args.out)
    if tc is None:
        print("torchcodec: not importable here, no row")
    return 0


if __name__ == "__main__":
    sys.exit(main())
