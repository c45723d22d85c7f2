# SPDX-License-Identifier: Apache-2.0
"""The torch.library registration: opcheck battery and torch.compile(fullgraph=True)."""

from __future__ import annotations

import pytest

from fastvqa.ops import grounding_overlap, paired_temporal_iou, span_argmax, temporal_iou
from tests.conftest import DEVICES
from tests.conftest import assert_opcheck  # noqa: E402

torch = pytest.importorskip("torch")


def _spans(n, device, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, 2, generator=g) * 30).sort(dim=1).values.to(device=device, dtype=dtype)


def _samples(device):
    # importing them registers the ops
    from fastvqa.ops import _torch_span_argmax, _torch_temporal_iou  # noqa: F401

    a, b = _spans(5, device), _spans(4, device, seed=1)
    s = torch.randn(3, 12, generator=torch.Generator().manual_seed(2)).to(device)
    e = torch.randn(3, 12, generator=torch.Generator().manual_seed(3)).to(device)
    lengths = torch.tensor([12, 7, 0], device=device)
    offsets = torch.tensor([0, 2, 2, 3, 4, 4], device=device)
    return [
        (torch.ops.fastvqa.temporal_iou.default, (a, b, "iou", False)),
        (torch.ops.fastvqa.temporal_iou.default, (a, a, "giou", True)),
        (torch.ops.fastvqa.grounding_overlap.default, (a, b, offsets)),
        (torch.ops.fastvqa.span_argmax.default, (s, e, 4, 1, 1, None)),
        (torch.ops.fastvqa.span_argmax.default, (s, e, None, 2, 3, lengths)),
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    for op, args in _samples(device):
        assert_opcheck(op, args)


def _pipeline(a, b, start, end, offsets):
    giou = temporal_iou(a, b, "giou")
    paired = paired_temporal_iou(a, a.flip(0), "iop")
    spans, scores = span_argmax(start, end, max_len=4, k=2)
    iou, iop = grounding_overlap(a, b, offsets)
    loss = (1 - giou).mean() + paired.sum() + scores.sum() + iou.sum() + iop.sum()
    return loss, spans


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph_matches_eager(device):
    torch._dynamo.reset()
    a, b = _spans(6, device), _spans(6, device, seed=4)
    start = torch.randn(4, 16, generator=torch.Generator().manual_seed(5)).to(device)
    end = torch.randn(4, 16, generator=torch.Generator().manual_seed(6)).to(device)
    offsets = torch.arange(7, device=device)
    compiled = torch.compile(_pipeline, fullgraph=True)
    loss_c, spans_c = compiled(a, b, start, end, offsets)
    loss_e, spans_e = _pipeline(a, b, start, end, offsets)
    torch.testing.assert_close(loss_c, loss_e)
    assert torch.equal(spans_c, spans_e)
