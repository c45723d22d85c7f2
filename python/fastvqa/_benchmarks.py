# SPDX-License-Identifier: Apache-2.0
"""The one table of benchmarks: every command and registry reads its names,
loaders and folder layouts from here, so adding a benchmark adds one row
(docs/adding_a_benchmark.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class BenchmarkInfo:
    #: The command-line name (``fastvqa eval <name>``, ``--benchmark <name>``).
    name: str
    #: ``fastvqa.evaluation.<module>``, which registers its evaluation(s) and
    #: baselines at import.
    module: str
    #: The loader's name in :mod:`fastvqa.data` (``load_<name>``).
    loader: str
    #: What a folder given for the benchmark must hold (for error messages).
    folder: str
    #: What ``--gt`` may be, for ``fastvqa distractors``' help; None: its
    #: records have no answers to mine distractors from.
    gt: Optional[str]
    #: The split names a folder of it holds, where the benchmark fixes them
    #: (``--split``); None: any file stem.
    splits: Optional[tuple[str, ...]] = None


BENCHMARKS: dict[str, BenchmarkInfo] = {b.name: b for b in (
    BenchmarkInfo("deveqa", "nextgqa", "load_deveqa", "<split>.json or <split>.jsonl",
                  "a DeVE-QA annotation file (.json/.jsonl) or a folder with <split>.json[l]"),
    BenchmarkInfo("dvd", "dvd", "load_dvd",
                  "DVD dialogue .json files (every one below it, except metadata.json)",
                  "a DVD dialogue JSON file or folder"),
    BenchmarkInfo("nextgqa", "nextgqa", "load_nextgqa",
                  "gsub_<split>.json (and <split>.csv), as the loader reads them",
                  "a folder with <split>.csv and gsub_<split>.json", ("test", "val")),
    BenchmarkInfo("qvhighlights", "qvhighlights", "load_qvhighlights",
                  "highlight_<split>_release.jsonl or <split>.jsonl", None),
    BenchmarkInfo("sokbench", "sokbench", "load_sokbench",
                  "SOK-Bench question .json files (every one in it, in name order)",
                  "a SOK-Bench question file (.json) or a folder of them"),
    BenchmarkInfo("wildqa", "wildqa", "load_wildqa",
                  "<split>.json (test, dev, raw_test or raw_dev)",
                  "a WildQA split file (.json) or the folder holding <split>.json",
                  ("test", "dev", "raw_test", "raw_dev")),
)}
