# SPDX-License-Identifier: Apache-2.0
"""Benchmark fastvqa.ops.span_scores (forward + backward) and top_spans (top-k
with NMS) against the straightforward PyTorch implementations.

Baselines, timed in the same run on the same inputs:

- span_scores, torch band: ``cumsum`` (padded with a leading 0), a gather of
  every band cell ``P[:, i + d + 1] - P[:, i]`` (``B x T x max_len``), the
  reduce (sum / mean / contrast with the row total), ``masked_fill`` of the
  invalid cells with ``-inf``, then ``backward`` through it with autograd.
  fastvqa runs its compiled forward and backward kernels. Both take the same
  fixed upstream gradient (zero on invalid cells).
- top_spans, band + sort + Python NMS: the same band (no grad; cumsum in
  float64, as fastvqa sums in float64, so that both rank the same values and the spans can
  be required to be equal), a stable descending sort of each row's cells
  (stable, so ties keep the smaller start, then the smaller end), then greedy
  NMS in Python over the sorted cells, taken in chunks of 256 until k spans
  are kept (so it never converts a whole row to Python objects).

Before timing, every implementation must agree with fastvqa (bands and
gradients allclose; top spans equal); otherwise the script exits 1 without
timing. Targets (CPU, default sizes): span_scores forward + backward >= 10x
the torch band; top_spans >= 20x band + sort + Python NMS. Reported as
PASS/FAIL; they never change the exit status.

Usage: python benchmarks/bench_span_scores.py [--device cuda] [--out DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import _harness as H  # noqa: E402
from fastvqa.ops import span_scores, top_spans  # noqa: E402

NAME = "span_scores"
TARGET_SIZES = {"batch": 64, "length": 256, "max_len": 64, "topk_batch": 256,
                "topk_length": 512, "topk_max_len": 128, "dtype": "float32", "device": "cpu"}
TARGETS = {"scores": 10.0, "top": 20.0}
REDUCES = ("sum", "mean", "contrast")


# ------------------------------------------------------------------- baselines


def torch_band(x: torch.Tensor, max_len: int, reduce: str, acc_dtype=None) -> torch.Tensor:
    """The band [B, T, max_len] the straightforward way (min_len = 1)."""
    B, T = x.shape
    xa = x if acc_dtype is None else x.to(acc_dtype)
    P = torch.nn.functional.pad(xa.cumsum(1), (1, 0))  # P[:, k] = sum x[:, :k]
    i = torch.arange(T, device=x.device)[:, None]
    d = torch.arange(max_len, device=x.device)[None, :]
    valid = i + d < T
    end = (i + d + 1).clamp(max=T)
    S = P[:, end] - P[:, i.expand(T, max_len)]  # gather of every band cell
    n = (d + 1).to(S.dtype)
    if reduce == "sum":
        out = S
    else:
        out = S / n
        if reduce == "contrast":
            n_out = (T - n).clamp(min=1)
            outside = (P[:, T, None, None] - S) / n_out
            out = out - torch.where(T - n > 0, outside, torch.zeros_like(outside))
    return out.masked_fill(~valid, float("-inf")).to(x.dtype)


def torch_fwd_bwd(x: torch.Tensor, grad: torch.Tensor, max_len: int, reduce: str):
    xg = x.detach().requires_grad_()
    out = torch_band(xg, max_len, reduce)
    out.backward(grad)
    return out.detach(), xg.grad


def fastvqa_fwd_bwd(x: torch.Tensor, grad: torch.Tensor, max_len: int, reduce: str):
    xg = x.detach().requires_grad_()
    out = span_scores(xg, reduce=reduce, max_len=max_len)
    out.backward(grad)
    return out.detach(), xg.grad


def index_iou(a0, a1, b0, b1) -> float:
    inter = max(0, min(a1, b1) - max(a0, b0) + 1)
    return inter / ((a1 - a0 + 1) + (b1 - b0 + 1) - inter)


def band_sort_python_nms(x: torch.Tensor, k: int, max_len: int, reduce: str, thr: float):
    B, T = x.shape
    band = torch_band(x, max_len, reduce, acc_dtype=torch.float64).flatten(1)
    values, order = torch.sort(band, dim=1, descending=True, stable=True)
    spans = np.full((B, k, 2), -1, dtype=np.int64)
    scores = np.full((B, k), -np.inf, dtype=np.float32)
    chunk = 256
    for b in range(B):
        kept = []
        for c0 in range(0, order.shape[1], chunk):
            idx = order[b, c0:c0 + chunk].tolist()
            val = values[b, c0:c0 + chunk].tolist()
            for flat, s in zip(idx, val):
                if s == float("-inf"):  # invalid cells (all valid spans are finite here)
                    break
                i, d = divmod(flat, max_len)
                if all(index_iou(i, i + d, ki, kj) <= thr for ki, kj, _ in kept):
                    kept.append((i, i + d, s))
                    if len(kept) == k:
                        break
            else:
                continue
            break
        for r, (i, j, s) in enumerate(kept):
            spans[b, r] = (i, j)
            scores[b, r] = s
    return spans, scores


# -------------------------------------------------------------------- the run


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=64, help="span_scores: rows")
    p.add_argument("--length", type=int, default=256, help="span_scores: steps per row")
    p.add_argument("--max-len", type=int, default=64, help="span_scores: band width")
    p.add_argument("--topk-batch", type=int, default=256, help="top_spans: rows")
    p.add_argument("--topk-length", type=int, default=512, help="top_spans: steps per row")
    p.add_argument("--topk-max-len", type=int, default=128, help="top_spans: longest span")
    p.add_argument("--k", type=int, default=5, help="top_spans: spans per row")
    p.add_argument("--nms-iou", type=float, default=0.5, help="top_spans: NMS threshold")
    p.add_argument("--top-reduce", choices=REDUCES, default="mean", help="top_spans: reduce")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    args = p.parse_args()
    H.require_device(args.device)
    dev = args.device
    B, T, L = args.batch, args.length, args.max_len
    TB, TT, TL, K = args.topk_batch, args.topk_length, args.topk_max_len, args.k
    config = {"batch": B, "length": T, "max_len": L, "topk_batch": TB, "topk_length": TT,
              "topk_max_len": TL, "k": K, "nms_iou": args.nms_iou, "top_reduce": args.top_reduce,
              "dtype": args.dtype, "seed": args.seed, "device": dev, "repeats": args.repeats,
              "warmup": args.warmup,
              "busy": args.busy}
    env = H.environment(dev)
    name = f"{NAME}_{dev}"
    dtype = getattr(torch, args.dtype)

    rng = np.random.default_rng(args.seed)
    x = torch.from_numpy(rng.standard_normal((B, T))).to(dtype=dtype, device=dev)
    valid = (torch.arange(T)[:, None] + torch.arange(L)[None, :] < T).to(dev)
    grad = torch.from_numpy(rng.standard_normal((B, T, L))).to(dtype=dtype, device=dev)
    grad = grad * valid  # no upstream gradient on invalid cells
    xt = torch.from_numpy(rng.standard_normal((TB, TT))).to(dtype=dtype, device=dev)

    targets = TARGETS if all(config[k] == v for k, v in TARGET_SIZES.items()) else {}
    fv = ("fastvqa", "torch" if dev == "cpu" else "torch cuda")
    impls = []
    for red in REDUCES:
        case = f"span_scores {red} fwd+bwd"
        impls += [
            H.Impl(case, *fv, lambda red=red: fastvqa_fwd_bwd(x, grad, L, red)),
            H.Impl(case, "torch band + autograd", fv[1],
                   lambda red=red: torch_fwd_bwd(x, grad, L, red), ref=fv,
                   target=targets.get("scores")),
        ]
    top_case = f"top_spans top-{K} nms {args.nms_iou:g} {args.top_reduce}"
    impls += [
        H.Impl(top_case, *fv, lambda: top_spans(xt, K, reduce=args.top_reduce, max_len=TL,
                                                nms_iou=args.nms_iou)),
        H.Impl(top_case, "band + sort + Python NMS", fv[1],
               lambda: band_sort_python_nms(xt, K, TL, args.top_reduce, args.nms_iou), ref=fv,
               target=targets.get("top")),
    ]

    # ---- correctness first: agreement with fastvqa, or no timing at all.
    outputs = {i.key: tuple(H.to_numpy(v) for v in i.fn()) for i in impls}
    tol = 1e-4 if args.dtype == "float32" else 1e-9
    for i in impls:
        ref = outputs[(i.case, *fv)]
        got = outputs[i.key]
        label = f"{i.case} {i.impl} ({i.input})"

        def fail(msg, label=label):
            H.fail_check(args.out, name, config, env, f"{label}: {msg}")

        if i.case == top_case:
            bad = np.flatnonzero((got[0] != ref[0]).any(axis=(1, 2)))
            if bad.size:
                r = bad[0]
                fail(f"spans differ on {bad.size}/{TB} rows; row {r}: {got[0][r].tolist()} vs "
                     f"fastvqa {ref[0][r].tolist()}")
            if not np.allclose(got[1], ref[1], rtol=1e-6, atol=1e-6):
                fail("scores not allclose to fastvqa's")
            continue
        band, gx = got
        if not np.array_equal(np.isneginf(band), np.isneginf(ref[0])):
            fail("invalid cells differ")
        fin = np.isfinite(ref[0])
        if not np.allclose(band[fin], ref[0][fin], rtol=tol, atol=tol):
            fail(f"band not allclose (max abs diff {np.abs(band[fin] - ref[0][fin]).max():.3g})")
        if not np.allclose(gx, ref[1], rtol=tol, atol=tol * L):
            fail(f"grad not allclose (max abs diff {np.abs(gx - ref[1]).max():.3g})")
    del outputs
    print(f"check: all {len(impls)} implementations agree with fastvqa")

    timed = H.time_all(impls, args)
    if not targets:
        print("(no targets: they are defined for the default sizes on --device cpu)")
    # Work: band cells per call for span_scores; for a single rate column we
    # report rows/s (B for span_scores, topk_batch for top_spans) in the JSON
    # table below via two reports.
    score_impls = [i for i in impls if i.case != top_case]
    top_impls = [i for i in impls if i.case == top_case]
    H.report(f"{name}_scores", f"span_scores forward + backward: B={B}, T={T}, max_len={L}, "
             f"{args.dtype}, device={dev}, median of {args.repeats} repeats (IQR); "
             f"cells/s = B*T*max_len / median", score_impls, timed, work=B * T * L,
             rate_unit="cells/s", config=config, env=env, out_dir=args.out)
    H.report(f"{name}_top_spans", f"top_spans top-{K}, nms_iou={args.nms_iou:g}, "
             f"reduce={args.top_reduce}: B={TB}, T={TT}, max_len={TL}, {args.dtype}, "
             f"device={dev}; rows/s = B / median", top_impls, timed, work=TB,
             rate_unit="rows/s", config=config, env=env, out_dir=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
