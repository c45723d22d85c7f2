# SPDX-License-Identifier: Apache-2.0
"""Benchmark exact nearest-neighbour search: fastvqa.retrieval.Index (FAISS flat,
CPU) against scikit-learn ``NearestNeighbors(algorithm="brute")``.

Cases, same bank and queries for both (standard normal, float32):

- ip: rows L2-normalised; fastvqa inner product vs scikit-learn
  ``metric="cosine"`` (distance = 1 - inner product).
- l2: fastvqa squared L2 vs scikit-learn ``metric="euclidean"`` (distance =
  sqrt of it).

A third row, raw FAISS ``IndexFlat.search`` (FAISS's own threads), shows
what fastvqa adds over it (no target). fastvqa's large searches (ip and l2)
go through a bfloat16 screen and an exact float64 re-rank where torch has
native bfloat16 GEMMs (fastvqa.retrieval._screen); the first search builds
its bfloat16 copy of the bank, in the warm-up.

Timing: every row of both cases runs once per round, in turn, for
``--repeats`` rounds (after ``--warmup`` untimed rounds); each row's median
over the rounds is reported. Interleaved so that load from other processes,
which comes and goes, falls on all rows alike: the ratios are what counts on
a shared machine, not the absolute times.

Only the search is timed (index add and ``fit`` happen once, before). Before
timing, the neighbour ids must agree (except between neighbours whose scores
tie within float32 rounding) and the scores must match after the conversion
above; otherwise the script exits 1. Target (issue 6): >= 3x faster than
scikit-learn at 100,000 x 384, 1,000 queries, k=10.

Threads: FAISS and scikit-learn (through its BLAS) use different thread pools;
an OpenMP pool left spinning after one library's call slows the other's on a
small machine, so the script sets ``OMP_WAIT_POLICY=PASSIVE`` (unless already
set) before either is imported. It applies to both implementations.

GPU (``--device cuda``, issue 6's GPU case): the FAISS GPU flat index through
``Index(device="cuda")``, float32 and ``fp16=True`` storage, inner product on
L2-normalised vectors, default 1,000,000 x 512 bank and 10,000 queries, k=10;
reports queries/s (no scikit-learn row, no target). Before timing, the first
200 queries are checked against a float32 NumPy brute force: float32 must give
the same neighbours (up to near-ties), float16 a recall@k >= 0.95 with scores
within 0.01. Without a GPU build of FAISS, or when it sees no GPU, it says why
and exits 2.

Usage: python benchmarks/bench_retrieval.py [--device cpu|cuda] [--bank N] [--dim D]
       [--queries Q] [-k 10]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see "Threads" above

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
from fastvqa.retrieval import Index  # noqa: E402

NAME = "retrieval"
TARGET = 3.0


def ids_agree(a_ids, a_scores, b_ids, larger_is_nearer, tol=1e-5):
    """Same ids, except where the scores around a mismatch tie within tol."""
    bad = a_ids != b_ids
    for i, j in zip(*np.nonzero(bad)):
        if set(a_ids[i]) == set(b_ids[i]):
            continue  # same set, order swapped between near-equal scores
        row = a_scores[i]
        # A different neighbour only at the boundary, with a near-tie there.
        if j == len(row) - 1 or np.isclose(row[j], row[-1], rtol=tol, atol=tol):
            continue
        return False
    return True


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.set_defaults(repeats=7, warmup=1)
    p.add_argument("--bank", type=int, default=None,
                   help="vectors in the bank (default 100,000 on cpu, 1,000,000 on cuda)")
    p.add_argument("--dim", type=int, default=None, help="default 384 on cpu, 512 on cuda")
    p.add_argument("--queries", type=int, default=None,
                   help="default 1,000 on cpu, 10,000 on cuda")
    p.add_argument("-k", type=int, default=10)
    args = p.parse_args()
    cuda = args.device == "cuda"
    args.bank = args.bank or (1_000_000 if cuda else 100_000)
    args.dim = args.dim or (512 if cuda else 384)
    args.queries = args.queries or (10_000 if cuda else 1_000)
    return main_cuda(args) if cuda else main_cpu(args)


def main_cpu(args) -> int:
    from sklearn.neighbors import NearestNeighbors

    n, d, nq, k = args.bank, args.dim, args.queries, args.k
    config = {"bank": n, "dim": d, "queries": nq, "k": k, "seed": args.seed, "device": "cpu",
              "repeats": args.repeats, "warmup": args.warmup,
              "busy": args.busy}
    env = H.environment("cpu")
    import faiss
    import sklearn

    env["faiss"], env["sklearn"] = faiss.__version__, sklearn.__version__
    env["faiss_threads"] = faiss.omp_get_max_threads()
    env["OMP_WAIT_POLICY"] = os.environ["OMP_WAIT_POLICY"]
    rng = np.random.default_rng(args.seed)
    bank = rng.standard_normal((n, d), dtype=np.float32)
    queries = rng.standard_normal((nq, d), dtype=np.float32)

    impls = []
    for case in ("ip", "l2"):
        b, q = bank, queries
        if case == "ip":
            b = bank / np.linalg.norm(bank, axis=1, keepdims=True)
            q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        index = Index(case, "flat", "cpu")
        index.add(b)
        nn = NearestNeighbors(n_neighbors=k, algorithm="brute",
                              metric="cosine" if case == "ip" else "euclidean").fit(b)
        fs, fi = index.search(q, k)
        sd, si = nn.kneighbors(q)
        if case == "ip":
            conv = 1.0 - sd
        else:
            conv = sd ** 2
        if not np.allclose(fs, conv, rtol=1e-3, atol=1e-3 * (1 if case == "ip" else d)):
            H.fail_check(args.out, f"{NAME}_cpu", config, env,
                         f"{case}: scores differ (max abs diff {np.abs(fs - conv).max():.3g})")
        if not ids_agree(fi, fs, si, case == "ip"):
            H.fail_check(args.out, f"{NAME}_cpu", config, env,
                         f"{case}: neighbour ids differ beyond near-ties "
                         f"({int((fi != si).sum())} cells)")
        print(f"check {case}: scores agree; ids equal in {int((fi == si).sum())}/{fi.size} "
              f"cells (the rest swap near-ties)")
        impls.append(H.Impl(case, "fastvqa Index (FAISS flat)", "numpy",
                            lambda index=index, q=q: index.search(q, k)))
        raw = faiss.IndexFlatIP(d) if case == "ip" else faiss.IndexFlatL2(d)
        raw.add(b)
        impls.append(H.Impl(case, "raw FAISS IndexFlat", "numpy",
                            lambda raw=raw, q=q: raw.search(q, k),
                            ref=("fastvqa Index (FAISS flat)", "numpy")))
        impls.append(H.Impl(case, "sklearn NearestNeighbors brute", "numpy",
                            lambda nn=nn, q=q: nn.kneighbors(q),
                            ref=("fastvqa Index (FAISS flat)", "numpy"), target=TARGET))

    timed = H.time_all(impls, args)
    H.report(f"{NAME}_cpu", f"exact kNN search: bank {n} x {d} float32, {nq} queries, k={k}, "
             f"CPU, median of {args.repeats} interleaved rounds (IQR); queries/s = queries / median",
             impls, timed, work=nq, rate_unit="queries/s", config=config, env=env,
             out_dir=args.out)
    return 0


def faiss_gpu_problem() -> str | None:
    """Why FAISS cannot search on a GPU here, or None. Checks, never tries: a
    FAISS GPU call without a GPU can abort the process."""
    try:
        import faiss
    except ImportError:
        return "FAISS is not installed (pip install 'fastvqa[faiss-gpu]')"
    if not hasattr(faiss, "StandardGpuResources"):
        return (f"FAISS {faiss.__version__} is a CPU-only build (faiss-cpu); install the GPU "
                "build: pip install 'fastvqa[faiss-gpu]'")
    if faiss.get_num_gpus() == 0:
        return "FAISS (GPU build) reports no GPU (faiss.get_num_gpus() == 0)"
    return None


def brute_force_ip(bank: np.ndarray, queries: np.ndarray, k: int):
    """float32 NumPy top-k inner products, a few queries at a time."""
    scores = np.empty((len(queries), k), np.float32)
    ids = np.empty((len(queries), k), np.int64)
    for s in range(0, len(queries), 16):
        sim = queries[s:s + 16] @ bank.T
        top = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sim, top, axis=1), axis=1, kind="stable")
        ids[s:s + 16] = np.take_along_axis(top, order, axis=1)
        scores[s:s + 16] = np.take_along_axis(sim, ids[s:s + 16], axis=1)
    return scores, ids


def main_cuda(args) -> int:
    problem = faiss_gpu_problem()
    if problem is not None:
        print(f"bench_retrieval --device cuda: {problem}", file=sys.stderr)
        return 2
    import faiss

    n, d, nq, k = args.bank, args.dim, args.queries, args.k
    config = {"bank": n, "dim": d, "queries": nq, "k": k, "seed": args.seed, "device": "cuda",
              "metric": "ip", "repeats": args.repeats, "warmup": args.warmup,
              "busy": args.busy}
    import torch  # the harness describes the GPU through torch

    env = H.environment("cuda" if torch.cuda.is_available() else "cpu")
    env["faiss"], env["faiss_gpus"] = faiss.__version__, faiss.get_num_gpus()
    rng = np.random.default_rng(args.seed)
    bank = rng.standard_normal((n, d), dtype=np.float32)
    bank /= np.linalg.norm(bank, axis=1, keepdims=True)
    queries = rng.standard_normal((nq, d), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    n_check = min(200, nq)
    ref_s, ref_i = brute_force_ip(bank, queries[:n_check], k)

    impls, timed = [], {}
    for label, fp16 in (("float32", False), ("float16", True)):
        index = Index("ip", "flat", "cuda", fp16=fp16)
        index.add(bank)
        got_s, got_i = index.search(queries[:n_check], k)
        recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(got_i, ref_i)])
        if not fp16:
            ok = (np.allclose(got_s, ref_s, atol=1e-4)
                  and ids_agree(got_i, got_s, ref_i, larger_is_nearer=True))
        else:
            ok = recall >= 0.95 and np.allclose(got_s, ref_s, atol=1e-2)
        print(f"check {label}: recall@{k} {recall:.4f} on {n_check} queries, max score "
              f"diff {np.abs(got_s - ref_s).max():.2e}")
        if not ok:
            H.fail_check(args.out, f"{NAME}_cuda", config, env,
                         f"{label}: GPU results differ from the NumPy brute force "
                         f"(recall@{k} {recall:.4f})")
        impl = H.Impl(label, f"fastvqa Index (FAISS GPU flat, {label})", "numpy",
                      lambda index=index: index.search(queries, k))
        # FAISS GPU search returns host arrays, so it has finished when it returns.
        with H.busy_load(args.busy):
            timed[impl.key] = H.measure(impl.fn, repeats=args.repeats, warmup=args.warmup,
                                        min_repeat_s=args.min_repeat_ms / 1e3)
        impls.append(impl)
        del index  # frees the GPU copy before the next one
    H.report(f"{NAME}_cuda", f"exact kNN search on the GPU: bank {n} x {d} (ip), {nq} queries, "
             f"k={k}, median of {args.repeats} repeats (IQR); queries/s = queries / median",
             impls, timed, work=nq, rate_unit="queries/s", config=config, env=env,
             out_dir=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
