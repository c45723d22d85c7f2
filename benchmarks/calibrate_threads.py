# SPDX-License-Identifier: Apache-2.0
"""Measure the single-thread cost of every parallel loop, and check the cut-over.

fastvqa shares a loop between threads only when its estimated single-thread
time (rows x elements x the op's ns per element, ``fastvqa._C._op_costs()``,
set in csrc/fastvqa/common/op_costs.h) reaches ``split_ns``. This script
measures those costs: each op runs on one thread (``fastvqa.set_num_threads(1)``)
at a size of about a millisecond (four times the split size, where the cost
matters), and the median time of ``--repeats`` calls
divided by the call's elements is its cost per element, printed beside the
table's value (a ratio within 0.5-2x leaves the cut-over within 2x of where
one and two threads cost the same).

Then, for each op, calls of about 0.5x, 1x, 2x and 8x the split size are
timed on one thread and on ``--threads`` (interleaved call by call, medians),
so the table shows what splitting gains or costs on either side of the
cut-over on this machine, idle or with ``--busy N``.

Usage: python benchmarks/calibrate_threads.py [--repeats 15] [--threads 2] [--busy 0]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
import fastvqa  # noqa: E402
import fastvqa.ops as O  # noqa: E402
from fastvqa import _C  # noqa: E402
from fastvqa._arrays import numpy_alloc  # noqa: E402

NAME = "calibrate_threads"
MAX_LEN = 64


def _cases(rng: np.random.Generator):
    """name -> (make(elements) -> (call, elements actually used)); the names
    are those of the cost table."""

    def rows(n_el, steps, per_step):
        return max(1, round(n_el / (steps * per_step)))

    def span_scores(n_el, reduce="sum"):
        b = rows(n_el, 512, MAX_LEN)
        x = rng.standard_normal((b, 512)).astype(np.float32)
        return (lambda: O.span_scores(x, reduce=reduce, max_len=MAX_LEN)), b * 512 * MAX_LEN

    def span_scores_backward(n_el, reduce="sum"):
        b = rows(n_el, 512, MAX_LEN)
        g = rng.standard_normal((b, 512, MAX_LEN)).astype(np.float32)
        return (lambda: _C.span_scores_backward(g, reduce, 1, None, 0, numpy_alloc)), g.size

    def top_spans(n_el):
        b = rows(n_el, 512, MAX_LEN)
        x = rng.standard_normal((b, 512)).astype(np.float32)
        return (lambda: O.top_spans(x, k=5, reduce="sum", max_len=MAX_LEN)), b * 512 * MAX_LEN

    def span_argmax(n_el, k=1):
        b = rows(n_el, 512, 1)
        s, e = (rng.standard_normal((b, 512)).astype(np.float32) for _ in range(2))
        return (lambda: O.span_argmax(s, e, max_len=MAX_LEN, k=None if k == 1 else k)), b * 512

    def span_similarity(n_el, dim=64, steps=64, width=16):
        cells = steps * width - width * (width - 1) // 2
        b = max(1, round(n_el / (cells * (dim + 1))))
        f = rng.standard_normal((b, steps, dim)).astype(np.float32)
        q = rng.standard_normal((b, dim)).astype(np.float32)
        return (lambda: O.span_similarity_all(f, q, pool="cos_of_mean", max_len=width)), b * cells * (dim + 1)

    def nms_1d(n_el, group=256):
        groups = max(1, round(n_el / group))
        start = rng.random(groups * group) * 100
        spans = np.stack([start, start + rng.random(groups * group) * 10], 1).astype(np.float32)
        scores = rng.random(groups * group).astype(np.float32)
        offsets = np.arange(groups + 1, dtype=np.int64) * group
        return (lambda: O.nms_1d(spans, scores, offsets=offsets, iou_threshold=0.5)), groups * group

    def temporal_iou(n_el, m=1024):
        n = max(1, round(n_el / m))
        a = np.sort(rng.random((n, 2)), 1).astype(np.float32)
        b = np.sort(rng.random((m, 2)), 1).astype(np.float32)
        out = np.empty((n, m), np.float32)
        return (lambda: O.temporal_iou(a, b, out=out)), n * m

    def grounding_overlap(n_el, per=4):
        n = max(1, round(n_el / (1 + per)))
        pred = np.sort(rng.random((n, 2)), 1).astype(np.float32)
        gt = np.sort(rng.random((n * per, 2)), 1).astype(np.float32)
        off = np.arange(n + 1, dtype=np.int64) * per
        return (lambda: O.grounding_overlap(pred, gt, off)), n * (1 + per)

    def io_to_spans(n_el, steps=512):
        b = rows(n_el, steps, 1)
        p = rng.random((b, steps)).astype(np.float32)
        return (lambda: O.io_to_spans(p, threshold=0.5)), b * steps

    def io_to_start_end(n_el, steps=512):
        b = rows(n_el, steps, 1)
        p = rng.random((b, steps)).astype(np.float32)
        return (lambda: O.io_to_start_end(p)), b * steps

    return {
        "span_scores": span_scores,
        "span_scores_mean": lambda n: span_scores(n, "mean"),
        "span_scores_contrast": lambda n: span_scores(n, "contrast"),
        "span_scores_backward": span_scores_backward,
        "span_scores_backward_contrast": lambda n: span_scores_backward(n, "contrast"),
        "top_spans": top_spans, "span_argmax": span_argmax,
        "span_argmax_topk": lambda n: span_argmax(n, k=5), "span_similarity": span_similarity,
        "nms_1d": nms_1d, "temporal_iou": temporal_iou, "grounding_overlap": grounding_overlap,
        # two passes (count, fill) share the measured time: the table's cost is per pass
        "io_to_spans": io_to_spans, "io_to_start_end": io_to_start_end,
    }


def _median_ns(call, repeats: int, threads: int) -> float:
    fastvqa.set_num_threads(threads)
    call()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times)


def _interleaved(call, repeats: int, threads: int) -> tuple:
    one, many = [], []
    for _ in range(repeats):
        for n, sink in ((1, one), (threads, many)):
            fastvqa.set_num_threads(n)
            t0 = time.perf_counter_ns()
            call()
            sink.append(time.perf_counter_ns() - t0)
    return statistics.median(one), statistics.median(many)


def main() -> int:
    p = H.base_parser(__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2, help="threads of the split calls")
    p.add_argument("--target-ms", type=float, default=1.0,
                   help="single-thread time of the calibration calls")
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    table = _C._op_costs()
    split_ns = table["split_ns"][0]
    cases = _cases(rng)
    before = fastvqa.get_num_threads()
    results, rows = {}, []
    with H.busy_load(args.busy):
        try:
            for name, make in cases.items():
                listed = table[name][0]
                # a first guess from the table, corrected once by a measurement
                n_el = args.target_ms * 1e6 / listed
                call, used = make(n_el)
                ns = _median_ns(call, 3, 1) / used
                call, used = make(args.target_ms * 1e6 / ns)
                ns = _median_ns(call, args.repeats, 1) / used
                if name == "io_to_spans":
                    ns /= 2
                entry = {"measured_ns": ns, "table_ns": listed, "ratio": listed / ns,
                         "per": table[name][1], "cutover": []}
                for factor in (0.5, 1.0, 2.0, 8.0):
                    call, used = make(factor * split_ns / listed)
                    t1, tn = _interleaved(call, args.repeats, args.threads)
                    entry["cutover"].append({"x_split": factor, "elements": used,
                                             "one_us": t1 / 1e3, "many_us": tn / 1e3,
                                             "speedup": t1 / tn})
                results[name] = entry
                rows.append([name, f"{ns:.3g}", f"{listed:.3g}", f"{listed / ns:.2f}",
                             *(f"{c['speedup']:.2f}" for c in entry["cutover"])])
        finally:
            fastvqa.set_num_threads(before)
    env = H.environment("cpu")
    print(H.environment_line(env, args.busy))
    H.print_table(["loop", "ns/elem (measured)", "table", "table/measured",
                   f"x{args.threads} at 0.5 split", "1x", "2x", "8x"], rows)
    config = {"repeats": args.repeats, "threads": args.threads, "busy": args.busy,
              "split_ns": split_ns, "target_ms": args.target_ms}
    H.write_json(args.out, NAME, {"config": config, "env": env, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
