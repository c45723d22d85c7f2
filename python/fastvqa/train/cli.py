# SPDX-License-Identifier: Apache-2.0
"""``fastvqa train CONFIG``: train a grounding model from feature stores."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

DESCRIPTION = ("Train a grounding model (fastvqa.nn: moment_detr, span, io) on a benchmark's "
               "records joined with a video feature store and a question feature store "
               "(fastvqa extract, fastvqa extract --text-recipe), as a TOML or JSON config "
               "describes it (docs/training.md). Each epoch is scored with the benchmark's "
               "exact metrics; the run folder keeps log.jsonl, run.json (config and the "
               "stores' recipe hashes), best.safetensors and last.pt. Run the same command "
               "again to resume a stopped run. Data parallel: torchrun --nproc_per_node N "
               "-m fastvqa train CONFIG (gloo on the CPU, NCCL on GPUs).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", metavar="CONFIG", help="the run's config, a .toml or .json file")
    p.add_argument("--out", metavar="DIR",
                   help="the run folder, replacing the config's out (a new folder, or the "
                        "run to resume)")
    p.add_argument("--device", metavar="DEVICE",
                   help="cpu, cuda or cuda:K, replacing the config's device")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fastvqa.train.config import check_config, load_config
    from fastvqa.train.loop import fit

    config = load_config(args.config)
    changes = {k: v for k, v in (("out", args.out), ("device", args.device)) if v is not None}
    if changes:
        config = dataclasses.replace(config, **changes)
        check_config(config, args.config)
    result = fit(config, progress=False if args.no_progress else None)
    if os.environ.get("RANK", "0") != "0":   # torchrun: rank 0 speaks for the run
        return 0
    if result.best_epoch is not None:
        value = result.best_metrics[result.metric]
        print(f"{result.out}: best epoch {result.best_epoch}, {result.metric} {value:.2f} "
              f"({result.out / 'best.safetensors'})")
    else:
        print(f"{result.out}: trained, not evaluated", file=sys.stderr)
    return 0


__all__ = ["DESCRIPTION", "add_arguments", "run"]
