# SPDX-License-Identifier: Apache-2.0
"""Compare two builds of fastvqa's span kernels in one process.

Loads the compiled extension of two builds side by side (``--old`` and
``--new``: paths of ``_C*.so`` files) and times the raw kernel calls on NumPy
inputs, alternating old and new call by call, so that both builds meet the
same machine noise (other processes, frequency changes). On a shared machine
this separates a few percent of kernel speed where two benchmark runs, one
per build, each with its own noise, cannot. First each case's outputs are
required to agree (rtol 1e-5). Reported: the median time per call of each
build, new / old, and the ratio of the fastest calls.

Cases: span_scores forward (sum, mean, contrast) on standard-normal rows and
on attention-like rows (positive, each summing to 1), B=64, T=256, max_len=64,
float32; span_scores backward from a standard-normal band gradient; and
forward sum at other shapes (narrow bands, many short rows, long rows), where
the per-row work weighs more; span_argmax top-1 at its benchmark size (B=256,
T=512, max_len=64).

``--busy N`` runs N CPU-bound processes during the whole comparison (see
``_harness.busy_load``), to compare how the builds degrade on shared cores.

``--op span_argmax``: span_argmax top-1 and top-5 on standard-normal rows at
B=256 T=512 max_len=64 and B=32 T=4096 max_len in (1024, 4096), and on
tie-heavy rows (scores rounded to integers); the outputs of the two builds
must be identical (spans and scores, exactly).

Usage (one thread, as the kernels' own speed is the question)::

    OMP_NUM_THREADS=1 python benchmarks/compare_builds.py \\
        --old /path/to/old/_C.cpython-311-x86_64-linux-gnu.so \\
        --new python/fastvqa/_C.cpython-311-x86_64-linux-gnu.so --rounds 60
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path

import numpy as np

import _harness as H
from fastvqa._arrays import numpy_alloc


def load_extension(tag: str, path: Path):
    """The extension module at ``path``, under the package name ``tag`` (its
    init function is ``PyInit__C`` whatever the package, so two builds load
    side by side)."""
    spec = importlib.util.spec_from_file_location(f"{tag}._C", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"compare_builds: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    rows = {"randn": rng.standard_normal((64, 256)).astype(np.float32)}
    attn = rng.random((64, 256)).astype(np.float32)
    rows["attn"] = attn / attn.sum(1, keepdims=True)
    grad = rng.standard_normal((64, 256, 64)).astype(np.float32)
    grad *= np.arange(256)[:, None] + np.arange(64)[None, :] < 256  # zero on invalid cells
    out = {}
    for reduce in ("sum", "mean", "contrast"):
        for name, x in rows.items():
            out[f"forward {reduce}, {name} rows"] = (
                lambda m, x=x, r=reduce: m.span_scores(x, r, 1, 64, None, 0, numpy_alloc))
        out[f"backward {reduce}"] = (
            lambda m, r=reduce: m.span_scores_backward(grad, r, 1, None, 0, numpy_alloc))
    start, end = (rng.standard_normal((256, 512)).astype(np.float32) for _ in range(2))
    out["span_argmax top-1, B=256 T=512 max_len=64"] = (
        lambda m: m.span_argmax(start, end, 64, 1, 1, None, 0, numpy_alloc)[1])
    for b, t, w in ((64, 256, 4), (4096, 16, 16), (8, 2048, 256)):
        x = rng.standard_normal((b, t)).astype(np.float32)
        out[f"forward sum, B={b} T={t} max_len={w}"] = (
            lambda m, x=x, w=w: m.span_scores(x, "sum", 1, w, None, 0, numpy_alloc))
    return out


def span_argmax_cases(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for b, t, w in ((256, 512, 64), (32, 4096, 1024), (32, 4096, 4096)):
        s, e = (rng.standard_normal((b, t)).astype(np.float32) for _ in range(2))
        for k in (1, 5):
            out[f"top-{k}, B={b} T={t} max_len={w}"] = (
                lambda m, s=s, e=e, w=w, k=k: m.span_argmax(s, e, w, 1, k, None, 0, numpy_alloc))
    s, e = (np.round(rng.standard_normal((256, 512)) * 2).astype(np.float32) for _ in range(2))
    out["top-1, tie-heavy B=256 T=512 max_len=64"] = (
        lambda m: m.span_argmax(s, e, 64, 1, 1, None, 0, numpy_alloc))
    return out


def check_same(new, old, name: str) -> None:
    if isinstance(new, tuple):  # span_argmax: (spans, scores), exactly equal
        for a, b in zip(new, old):
            np.testing.assert_array_equal(a, b, err_msg=name)
    else:
        np.testing.assert_allclose(new, old, rtol=1e-5, atol=1e-6, err_msg=name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the old build's _C*.so")
    parser.add_argument("--new", type=Path, required=True, help="the new build's _C*.so")
    parser.add_argument("--rounds", type=int, default=60,
                        help="alternating rounds per case, 3 calls per build each (default: 60)")
    parser.add_argument("--seed", type=int, default=0, help="input seed (default: 0)")
    parser.add_argument("--busy", type=H._non_negative_int, default=0, metavar="N",
                        help="CPU-bound processes running during the comparison (default: 0)")
    parser.add_argument("--only", default=None,
                        help="run only the cases whose name contains this text")
    parser.add_argument("--op", choices=("span_scores", "span_argmax"), default="span_scores",
                        help="which kernels to compare (default: span_scores)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    builds = {"old": load_extension("fastvqa_old", args.old),
              "new": load_extension("fastvqa_new", args.new)}
    with H.busy_load(args.busy):
        compare(builds, args)


def compare(builds: dict, args: argparse.Namespace) -> None:
    print(f"busy: {args.busy}, load {os.getloadavg()[0]:.2f}")
    print("| case | old (median) | new (median) | new / old | fastest new / fastest old |")
    print("|---|---|---|---|---|")
    chosen = cases if args.op == "span_scores" else span_argmax_cases
    for name, call in chosen(args.seed).items():
        if args.only and args.only not in name:
            continue
        check_same(call(builds["new"]), call(builds["old"]), name)
        times: dict = {"old": [], "new": []}
        for _ in range(args.rounds):
            for tag, module in builds.items():
                t0 = time.perf_counter()
                for _ in range(3):
                    call(module)
                times[tag].append((time.perf_counter() - t0) / 3)
        old, new = np.median(times["old"]), np.median(times["new"])
        fastest = min(times["new"]) / min(times["old"])
        print(f"| {name} | {old * 1e3:.3f} ms | {new * 1e3:.3f} ms | {new / old:.2f} | "
              f"{fastest:.2f} |")


if __name__ == "__main__":
    main()
