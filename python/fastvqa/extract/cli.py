# SPDX-License-Identifier: Apache-2.0
"""``fastvqa extract``, ``fastvqa store info`` and ``fastvqa store verify``."""

from __future__ import annotations

import argparse
import json

from fastvqa._argtypes import int_at_least

DESCRIPTION = ("Decode a folder of videos at a recipe's sampling, run the model on the frames "
               "or clips and write one safetensors file per video into a feature store. "
               "Killed runs resume (run the same command again); --shard i/n (or torchrun's "
               "RANK/WORLD_SIZE) splits the videos; undecodable videos are recorded as "
               "failed and skipped (--retry-failed runs them again). Needs torch, PyAV and "
               "safetensors: pip install 'fastvqa[extract]'.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from fastvqa.extract.recipes import RECIPES

    p.add_argument("videos", help="a folder of videos (searched recursively) or one video file")
    p.add_argument("--recipe", required=True, choices=sorted(RECIPES),
                   help="what decides the numbers: sampler, resize, crop, normalisation, "
                        "model and layer, dtype, time mapping (docs/extract.md)")
    p.add_argument("--out", required=True, help="the store folder (made if missing; an "
                                                "existing store must be of the same recipe "
                                                "and model)")
    p.add_argument("--model", default=None,
                   help="model spec, replacing the recipe's: torchvision:NAME[@CHECKPOINT], "
                        "open_clip:ARCH@CHECKPOINT, fastvqa:tiny-frames, fastvqa:tiny-clips")
    p.add_argument("--shard", default=None, help="i/n: this run does every n-th video from "
                                                 "the i-th (default: RANK/WORLD_SIZE if set)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: decode threads feeding the model in this process; ray: Ray "
                        "Data on the cluster RAY_ADDRESS names (else a local Ray); the store "
                        "must be on a file system every node sees")
    p.add_argument("--workers", type=int_at_least(1), default=None,
                   help="local: decode threads (default: min(4, cores)); ray: model actors "
                        "(default 1)")
    p.add_argument("--device", default="cpu",
                   help="where the model runs: cpu, cuda or cuda:K (frames are decoded on the "
                        "CPU)")
    p.add_argument("--retry-failed", action="store_true",
                   help="run again the videos recorded as failed")
    p.add_argument("--repair", action="store_true",
                   help="verify every done file of these videos (checksums too); move a "
                        "damaged or foreign one (another recipe, model or video) aside into "
                        "STORE/quarantine/ and extract its video again")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from fastvqa.extract.engine import run as extract

    summary = extract(args.videos, args.recipe, out=args.out, model=args.model,
                      shard=args.shard, workers=args.workers, retry_failed=args.retry_failed,
                      progress=False if args.no_progress else None, engine=args.engine,
                      device=args.device, repair=args.repair)
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
            ("videos", info["videos"]), ("failed", info["failed"]),
            ("features", f"{info['features']} x {info['feature_shape']} {info['dtype']}"),
            ("size", _bytes(info["bytes"]))]
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
