# SPDX-License-Identifier: Apache-2.0
"""Benchmark DALI NVDEC decoding (``backend="dali"``, GPU) against the PyAV CPU path.

For 720p and 1080p H.264 fixtures (30 fps, a keyframe every second, made with
PyAV on first use), a batch of ``--batch`` videos is read with ``Uniform(16)``
through ``fastvqa.video.read_batch`` on both backends. Before timing, both must
return the same frame indices and frames within codec rounding. Reported:
median time, frames/s, the ratio CPU time / GPU time, and the GPU memory in use
after the GPU runs (``torch.cuda.mem_get_info``: DALI's pools are not torch's,
so torch's own counters would miss them). GPU only; no target.

Usage: python benchmarks/bench_video_gpu.py [--batch 8] [--out DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
from bench_video_decode import SECONDS, make_fixture  # noqa: E402

RESOLUTIONS = {"720p": (1280, 720), "1080p": (1920, 1080)}


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.set_defaults(repeats=3, warmup=1, device="cuda")
    p.add_argument("--batch", type=int, default=8, help="videos per batch (default 8)")
    args = p.parse_args()
    if args.device != "cuda":
        print("bench_video_gpu: GPU only (use bench_video_decode.py on the CPU)", file=sys.stderr)
        return 2
    H.require_device("cuda")
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        print("bench_video_gpu: DALI is not installed (pip install 'fastvqa[dali]')",
              file=sys.stderr)
        return 2
    import torch

    from fastvqa.video import Uniform, read_batch

    env = H.environment("cuda")
    free0, total = torch.cuda.mem_get_info()
    for name, (width, height) in RESOLUTIONS.items():
        path = Path(tempfile.gettempdir()) / f"fastvqa_bench_{height}p_{SECONDS}s.mp4"
        if not path.exists():
            make_fixture(path, SECONDS, width, height)
        paths = [path] * args.batch

        def gpu():
            out = read_batch(paths, Uniform(16), backend="dali", device="cuda")
            torch.cuda.synchronize()
            return out

        def cpu():
            return read_batch(paths, Uniform(16), backend="pyav")

        config = {"fixture": str(path), "resolution": name, "batch": args.batch,
                  "frames_out": 16 * args.batch, "busy": args.busy}
        g, c = gpu(), cpu()
        for a, b in zip(g, c):
            if not np.array_equal(np.asarray(a.indices), np.asarray(b.indices)):
                H.fail_check(args.out, f"video_gpu_{name}", config, env,
                             f"indices differ: {a.indices} vs {b.indices}")
            diff = np.abs(a.data.cpu().numpy().astype(np.int16) - b.data).mean()
            if diff > 3.0:
                H.fail_check(args.out, f"video_gpu_{name}", config, env,
                             f"frames differ beyond codec rounding (mean abs diff {diff:.2f})")
        impls = [H.Impl(name, "fastvqa dali (NVDEC)", "paths", gpu),
                 H.Impl(name, "fastvqa pyav (CPU)", "paths", cpu,
                        ref=("fastvqa dali (NVDEC)", "paths"))]
        timed = H.time_all(impls, args)
        free1, _ = torch.cuda.mem_get_info()
        config["gpu_memory_in_use_mib"] = (total - free1) / 2**20
        config["gpu_memory_added_mib"] = (free0 - free1) / 2**20
        H.report(f"video_gpu_{name}",
                 f"{name} H.264, batch of {args.batch} x Uniform(16); GPU memory in use after: "
                 f"{(total - free1) / 2**20:.0f} MiB (+{(free0 - free1) / 2**20:.0f} MiB)",
                 impls, timed, work=16 * args.batch, rate_unit="frames/s", config=config,
                 env=env, out_dir=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
