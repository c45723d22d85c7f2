# SPDX-License-Identifier: Apache-2.0
"""Hungarian matching of predicted spans to target spans (DETR-style set
prediction, as Moment-DETR matches its queries to the ground-truth moments)."""

from __future__ import annotations

from typing import NamedTuple, Sequence

import torch
from torch import Tensor

from fastvqa import _checks
from fastvqa.errors import InputError, InputTypeError
from fastvqa.nn.losses import pairwise_generalized_temporal_iou
from fastvqa.nn.spans import center_width_to_spans


class SpanTargets(NamedTuple):
    """The targets of one video (any ``(labels, spans)`` pair is accepted too).

    Example:
        >>> import torch
        >>> t = SpanTargets(torch.tensor([0]), torch.tensor([[0.5, 0.25]]))
        >>> hungarian_match(torch.zeros(1, 2, 2), torch.tensor([[[0.2, 0.1], [0.5, 0.2]]]), [t])
        [Match(pred_idx=tensor([1]), tgt_idx=tensor([0]))]
    """

    labels: Tensor  #: [T] int64 class of each target span
    spans: Tensor   #: [T, 2] target spans as (centre, width), fractions of the video


class Match(NamedTuple):
    """One video's assignment: query ``pred_idx[k]`` is matched to target ``tgt_idx[k]``.

    Example:
        >>> import torch
        >>> m = Match(torch.tensor([0, 2]), torch.tensor([1, 0]))
        >>> list(zip(m.pred_idx.tolist(), m.tgt_idx.tolist()))  # (query, target) pairs
        [(0, 1), (2, 0)]
    """

    pred_idx: Tensor  #: [K] int64 query indices, increasing
    tgt_idx: Tensor   #: [K] int64 target indices; K = min(Q, T)


def hungarian_match(pred_logits: Tensor, pred_spans: Tensor,
                    targets: Sequence[tuple[Tensor, Tensor]], *, cost_class: float = 1.0,
                    cost_span: float = 1.0, cost_giou: float = 1.0) -> list[Match]:
    """The assignment of queries to targets of least total cost, per video.

    The cost of matching query ``q`` with target ``t`` (Moment-DETR's) is ::

        - cost_class * softmax(pred_logits[q])[labels[t]]
        + cost_span  * L1(pred_spans[q], spans[t])          # on (centre, width)
        - cost_giou  * giou(start_end(pred_spans[q]), start_end(spans[t]))

    with the gIoU of :func:`fastvqa.nn.pairwise_generalized_temporal_iou`.
    The cost of the whole batch is computed at once; each video's block is
    then solved by ``scipy.optimize.linear_sum_assignment``. No gradients flow.

    Args:
        pred_logits: ``(B, Q, C)`` class logits of ``Q`` queries.
        pred_spans: ``(B, Q, 2)`` predicted ``(centre, width)`` spans,
            fractions of the video.
        targets: ``B`` pairs ``(labels, spans)`` (e.g. :class:`SpanTargets`):
            ``labels`` ``(T_b,)`` integers in ``[0, C)``, ``spans`` ``(T_b, 2)``
            ``(centre, width)`` in the same unit as ``pred_spans``. ``T_b = 0``
            is allowed.
        cost_class, cost_span, cost_giou: the weights of the three costs (``>= 0``).

    Returns:
        ``B`` :class:`Match` ``(pred_idx, tgt_idx)`` int64 CPU tensors, each of
        length ``min(Q, T_b)`` (every target is matched when ``T_b <= Q``;
        empty for ``T_b = 0``), ordered by query. When several assignments
        tie for the least cost, which one is returned is up to scipy.

    Raises:
        InputError: shapes that do not fit together, a label outside
            ``[0, C)``, or a non-finite cost (NaN or infinite predictions).
        ImportError: scipy is not installed (``pip install scipy``).

    Example:
        >>> import torch
        >>> spans = torch.tensor([[[0.2, 0.1], [0.5, 0.2], [0.8, 0.1]]])  # 3 queries
        >>> targets = [(torch.tensor([0, 0]), torch.tensor([[0.8, 0.1], [0.25, 0.1]]))]
        >>> hungarian_match(torch.zeros(1, 3, 2), spans, targets)
        [Match(pred_idx=tensor([0, 2]), tgt_idx=tensor([1, 0]))]
    """
    op = "hungarian_match"
    weights = [_checks.real(w, op, name, minimum=0.0, finite=True) for w, name in
               ((cost_class, "cost_class"), (cost_span, "cost_span"), (cost_giou, "cost_giou"))]
    labels, spans, sizes = _check_inputs(op, pred_logits, pred_spans, targets)
    linear_sum_assignment = _scipy_assignment()
    B, Q, _ = pred_logits.shape
    empty = torch.empty(0, dtype=torch.int64)
    if B == 0 or Q == 0 or sum(sizes) == 0:
        return [Match(empty, empty) for _ in range(B)]
    with torch.no_grad():
        cost = _cost_matrix(pred_logits.reshape(B * Q, -1), pred_spans.reshape(B * Q, 2),
                            labels, spans, *weights)
        if not bool(torch.isfinite(cost).all()):
            raise InputError(f"{op}: the matching cost is not finite "
                             "(NaN or infinite pred_logits or pred_spans?)")
        blocks = cost.reshape(B, Q, -1).to("cpu", torch.float64).split(sizes, dim=-1)
    matches = []
    for b, block in enumerate(blocks):
        if sizes[b] == 0:
            matches.append(Match(empty, empty))
            continue
        rows, cols = linear_sum_assignment(block[b].numpy())
        matches.append(Match(torch.as_tensor(rows, dtype=torch.int64),
                             torch.as_tensor(cols, dtype=torch.int64)))
    return matches


class HungarianMatcher:
    """:func:`hungarian_match` with its cost weights fixed: ``matcher(pred_logits,
    pred_spans, targets)``. Moment-DETR trains with ``cost_class=4,
    cost_span=10, cost_giou=1``.

    Example:
        >>> import torch
        >>> matcher = HungarianMatcher(cost_class=4, cost_span=10)
        >>> matcher
        HungarianMatcher(cost_class=4, cost_span=10, cost_giou=1)
        >>> spans = torch.tensor([[[0.2, 0.1], [0.5, 0.2]]])
        >>> matcher(torch.zeros(1, 2, 2), spans, [(torch.tensor([0]), torch.tensor([[0.2, 0.1]]))])
        [Match(pred_idx=tensor([0]), tgt_idx=tensor([0]))]
    """

    def __init__(self, cost_class: float = 1.0, cost_span: float = 1.0,
                 cost_giou: float = 1.0) -> None:
        op = "HungarianMatcher"
        self.cost_class = _checks.real(cost_class, op, "cost_class", minimum=0.0, finite=True)
        self.cost_span = _checks.real(cost_span, op, "cost_span", minimum=0.0, finite=True)
        self.cost_giou = _checks.real(cost_giou, op, "cost_giou", minimum=0.0, finite=True)

    def __call__(self, pred_logits: Tensor, pred_spans: Tensor,
                 targets: Sequence[tuple[Tensor, Tensor]]) -> list[Match]:
        return hungarian_match(pred_logits, pred_spans, targets, cost_class=self.cost_class,
                               cost_span=self.cost_span, cost_giou=self.cost_giou)

    def __repr__(self) -> str:
        return (f"HungarianMatcher(cost_class={self.cost_class:g}, "
                f"cost_span={self.cost_span:g}, cost_giou={self.cost_giou:g})")


def _cost_matrix(logits: Tensor, spans: Tensor, tgt_labels: Tensor, tgt_spans: Tensor,
                 cost_class: float, cost_span: float, cost_giou: float) -> Tensor:
    """``(P, T)`` cost of every prediction (rows) against every target (columns)."""
    prob = logits.softmax(-1)[:, tgt_labels]
    l1 = torch.cdist(spans, tgt_spans.to(spans.dtype), p=1)
    giou = pairwise_generalized_temporal_iou(center_width_to_spans(spans),
                                             center_width_to_spans(tgt_spans.to(spans.dtype)))
    return cost_span * l1 - cost_giou * giou - cost_class * prob


def _check_inputs(op: str, pred_logits: Tensor, pred_spans: Tensor,
                  targets: Sequence[tuple[Tensor, Tensor]]
                  ) -> tuple[Tensor, Tensor, list[int]]:
    """The targets concatenated (labels ``(ΣT,)`` and spans ``(ΣT, 2)`` on the
    predictions' device) and their per-video counts."""
    for name, x in (("pred_logits", pred_logits), ("pred_spans", pred_spans)):
        if not isinstance(x, Tensor) or not x.is_floating_point():
            raise InputTypeError(f"{op}: {name} must be a floating-point torch tensor")
    if pred_logits.ndim != 3 or pred_spans.shape != (*pred_logits.shape[:2], 2):
        raise InputError(f"{op}: pred_logits must be (B, Q, C) and pred_spans (B, Q, 2), "
                         f"got {tuple(pred_logits.shape)} and {tuple(pred_spans.shape)}")
    B, _, C = pred_logits.shape
    if isinstance(targets, (str, bytes, Tensor)) or len(targets) != B:
        raise InputError(f"{op}: targets must be a sequence of B = {B} (labels, spans) pairs")
    labels, spans, sizes = [], [], []
    for b, target in enumerate(targets):
        try:
            lab, sp = target
        except (TypeError, ValueError):
            raise InputError(f"{op}: targets[{b}] must be a (labels, spans) pair") from None
        if not isinstance(lab, Tensor) or not isinstance(sp, Tensor):
            raise InputTypeError(f"{op}: targets[{b}] must hold torch tensors")
        if lab.ndim != 1 or sp.shape != (lab.shape[0], 2):
            raise InputError(f"{op}: targets[{b}] must have labels (T,) and spans (T, 2), "
                             f"got {tuple(lab.shape)} and {tuple(sp.shape)}")
        if lab.is_floating_point() or lab.dtype == torch.bool:
            raise InputTypeError(f"{op}: targets[{b}] labels must be integers, got {lab.dtype}")
        if lab.numel() and not bool(((lab >= 0) & (lab < C)).all()):
            raise InputError(f"{op}: targets[{b}] labels must lie in [0, {C}), "
                             f"got {lab.tolist()}")
        labels.append(lab.to(pred_logits.device, torch.int64))
        spans.append(sp.to(pred_spans.device))
        sizes.append(int(lab.shape[0]))
    if not labels:
        return (torch.empty(0, dtype=torch.int64), pred_spans.new_empty(0, 2), sizes)
    return torch.cat(labels), torch.cat(spans), sizes


def _scipy_assignment():
    try:
        from scipy.optimize import linear_sum_assignment
    except ImportError as exc:
        raise ImportError("fastvqa.nn.hungarian_match needs scipy: pip install scipy") from exc
    return linear_sum_assignment
