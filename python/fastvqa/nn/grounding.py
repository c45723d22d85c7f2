# SPDX-License-Identifier: Apache-2.0
"""A query-conditioned Moment-DETR (video and query encoded together, learned
moment queries, a saliency head), and the registry of grounding models that
a training loop builds by name."""

from __future__ import annotations

import inspect
from typing import Any, Mapping, NamedTuple, Optional

import torch
from torch import Tensor, nn

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.nn.evidence import IOGrounder, SpanGrounder
from fastvqa.nn.joint_encoder import GroundingModel
from fastvqa.nn.moment_detr import (
    DecodedMoments,
    MomentDETRHead,
    MomentDETROutput,
    decode,
    set_prediction_counts,
    set_prediction_loss,
)
from fastvqa.nn.saliency import saliency_loss, saliency_videos
from fastvqa.nn.spans import Duration


class GroundingOutput(NamedTuple):
    """What :class:`MomentDETR` returns for ``B`` videos, ``Q`` queries, ``T`` steps.

    Example:
        >>> import torch
        >>> out = GroundingOutput(torch.zeros(1, 2, 2), torch.full((1, 2, 2), 0.5),
        ...                       torch.zeros(1, 4))
        >>> [tuple(t.shape) for t in out]
        [(1, 2, 2), (1, 2, 2), (1, 4)]
    """

    pred_logits: Tensor  #: [B, Q, 2] (foreground, background) logits; index 0 is foreground
    pred_spans: Tensor   #: [B, Q, 2] (centre, width), fractions of the video, in (0, 1)
    saliency: Tensor     #: [B, T] saliency scores; padded steps hold the dtype's lowest value


class LossTerms(NamedTuple):
    """:meth:`MomentDETR.loss`: the weighted ``total`` and its unweighted terms, each 0-d.

    Example:
        >>> import torch
        >>> terms = LossTerms(*torch.tensor([1.5, 0.1, 0.2, 0.05, 0.1]))
        >>> sorted(terms._asdict())
        ['classification', 'giou', 'saliency', 'span_l1', 'total']
    """

    total: Tensor           #: the four terms below, weighted by the model's *_weight options
    span_l1: Tensor         #: mean L1 of matched (centre, width) pairs
    giou: Tensor            #: mean 1 - gIoU of matched pairs
    classification: Tensor  #: foreground/background cross-entropy, background weighted by eos_coef
    saliency: Tensor        #: :func:`fastvqa.nn.saliency_loss`


class MomentDETR(GroundingModel):
    """Moment-DETR conditioned on a query: where in the video does the query happen?

    A :class:`~fastvqa.nn.JointEncoder` encodes the video steps and the query
    tokens together; a :class:`~fastvqa.nn.MomentDETRHead` lets
    ``num_queries`` learned moment queries attend to the encoded *video* steps
    (which it projects again and gives a sine position of their own, the
    positional keys of DETR's decoder) and predicts per query a
    foreground/background class and a ``(centre, width)`` span; a linear
    saliency head scores each encoded step.

    Training (:meth:`loss`): Hungarian matching with Moment-DETR's costs
    (class 4, span 10, gIoU 1) and :func:`~fastvqa.nn.set_prediction_loss`,
    plus :func:`~fastvqa.nn.saliency_loss` (labels where the batch has them,
    else inside-versus-outside the gold spans). The defaults are Moment-DETR's:
    width 256, 8 heads, 2 + 2 layers, 10 queries, feed-forward 1024,
    dropout 0.1, weights span 10, gIoU 1, class 4, saliency 1, background
    0.1, margin 0.2. That is 4.7 M parameters for QVHighlights' features
    (2816-d video, 512-d text), and a training step on 32 videos of 75
    steps with 32-token queries takes about 0.6 s on two CPU cores.

    Args:
        video_dim, query_dim: the sizes of a video step's and a query
            token's features.
        hidden, heads, enc_layers, dec_layers, ffn, dropout: the transformer.
        num_queries: moment candidates per video.
        span_weight, giou_weight, class_weight, eos_coef: as in
            :func:`~fastvqa.nn.set_prediction_loss`.
        saliency_weight, saliency_margin: the saliency term's weight and
            hinge margin.

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> model = MomentDETR(8, 4, hidden=16, heads=2, enc_layers=1, dec_layers=1,
        ...                    num_queries=3, ffn=32).eval()
        >>> mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
        >>> out = model(torch.randn(2, 6, 8), mask, torch.randn(2, 3, 4),
        ...             torch.ones(2, 3, dtype=torch.bool))
        >>> tuple(out.pred_spans.shape), tuple(out.saliency.shape)
        ((2, 3, 2), (2, 6))
        >>> [len(d.spans) <= 3 for d in model.decode(out, torch.tensor([12.0, 8.0]), mask)]
        [True, True]
        >>> MomentDETR(**model.config).config == model.config
        True
    """

    name = "moment_detr"

    def __init__(self, video_dim: int, query_dim: int, *, hidden: int = 256, heads: int = 8,
                 enc_layers: int = 2, dec_layers: int = 2, num_queries: int = 10,
                 ffn: int = 1024, dropout: float = 0.1, span_weight: float = 10.0,
                 giou_weight: float = 1.0, class_weight: float = 4.0, eos_coef: float = 0.1,
                 saliency_weight: float = 1.0, saliency_margin: float = 0.2) -> None:
        super().__init__(video_dim, query_dim, hidden=hidden, heads=heads,
                         enc_layers=enc_layers, ffn=ffn, dropout=dropout)
        op = "MomentDETR"
        weights = {name: _checks.real(value, op, name, minimum=0.0, finite=True)
                   for name, value in (("span_weight", span_weight),
                                       ("giou_weight", giou_weight),
                                       ("class_weight", class_weight), ("eos_coef", eos_coef),
                                       ("saliency_weight", saliency_weight),
                                       ("saliency_margin", saliency_margin))}
        self.head = MomentDETRHead(hidden, num_queries, hidden=hidden, layers=dec_layers,
                                   heads=heads, dropout=dropout, feedforward=ffn)
        self.saliency_head = nn.Linear(hidden, 1)
        self._weights = weights
        self._config.update(dec_layers=dec_layers, num_queries=num_queries, **weights)

    def forward(self, features: Tensor, mask: Tensor, query: Tensor,
                query_mask: Tensor) -> GroundingOutput:
        """``features`` ``[B, T, Dv]``, ``mask`` ``[B, T]`` bool (True on
        each row's first steps), ``query`` ``[B, L, Dq]``, ``query_mask``
        ``[B, L]`` bool -> :class:`GroundingOutput`. Padded steps and tokens
        never change a row's outputs."""
        video = self.encoder(features, mask, query, query_mask)
        logits, spans = self.head(video, mask.sum(-1))
        scores = self.saliency_head(video).squeeze(-1)
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return GroundingOutput(logits, spans, scores)

    def loss_counts(self, batch: Mapping[str, Any]) -> dict:
        """The divisors :meth:`loss` uses for ``batch`` by default:
        ``{"spans", "class_weight", "saliency_videos"}``
        (:func:`~fastvqa.nn.set_prediction_counts`,
        :func:`~fastvqa.nn.saliency_videos`). Data-parallel training sums
        them over the ranks, divides by the number of ranks and passes them
        back as ``loss(..., normalizers=)``, so that every rank's loss is its
        share of the one-process loss over the global batch."""
        gold_mask = batch["gold_mask"].to(torch.bool)
        spans, weights = set_prediction_counts(gold_mask.sum(1).tolist(), self.head.num_queries,
                                               self._weights["eos_coef"])
        mask = batch["mask"]
        saliency, saliency_mask = batch.get("saliency"), batch.get("saliency_mask")
        if saliency is None or saliency_mask is None:
            saliency = torch.zeros(mask.shape, device=mask.device)
            saliency_mask = torch.zeros_like(mask)
        videos = saliency_videos(saliency, saliency_mask, mask, gold=batch.get("gold"))
        return {"spans": spans, "class_weight": weights, "saliency_videos": float(videos)}

    def loss(self, output: GroundingOutput, batch: Mapping[str, Any], *,
             normalizers: Optional[Mapping[str, float]] = None) -> LossTerms:
        """The training loss of ``output`` against ``batch``.

        Uses ``gold_cw`` ``[B, G, 2]`` (normalised ``(centre, width)``) with
        ``gold_mask`` ``[B, G]`` for the set prediction, and ``mask`` with,
        when present, ``saliency``/``saliency_mask`` ``[B, T]`` and ``gold``
        ``[B, G, 2]`` (inclusive steps) for the saliency term (see
        :func:`~fastvqa.nn.saliency_loss`: a video without saliency labels
        ranks the steps inside its gold spans above those outside).
        """
        op = "MomentDETR.loss"
        gold_cw = self._field(batch, "gold_cw", op)
        gold_mask = self._field(batch, "gold_mask", op)
        mask = self._field(batch, "mask", op)
        B = output.pred_spans.shape[0]
        if gold_cw.ndim != 3 or gold_cw.shape[0] != B or gold_cw.shape[-1] != 2 \
                or tuple(gold_mask.shape) != tuple(gold_cw.shape[:2]):
            raise InputError(f"{op}: gold_cw must have shape ({B}, G, 2) and gold_mask (B, G), "
                             f"got {tuple(gold_cw.shape)} and {tuple(gold_mask.shape)}")
        gold_mask = gold_mask.to(torch.bool)
        targets = [gold_cw[b][gold_mask[b]] for b in range(B)]
        w = self._weights
        matched = set_prediction_loss(
            MomentDETROutput(output.pred_logits, output.pred_spans), targets,
            span_weight=w["span_weight"], giou_weight=w["giou_weight"],
            class_weight=w["class_weight"], eos_coef=w["eos_coef"],
            span_count=None if normalizers is None else normalizers["spans"],
            class_weight_sum=None if normalizers is None else normalizers["class_weight"])
        saliency = batch.get("saliency")
        saliency_mask = batch.get("saliency_mask")
        if saliency is None or saliency_mask is None:
            saliency = torch.zeros_like(output.saliency)
            saliency_mask = torch.zeros_like(mask)
        ranking = saliency_loss(output.saliency, saliency, saliency_mask, mask,
                                w["saliency_margin"], gold=batch.get("gold"),
                                videos=None if normalizers is None
                                else normalizers["saliency_videos"])
        total = matched.total + w["saliency_weight"] * ranking
        return LossTerms(total, matched.span_l1, matched.giou, matched.classification, ranking)

    @torch.no_grad()
    def decode(self, output: GroundingOutput, duration: Duration,
               mask: Optional[Tensor] = None, **options: Any) -> list[DecodedMoments]:
        """Each video's moments in seconds, best first, through
        :func:`fastvqa.nn.moment_detr.decode` (1-D NMS; ``options``:
        ``iou_threshold=0.7``, ``top_k``, ``score_threshold``, ``ties``).

        ``duration`` is in seconds (a number or ``[B]``); rows whose ``mask``
        is all False decode to nothing. Equal scores keep query order
        (``ties="stable"``, the stable sort of Moment-DETR's post-processing);
        ``ties="start"`` orders them by start, then end, then query.
        """
        lengths = None if mask is None else mask.sum(-1)
        return decode(MomentDETROutput(output.pred_logits, output.pred_spans), duration,
                      lengths=lengths, **options)


#: The grounding models by name (``build_model`` and the training loop's ``--model``).
MODELS = {"moment_detr": MomentDETR, "span": SpanGrounder, "io": IOGrounder}


def build_model(name: str, **config: Any) -> GroundingModel:
    """The model ``MODELS[name]`` built with ``config`` (its constructor's arguments).

    ``build_model(type(m).name, **m.config)`` rebuilds the architecture of a
    model ``m`` (load its ``state_dict`` for the weights).

    Raises:
        InputError: an unknown name, an argument the model does not take, or
            a missing required one (``video_dim``, ``query_dim``).

    Example:
        >>> model = build_model("span", video_dim=8, query_dim=4, hidden=16, heads=2)
        >>> type(model).__name__, model.config["hidden"]
        ('SpanGrounder', 16)
        >>> build_model("detr", video_dim=8, query_dim=4)
        Traceback (most recent call last):
        fastvqa.errors.InputError: build_model: unknown model 'detr'; expected one of ...
    """
    op = "build_model"
    if not isinstance(name, str) or name not in MODELS:
        raise InputError(f"{op}: unknown model {name!r}; expected one of "
                         f"{', '.join(sorted(MODELS))}")
    cls = MODELS[name]
    params = dict(inspect.signature(cls.__init__).parameters)
    params.pop("self")
    unknown = sorted(set(config) - set(params))
    if unknown:
        raise InputError(f"{op}: model {name!r} takes no option {', '.join(unknown)}; "
                         f"its options are {', '.join(params)}")
    missing = [p for p, spec in params.items()
               if spec.default is inspect.Parameter.empty and p not in config]
    if missing:
        raise InputError(f"{op}: model {name!r} needs {', '.join(missing)}")
    return cls(**config)
