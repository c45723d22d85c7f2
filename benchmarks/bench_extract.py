# SPDX-License-Identifier: Apache-2.0
"""Benchmark the feature-store pipeline, fastvqa.extract.run, against the plain
loop a researcher writes.

Input: ``--videos`` (default 6) H.264 videos of ``--seconds`` (default 20) at
640x360, 30 fps, a keyframe every 30 frames, B-frames (libx264 defaults),
written once into a temporary folder (moving gradients, so every frame
differs).

Recipe: one frame per second (``fps:1``) at the decoded size (no resize, so
both sides see the same pixels bit for bit), a small random-init conv net
(``fastvqa:tiny-frames``: decoding dominates, as with a light model on a
GPU), float32 features.

Baseline, the loop of most feature-extraction scripts: PyAV decodes every
frame of each video in turn, converts each to an RGB array
(``frame.to_ndarray(format="rgb24")``), keeps the frame on screen at each
whole second (the first frame whose time reaches it), normalises it and runs
the model on that one frame. fastvqa: ``run(videos, recipe, out=STORE)`` with
its defaults (decode threads ahead of the model, only the frames the sampler
keeps decoded, batches of 16), into a fresh store each repeat, the store's
writing included.

Before timing, the baseline's kept frame numbers must equal fastvqa's and its
features must match the store's (``allclose``, 1e-5); otherwise the script
exits 1. Reported: seconds per pass over all videos, videos/s and the ratio.
Target (CPU): >= 3x the plain loop.

Usage: python benchmarks/bench_extract.py [--videos 6] [--seconds 20] [--repeats 3]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402

NAME = "extract"
TARGET = 3.0
WIDTH, HEIGHT, FPS, GOP = 640, 360, 30, 30


def make_video(path: Path, seconds: float, seed: int) -> None:
    import av

    n = int(seconds * FPS)
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    rng = np.random.default_rng(seed)
    speed = rng.integers(1, 7, 3)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.options = {"g": str(GOP), "keyint_min": str(GOP), "sc_threshold": "0",
                          "preset": "veryfast"}
        for k in range(n):
            rgb = np.stack([(x + speed[0] * k) % 256, (y + speed[1] * k) % 256,
                            (x + y + speed[2] * k) % 256], axis=-1).astype(np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def plain_loop(paths: list, model, mean, std) -> tuple:
    """Every frame decoded and converted; the frame at each whole second kept
    and run through the model alone. Returns ({video: kept frame numbers},
    {video: features})."""
    import av
    import torch

    kept, feats = {}, {}
    for path in paths:
        numbers, rows = [], []
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            next_t, first = 0.0, None
            for i, frame in enumerate(container.decode(stream)):
                rgb = frame.to_ndarray(format="rgb24")
                t = float(frame.pts * stream.time_base)
                first = t if first is None else first
                if t - first + 1e-6 >= next_t:
                    x = torch.from_numpy(rgb).float().div(255).sub(mean).div(std)
                    with torch.inference_mode():
                        rows.append(model(x.permute(2, 0, 1)[None].contiguous())[0].numpy())
                    numbers.append(i)
                    next_t += 1.0
        kept[path.stem], feats[path.stem] = numbers, np.stack(rows)
    return kept, feats


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--videos", type=int, default=6, help="videos per pass")
    p.add_argument("--seconds", type=float, default=20.0, help="length of each video")
    p.set_defaults(repeats=3, warmup=1)
    args = p.parse_args()
    if args.device != "cpu":
        print("--device cuda: the DALI path is benchmarked by scripts/gpu_check.sh",
              file=sys.stderr)
        return 2
    import torch

    from fastvqa.extract import FeatureStore, Recipe, run
    from fastvqa.extract.models import resolve
    from fastvqa.video import Fps, probe

    config = {"videos": args.videos, "seconds": args.seconds, "size": [HEIGHT, WIDTH],
              "fps": FPS, "gop": GOP, "recipe": "fps:1, native size, fastvqa:tiny-frames",
              "repeats": args.repeats, "warmup": args.warmup, "busy": args.busy,
              "device": "cpu"}
    env = H.environment("cpu")
    name = f"{NAME}_cpu"
    recipe = Recipe(name="bench-frames-1fps", sampler="fps:1", model="fastvqa:tiny-frames",
                    mean=(0.45, 0.45, 0.45), std=(0.25, 0.25, 0.25), time="grid")
    mean = torch.tensor(recipe.mean)
    std = torch.tensor(recipe.std)
    model = resolve(recipe.model).fn
    work = Path(tempfile.mkdtemp(prefix="fastvqa-bench-extract-"))
    try:
        folder = work / "videos"
        folder.mkdir()
        paths = []
        for i in range(args.videos):
            paths.append(folder / f"v{i:02d}.mp4")
            make_video(paths[-1], args.seconds, seed=i)
        print(f"{args.videos} videos of {args.seconds:g} s at {WIDTH}x{HEIGHT}, {FPS} fps, "
              f"GOP {GOP} in {folder}")

        # Check: same frames, same features.
        kept, feats = plain_loop(paths, model, mean, std)
        run(folder, recipe, out=work / "check", progress=False)
        store = FeatureStore(work / "check")
        for path in paths:
            want = Fps(1).indices(probe(path)).tolist()
            if kept[path.stem] != want:
                H.fail_check(args.out, name, config, env, f"{path.name}: the loop kept frames "
                             f"{kept[path.stem][:5]}..., fastvqa's sampler {want[:5]}...")
            got = store.load(path.stem).features
            if got.shape != feats[path.stem].shape or not np.allclose(got, feats[path.stem],
                                                                      rtol=1e-5, atol=1e-5):
                H.fail_check(args.out, name, config, env, f"{path.name}: features differ")
        print(f"check: the loop and the store keep the same frames and agree on the features "
              f"({sum(len(k) for k in kept.values())} frames)")

        count = [0]

        def fastvqa_pass():
            count[0] += 1
            out = work / f"store{count[0]}"
            run(folder, recipe, out=out, progress=False)
            shutil.rmtree(out)

        fv = ("fastvqa.extract.run", "video files")
        impls = [H.Impl("fps1_native", *fv, fastvqa_pass),
                 H.Impl("fps1_native", "plain PyAV loop, frame by frame", "video files",
                        lambda: plain_loop(paths, model, mean, std), ref=fv, target=TARGET)]
        timed = H.time_all(impls, args)
        title = (f"feature extraction, {args.videos} videos x {args.seconds:g} s "
                 f"({WIDTH}x{HEIGHT}, {FPS} fps), fps:1 into fastvqa:tiny-frames, CPU; "
                 "one pass over all videos per call")
        H.report(name, title, impls, timed, work=args.videos, rate_unit="videos/s",
                 config=config, env=env, out_dir=args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
