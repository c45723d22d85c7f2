# SPDX-License-Identifier: Apache-2.0
"""TEMPORARY torch fallbacks for two ops another branch of issue 4 adds as
compiled kernels: ``fastvqa.ops.top_spans`` and ``fastvqa.ops.io_to_spans``.

They exist so the nn modules work on this branch; on merge, replace the calls
in attention_pool.py and io_head.py with the compiled ops and delete this
file. Semantics follow the issue's spec (banded layout: span [i, i + d] at
[b, i, d]; tie rule: higher score, then smaller start, then smaller end).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from fastvqa.nn.masking import lengths_to_mask


def span_band(x: Tensor, reduce: str, min_len: int, max_len: Optional[int],
              lengths: Optional[Tensor]) -> Tensor:
    """Scores of every span of per-step scores ``x`` [B, T] as a [B, T, W]
    band (W = max_len or T), invalid cells -inf. ``reduce``: "sum", "mean" or
    "contrast" (mean inside minus mean of the other valid steps; 0 for a span
    covering the whole row, which contrasts with nothing)."""
    B, T = x.shape
    W = T if max_len is None else max_len
    lens = (torch.full((B,), T, device=x.device) if lengths is None
            else lengths.to(x.device, torch.int64))
    valid_x = torch.where(lengths_to_mask(lens, B, T, x.device), x, torch.zeros_like(x))
    cs = torch.cat([valid_x.new_zeros(B, 1), valid_x.cumsum(-1)], dim=-1)  # [B, T + 1]
    i = torch.arange(T, device=x.device)[:, None]
    d = torch.arange(W, device=x.device)[None, :]
    j = i + d
    n = (d + 1).to(x.dtype)
    hi = cs.gather(1, (j + 1).clamp_max(T).reshape(1, -1).expand(B, -1)).reshape(B, T, W)
    inside = hi - cs[:, :T, None]
    if reduce == "mean":
        score = inside / n
    elif reduce == "contrast":
        rest = (lens[:, None, None].to(x.dtype) - n)
        outside = (cs.gather(1, lens[:, None]) [:, :, None] - inside)
        score = torch.where(rest > 0, inside / n - outside / rest.clamp_min(1), 0.0)
    elif reduce == "sum":
        score = inside
    else:
        raise ValueError(f"span_band: reduce must be 'sum', 'mean' or 'contrast', got {reduce!r}")
    ok = (d + 1 >= min_len) & (j < lens[:, None, None])
    return torch.where(ok, score, torch.full_like(score, float("-inf")))


def top_spans(x: Tensor, k: int, *, reduce: str = "contrast", min_len: int = 1,
              max_len: Optional[int] = None, lengths: Optional[Tensor] = None
              ) -> tuple[Tensor, Tensor]:
    """The k best spans per row: ([B, k, 2] inclusive int64, [B, k] scores),
    rows short of spans padded with (-1, -1) and -inf, like span_argmax."""
    B, T = x.shape
    band = span_band(x, reduce, min_len, max_len, lengths)
    W = band.shape[-1]
    flat = band.reshape(B, T * W)
    # A stable descending sort keeps the flattened (start, then end) order
    # among equal scores: the tie rule.
    scores, idx = torch.sort(flat, dim=-1, descending=True, stable=True)
    scores, idx = scores[:, :k], idx[:, :k]
    starts, offs = idx // W, idx % W
    spans = torch.stack([starts, starts + offs], dim=-1)
    missing = torch.isinf(scores) & (scores < 0)
    spans = torch.where(missing[..., None], torch.full_like(spans, -1), spans)
    return spans, scores


def io_to_spans(probs: Tensor, *, threshold: float = 0.5, lengths: Optional[Tensor] = None,
                min_len: int = 1) -> tuple[Tensor, Tensor, Tensor]:
    """Maximal runs of valid steps with ``probs >= threshold`` (NaN is outside)
    as inclusive spans scored by their mean probability. Returns ragged
    ``(spans [N, 2], scores [N], offsets [B + 1])``; each row's spans are
    sorted by score, then start. Eager only (data-dependent sizes)."""
    B, T = probs.shape
    inside = (probs >= threshold) & lengths_to_mask(lengths, B, T, probs.device)
    pad = inside.new_zeros(B, 1)
    prev = torch.cat([pad, inside[:, :-1]], dim=1)
    nxt = torch.cat([inside[:, 1:], pad], dim=1)
    row_s, start = (inside & ~prev).nonzero(as_tuple=True)
    _, end = (inside & ~nxt).nonzero(as_tuple=True)  # k-th run end pairs with k-th start
    cs = torch.cat([probs.new_zeros(B, 1), torch.nan_to_num(probs).cumsum(-1)], dim=1)
    n = end - start + 1
    score = (cs[row_s, end + 1] - cs[row_s, start]) / n.to(probs.dtype)
    keep = n >= min_len
    row_s, start, end, score = row_s[keep], start[keep], end[keep], score[keep]
    # Sort by row, then score (descending), then start, with stable passes.
    order = torch.sort(-score, stable=True).indices
    order = order[torch.sort(row_s[order], stable=True).indices]
    spans = torch.stack([start, end], dim=-1)[order]
    counts = torch.bincount(row_s, minlength=B)
    offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    return spans, score[order], offsets
