# SPDX-License-Identifier: Apache-2.0
"""``fastvqa extract``, ``fastvqa store info`` and ``fastvqa store verify``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fastvqa._argtypes import int_at_least

DESCRIPTION = ("Decode a folder of videos at a recipe's sampling, run the model on the frames "
               "or clips and write one safetensors file per video into a feature store; or, "
               "with BENCHMARK --text-recipe NAME --gt PATH, encode the benchmark's questions "
               "into a query store, one entry per record. Killed runs resume (run the same "
               "command again); --shard i/n (or torchrun's RANK/WORLD_SIZE) splits the work; "
               "undecodable videos and records without text are recorded as failed and "
               "skipped (--retry-failed runs them again). Needs torch, PyAV and safetensors: "
               "pip install 'fastvqa[extract]'.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from fastvqa._cli_grammar import add_old
    from fastvqa.data.benchmarks import BENCHMARK_NAMES, gt_help, split_help
    from fastvqa.extract.recipes import RECIPES, TEXT_RECIPES

    names = ", ".join(BENCHMARK_NAMES)
    p.add_argument("source", nargs="?", metavar="VIDEOS|BENCHMARK",
                   help="with --recipe: a folder of videos (searched recursively) or one video "
                        "file; with --text-recipe: the benchmark whose records --gt holds, one "
                        f"of: {names}")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--recipe", choices=sorted(RECIPES),
                       help="video features: what decides the numbers: sampler, resize, crop, "
                            "normalisation, model and layer, dtype, time mapping "
                            "(docs/extract.md)")
    which.add_argument("--text-recipe", choices=sorted(TEXT_RECIPES),
                       help="query features of BENCHMARK's records: which text (question, or "
                            "question and each option), tokens or one pooled row, encoder, "
                            "max tokens, dtype, paired video recipe (docs/extract.md)")
    p.add_argument("--out", required=True, help="the store folder (made if missing; an "
                                                "existing store must be of the same recipe "
                                                "and model)")
    p.add_argument("--gt", type=Path, metavar="PATH",
                   help="with --text-recipe: the records: " + gt_help(BENCHMARK_NAMES))
    p.add_argument("--split", default="test",
                   help="with --text-recipe, " + split_help(BENCHMARK_NAMES, "a --gt folder"))
    p.add_argument("--pair-with", metavar="VIDEO_STORE",
                   help="with --text-recipe: the video store these query features go with; "
                        "its recipe becomes the pairing recorded (else the text recipe's own), "
                        "and StoreDataset refuses a video store of another recipe")
    add_old(p, "--benchmark", dest="old_benchmark", metavar="NAME", choices=BENCHMARK_NAMES)
    p.add_argument("--model", default=None,
                   help="model spec, replacing the recipe's: for --recipe torchvision:NAME"
                        "[@CHECKPOINT], open_clip:ARCH@CHECKPOINT, fastvqa:tiny-frames, "
                        "fastvqa:tiny-clips; for --text-recipe open_clip:ARCH@CHECKPOINT, "
                        "open_clip:ARCH (random weights), hf:FOLDER, fastvqa:tiny-text "
                        "(random weights) or module:function (a list of strings to arrays)")
    p.add_argument("--shard", default=None, help="i/n: this run does every n-th video (or "
                                                 "group of records) from the i-th; without "
                                                 "it, torchrun's RANK/WORLD_SIZE when set")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="--recipe only; local: decode threads feeding the model in this "
                        "process; ray: Ray Data on the cluster RAY_ADDRESS names (else a "
                        "local Ray); the store must be on a file system every node sees")
    p.add_argument("--workers", type=int_at_least(1), default=None,
                   help="--recipe only; local: decode threads, min(4, cores) when not given; "
                        "ray: model actors, 1 when not given")
    p.add_argument("--device", default="cpu",
                   help="where the model runs: cpu, cuda or cuda:K (frames are decoded on the "
                        "CPU)")
    p.add_argument("--retry-failed", action="store_true",
                   help="run again the videos (or records) recorded as failed")
    p.add_argument("--repair", action="store_true",
                   help="verify every done file of these videos or records (checksums too); "
                        "move a damaged or foreign one (another recipe, model or id; a query "
                        "encoded from other text) aside into STORE/quarantine/ and extract it "
                        "again")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    if args.text_recipe is not None:
        return _run_text(args)
    from fastvqa.errors import CommandError
    from fastvqa.extract.engine import run as extract

    given = [flag for flag, value in (("--gt", args.gt), ("--pair-with", args.pair_with),
                                      ("--benchmark", args.old_benchmark)) if value is not None]
    if given:
        raise CommandError(f"{given[0]} goes with --text-recipe (query features of a "
                           "benchmark's records), not --recipe")
    if args.source is None:
        raise CommandError("give the videos: fastvqa extract VIDEOS --recipe NAME --out STORE")
    summary = extract(args.source, args.recipe, out=args.out, model=args.model,
                      shard=args.shard, workers=args.workers, retry_failed=args.retry_failed,
                      progress=False if args.no_progress else None, engine=args.engine,
                      device=args.device, repair=args.repair)
    print(f"{summary.store}: {summary.line()}")
    return 1 if summary.failed else 0


def _run_text(args: argparse.Namespace) -> int:
    """``fastvqa extract BENCHMARK --text-recipe NAME --gt PATH --out STORE``."""
    from fastvqa._cli_grammar import benchmark
    from fastvqa.data.benchmarks import BENCHMARK_NAMES, load_benchmark
    from fastvqa.errors import CommandError
    from fastvqa.extract.text import run_text

    if args.engine != "local" or args.workers is not None:
        raise CommandError(f"{'--engine' if args.engine != 'local' else '--workers'} goes with "
                           "--recipe (video features); --text-recipe runs in this process")
    args.benchmark = args.source
    name = benchmark(args, "extract")
    if name not in BENCHMARK_NAMES:
        raise CommandError(f"{name!r} is not a benchmark: with --text-recipe, name the "
                           f"benchmark first (fastvqa extract BENCHMARK --text-recipe "
                           f"{args.text_recipe} --gt PATH), one of: {', '.join(BENCHMARK_NAMES)}")
    if args.gt is None:
        raise CommandError(f"--text-recipe needs --gt PATH, the {name} records to encode")
    records = load_benchmark(name, args.gt, args.split)
    if not records:
        raise CommandError(f"{args.gt}: no {name} records to encode")
    summary = run_text(records, args.text_recipe, out=args.out, model=args.model,
                       pair_with=args.pair_with, benchmark=name, shard=args.shard,
                       retry_failed=args.retry_failed, repair=args.repair,
                       progress=False if args.no_progress else None, device=args.device)
    print(f"{summary.store}: {summary.line()}")
    return 1 if summary.failed else 0


def add_store_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="store_command", metavar="COMMAND", required=True)
    info = sub.add_parser("info", help="summarise a store: recipe, counts, failures, size")
    info.add_argument("store", help="the store folder")
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    info.add_argument("--manifest", action="store_true",
                      help="print every video's record as JSON lines")
    verify = sub.add_parser("verify", help="check every file: readable, this store's recipe, "
                                           "model and video, data matching their checksum; "
                                           "exit 1 if any is damaged or foreign")
    verify.add_argument("store", help="the store folder")


def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def run_store(args: argparse.Namespace) -> int:
    from fastvqa.extract.store import FeatureStore

    store = FeatureStore(args.store)
    if args.store_command == "verify":
        return _verify(store)
    if args.manifest:
        for record in store.manifest():
            print(json.dumps(record, sort_keys=True))
        return 0
    info = store.info()
    if args.json:
        print(json.dumps(info, indent=1, sort_keys=True))
        return 0
    rows = [("store", info["store"]), ("recipe", f"{info['recipe']} ({info['recipe_hash'][:12]})"),
            ("model", info["model"]),
            ("weights", info["weights"] or "not recorded (an older store)"),
            ("records" if info["kind"] == "text" else "videos", info["videos"]),
            ("failed", info["failed"]),
            ("features", f"{info['features']} x {info['feature_shape']} {info['dtype']}"),
            ("size", _bytes(info["bytes"]))]
    if info["kind"] == "text":
        pair = info["pair"] or {}
        rows.insert(2, ("pairs", f"{pair.get('video_recipe')} "
                                 f"({str(pair.get('video_recipe_hash'))[:12]})" if pair
                        else "any video recipe"))
    for key, value in rows:
        print(f"{key:9} {value}")
    for video, error in info["failures"].items():
        print(f"failed    {video}: {error}")
    return 0


def _verify(store) -> int:
    """``fastvqa store verify``: one line per bad file, then the counts."""
    report = store.verify()
    for kind in ("damaged", "foreign"):
        for path, why in sorted(report[kind].items()):
            print(f"{kind:8} {why}")
    ok, damaged, foreign = len(report["ok"]), len(report["damaged"]), len(report["foreign"])
    print(f"{store.path}: {ok} ok, {damaged} damaged, {foreign} foreign"
          + ("; fastvqa extract --repair moves them aside and extracts them again"
             if damaged or foreign else ""))
    return 1 if damaged or foreign else 0
