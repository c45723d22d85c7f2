# SPDX-License-Identifier: Apache-2.0
"""Memory safety of the compiled kernels against inputs that change during a call.

The bindings check ``lengths``, ``offsets`` and spans, then release the GIL
while the kernels run, so another Python thread may write the caller's arrays
in the middle of a call. The kernels must only use the checked values: no
input, however it changes meanwhile, may make them read or write out of
bounds. Each case runs in a subprocess (a heap overflow is a segfault or a
glibc abort, which must fail the test, not kill pytest): a thread keeps
rewriting the index array (and, for ``io_to_spans``, the probabilities) in
place with out-of-range values while the op runs many times, and every output
must keep its shape and hold indices inside it. Under ``scripts/sanitize.sh``
the subprocesses inherit AddressSanitizer, which reports any stray access.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from fastvqa import _C, ops

# The script every case runs: `setup` (the case's code) defines the arrays, a
# `mutate()` that rewrites them once, and `call()` that runs the op once and
# checks its outputs. ValueError is the op refusing values that were out of
# range when it checked them: expected, and not a failure.
_HARNESS = """
import sys, threading, time
import numpy as np
from fastvqa import ops, _C
from fastvqa._arrays import numpy_alloc

sys.setswitchinterval(1e-5)
rng = np.random.default_rng(0)
{setup}

stop = threading.Event()
def mutator():
    while not stop.is_set():
        mutate()

thread = threading.Thread(target=mutator, daemon=True)
thread.start()
ran = refused = 0
begin = time.monotonic()
def more():  # {calls} calls or {seconds} s, but at least 5 that ran (slow sanitizer builds)
    t = time.monotonic() - begin
    return ran < {calls} and (t < {seconds} or (ran - refused < 5 and t < 60))
try:
    while more():
        try:
            call()
        except ValueError:
            refused += 1
        ran += 1
finally:
    stop.set()
    thread.join()
print("ran", ran, "refused", refused)
"""

B, T = 64, 256
BIG = 1 << 40  # far past any allocation: a kernel trusting it writes out of bounds

_LENGTHS = f"""
B, T = {B}, {T}
T = T_OVERRIDE if "T_OVERRIDE" in globals() else T
lengths = np.full(B, T, dtype=np.int64)
def mutate():
    lengths[:] = {BIG}
    lengths[:] = -{BIG}
    lengths[:] = T
"""


CASES = {
    "span_scores": _LENGTHS + """
x = rng.standard_normal((B, T))
def call():
    out = ops.span_scores(x, reduce="contrast", max_len=8, lengths=lengths)
    assert out.shape == (B, T, 8)
""",
    "span_scores_backward": _LENGTHS + """
g = rng.standard_normal((B, T, 8))
def call():
    out = _C.span_scores_backward(g, "contrast", 1, lengths, 0, numpy_alloc)
    assert out.shape == (B, T)
""",
    "top_spans": _LENGTHS + """
x = rng.standard_normal((B, T))
def call():
    spans, scores = ops.top_spans(x, 3, reduce="mean", max_len=16, lengths=lengths)
    assert spans.shape == (B, 3, 2) and scores.shape == (B, 3)
    assert (spans >= -1).all() and (spans < T).all()
""",
    "top_spans_nms": _LENGTHS + """
x = rng.standard_normal((B, T))
def call():
    spans, scores = ops.top_spans(x, 4, reduce="sum", max_len=16, lengths=lengths, nms_iou=0.3)
    assert spans.shape == (B, 4, 2) and scores.shape == (B, 4)
    assert (spans >= -1).all() and (spans < T).all()
""",
    "span_argmax": _LENGTHS + """
s, e = rng.standard_normal((2, B, T))
def call():
    for k in (1, 3):
        spans, scores = ops.span_argmax(s, e, max_len=16, k=k, lengths=lengths)
        assert spans.shape == (B, k, 2) and scores.shape == (B, k)
        assert (spans >= -1).all() and (spans < T).all()
""",
    "io_to_start_end": _LENGTHS + """
p = rng.random((B, T))
def call():
    start, end = ops.io_to_start_end(p, lengths=lengths)
    assert start.shape == end.shape == (B, T)
""",
    # Lengths and the tags themselves: the runs counted in the first pass
    # bound what the second pass may write.
    "io_to_spans": _LENGTHS + """
p = np.zeros((B, T))
p[:, ::2] = 1.0  # T / 2 runs per row
dense, sparse = p.copy(), np.zeros((B, T))
sparse[:, : T // 2] = 1.0  # one run
_mutate_lengths = mutate
def mutate():
    _mutate_lengths()
    p[:] = sparse
    p[:] = dense
def call():
    spans, offsets, scores = ops.io_to_spans(p, threshold=0.5, lengths=lengths)
    n = spans.shape[0]
    assert spans.shape == (n, 2) and scores.shape == (n,) and offsets.shape == (B + 1,)
    assert offsets[0] == 0 and offsets[-1] == n and (np.diff(offsets) >= 0).all()
    assert (spans >= -1).all() and (spans < T).all()
""",
    "span_similarity_all": "T_OVERRIDE = 48" + _LENGTHS + """
f = rng.standard_normal((B, T, 4))
q = rng.standard_normal((B, 4))
def call():
    for pool in ("mean_of_cos", "cos_of_mean"):
        out = ops.span_similarity_all(f, q, pool=pool, max_len=6, lengths=lengths)
        assert out.shape == (B, T, 6)
""",
    "span_similarity_backward": f"""
B, T, S = {B}, 48, 32
f = rng.standard_normal((B, T, 4))
q = rng.standard_normal((B, 4))
spans = np.sort(rng.integers(0, T, (B, S, 2)), axis=-1)
good = spans.copy()
g = rng.standard_normal((B, S))
def mutate():
    spans[:] = {BIG}
    spans[:] = good
    spans[..., 1] = -{BIG}
    spans[:] = good
def call():
    out = ops.span_similarity(f, q, spans, pool="cos_of_mean")
    assert out.shape == (B, S)
    for pool in ("mean_of_cos", "cos_of_mean"):
        gf, gq = _C.span_similarity_backward(g, f, q, spans, pool, 1, None, None, 1e-8, 0,
                                             numpy_alloc)
        assert gf.shape == (B, T, 4) and gq.shape == (B, 4)
""",
    "nms_1d": f"""
G, per = 32, 24
N = G * per
start = rng.random(N) * 50
spans = np.stack([start, start + rng.random(N) * 10], axis=1)
scores = rng.random(N)
offsets = np.arange(0, N + 1, per, dtype=np.int64)
good = offsets.copy()
def mutate():
    offsets[1:-1] = {BIG}
    offsets[1:-1] = -{BIG}
    offsets[:] = good
    offsets[-1] = {BIG}
    offsets[:] = good
    scores[:] = rng.random(N)  # the sort keys change too
def call():
    for method in ("hard", "linear", "gaussian"):
        out = ops.nms_1d(spans, scores, iou_threshold=0.3, method=method, offsets=offsets)
        keep, keep_off = out[0], out[1]
        assert keep_off.shape == (G + 1,) and keep_off[-1] == keep.shape[0]
        assert (keep >= 0).all() and (keep < N).all()
""",
    "grounding_overlap": f"""
N, per = 256, 3
pred = np.sort(rng.random((N, 2)) * 30, axis=1)
gt = np.sort(rng.random((N * per, 2)) * 30, axis=1)
offsets = np.arange(0, N * per + 1, per, dtype=np.int64)
good = offsets.copy()
def mutate():
    offsets[1:-1] = {BIG}
    offsets[:] = good
    offsets[1:-1] = -{BIG}
    offsets[:] = good
def call():
    iou, iop = ops.grounding_overlap(pred, gt, offsets)
    assert iou.shape == iop.shape == (N,)
""",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_inputs_changed_during_the_call_never_write_out_of_bounds(case):
    proc, ran, refused = _run_case(_HARNESS.format(setup=CASES[case], calls=400, seconds=3))
    assert proc.returncode == 0, _died(case, proc)
    # Most calls see an out-of-range value when they check and are refused;
    # the rest ran their kernels while the values kept changing.
    assert ran - refused >= 5, proc.stdout


def _run_case(script: str):
    """Runs one race script in a subprocess (a segfault kills only it):
    the finished process and the counts it printed of calls that ran and
    calls that were refused (None, None when it died before printing)."""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")},
    )
    if proc.returncode != 0:
        return proc, None, None
    ran, refused = (int(w) for w in proc.stdout.split()[1::2])
    return proc, ran, refused


def _died(case: str, proc) -> str:
    return (f"{case} died (exit {proc.returncode}) while another thread changed its inputs:\n"
            + proc.stdout[-2000:] + proc.stderr[-4000:])


# The CUDA paths: the caller's index tensor is rewritten on another stream
# while the kernels run; they read the binding's device copy of the checked
# values, so nothing changes for them.
_CUDA_SETUP = f"""
import torch
B, T = {B}, {T}
dev = torch.device("cuda")
lengths = torch.full((B,), T, dtype=torch.int64, device=dev)
side = torch.cuda.Stream()
def mutate():
    with torch.cuda.stream(side):
        for v in ({BIG}, -{BIG}, T):
            lengths.fill_(v)
    side.synchronize()
"""

CUDA_CASES = {
    "span_scores": _CUDA_SETUP + """
x = torch.randn(B, T, device=dev, dtype=torch.float64)
def call():
    out = ops.span_scores(x, reduce="contrast", max_len=8, lengths=lengths)
    assert out.shape == (B, T, 8)
    torch.cuda.synchronize()
""",
    "top_spans": _CUDA_SETUP + """
x = torch.randn(B, T, device=dev, dtype=torch.float64)
def call():
    spans, _ = ops.top_spans(x, 4, reduce="sum", max_len=16, lengths=lengths, nms_iou=0.3)
    assert bool(((spans >= -1) & (spans < T)).all())
""",
    "span_argmax": _CUDA_SETUP + """
s, e = torch.randn(2, B, T, device=dev)
def call():
    for k in (1, 3):
        spans, _ = ops.span_argmax(s, e, max_len=16, k=k, lengths=lengths)
        assert bool(((spans >= -1) & (spans < T)).all())
""",
    "io_to_spans": _CUDA_SETUP + """
p = torch.zeros(B, T, device=dev)
p[:, ::2] = 1.0
def call():
    spans, offsets, scores = ops.io_to_spans(p, threshold=0.5, lengths=lengths)
    assert int(offsets[-1]) == spans.shape[0]
    assert bool(((spans >= -1) & (spans < T)).all())
""",
}


@pytest.mark.cuda
@pytest.mark.parametrize("case", sorted(CUDA_CASES))
def test_cuda_inputs_changed_during_the_call_never_write_out_of_bounds(case):
    proc, ran, refused = _run_case(_HARNESS.format(setup=CUDA_CASES[case], calls=200, seconds=3))
    assert proc.returncode == 0, _died(case, proc)
    assert ran - refused >= 5, proc.stdout


# Misaligned inputs: a view that starts at an odd byte offset (a field of a
# packed record array) is valid NumPy; the kernels must not load doubles
# through a misaligned pointer (undefined behaviour, reported by UBSan under
# scripts/sanitize.sh) and must compute the same as on an aligned copy.
def _misaligned(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    buf = np.zeros(a.nbytes + a.itemsize, dtype=np.uint8)
    view = np.frombuffer(buf.data, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    view[...] = a
    assert view.ctypes.data % a.itemsize != 0
    return view


def test_misaligned_inputs_give_the_results_of_aligned_ones():
    rng = np.random.default_rng(1)
    spans = np.sort(rng.random((5, 2)) * 10, axis=1)
    for dtype in (np.float32, np.float64):
        a = spans.astype(dtype)
        np.testing.assert_array_equal(ops.temporal_iou(_misaligned(a), _misaligned(a)),
                                      ops.temporal_iou(a, a))
    x = rng.standard_normal((3, 7))
    lengths = np.array([7, 3, 0], dtype=np.int64)
    np.testing.assert_array_equal(
        ops.span_scores(_misaligned(x), reduce="mean", lengths=_misaligned(lengths)),
        ops.span_scores(x, reduce="mean", lengths=lengths))
    # A strided misaligned view: every other column of an offset buffer.
    wide = _misaligned(np.repeat(x, 2, axis=1))[:, ::2]
    np.testing.assert_array_equal(ops.span_scores(wide, reduce="sum"),
                                  ops.span_scores(x, reduce="sum"))
    offsets = np.array([0, 2, 5], dtype=np.int64)
    keep, keep_off, _ = ops.nms_1d(_misaligned(spans), _misaligned(spans[:, 0]), iou_threshold=0.5,
                                offsets=_misaligned(offsets))
    ref_keep, ref_off, _ = ops.nms_1d(spans, spans[:, 0].copy(), iou_threshold=0.5,
                                   offsets=offsets)
    np.testing.assert_array_equal(keep, ref_keep)
    np.testing.assert_array_equal(keep_off, ref_off)


def test_misaligned_output_is_refused():
    def alloc(shape, dtype):
        return _misaligned(np.zeros(shape, dtype=dtype))

    with pytest.raises(ValueError, match="output is not aligned"):
        _C.temporal_iou(np.zeros((2, 2)), np.zeros((2, 2)), "iou", False, 0, alloc)


def test_band_sizes_that_overflow_int64_are_refused():
    # T * max_len wrapped around int64 (a signed overflow, undefined behaviour)
    # before it was checked; since issue 29 the band is min(max_len, T) wide,
    # so such a max_len means "no limit" and allocates a (B, T, T) band.
    f, q = np.zeros((1, 4, 2)), np.ones((1, 2))
    assert ops.span_similarity_all(f, q, pool="mean_of_cos", max_len=1 << 62).shape == (1, 4, 4)
    assert ops.span_scores(np.zeros((4, 4)), reduce="sum", max_len=1 << 62).shape == (4, 4, 4)


def test_empty_nms_groups_with_empty_outputs():
    # Groups that keep nothing copy zero bytes from and to arrays that may
    # have no storage at all (memcpy with a null pointer is undefined).
    empty = np.zeros((0, 2))
    keep, off, _ = ops.nms_1d(empty, np.zeros(0), iou_threshold=0.5,
                           offsets=np.zeros(4, dtype=np.int64))
    assert keep.shape == (0,) and off.tolist() == [0, 0, 0, 0]
    keep, off, _ = ops.nms_1d(np.array([[0.0, 1.0]]), np.array([0.5]), iou_threshold=0.5,
                           offsets=np.array([0, 0, 1], dtype=np.int64), score_threshold=0.9)
    assert keep.shape == (0,) and off.tolist() == [0, 0, 0]
