# SPDX-License-Identifier: Apache-2.0
"""Masks from lengths, and the masked reductions the heads share."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


def lengths_to_mask(lengths: Optional[Tensor], batch: int, steps: int,
                    device: torch.device) -> Tensor:
    """``[B, T]`` bool, True at valid steps (``t < lengths[b]``); all True without lengths.

    Lengths must be the unpadded sizes, computed before padding (computing
    them after padding is the WildQA SE bug that let padding be selected).

    Example:
        >>> import torch
        >>> lengths_to_mask(torch.tensor([2, 0]), 2, 3, torch.device("cpu")).tolist()
        [[True, True, False], [False, False, False]]
    """
    if lengths is None:
        return torch.ones(batch, steps, dtype=torch.bool, device=device)
    return torch.arange(steps, device=device)[None, :] < lengths.to(device)[:, None]


def masked_log_softmax(logits: Tensor, mask: Tensor) -> Tensor:
    """log_softmax over valid steps. Padding is filled with the dtype's most
    negative finite value, not -inf, so a fully masked row stays finite (and so
    do its gradients); callers give such rows zero weight.

    Example:
        >>> import torch
        >>> logp = masked_log_softmax(torch.tensor([[0.0, 0.0, 5.0]]),
        ...                           torch.tensor([[True, True, False]]))
        >>> logp.exp().tolist()
        [[0.5, 0.5, 0.0]]
    """
    fill = torch.finfo(logits.dtype).min
    return torch.log_softmax(logits.masked_fill(~mask, fill), dim=-1)


def safe_mean(total: Tensor, count: Tensor) -> Tensor:
    """``total / count``, 0 where ``count`` is 0 (no NaN from empty batches).

    Example:
        >>> import torch
        >>> safe_mean(torch.tensor([3.0, 0.0]), torch.tensor([2, 0])).tolist()
        [1.5, 0.0]
    """
    return total / count.clamp_min(1).to(total.dtype)
