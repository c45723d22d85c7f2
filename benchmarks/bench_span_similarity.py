# SPDX-License-Identifier: Apache-2.0
"""Benchmark fastvqa.ops.span_similarity_all (forward + backward) against the
straightforward PyTorch implementation.

Baseline, timed in the same run on the same inputs (torch autograd through it):

- mean_of_cos: per-frame ``F.cosine_similarity(frames, query)``, ``cumsum``,
  gather of every band cell ``[i, i + d]``, divide by the length, ``-inf``
  outside the band.
- cos_of_mean: ``cumsum`` over features (B, T + 1, D), gather of every band
  cell's feature sum (a B x T x W x D tensor), divide by the length,
  ``F.cosine_similarity`` with the query, ``-inf`` outside the band.

Both then take ``(band * weights).sum()`` over the finite cells and call
``backward()``. Before timing, values and both gradients must be allclose to
fastvqa's; otherwise the script exits 1 without timing. No targets: the issue
sets none for this op; the ratio is reported.

Usage: python benchmarks/bench_span_similarity.py [--device cuda] [--out DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import _harness as H  # noqa: E402
from fastvqa.ops import span_similarity_all  # noqa: E402

NAME = "span_similarity"


def torch_band(frames, query, pool, max_len):
    """The straightforward all-spans similarity in PyTorch (differentiable)."""
    B, T, D = frames.shape
    W = max_len
    i = torch.arange(T, device=frames.device)[:, None]
    d = torch.arange(W, device=frames.device)[None, :]
    j1 = (i + d + 1).clamp_max(T)  # exclusive end, clamped for gathering
    n = (d + 1).to(frames.dtype)
    valid = (i + d) < T
    if pool == "mean_of_cos":
        c = F.cosine_similarity(frames, query[:, None, :], dim=-1)  # (B, T)
        cs = torch.cat([c.new_zeros(B, 1), c.cumsum(1)], dim=1)
        sums = cs[:, j1] - cs[:, :T, None]  # (B, T, W)
        band = sums / n
    else:
        P = torch.cat([frames.new_zeros(B, 1, D), frames.cumsum(1)], dim=1)  # (B, T + 1, D)
        sums = P[:, j1] - P[:, :T, None]  # (B, T, W, D)
        band = F.cosine_similarity(sums / n[..., None], query[:, None, None, :], dim=-1)
    return torch.where(valid, band, torch.full_like(band, float("-inf")))


def fwd_bwd(fn, frames, query, weights):
    frames.grad = query.grad = None
    band = fn(frames, query)
    loss = torch.where(torch.isfinite(band), band * weights, torch.zeros_like(band)).sum()
    loss.backward()
    return band, frames.grad, query.grad


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=16, help="B: rows (question x option) per call")
    p.add_argument("--length", type=int, default=256, help="T: frames per row")
    p.add_argument("--dim", type=int, default=256, help="D: feature size")
    p.add_argument("--max-len", type=int, default=64, help="band width (longest span)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    args = p.parse_args()
    H.require_device(args.device)
    dev, B, T, D, W = args.device, args.batch, args.length, args.dim, args.max_len
    config = {"batch": B, "length": T, "dim": D, "max_len": W, "dtype": args.dtype,
              "seed": args.seed, "device": dev, "repeats": args.repeats, "warmup": args.warmup,
              "busy": args.busy}
    env = H.environment(dev)
    name = f"{NAME}_{dev}"
    dtype = getattr(torch, args.dtype)
    g = torch.Generator().manual_seed(args.seed)
    frames = torch.randn(B, T, D, generator=g, dtype=dtype).to(dev).requires_grad_()
    query = torch.randn(B, D, generator=g, dtype=dtype).to(dev).requires_grad_()
    weights = torch.randn(B, T, W, generator=g, dtype=dtype).to(dev)

    impls = []
    for pool in ("mean_of_cos", "cos_of_mean"):
        fv = lambda f, q, pool=pool: span_similarity_all(f, q, pool=pool, max_len=W)  # noqa: E731
        tb = lambda f, q, pool=pool: torch_band(f, q, pool, W)  # noqa: E731
        impls.append(H.Impl(pool, "fastvqa", "torch", lambda fv=fv: fwd_bwd(fv, frames, query, weights)))
        impls.append(H.Impl(pool, "torch cumsum+gather", "torch",
                            lambda tb=tb: fwd_bwd(tb, frames, query, weights),
                            ref=("fastvqa", "torch")))

    # ---- correctness first
    outputs = {i.key: [x.detach().cpu().numpy().copy() for x in i.fn()] for i in impls}
    tol = dict(rtol=1e-3, atol=1e-4) if args.dtype == "float32" else dict(rtol=1e-9, atol=1e-10)
    for i in impls:
        if i.ref is None:
            continue
        for what, a, b in zip(("band", "grad frames", "grad query"), outputs[i.key],
                              outputs[(i.case, *i.ref)]):
            if not np.allclose(a, b, equal_nan=True, **tol):
                H.fail_check(args.out, name, config, env,
                             f"{i.case} {i.impl}: {what} differs from fastvqa's "
                             f"(max abs diff {np.nanmax(np.abs(np.where(np.isfinite(b), a - b, 0))):.3g})")
    del outputs
    print(f"check: band, grad frames and grad query agree with fastvqa on B={B}, T={T}, "
          f"D={D}, max_len={W}")

    timed = H.time_all(impls, args)
    H.report(name, f"span_similarity_all forward + backward: B={B}, T={T}, D={D}, "
             f"max_len={W}, {args.dtype}, device={dev}, median of {args.repeats} repeats (IQR); "
             f"spans/s = B * T * max_len / median",
             impls, timed, work=B * T * W, rate_unit="spans/s", config=config, env=env,
             out_dir=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
