# SPDX-License-Identifier: Apache-2.0
"""``fastvqa generate dvd``: DVD-style dialogues from a folder of CATER scene
JSON files, written in the released DVD JSON layout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fastvqa._argtypes import int_at_least, unit_interval
from fastvqa._shards import shard_argument
from fastvqa.errors import CommandError

DESCRIPTION = ("Generate DVD-style diagnostic dialogues (10 turns, temporal relations, object "
               "references, topic transfers, answer balancing, redundancy and dependency "
               "filters; docs/papers/dvd.md) from a folder of CATER scene JSON files, into one "
               "dialogue JSON file in the released DVD layout (fastvqa eval dvd reads it). "
               "One seed gives one dataset; --shard i/n generates a range of whole "
               "250-scene balancing blocks (scenes sorted by name), so the shards' files "
               "together hold exactly the unsharded run's dialogues.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenes", required=True, metavar="DIR",
                   help="a folder of CATER scene JSON files (*.json, searched recursively; "
                        "a scene is named by its file name without .json)")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="the dialogue JSON file to write (must not exist)")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="the run's seed: one seed, one dataset")
    p.add_argument("--shard", type=shard_argument, default=None, metavar="i/n",
                   help="generate shard i of n (ranges of whole balancing blocks)")
    p.add_argument("--dialogues-per-scene", type=int_at_least(1), default=10, metavar="K",
                   help="dialogues per scene (DVD: 10)")
    p.add_argument("--turns", type=int_at_least(1), default=10,
                   help="turns per dialogue (DVD: 10)")
    p.add_argument("--p-extend", type=unit_interval, default=0.3, metavar="P",
                   help="probability of a video cutoff extension where the previous turn "
                        "allows one (the paper's 30%%)")
    p.add_argument("--min-video-updates", type=int_at_least(0), default=1, metavar="K",
                   help="keep a dialogue only with at least K video updates where its first "
                        "cutoff leaves room for one (the paper: every dialogue has 1 to 3); "
                        "0 turns the filter off")
    p.add_argument("--balance-reset", type=int_at_least(1), default=250, metavar="N",
                   help="answer-balancing counts restart every N scenes (as DVD's code)")
    p.add_argument("--split", default="all_actions",
                   help="the CATER split written in every turn")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _scene_files(folder: str) -> list[Path]:
    root = Path(folder)
    if not root.exists():
        raise CommandError(f"--scenes {folder}: no such folder")
    if not root.is_dir():
        raise CommandError(f"--scenes {folder}: not a folder (give a folder of CATER scene "
                           "JSON files)")
    files = sorted(p for p in root.rglob("*.json") if p.is_file())
    if not files:
        raise CommandError(f"--scenes {folder}: holds no *.json scene file")
    seen: dict[str, Path] = {}
    for f in files:
        if f.stem in seen:
            raise CommandError(f"--scenes {folder}: two scene files are named {f.stem!r}: "
                               f"{seen[f.stem]} and {f}")
        seen[f.stem] = f
    return files


def run(args: argparse.Namespace) -> int:
    from fastvqa._outputs import check_new
    from fastvqa.generate.dvd.dialogue import generate_dialogues, write_dialogues
    from fastvqa.generate.dvd.scene import load_cater_scene

    check_new(args.out, "dialogue file")
    files = _scene_files(args.scenes)
    scenes = [(f.stem, (lambda f=f: load_cater_scene(f))) for f in files]
    result = generate_dialogues(
        scenes, seed=args.seed, dialogues_per_scene=args.dialogues_per_scene, turns=args.turns,
        shard=args.shard, progress=False if args.no_progress else None,
        p_extend=args.p_extend, balance_reset=args.balance_reset, split=args.split,
        min_video_updates=args.min_video_updates)
    s = result.summary
    write_dialogues(result.dialogues, args.out)
    print(f"{args.out}: {s.line()}")
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(s.transfers.items())) or "none"
    print(f"  topic transfers: {kinds}", file=sys.stderr)
    print("  turns by question sub-type: " + ", ".join(
        f"{k} {v}" for k, v in s.question_types.items()), file=sys.stderr)
    if not result.dialogues:
        print("fastvqa generate dvd: warning: no dialogue was generated (see the rejections "
              "above)", file=sys.stderr)
        return 1
    return 0


__all__ = ["DESCRIPTION", "add_arguments", "run"]
