# SPDX-License-Identifier: Apache-2.0
"""Benchmark the DVD dialogue generator: fastvqa.generate.dvd.generate_dialogues
on synthetic CATER-like scenes, in one process and in shards.

Data: ``--scenes`` scenes from ``fastvqa.generate.dvd.synthetic_scene`` (3 to
6 objects, 301 frames, seeded), ``--dialogues-per-scene`` dialogues of 10
turns each, as DVD. The answer-balancing counts restart every ``--block``
scenes (DVD restarts them every 250), and shards are ranges of whole blocks,
so the rows generate the same dialogues: the check compares the union of the
shards with the one-process run, dialogue for dialogue.

What is timed: generating every dialogue (templates, intervals, program
execution, balancing and filters) and, for the shard row, starting
``--shards`` worker processes (fork) that each generate one shard. Writing
JSON is not timed. There is no baseline (DVD's own generator needs CATER's
renders and is under a non-commercial licence): the result is the rate,
dialogues/s, and what it means for DVD's 110k dialogues.

Usage: python benchmarks/bench_generate.py [--scenes 40] [--dialogues-per-scene 10]
       [--block 10] [--shards 2]
"""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
from fastvqa.generate.dvd import generate_dialogues, synthetic_scene  # noqa: E402
from fastvqa.generate.dvd.dialogue import dialogues_to_json  # noqa: E402

NAME = "generate_dvd"
DVD_DIALOGUES = 109_925  # DVD Table 1, all splits

# Set before the worker pool forks, so the workers inherit them.
_SCENES: list = []
_OPTIONS: dict = {}


def _shard(args: tuple) -> list:
    i, n = args
    return generate_dialogues(_SCENES, shard=(i, n), **_OPTIONS).dialogues


def _sharded(n: int) -> list:
    with multiprocessing.get_context("fork").Pool(n) as pool:
        parts = pool.map(_shard, [(i, n) for i in range(n)])
    return [d for part in parts for d in part]


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.set_defaults(repeats=3, warmup=0, min_repeat_ms=0.0)
    p.add_argument("--scenes", type=int, default=40)
    p.add_argument("--dialogues-per-scene", type=int, default=10)
    p.add_argument("--block", type=int, default=10,
                   help="scenes per answer-balancing block (DVD: 250); shards are whole blocks")
    p.add_argument("--shards", type=int, default=2, help="worker processes of the shard row")
    args = p.parse_args()
    if args.device != "cpu":
        print("bench_generate: CPU only", file=sys.stderr)
        return 2
    if args.scenes < args.block * args.shards:
        print(f"bench_generate: --scenes must be at least --block x --shards "
              f"({args.block * args.shards}) so that every shard has a block", file=sys.stderr)
        return 2
    config = {"scenes": args.scenes, "dialogues_per_scene": args.dialogues_per_scene,
              "turns": 10, "block": args.block, "shards": args.shards, "seed": args.seed,
              "device": "cpu", "repeats": args.repeats, "warmup": args.warmup,
              "busy": args.busy}
    env = H.environment("cpu")
    rng = np.random.default_rng(args.seed)
    _SCENES[:] = [synthetic_scene(rng, name=f"scene{i:05d}") for i in range(args.scenes)]
    _OPTIONS.update(seed=args.seed, dialogues_per_scene=args.dialogues_per_scene,
                    balance_reset=args.block)

    whole = generate_dialogues(_SCENES, **_OPTIONS)
    made = len(whole.dialogues)
    print(f"check: {made} dialogues from {args.scenes} scenes; {whole.summary.line()}")
    config["dialogues"] = made
    if dialogues_to_json(_sharded(args.shards)) != dialogues_to_json(whole.dialogues):
        H.fail_check(args.out, NAME, config, env,
                     f"the union of {args.shards} shards differs from the one-process run")
    print(f"check: the union of {args.shards} shards equals the one-process run")
    impls = [H.Impl("dvd", "generate_dialogues, one process", "scenes",
                    lambda: generate_dialogues(_SCENES, **_OPTIONS)),
             H.Impl("dvd", f"{args.shards} shards, {args.shards} processes", "scenes",
                    lambda: _sharded(args.shards))]
    timed = H.time_all(impls, args)
    out = H.report(NAME, f"DVD dialogue generation: {args.scenes} synthetic scenes x "
                         f"{args.dialogues_per_scene} dialogues x 10 turns ({made} made), "
                         f"balancing block {args.block}; median of {args.repeats} repeats "
                         f"(IQR); dialogues/s = dialogues made / median",
                   impls, timed, work=made, rate_unit="dialogues/s", config=config, env=env,
                   out_dir=args.out)
    for r in out["results"]:
        minutes = DVD_DIALOGUES / r["rate"] / 60
        print(f"DVD's {DVD_DIALOGUES:,} dialogues at {r['impl']}: about {minutes:.0f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
