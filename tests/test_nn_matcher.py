# SPDX-License-Identifier: Apache-2.0
"""fastvqa.nn.hungarian_match against brute force: the cost of every query /
target pair against a plain-Python float64 reference, and the total cost of
the returned assignment against the least cost over every assignment
(itertools.permutations), on small random batches; empty targets; errors."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("scipy")

from fastvqa.errors import InputError  # noqa: E402
from fastvqa.nn import HungarianMatcher, Match, SpanTargets, hungarian_match  # noqa: E402
from fastvqa.nn.matcher import _cost_matrix  # noqa: E402
from tests.reference.span_losses import matching_cost_ref, min_assignment_cost_ref  # noqa: E402

F64 = torch.float64


def random_batch(seed, B, Q, C, counts):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, Q, C, generator=g, dtype=F64)
    spans = torch.rand(B, Q, 2, generator=g, dtype=F64)
    targets = [SpanTargets(torch.randint(0, C, (t,), generator=g),
                           torch.rand(t, 2, generator=g, dtype=F64)) for t in counts]
    return logits, spans, targets


WEIGHTS = [dict(cost_class=1.0, cost_span=1.0, cost_giou=1.0),
           dict(cost_class=4.0, cost_span=10.0, cost_giou=1.0),
           dict(cost_class=0.0, cost_span=0.0, cost_giou=2.0)]


@pytest.mark.parametrize("seed", range(12))
def test_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    B, Q, C = int(rng.integers(1, 4)), int(rng.integers(1, 7)), int(rng.integers(1, 4))
    counts = [int(rng.integers(0, Q + 1)) for _ in range(B)]
    weights = WEIGHTS[seed % len(WEIGHTS)]
    logits, spans, targets = random_batch(seed, B, Q, C, counts)
    matches = hungarian_match(logits, spans, targets, **weights)
    assert len(matches) == B
    for b, (match, (labels, tgt)) in enumerate(zip(matches, targets)):
        assert isinstance(match, Match)
        cost = matching_cost_ref(logits[b], spans[b], labels, tgt, **weights)
        pred_idx, tgt_idx = match.pred_idx.tolist(), match.tgt_idx.tolist()
        # every target once, distinct queries, ordered by query
        assert sorted(tgt_idx) == list(range(counts[b]))
        assert len(set(pred_idx)) == len(pred_idx) and pred_idx == sorted(pred_idx)
        got = sum(float(cost[q, t]) for q, t in zip(pred_idx, tgt_idx))
        assert got == pytest.approx(min_assignment_cost_ref(cost), abs=1e-9)


def test_cost_matrix_equals_reference():
    logits, spans, targets = random_batch(5, 1, 6, 3, [4])
    labels, tgt = targets[0]
    got = _cost_matrix(logits[0], spans[0], labels, tgt, 2.0, 3.0, 0.5)
    want = matching_cost_ref(logits[0], spans[0], labels, tgt, 2.0, 3.0, 0.5)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_by_hand():
    # Two queries, two targets: query 0 sits on target 1, query 1 on target 0.
    logits = torch.zeros(1, 2, 2)
    spans = torch.tensor([[[0.7, 0.2], [0.2, 0.2]]])
    targets = [(torch.tensor([0, 0]), torch.tensor([[0.2, 0.2], [0.7, 0.2]]))]
    (match,) = HungarianMatcher()(logits, spans, targets)
    assert match.pred_idx.tolist() == [0, 1] and match.tgt_idx.tolist() == [1, 0]


def test_empty_targets_and_more_targets_than_queries():
    logits, spans, targets = random_batch(1, 3, 4, 2, [0, 2, 0])
    matches = hungarian_match(logits, spans, targets)
    assert [len(m.pred_idx) for m in matches] == [0, 2, 0]
    assert matches[0].pred_idx.dtype == torch.int64
    none = hungarian_match(logits, spans, [targets[0]] * 3)
    assert all(len(m.pred_idx) == 0 and len(m.tgt_idx) == 0 for m in none)
    # T > Q: every query is matched, to distinct targets.
    logits, spans, targets = random_batch(2, 1, 2, 2, [5])
    (m,) = hungarian_match(logits, spans, targets)
    assert len(m.pred_idx) == 2 and len(set(m.tgt_idx.tolist())) == 2


def test_no_gradient_and_float32():
    logits, spans, targets = random_batch(3, 2, 5, 2, [3, 1])
    l32 = logits.float().requires_grad_()
    s32 = spans.float().requires_grad_()
    t32 = [(lab, sp.float()) for lab, sp in targets]
    matches32 = hungarian_match(l32, s32, t32)
    matches64 = hungarian_match(logits, spans, targets)
    for a, b in zip(matches32, matches64):
        assert a.pred_idx.tolist() == b.pred_idx.tolist()
        assert a.tgt_idx.tolist() == b.tgt_idx.tolist()


@pytest.mark.parametrize("call, match", [
    (lambda l, s, t: hungarian_match(l[0], s, t), r"\(B, Q, C\)"),
    (lambda l, s, t: hungarian_match(l, s[..., :1], t), r"pred_spans \(B, Q, 2\)"),
    (lambda l, s, t: hungarian_match(l, s, t[:1]), "sequence of B = 2"),
    (lambda l, s, t: hungarian_match(l, s, [t[0], (t[1][0],)]), r"targets\[1\] must be"),
    (lambda l, s, t: hungarian_match(l, s, [t[0], (torch.tensor([2]), t[1][1][:1])]),
     r"lie in \[0, 2\)"),
    (lambda l, s, t: hungarian_match(l, s, [t[0], (torch.tensor([0.0]), t[1][1][:1])]),
     "labels must be integers"),
    (lambda l, s, t: hungarian_match(l, s, [t[0], (t[1][0], t[1][1][:, :1])]), r"\(T, 2\)"),
    (lambda l, s, t: hungarian_match(l * math.nan, s, t), "not finite"),
    (lambda l, s, t: hungarian_match(l, s, t, cost_giou=-1.0), "cost_giou must be >= 0"),
    (lambda l, s, t: HungarianMatcher(cost_span=math.inf), "cost_span must be finite"),
])
def test_errors(call, match):
    logits, spans, targets = random_batch(0, 2, 3, 2, [2, 1])
    with pytest.raises(InputError, match=match):
        call(logits, spans, targets)


def test_missing_scipy_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)  # as if scipy were absent
    logits, spans, targets = random_batch(0, 1, 3, 2, [1])
    with pytest.raises(ImportError, match="pip install scipy"):
        hungarian_match(logits, spans, targets)
