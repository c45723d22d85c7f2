# SPDX-License-Identifier: Apache-2.0
"""The torch.library registration: opcheck battery and torch.compile(fullgraph=True)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fastvqa.ops import _eager, grounding_overlap, paired_temporal_iou, span_argmax, temporal_iou
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


# ------------------------------------------------- the eager fast paths (issue 13)
# An eager call on plain CPU tensors skips the torch.library dispatcher: float32/
# float64 (int64 indices) run the NumPy path on views (fastvqa.ops._eager), other
# dtypes the op body without the dispatcher (fastvqa.ops._torch_common._fast).
# These tests force each path in turn through the public API and compare every
# output, then count which runner a call used: structural checks, not timings.

def _fast_cases():
    import fastvqa.ops as O

    g = torch.Generator().manual_seed(7)
    spans = (torch.rand(40, 2, generator=g) * 30).sort(dim=1).values
    scores = torch.rand(40, generator=g)
    offsets = torch.tensor([0, 10, 10, 33, 40])
    x = torch.randn(3, 17, generator=g)
    lengths = torch.tensor([17, 9, 0])
    probs = torch.rand(3, 17, generator=g)
    frames = torch.randn(2, 9, 5, generator=g)
    query = torch.randn(2, 5, generator=g)
    idx = torch.tensor([[[0, 3], [2, 8], [4, 4]], [[1, 1], [0, 8], [5, 7]]])
    gt_off = torch.tensor([0, 3, 3, 7] + [10] * 37)
    return [
        ("_torch_nms_1d", lambda c: O.nms_1d(c(spans), c(scores), iou_threshold=0.3,
                                             offsets=offsets)),
        ("_torch_nms_1d", lambda c: O.nms_1d(c(spans), c(scores), iou_threshold=0.3,
                                             method="gaussian")),
        ("_torch_temporal_iou", lambda c: O.temporal_iou(c(spans[:7]), c(spans[5:]), "giou")),
        ("_torch_temporal_iou", lambda c: O.paired_temporal_iou(c(spans[:9]), c(spans[9:18]))),
        ("_torch_temporal_iou", lambda c: O.grounding_overlap(c(spans), c(spans[:10]), gt_off)),
        ("_torch_span_scores", lambda c: O.span_scores(c(x), reduce="contrast", max_len=6,
                                                       lengths=lengths)),
        ("_torch_span_scores", lambda c: O.top_spans(c(x), 3, reduce="mean", nms_iou=0.5)),
        ("_torch_span_argmax", lambda c: O.span_argmax(c(x), c(x.flip(1)), max_len=5, k=2,
                                                       lengths=lengths)),
        ("_torch_io_tags", lambda c: O.io_to_spans(c(probs), threshold=0.5, lengths=lengths)),
        ("_torch_io_tags", lambda c: O.io_to_start_end(c(probs), lengths=lengths)),
        ("_torch_span_similarity", lambda c: O.span_similarity(c(frames), c(query), idx,
                                                               pool="mean_of_cos")),
        ("_torch_span_similarity", lambda c: O.span_similarity_all(c(frames), c(query),
                                                                   pool="cos_of_mean", max_len=4)),
    ]


# float32 and float64 natively, a non-contiguous view, float16 (computed in
# float32, cast back) and an integer input (the default float)
_CONVERSIONS = {
    "float32": lambda t: t,
    "float64": lambda t: t.double(),
    "strided": lambda t: torch.stack([t, t], dim=-1)[..., 1],
    "float16": lambda t: t.half(),
    "int64": lambda t: (t * 10).round().long(),
    "negative view": lambda t: torch._neg_view(-t),  # takes the dispatcher on both sides
}


def _flat(result):
    return list(result) if isinstance(result, tuple) else [result]


def _counting(monkeypatch, module):
    from fastvqa.ops import _torch_common

    counts = {"_call": 0, "_call_cpu": 0}
    for name in counts:
        real = getattr(_torch_common, name)

        def counted(*args, _real=real, _name=name):
            counts[_name] += 1
            return _real(*args)

        monkeypatch.setattr(module, name, counted)
    return counts


@pytest.mark.parametrize("conv", sorted(_CONVERSIONS))
def test_fast_path_matches_dispatcher(conv, monkeypatch):
    import importlib

    c = _CONVERSIONS[conv]
    for mod_name, call in _fast_cases():
        module = importlib.import_module(f"fastvqa.ops.{mod_name}")
        fast = _flat(call(c))
        with monkeypatch.context() as m:
            m.setattr(_eager, "enabled", False)
            body = _flat(call(c))  # the op body without the dispatcher
            m.setattr(module, "_fast", lambda *a, **k: False)
            slow = _flat(call(c))
        assert len(body) == len(slow)
        for f, s in zip(body, slow):
            assert (f.dtype, f.shape) == (s.dtype, s.shape), mod_name
            torch.testing.assert_close(f, s, rtol=0, atol=0, equal_nan=True)
        assert len(fast) == len(slow)
        for f, s in zip(fast, slow):
            assert (f.dtype, f.device, f.shape, f.requires_grad) == \
                (s.dtype, s.device, s.shape, s.requires_grad), mod_name
            assert type(f) is torch.Tensor and f.is_contiguous() == s.is_contiguous()
            torch.testing.assert_close(f, s, rtol=0, atol=0, equal_nan=True)


def _counting_numpy_path(monkeypatch) -> list:
    taken = []
    real = _eager._wrap

    def counted(*args):
        taken.append(1)
        return real(*args)

    monkeypatch.setattr(_eager, "_wrap", counted)
    return taken


def test_fast_path_taken_for_plain_cpu_tensors(monkeypatch):
    import importlib

    for conv, runners in [("float32", (1, 0)), ("float64", (1, 0)), ("strided", (1, 0)),
                          ("float16", (0, 1)), ("int64", (0, 1))]:
        for mod_name, call in _fast_cases():
            module = importlib.import_module(f"fastvqa.ops.{mod_name}")
            with monkeypatch.context() as m:
                counts = _counting(m, module)
                numpy_path = _counting_numpy_path(m)
                call(_CONVERSIONS[conv])
            assert (len(numpy_path), counts["_call_cpu"], counts["_call"]) == (*runners, 0), \
                (mod_name, conv)


def test_numpy_path_takes_arrays_by_position_or_keyword(monkeypatch):
    import fastvqa.ops as O

    g = torch.Generator().manual_seed(11)
    start, end = torch.randn(2, 9, generator=g), torch.randn(2, 9, generator=g)
    lengths = torch.tensor([9, 4])
    numpy_path = _counting_numpy_path(monkeypatch)
    by_position = O.span_argmax(start, end, max_len=3, k=2, lengths=lengths)
    by_keyword = O.span_argmax(end=end, start=start, lengths=lengths, max_len=3, k=2)
    assert len(numpy_path) == 2
    expected = O.span_argmax(start.numpy(), end.numpy(), max_len=3, k=2, lengths=lengths.numpy())
    for got in (by_position, by_keyword):
        assert type(got.spans) is torch.Tensor and type(got.scores) is torch.Tensor
        assert np.array_equal(got.spans.numpy(), expected.spans)
        assert np.array_equal(got.scores.numpy(), expected.scores)
    with monkeypatch.context() as m:  # an int lengths (one row) is not a tensor: torch path
        m.setattr(_eager, "_wrap", lambda *a: pytest.fail("NumPy path taken"))
        row = O.span_argmax(start[0], end[0], max_len=3, lengths=5)
    want = O.span_argmax(start[0].numpy(), end[0].numpy(), max_len=3, lengths=5)
    assert row.spans.tolist() == want.spans.tolist() and float(row.scores) == float(want.scores)


def test_numpy_path_refuses_mixed_inputs_and_out():
    import fastvqa.ops as O

    spans = torch.tensor([[0.0, 2.0], [1.0, 3.0]])
    with pytest.raises(TypeError, match="must be a torch tensor"):
        O.temporal_iou(spans, spans.numpy())
    out = torch.full((2, 2), -1.0)
    assert O.temporal_iou(spans, spans, out=out) is out  # the caller's tensor itself
    torch.testing.assert_close(out, torch.tensor([[1.0, 1 / 3], [1 / 3, 1.0]]))


def test_numpy_path_outputs_never_share_an_input():
    views = [torch.arange(6.0).reshape(2, 3).numpy()]  # what the NumPy path receives
    passed_through = views[0][:, 1]
    owned = _eager._owned(passed_through, views)
    assert owned is not passed_through and not np.shares_memory(owned, views[0])
    fresh = np.zeros(3)
    assert _eager._owned(fresh, views) is fresh
    read_only = np.zeros(3)
    read_only.flags.writeable = False
    assert _eager._owned(read_only, views).flags.writeable


def test_wrapper_keeps_the_signature_and_its_errors():
    import inspect

    def op(a, b=None, mode="iou", *, out=None, flag=False):
        return a if b is None else np.stack([a, b]), mode, flag

    wrapped = _eager.numpy_on_cpu_tensors(("a", "b"), blockers=("out",))(op)
    assert inspect.signature(wrapped) == inspect.signature(op)
    x = torch.tensor([1.0, 2.0])
    got, mode, flag = wrapped(x, x, "giou", flag=True)
    assert type(got) is torch.Tensor and got.tolist() == [[1.0, 2.0], [1.0, 2.0]]
    assert (mode, flag) == ("giou", True)
    passed = wrapped(x)[0]  # an input passed through comes back as a copy
    assert type(passed) is torch.Tensor and passed.data_ptr() != x.data_ptr()
    for bad in (lambda f: f(), lambda f: f(x, nope=1), lambda f: f(x, x, "iou", 4)):
        with pytest.raises(TypeError) as plain:
            bad(op)
        with pytest.raises(TypeError) as through:
            bad(wrapped)
        assert str(through.value) == str(plain.value)
    with pytest.raises(TypeError, match="no parameter"):
        _eager.numpy_on_cpu_tensors(("c",))(op)


def test_fast_path_outputs_are_new_tensors():
    import fastvqa.ops as O

    x = torch.randn(2, 6)
    out = O.span_scores(x, reduce="sum")
    assert out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    out[0, 0, 0] = 1.0  # writable; the memory is NumPy's (torch.from_numpy), documented
    assert not torch.equal(out, O.span_scores(x, reduce="sum"))
    ts = O.top_spans(x, 2, reduce="sum")
    assert ts.spans.untyped_storage().data_ptr() != ts.scores.untyped_storage().data_ptr()


def test_dispatcher_kept_for_gradients_modes_and_tracing(monkeypatch):
    from torch.utils._python_dispatch import TorchDispatchMode

    import fastvqa.ops as O
    from fastvqa.ops import _torch_span_scores, _torch_span_similarity

    counts = _counting(monkeypatch, _torch_span_scores)
    x = torch.randn(2, 6, requires_grad=True)
    # A gradient in plain eager mode: an autograd.Function over the NumPy path
    # (forward and backward kernels), the same values as the registered op.
    out = O.span_scores(x, reduce="mean")
    assert counts == {"_call": 0, "_call_cpu": 1} and out.requires_grad
    out.sum().backward()  # an expanded (zero-stride) upstream gradient
    assert counts == {"_call": 0, "_call_cpu": 2}
    x_op = x.detach().clone().requires_grad_(True)
    _torch_span_scores._span_scores_op(x_op, "mean", 1, None, None).sum().backward()
    assert counts["_call"] == 2  # the op's forward and backward
    assert torch.equal(out.detach(), _torch_span_scores._span_scores_op(x_op.detach(), "mean",
                                                                        1, None, None))
    assert torch.equal(x.grad, x_op.grad)
    # An upstream gradient that itself requires grad (create_graph through it)
    # goes through the op, as before.
    upstream = torch.ones(2, 6, 6, requires_grad=True)
    (g,) = torch.autograd.grad(O.span_scores(x, reduce="mean"), x, upstream, create_graph=True)
    assert counts == {"_call": 4, "_call_cpu": 3} and torch.equal(g, x_op.grad)
    numpy_path = _counting_numpy_path(monkeypatch)
    with torch.no_grad():  # no gradient wanted: the NumPy path, and no grad on the result
        assert not O.span_scores(x, reduce="mean").requires_grad
    assert counts["_call_cpu"] == 3 and len(numpy_path) == 1
    O.top_spans(x, 2, reduce="mean")  # not differentiable: detached, the op body
    assert counts["_call_cpu"] == 4 and len(numpy_path) == 1

    class Passthrough(TorchDispatchMode):
        seen: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with warnings.catch_warnings(), torch.autograd.forward_ad.dual_level():
        # Forward-mode AD: never the NumPy path. Newer torch's make_dual loads
        # its decompositions through the deprecated torch.jit.script.
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated",
                                category=FutureWarning)
        plain = x.detach()
        O.span_scores(torch.autograd.forward_ad.make_dual(plain, torch.ones_like(plain)),
                      reduce="sum")
    assert len(numpy_path) == 1

    with Passthrough():
        O.span_scores(x.detach(), reduce="sum")
    assert any("fastvqa.span_scores" in s for s in Passthrough.seen)
    assert counts["_call"] >= 2  # ran inside the op, visible to the mode

    sim = _counting(monkeypatch, _torch_span_similarity)
    frames = torch.randn(1, 5, 3, requires_grad=True)
    O.span_similarity_all(frames, torch.randn(1, 3), pool="mean_of_cos").sum().backward()
    assert sim == {"_call": 1, "_call_cpu": 0} and frames.grad is not None

    with warnings.catch_warnings():  # newer torch deprecates jit.trace; it still traces
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.trace.* is deprecated",
                                category=FutureWarning)
        traced = torch.jit.trace(lambda t: O.span_scores(t, reduce="sum"), torch.randn(2, 4))
    assert "fastvqa::span_scores" in str(traced.graph)
    meta = O.span_scores(torch.randn(2, 4, device="meta"), reduce="sum", max_len=3)
    assert meta.device.type == "meta" and meta.shape == (2, 4, 3)

