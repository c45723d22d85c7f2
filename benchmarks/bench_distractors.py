# SPDX-License-Identifier: Apache-2.0
"""Benchmark distractor mining end to end: fastvqa.retrieval.DistractorMiner.mine
for 10,000 questions against a 100,000 question-answer bank, k=3.

Data: synthetic templated questions and answers from a seeded RNG (objects,
actions, places, colours, a few question templates), so that TF-IDF has
structure and neighbours share answers. The questions are drawn from the same
generator as the bank but are not in it.

What is timed: ``mine`` (neighbour search for all questions, candidate
filtering, answer cosines, greedy MMR selection). Setup, reported separately,
builds the miner: for ``--encoder tfidf`` fitting the two TF-IDF models and
transforming the bank; for ``--encoder sentence`` encoding the bank. With
``--encoder sentence`` the "sentence" vectors are random unit vectors (384-d,
seeded by each text's hash) behind a ``CallableEncoder`` with its disk cache,
warmed in setup: the timing covers the dense path (cache read, exact FAISS
search, selection), not a transformer's forward pass.

Issue 6 asks for the rate (questions/s); there is no target and no baseline.

Usage: python benchmarks/bench_distractors.py [--bank 100000] [--questions 10000] [-k 3]
       [--encoder tfidf|sentence] [--question-key full|first3]
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as bench_retrieval.py

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
from fastvqa.retrieval import CallableEncoder, DistractorMiner  # noqa: E402

NAME = "distractors"

OBJECTS = ("cube ball dog cat car man woman child bird box cup bottle chair table phone book "
           "bike horse knife pan bowl guitar camera hat bag kite boat tree door window").split()
ACTIONS = ("holding pushing watching throwing carrying eating opening cutting riding washing "
           "pouring lifting painting kicking catching dropping").split()
PLACES = ("kitchen garden street park beach room office market river field stage yard").split()
COLOURS = ("red blue green yellow black white brown grey orange purple pink").split()


def generate(n: int, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """n templated (question, answer) pairs."""
    o = rng.choice(OBJECTS, (n, 3))
    a = rng.choice(ACTIONS, (n, 2))
    p = rng.choice(PLACES, n)
    c = rng.choice(COLOURS, (n, 2))
    t = rng.integers(0, 5, n)
    qs, ans = [], []
    for i in range(n):
        if t[i] == 0:
            q, r = f"what color is the {o[i,0]} the {o[i,1]} is {a[i,0]}", f"{c[i,0]}"
        elif t[i] == 1:
            q, r = f"why is the {o[i,0]} {a[i,0]} the {o[i,1]} in the {p[i]}", \
                f"to keep the {o[i,2]} {c[i,0]}"
        elif t[i] == 2:
            q, r = f"what did the {o[i,0]} do after {a[i,0]} the {o[i,1]}", \
                f"{a[i,1]} the {o[i,2]}"
        elif t[i] == 3:
            q, r = f"where is the {o[i,0]} {a[i,0]} the {o[i,1]}", f"in the {p[i]}"
        else:
            q, r = f"what is the {o[i,0]} {a[i,0]} near the {p[i]}", f"a {c[i,1]} {o[i,2]}"
        qs.append(q)
        ans.append(r)
    return qs, ans


def random_unit_vectors(texts: list[str], dim: int = 384) -> np.ndarray:
    """A stand-in for sentence embeddings: one seeded random unit vector per text."""
    out = np.empty((len(texts), dim), dtype=np.float32)
    for i, t in enumerate(texts):
        seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(dim)
        out[i] = v / np.linalg.norm(v)
    return out


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.set_defaults(repeats=3, warmup=1)
    p.add_argument("--bank", type=int, default=100_000, help="question-answer pairs in the bank")
    p.add_argument("--questions", type=int, default=10_000)
    p.add_argument("-k", type=int, default=3, help="distractors per question")
    p.add_argument("--neighbours", type=int, default=10)
    p.add_argument("--encoder", choices=("tfidf", "sentence"), default="tfidf")
    p.add_argument("--question-key", choices=("full", "first3"), default="full")
    args = p.parse_args()
    if args.device != "cpu":
        print("bench_distractors: CPU only", file=sys.stderr)
        return 2
    config = {"bank": args.bank, "questions": args.questions, "k": args.k,
              "neighbours": args.neighbours, "encoder": args.encoder,
              "question_key": args.question_key, "seed": args.seed, "device": "cpu",
              "repeats": args.repeats, "warmup": args.warmup,
              "busy": args.busy}
    env = H.environment("cpu")
    import faiss
    import sklearn

    env["faiss"], env["sklearn"] = faiss.__version__, sklearn.__version__
    rng = np.random.default_rng(args.seed)
    bank_q, bank_a = generate(args.bank, rng)
    qs, ans = generate(args.questions, rng)

    with tempfile.TemporaryDirectory() as cache:
        encoder = args.encoder
        t0 = time.perf_counter()
        if encoder == "sentence":
            encoder = CallableEncoder(random_unit_vectors, name="bench-random-unit",
                                      cache_dir=cache)
            encoder.encode(qs)  # warm the cache for the queries (the bank is encoded below)
        miner = DistractorMiner(bank_q, bank_a, encoder=encoder, question_key=args.question_key,
                                n_neighbours=args.neighbours)
        setup_s = time.perf_counter() - t0
        print(f"setup (build the miner{', encode and cache' if args.encoder == 'sentence' else ''})"
              f": {setup_s:.2f} s")
        mined = miner.mine(qs, ans, args.k)
        full = sum(len(d) == args.k for d in mined)
        print(f"check: {full}/{len(mined)} questions got {args.k} distractors; e.g. "
              f"{qs[0]!r} -> {ans[0]!r}: {mined[0]}")
        if full < 0.9 * len(mined):
            H.fail_check(args.out, f"{NAME}_{args.encoder}", config, env,
                         f"only {full}/{len(mined)} questions got {args.k} distractors")
        config["setup_s"] = round(setup_s, 3)
        impls = [H.Impl(args.encoder, f"DistractorMiner.mine ({args.encoder}, "
                                      f"{args.question_key})", "numpy",
                        lambda: miner.mine(qs, ans, args.k))]
        timed = H.time_all(impls, args)
    H.report(f"{NAME}_{args.encoder}",
             f"distractor mining: {args.questions} questions, bank {args.bank}, k={args.k}, "
             f"{args.neighbours} neighbours, encoding cached, CPU; setup {setup_s:.2f} s not "
             f"timed; median of {args.repeats} repeats (IQR); questions/s = questions / median",
             impls, timed, work=args.questions, rate_unit="questions/s", config=config, env=env,
             out_dir=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
