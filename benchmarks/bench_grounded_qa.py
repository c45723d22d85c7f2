# SPDX-License-Identifier: Apache-2.0
"""Benchmark fastvqa.metrics.grounded_qa against the official per-question loop.

Input: N synthetic grounded questions (default 1,000,000), 5 per video, each
with 1 to 3 ground-truth segments, a predicted span on a 0.1 s grid (5% of
questions have none, to exercise the skip rule; some predictions are points
or reversed), a gold answer and a predicted answer (0..4).

Baseline: the NExT-GQA evaluator's loop, written as people copy it
(``eval_ground.py`` + ``eval_next.py`` accuracy, docs/anchors/eval.md §2.2):
dictionaries ``gt[vid]["location"][qid]``, ``pred[key]``, ``pred_qa[key]``,
one question at a time, a per-pair ``get_tIoU`` function. Its inputs are built
before timing, as fastvqa's arrays are.

The loop is too slow to time at N, so it is timed on the first ``--subset``
questions (default 20,000) and **scaled linearly** to N (its cost per question
is constant: one dict lookup and 1-3 pair evaluations); the output says so.
Before timing, fastvqa and the loop must agree on the subset (per-question
IoU/IoP exactly, metrics to 1e-9 relative); otherwise the script exits 1.
Target (CPU): fastvqa >= 100x the loop at N = 1,000,000.

Usage: python benchmarks/bench_grounded_qa.py [--n N] [--subset M] [--out DIR]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
from fastvqa.metrics import grounded_qa  # noqa: E402

NAME = "grounded_qa"
TARGET_SIZES = {"n": 1_000_000}
TARGET_VS_LOOP = 100.0
QUESTIONS_PER_VIDEO = 5
METRICS = ("Acc@QA", "Acc@GQA", "mIoP", "IoP@0.3", "IoP@0.5", "mIoU", "IoU@0.3", "IoU@0.5")


# ------------------------------------------------------------------ baseline


def get_tiou(gt, pred):
    """The official per-pair rule (signed intersection over the hull, point rule)."""
    if pred[0] == pred[-1]:
        return 0.0, (1.0 if gt[0] <= pred[0] <= gt[-1] else 0.0)
    inter = min(pred[-1], gt[-1]) - max(pred[0], gt[0])
    hull = max(pred[-1], gt[-1]) - min(pred[0], gt[0])
    iou = inter / hull if hull > 0 else 0.0
    iop = inter / (pred[-1] - pred[0]) if pred[-1] > pred[0] else 0.0
    return iou, iop


def official_loop(gt, pred, pred_qa):
    """eval_ground (skip missing, independent max from 0, >= thresholds,
    Acc@GQA = right answer and IoP >= 0.5) plus eval_next's accuracy."""
    cnt = 0
    miou = miop = 0.0
    iop3 = iop5 = iou3 = iou5 = gqa = 0
    qa_total = qa_right = 0
    per = {}
    for vid, entry in gt.items():
        for qid, segs in entry["location"].items():
            key = f"{vid}_{qid}"
            if key in pred_qa:
                qa_total += 1
                qa_right += pred_qa[key]["prediction"] == pred_qa[key]["answer"]
            if key not in pred:
                continue
            cnt += 1
            p = pred[key]
            max_iou = max_iop = 0.0
            for seg in segs:
                iou, iop = get_tiou(seg, p)
                if iou > max_iou:
                    max_iou = iou
                if iop > max_iop:
                    max_iop = iop
            per[key] = (max_iou, max_iop)
            miou += max_iou
            miop += max_iop
            if max_iop >= 0.3:
                iop3 += 1
            if max_iop >= 0.5:
                iop5 += 1
                if pred_qa[key]["prediction"] == pred_qa[key]["answer"]:
                    gqa += 1
            if max_iou >= 0.3:
                iou3 += 1
            if max_iou >= 0.5:
                iou5 += 1
    metrics = {"Acc@QA": qa_right / qa_total * 100, "Acc@GQA": gqa / cnt * 100,
               "mIoP": miop / cnt * 100, "IoP@0.3": iop3 / cnt * 100, "IoP@0.5": iop5 / cnt * 100,
               "mIoU": miou / cnt * 100, "IoU@0.3": iou3 / cnt * 100, "IoU@0.5": iou5 / cnt * 100}
    return metrics, per


# -------------------------------------------------------------------- inputs


def synthetic(rng: np.random.Generator, n: int) -> dict:
    """Arrays for grounded_qa: durations 10-180 s, 1-3 gold segments, 0.1 s grid."""
    n_videos = -(-n // QUESTIONS_PER_VIDEO)
    video_duration = rng.integers(10, 181, n_videos).astype(np.float64)
    duration = np.repeat(video_duration, QUESTIONS_PER_VIDEO)[:n]
    k = rng.integers(1, 4, n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(k, out=offsets[1:])
    seg_duration = np.repeat(duration, k)
    length = np.round(rng.uniform(0.05, 0.4, offsets[-1]) * seg_duration, 1)
    start = np.round(rng.uniform(0, 1, offsets[-1]) * (seg_duration - length), 1)
    gt = np.stack([start, start + length], axis=1)
    a = np.round(rng.uniform(0, 1, n) * duration, 1)
    b = np.round(rng.uniform(0, 1, n) * duration, 1)
    pred = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)
    odd = rng.random(n)
    pred[odd < 0.02] = pred[odd < 0.02][:, ::-1]  # some reversed spans
    pred[(odd >= 0.02) & (odd < 0.04), 1] = pred[(odd >= 0.02) & (odd < 0.04), 0]  # points
    pred[odd > 0.95] = np.nan  # no prediction: skipped
    return {"pred": pred, "gt": gt, "offsets": offsets, "duration": duration,
            "gt_answers": rng.integers(0, 5, n), "pred_answers": rng.integers(0, 5, n)}


def subset(data: dict, m: int) -> dict:
    off = data["offsets"][: m + 1]
    return {"pred": data["pred"][:m], "gt": data["gt"][: off[-1]], "offsets": off,
            "duration": data["duration"][:m], "gt_answers": data["gt_answers"][:m],
            "pred_answers": data["pred_answers"][:m]}


def to_official(data: dict):
    """The official script's dictionaries (plain Python lists and floats)."""
    gt, pred, pred_qa = {}, {}, {}
    gts = data["gt"].tolist()
    offs = data["offsets"].tolist()
    preds = data["pred"].tolist()
    dur = data["duration"].tolist()
    ga, pa = data["gt_answers"].tolist(), data["pred_answers"].tolist()
    for i in range(len(preds)):
        vid, qid = f"v{i // QUESTIONS_PER_VIDEO}", str(i % QUESTIONS_PER_VIDEO)
        entry = gt.setdefault(vid, {"duration": dur[i], "location": {}})
        entry["location"][qid] = gts[offs[i]: offs[i + 1]]
        key = f"{vid}_{qid}"
        if not math.isnan(preds[i][0]):
            pred[key] = preds[i]
        pred_qa[key] = {"prediction": pa[i], "answer": ga[i]}
    return gt, pred, pred_qa


def run_fastvqa(d: dict):
    return grounded_qa(d["pred"], (d["gt"], d["offsets"]), pred_answers=d["pred_answers"],
                       gt_answers=d["gt_answers"])


# -------------------------------------------------------------------- the run


def check(sub: dict, official, out, name, config, env) -> None:
    got = run_fastvqa(sub)
    want, per = official_loop(*official)
    for metric in METRICS:
        if not math.isclose(got[metric], want[metric], rel_tol=1e-9, abs_tol=1e-9):
            H.fail_check(out, name, config, env,
                         f"{metric}: fastvqa {got[metric]!r} vs official loop {want[metric]!r}")
    q = QUESTIONS_PER_VIDEO
    keys = [f"v{i // q}_{i % q}" for i in range(len(sub["pred"]))]
    for i, key in enumerate(keys):
        if key in per:
            if (got.per_question["IoU"][i], got.per_question["IoP"][i]) != per[key]:
                H.fail_check(out, name, config, env, f"question {key}: fastvqa "
                             f"{got.per_question['IoU'][i]!r}, {got.per_question['IoP'][i]!r} vs "
                             f"official loop {per[key]!r}")
        elif got.per_question["evaluated"][i]:
            H.fail_check(out, name, config, env, f"question {key} evaluated, the loop skipped it")
    print(f"check: fastvqa agrees with the official loop on {len(keys):,} questions "
          f"(per-question IoU/IoP identical, metrics within 1e-9): "
          + " ".join(f"{m} {got[m]:.2f}" for m in METRICS))


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1_000_000, help="questions given to fastvqa")
    p.add_argument("--subset", type=int, default=20_000,
                   help="questions the Python loop is timed on (then scaled to --n)")
    args = p.parse_args()
    if args.device != "cpu":
        print("--device cuda: grounded_qa takes host (NumPy) arrays; run with --device cpu",
              file=sys.stderr)
        return 2
    if not 0 < args.subset <= args.n:
        print("--subset must be in (0, --n]", file=sys.stderr)
        return 2
    n, m = args.n, args.subset
    scale = n / m
    config = {"n": n, "loop_subset": m, "loop_scale": scale, "max_segments": 3,
              "questions_per_video": QUESTIONS_PER_VIDEO, "seed": args.seed, "device": "cpu",
              "repeats": args.repeats, "warmup": args.warmup,
              "busy": args.busy}
    env = H.environment("cpu")
    name = f"{NAME}_cpu"

    data = synthetic(np.random.default_rng(args.seed), n)
    sub = subset(data, m)
    official = to_official(sub)
    check(sub, official, args.out, name, config, env)

    at_target = all(config[k] == v for k, v in TARGET_SIZES.items())
    fv = ("fastvqa", "numpy")
    impls = [
        H.Impl("1-3 segments", *fv, lambda: run_fastvqa(data)),
        H.Impl("1-3 segments", "official loop (scaled)", "python dicts",
               lambda: official_loop(*official), ref=fv,
               target=TARGET_VS_LOOP if at_target else None),
    ]
    timed = H.time_all(impls, args)  # round by round: both rows see the same load
    loop = timed[impls[1].key]
    # Scale the loop's per-call times from m questions to n (linear cost).
    timed[impls[1].key] = {**loop, "median_s": loop["median_s"] * scale,
                           "iqr_s": loop["iqr_s"] * scale, "min_s": loop["min_s"] * scale,
                           "times_s": [t * scale for t in loop["times_s"]],
                           "measured_on": m, "measured_median_s": loop["median_s"]}
    config["loop_measured_median_s"] = loop["median_s"]
    print(f"the official loop was timed on {m:,} questions (median "
          f"{H.fmt_time(loop['median_s'])}) and scaled linearly x{scale:g} to {n:,}")
    title = (f"grounded_qa, N = {n:,} questions (1-3 gold segments, answers), CPU; "
             f"loop timed on {m:,} and scaled x{scale:g}")
    H.report(name, title, impls, timed, work=n, rate_unit="questions/s", config=config,
             env=env, out_dir=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
