# SPDX-License-Identifier: Apache-2.0
"""Benchmark fastvqa's PyAV decoding path against torchcodec and decord.

Fixtures (made at run time with PyAV, cached in the temp folder; ``--fixture-dir``
to choose the folder): 60 s of 1280x720 H.264 (libx264 ``veryfast``, B-frames
on, 3 B-frames with B-pyramid), 30 fps, a scrolling textured picture, a
keyframe every 30 frames (GOP 30) and every 300 frames (GOP 300).

Cases (each x GOP 30, GOP 300), each call timed end to end from the file path
(every row opens and indexes the file in the call: fastvqa's probe,
torchcodec's ``seek_mode="exact"`` scan, decord's ``VideoReader``):

- ``uniform16``: 16 frames (``Uniform(16)``, segment midpoints) as RGB at full
  size. fastvqa ``read_frames(path, Uniform(16), backend="pyav")``; torchcodec
  ``get_frames_at(indices)``; decord ``get_batch(indices)`` (the peers are given
  the indices).
- ``fps1``: 1 frame per second (``Fps(1)``, 60 frames), shorter side resized
  to 256 and centre-cropped to 224. fastvqa ``read_frames(..., size=256,
  crop=224)`` (YUV -> RGB + bilinear resize in one swscale call); torchcodec
  ``get_frames_at`` + ``torch.nn.functional.interpolate(antialias=True)``;
  decord ``VideoReader(width=, height=)`` (its decoder-side scaler) + crop.
- ``random32``: 32 random timestamps (seeded, uniform over the video).
  fastvqa ``VideoDecoder(path).get_frames_played_at(seconds)``; torchcodec
  ``get_frames_played_at(seconds)``; decord ``get_batch`` of the frame numbers
  fastvqa's rule gives (the last frame shown at or before ``t``).

Checks before timing: fastvqa's frames must be bit-identical to a plain PyAV
decode of every frame, picked afterwards (resized frames: the same swscale
bilinear per frame), or the script exits 1. Each peer's full-size frames at
the same indices must be identical to fastvqa's (``identical`` in the JSON
``peer_checks``); a peer's resize is different by design (torch's antialiased
bilinear, decord's scaler), so for ``fps1`` its unresized frames are compared
and the resized ones' mean abs difference recorded. A peer that differs is
reported (``peer_checks``) and still timed. A peer that cannot be imported is
a skipped row with its reason (``skipped`` in the JSON config, printed).

Target: fastvqa >= 1.5x faster than torchcodec and than decord in every case.

torchcodec: PyPI's wheels for the CPU torch here need CUDA libraries; a build
from source against the system FFmpeg works (put it on ``PYTHONPATH``).

Usage: python benchmarks/bench_video_decode.py [--fixture-dir DIR] [--repeats 5] [--busy 2] [--out DIR]
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
TARGET = 1.5
SECONDS, FPS, WIDTH, HEIGHT = 60, 30, 1280, 720
GOPS = (30, 300)
SIZE, CROP, N_RANDOM = 256, 224, 32
CASES = ("uniform16", "fps1", "random32")
FASTVQA = "fastvqa (pyav)"


def make_fixture(path: Path, seconds: int, gop: int, width: int = WIDTH,
                 height: int = HEIGHT) -> None:
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
        stream.codec_context.options = {"preset": "veryfast", "g": str(gop),
                                        "keyint_min": str(gop), "sc_threshold": "0"}
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


# ------------------------------------------------------------------ reference


def plain_decode(path, wanted, out_hw=None):
    """Every frame decoded with PyAV at its defaults, no seek; the wanted ones
    converted to RGB (``out_hw``: swscale bilinear resize in the same call),
    ``{frame number: (H, W, 3) uint8}``."""
    import av

    wanted = set(int(i) for i in wanted)
    kept = {}
    with av.open(str(path)) as c:
        for i, frame in enumerate(c.decode(video=0)):
            if i in wanted:
                if out_hw is None:
                    kept[i] = frame.to_ndarray(format="rgb24")
                else:
                    kept[i] = frame.reformat(width=out_hw[1], height=out_hw[0], format="rgb24",
                                             interpolation="BILINEAR").to_ndarray()
    return kept


def centre(out_hw, crop):
    h, w = out_hw
    return int(round((h - crop) / 2.0)), int(round((w - crop) / 2.0))


# ---------------------------------------------------------------------- peers


def torchcodec_peer():
    """``(label, module)`` or ``(None, reason)``."""
    try:
        import torchcodec
        from torchcodec.decoders import VideoDecoder  # noqa: F401  (loads the FFmpeg libs)
    except Exception as err:  # ImportError, OSError/RuntimeError from loading its libraries
        return None, f"torchcodec not loadable: {type(err).__name__}: {str(err).splitlines()[0]}"
    return f"torchcodec {torchcodec.__version__}", torchcodec


def decord_peer():
    try:
        import decord
    except Exception as err:
        return None, f"decord not importable: {type(err).__name__}: {str(err).splitlines()[0]}"
    return f"decord {decord.__version__}", decord


def torchcodec_fns(path, uniform_idx, fps_idx, seconds, out_hw, crop):
    import torch
    from torchcodec.decoders import VideoDecoder

    top, left = centre(out_hw, crop)

    def open_():
        return VideoDecoder(str(path), seek_mode="exact", dimension_order="NHWC")

    def fps1_full():
        return open_().get_frames_at(fps_idx.tolist()).data.numpy()

    def fps1():
        dec = VideoDecoder(str(path), seek_mode="exact", dimension_order="NCHW")
        x = dec.get_frames_at(fps_idx.tolist()).data.float()
        x = torch.nn.functional.interpolate(x, size=out_hw, mode="bilinear", antialias=True)
        x = x[:, :, top:top + crop, left:left + crop].round().clamp(0, 255).byte()
        return x.permute(0, 2, 3, 1).numpy()

    return {"uniform16": lambda: open_().get_frames_at(uniform_idx.tolist()).data.numpy(),
            "fps1": fps1, "fps1_full": fps1_full,
            "random32": lambda: open_().get_frames_played_at(seconds.tolist()).data.numpy()}


def decord_fns(path, uniform_idx, fps_idx, random_idx, out_hw, crop):
    from decord import VideoReader, cpu

    top, left = centre(out_hw, crop)

    def batch(idx, **kw):
        return VideoReader(str(path), ctx=cpu(0), **kw).get_batch(idx.tolist()).asnumpy()

    def fps1():
        x = batch(fps_idx, width=out_hw[1], height=out_hw[0])
        return x[:, top:top + crop, left:left + crop]

    return {"uniform16": lambda: batch(uniform_idx), "fps1": fps1,
            "fps1_full": lambda: batch(fps_idx), "random32": lambda: batch(random_idx)}


def compare(a, b) -> str:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    if np.array_equal(a, b):
        return "identical"
    d = np.abs(a.astype(np.int16) - b.astype(np.int16))
    same = int(sum(np.array_equal(x, y) for x, y in zip(a, b)))
    return f"differs: {same}/{len(a)} frames identical, mean abs diff {d.mean():.3f}, max {d.max()}"


# ----------------------------------------------------------------------- main


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.set_defaults(repeats=5, warmup=1)
    p.add_argument("--fixture-dir", type=Path, default=Path(tempfile.gettempdir()),
                   help="folder of the H.264 fixtures (made if missing)")
    p.add_argument("--gops", type=int, nargs="+", default=list(GOPS), help="keyframe intervals")
    p.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES), help="cases to time")
    args = p.parse_args()
    if args.device != "cpu":
        print("bench_video_decode: the PyAV path is CPU only (DALI/NVDEC rows: scripts/gpu_check.sh)",
              file=sys.stderr)
        return 2
    from fastvqa.video import Fps, Uniform, VideoDecoder, probe, read_frames
    from fastvqa.video.geometry import output_size

    peers = {}
    skipped = {}
    for name, (label, mod) in (("torchcodec", torchcodec_peer()), ("decord", decord_peer())):
        if label is None:
            skipped[name] = mod
            print(f"{name}: row skipped ({mod})")
        else:
            peers[name] = label
    env = H.environment("cpu")
    for gop in args.gops:
        path = args.fixture_dir / f"fastvqa_bench_{HEIGHT}p_{SECONDS}s_gop{gop}.mp4"
        if not path.exists():
            t0 = time.perf_counter()
            make_fixture(path, SECONDS, gop)
            print(f"made {path} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        index = probe(path)
        out_hw = output_size(index.height, index.width, SIZE)
        top, left = centre(out_hw, CROP)
        uniform_idx, fps_idx = Uniform(16).indices(index), Fps(1).indices(index)
        rng = np.random.default_rng(args.seed)
        seconds = rng.uniform(index.start, index.start + index.duration, N_RANDOM)
        random_idx = np.searchsorted(index.timestamps, seconds + 1e-6, side="right") - 1
        config = {"fixture": str(path), "gop": gop, "frames": len(index),
                  "duration_s": index.duration, "size": f"{index.width}x{index.height}",
                  "codec": index.codec, "keyframes": len(index.keyframes),
                  "bytes": path.stat().st_size, "uniform16_indices": uniform_idx.tolist(),
                  "fps1_frames": len(fps_idx), "random32_seconds": seconds.tolist(),
                  "busy": args.busy, "skipped": skipped, "peers": peers}

        fv = {"uniform16": lambda: read_frames(path, Uniform(16), backend="pyav").data,
              "fps1": lambda: read_frames(path, Fps(1), size=SIZE, crop=CROP,
                                          backend="pyav").data,
              "random32": lambda: VideoDecoder(path, backend="pyav")
              .get_frames_played_at(seconds).data}
        # fastvqa equals a plain decode of every frame, bit for bit.
        full = plain_decode(path, np.r_[uniform_idx, fps_idx, random_idx])
        small = plain_decode(path, fps_idx, out_hw)
        want = {"uniform16": np.stack([full[int(i)] for i in uniform_idx]),
                "fps1": np.stack([small[int(i)] for i in fps_idx])[:, top:top + CROP,
                                                                  left:left + CROP],
                "random32": np.stack([full[int(i)] for i in random_idx])}
        got = {case: fn() for case, fn in fv.items()}
        for case in fv:
            verdict = compare(got[case], want[case])
            if verdict != "identical":
                H.fail_check(args.out, f"{NAME}_{case}_gop{gop}", config, env,
                             f"{case}: fastvqa and a plain PyAV decode {verdict}")
        fps1_full = np.stack([full[int(i)] for i in fps_idx])
        fns, checks = {}, {}
        if "torchcodec" in peers:
            fns["torchcodec"] = torchcodec_fns(path, uniform_idx, fps_idx, seconds, out_hw, CROP)
        if "decord" in peers:
            fns["decord"] = decord_fns(path, uniform_idx, fps_idx, random_idx, out_hw, CROP)
        for name, f in fns.items():
            checks[name] = {"uniform16": compare(f["uniform16"](), want["uniform16"]),
                            "random32": compare(f["random32"](), want["random32"]),
                            "fps1 unresized": compare(f["fps1_full"](), fps1_full),
                            "fps1 resized (different by design)": compare(f["fps1"](),
                                                                          want["fps1"])}
            for what, verdict in checks[name].items():
                print(f"gop{gop} {name} {what}: {verdict}")
        config["peer_checks"] = checks
        work = {"uniform16": len(uniform_idx), "fps1": len(fps_idx), "random32": N_RANDOM}
        for case in args.cases:
            label = f"{case}_gop{gop}"
            impls = [H.Impl(label, FASTVQA, "path", fv[case])]
            for name, f in fns.items():
                impls.append(H.Impl(label, peers[name], "path", f[case], ref=(FASTVQA, "path"),
                                    target=TARGET))
            timed = H.time_all(impls, args)
            H.report(f"{NAME}_{label}",
                     f"{label}: {index.width}x{index.height} H.264 GOP {gop}, {len(index)} frames; "
                     f"{work[case]} frames out; median of {args.repeats} repeats (IQR); "
                     "frames/s = frames out / median",
                     impls, timed, work=work[case], rate_unit="frames/s", config=config, env=env,
                     out_dir=args.out)
    for name, reason in skipped.items():
        print(f"{name}: row skipped ({reason})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
