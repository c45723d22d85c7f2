# SPDX-License-Identifier: Apache-2.0
"""The joint video + query encoder that fastvqa's grounding models share, and
their common base class (inputs, ``config``, batch access)."""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import Tensor, nn

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.nn.moment_detr import _sine_encoding

#: Token types added to the projected tokens (rows of ``JointEncoder.token_type``).
VIDEO, QUERY = 0, 1


class JointEncoder(nn.Module):
    """A transformer encoder over the video steps and the query tokens together.

    Video features ``[B, T, Dv]`` and query tokens ``[B, L, Dq]`` are each
    projected to ``hidden`` (``LayerNorm``, dropout, ``Linear``). Video steps
    get a sine encoding of their position *as a fraction of the row's valid
    length* (the centre of step ``t`` is ``(t + 1/2) / lengths[b]``), so how
    far a row was padded never changes it; query tokens get no position (a
    text encoder's token features carry their own). A learned type embedding
    (:data:`VIDEO` or :data:`QUERY`) tells the two kinds apart, as
    Moment-DETR's token types do. The concatenated ``T + L`` tokens go
    through an ``nn.TransformerEncoder`` in which padded steps and tokens are
    never attended to, and the encoded *video* steps come out.

    Padded inputs are zeroed first, so not even a NaN there reaches a real
    step. A row with no valid step and no valid token attends to its zeroed
    tokens (finite, meaningless outputs) rather than to nothing.

    Args:
        video_dim, query_dim: ``Dv`` and ``Dq``.
        hidden: the width (even, divisible by ``heads``).
        heads: attention heads.
        layers: encoder layers.
        ffn: the feed-forward width of each layer.
        dropout: dropout in the projections and the layers.

    Example:
        >>> import torch
        >>> enc = JointEncoder(8, 4, hidden=16, heads=2, layers=1, ffn=32).eval()
        >>> mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
        >>> query, query_mask = torch.randn(2, 3, 4), torch.ones(2, 3, dtype=torch.bool)
        >>> out = enc(torch.randn(2, 5, 8), mask, query, query_mask)
        >>> tuple(out.shape)
        (2, 5, 16)
    """

    def __init__(self, video_dim: int, query_dim: int, *, hidden: int = 256, heads: int = 8,
                 layers: int = 2, ffn: int = 1024, dropout: float = 0.1) -> None:
        super().__init__()
        op = "JointEncoder"
        video_dim = _checks.integer(video_dim, op, "video_dim", minimum=1)
        query_dim = _checks.integer(query_dim, op, "query_dim", minimum=1)
        hidden = _checks.integer(hidden, op, "hidden", minimum=2)
        heads = _checks.integer(heads, op, "heads", minimum=1)
        layers = _checks.integer(layers, op, "layers", minimum=1)
        ffn = _checks.integer(ffn, op, "ffn", minimum=1)
        dropout = _checks.unit_interval(dropout, op, "dropout")
        if hidden % heads or hidden % 2:
            raise InputError(f"{op}: hidden must be even and divisible by heads, "
                             f"got hidden={hidden}, heads={heads}")
        self.video_dim, self.query_dim, self.hidden = video_dim, query_dim, hidden
        self.video_proj = nn.Sequential(nn.LayerNorm(video_dim), nn.Dropout(dropout),
                                        nn.Linear(video_dim, hidden))
        self.query_proj = nn.Sequential(nn.LayerNorm(query_dim), nn.Dropout(dropout),
                                        nn.Linear(query_dim, hidden))
        self.token_type = nn.Embedding(2, hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout, batch_first=True)
        # No nested tensors: they would make padded outputs depend on the
        # execution path (train/eval), which the padding tests pin down.
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, features: Tensor, mask: Tensor, query: Tensor, query_mask: Tensor) -> Tensor:
        """``features`` ``[B, T, Dv]``, ``mask`` ``[B, T]`` bool (True on the
        first ``lengths[b]`` steps), ``query`` ``[B, L, Dq]``, ``query_mask``
        ``[B, L]`` bool -> the encoded video steps ``[B, T, hidden]`` (padded
        steps hold finite values that mean nothing)."""
        check_inputs(features, mask, query, query_mask, self.video_dim, self.query_dim,
                     type(self).__name__)
        B, T, _ = features.shape
        features = features.masked_fill(~mask[..., None], 0.0)
        query = query.masked_fill(~query_mask[..., None], 0.0)
        length = mask.sum(-1, keepdim=True).clamp_min(1)
        where = (torch.arange(T, device=features.device) + 0.5) / length
        video = self.video_proj(features)
        video = video + _sine_encoding(where, self.hidden).to(video.dtype) \
            + self.token_type.weight[VIDEO]
        text = self.query_proj(query) + self.token_type.weight[QUERY]
        valid = torch.cat((mask, query_mask), dim=1)
        ignore = ~valid & valid.any(-1, keepdim=True)
        return self.encoder(torch.cat((video, text), dim=1), src_key_padding_mask=ignore)[:, :T]


def check_inputs(features: Any, mask: Any, query: Any, query_mask: Any, video_dim: int,
                 query_dim: int, op: str) -> None:
    """One-line :class:`~fastvqa.errors.InputError` for inputs a grounding
    model cannot take: wrong kinds or shapes, or a ``mask`` that is not True
    on a prefix of each row (what every length-based head assumes)."""
    for name, value, rank in (("features", features, 3), ("mask", mask, 2),
                              ("query", query, 3), ("query_mask", query_mask, 2)):
        if not isinstance(value, Tensor) or value.ndim != rank:
            raise InputError(f"{op}: {name} must be a tensor with {rank} dimensions, "
                             f"got {describe(value)}")
    for name, value in (("features", features), ("query", query)):
        if not value.is_floating_point():
            raise InputError(f"{op}: {name} must be a floating-point tensor, got {value.dtype}")
    for name, value in (("mask", mask), ("query_mask", query_mask)):
        if value.dtype != torch.bool:
            raise InputError(f"{op}: {name} must be a bool tensor (True on real steps/tokens), "
                             f"got {value.dtype}")
    if features.shape[-1] != video_dim or tuple(mask.shape) != tuple(features.shape[:2]):
        raise InputError(f"{op}: features must have shape (B, T, {video_dim}) and mask (B, T), "
                         f"got {tuple(features.shape)} and {tuple(mask.shape)}")
    if query.shape[-1] != query_dim or tuple(query_mask.shape) != tuple(query.shape[:2]) \
            or query.shape[0] != features.shape[0]:
        raise InputError(f"{op}: query must have shape ({features.shape[0]}, L, {query_dim}) and "
                         f"query_mask (B, L), got {tuple(query.shape)} and "
                         f"{tuple(query_mask.shape)}")
    if bool((mask[:, 1:] & ~mask[:, :-1]).any()):
        raise InputError(f"{op}: mask must be True on the first steps of each row and False "
                         "after them (padding at the end, as StoreDataset.collate pads), got a gap")


def describe(value: object) -> str:
    """``"shape (2, 3) (torch.float32)"`` for a tensor, else the type's name (for errors)."""
    if isinstance(value, Tensor):
        return f"shape {tuple(value.shape)} ({value.dtype})"
    return type(value).__name__


class GroundingModel(nn.Module):
    """The base of :class:`~fastvqa.nn.MomentDETR`, :class:`~fastvqa.nn.SpanGrounder`
    and :class:`~fastvqa.nn.IOGrounder`: a :class:`JointEncoder` in
    ``self.encoder``, the constructor's arguments in :attr:`config`, and
    access to a batch's fields with one-line errors.

    Subclasses implement ``forward(features, mask, query, query_mask)``,
    ``loss(output, batch)`` (a NamedTuple whose first field is ``total``) and
    ``decode(output, duration, mask=None, **options)`` (one
    :class:`~fastvqa.nn.DecodedMoments` per video).
    """

    def __init__(self, video_dim: int, query_dim: int, *, hidden: int, heads: int,
                 enc_layers: int, ffn: int, dropout: float) -> None:
        super().__init__()
        self.encoder = JointEncoder(video_dim, query_dim, hidden=hidden, heads=heads,
                                    layers=enc_layers, ffn=ffn, dropout=dropout)
        self._config: dict = dict(video_dim=video_dim, query_dim=query_dim, hidden=hidden,
                                  heads=heads, enc_layers=enc_layers, ffn=ffn,
                                  dropout=float(dropout))

    @property
    def config(self) -> dict:
        """The constructor's arguments as a plain dict (JSON-ready):
        ``type(model)(**model.config)`` builds the same architecture."""
        return dict(self._config)

    def _field(self, batch: Mapping[str, Any], name: str, op: str) -> Tensor:
        if not isinstance(batch, Mapping):
            raise InputError(f"{op}: batch must be a dict (StoreDataset.collate's), "
                             f"got {type(batch).__name__}")
        if name not in batch or not isinstance(batch[name], Tensor):
            raise InputError(f"{op}: batch needs a tensor {name!r} (from StoreDataset.collate "
                             "with records), got " + ("nothing" if name not in batch
                                                      else describe(batch[name])))
        return batch[name]
