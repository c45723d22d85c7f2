# SPDX-License-Identifier: Apache-2.0
"""``fastvqa audit <benchmark> --gt PATH [--train PATH]``: the blind-baseline
report of :func:`fastvqa.audit.audit`, printed (as JSON with ``--json``), and
written as JSON or HTML (``--out FILE.json``, ``--out FILE.html``). Files are
read by the benchmark's loader (as ``fastvqa duplicates BENCHMARK`` reads
them); every option and output is checked before any work."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from fastvqa._argtypes import int_at_least, unit_interval_positive
from fastvqa.data.benchmarks import ANSWERED, BENCHMARKS, benchmark_choices, gt_help, split_help
from fastvqa.errors import CommandError

DESCRIPTION = ("What a model can score without the video: answer and question-type priors, "
               "question retrieval from --train, option-only and question-only logistic "
               "regressions on TF-IDF (k-fold cross-validation, grouped by video), the "
               "correct option's position balance (chi-square), answer-length bias and "
               "train/test near-duplicate leakage, each next to its chance level.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from fastvqa._cli_grammar import add_json, add_old, add_out
    from fastvqa.audit.core import DEFAULT_FOLDS, DEFAULT_THRESHOLD

    names = benchmark_choices(ANSWERED)  # the audit scores answers
    p.add_argument("benchmark", choices=names, metavar="BENCHMARK",
                   help="whose files --gt and --train are: " + ", ".join(names))
    p.add_argument("--gt", type=Path, required=True, metavar="PATH",
                   help="the audited questions: " + gt_help(names))
    p.add_argument("--train", type=Path,
                   help="the training split (file or folder) for the priors, retrieval and "
                        "leakage (without it the priors come from --gt itself, and retrieval "
                        "and leakage are left out)")
    p.add_argument("--split", default="test", help=split_help(names, "a --gt folder"))
    trains = ", ".join(f"{n} {BENCHMARKS[n].train_split}" for n in names
                       if BENCHMARKS[n].train_split)
    p.add_argument("--train-split",
                   help=f"the split of a --train folder (default: {trains}, else --split)")
    p.add_argument("--schema", choices=("auto", "devi", "release"), default="auto",
                   help="deveqa: layout of the records (auto: detected)")
    p.add_argument("--folds", type=int_at_least(2), default=DEFAULT_FOLDS,
                   help="folds of the text baselines' cross-validation")
    p.add_argument("--threshold", type=unit_interval_positive, default=DEFAULT_THRESHOLD,
                   help="TF-IDF cosine in (0, 1] at which a test question is a near-duplicate "
                        "of a training question")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="seed of the fold assignment, an integer >= 0")
    add_json(p, "print the report as JSON instead of the table", old_file=True)
    add_out(p, {".json": "the report as JSON", ".html": "a self-contained page with plots"},
            "the report")
    add_old(p, "--html", metavar="FILE")  # now --out FILE.html
    p.set_defaults(func=run)


#: ``fastvqa audit --out``: suffix -> format.
OUT_FORMATS = {".json": "json", ".html": "html"}


def _read(args: argparse.Namespace, path: Path, split: str, option: str) -> list:
    from fastvqa.data.benchmarks import check_split, load_benchmark, split_path

    split_option = "--split" if option == "--gt" else "--train-split"
    check_split(args.benchmark, split, path=path, option=split_option)
    split_path(args.benchmark, path, split, option=split_option)
    options = {"schema": args.schema} if args.benchmark == "deveqa" else {}
    records = load_benchmark(args.benchmark, path, split, **options)
    if not records:
        raise CommandError(f"{option} {path}: holds no {args.benchmark} questions")
    if args.benchmark == "nextgqa" and any(r.answer is None for r in records):
        # gsub_<split>.json alone (or a folder without the csv): spans, no questions.
        raise CommandError(f"{option} {path}: holds the grounding only (gsub_{split}.json has "
                           "no questions, options or answers); the audit needs the questions "
                           f"too: pass the folder holding gsub_{split}.json and {split}.csv")
    return records


def run(args: argparse.Namespace) -> int:
    from fastvqa.retrieval.cli import warnings_to_stderr

    with warnings_to_stderr("audit"):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from fastvqa._cli_grammar import out_files
    from fastvqa._outputs import OutputFiles
    from fastvqa.audit.core import audit
    from fastvqa.audit.report import format_table, render_html, to_json
    from fastvqa.data.benchmarks import split_path

    outputs = OutputFiles()  # refused now, before any work, if taken
    # The old spellings keep the format they always wrote, whatever the suffix.
    files = [(outputs.add(path, option), fmt) for path, fmt, option in out_files(
        args, "audit", OUT_FORMATS, [("--json", args.old_json, "json", ".json"),
                                     ("--html", args.html, "html", ".html")])]
    train_split = args.train_split or BENCHMARKS[args.benchmark].train_split or args.split
    records = _read(args, args.gt, args.split, "--gt")
    train = None
    if args.train is not None:
        same = split_path(args.benchmark, args.gt, args.split).resolve() == \
            split_path(args.benchmark, args.train, train_split).resolve()
        if same and train_split == args.split:
            raise CommandError(f"--train {args.train} is the --gt split: its questions would "
                               "retrieve themselves; give --train a separate split "
                               "(--train-split)")
        train = _read(args, args.train, train_split, "--train")
    result = audit(records, train, benchmark=args.benchmark, folds_k=args.folds,
                   seed=args.seed, threshold=args.threshold, progress=None)
    if train is None:
        prior = result.score("answer prior")
        against = "" if prior.chance is None else f" against chance {prior.chance:.1f}%"
        warnings.warn(f"no --train: the priors are fitted on the {result.n_questions} audited "
                      "questions themselves, an upper bound that has seen their answers "
                      f"(answer prior {prior.accuracy:.1f}%{against}); give --train for honest "
                      "priors, question retrieval and leakage")
    with outputs:
        for path, fmt in files:
            text = to_json(result) + "\n" if fmt == "json" else render_html(result)
            outputs.temp(path).write_text(text, encoding="utf-8")
        outputs.commit()
    print(to_json(result) if args.json else format_table(result))
    for path, fmt in files:
        print(f"{fmt}: {path}", file=sys.stderr)
    return 0
