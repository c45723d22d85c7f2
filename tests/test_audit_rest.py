# SPDX-License-Identifier: Apache-2.0
"""Regression tests for the rest of the audit (issue 29): extreme spans in
temporal_iou, missing arrays, huge integer arguments and result sizes."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from fastvqa.ops import (
    grounding_overlap,
    io_to_spans,
    paired_temporal_iou,
    span_argmax,
    span_scores,
    span_similarity_all,
    temporal_iou,
    top_spans,
)

SUB = 5e-324  # the smallest subnormal double


def _exact(a, b, mode):
    """The textbook overlap of spans a and b in exact rational arithmetic."""
    a0, a1, b0, b1 = (Fraction(v) for v in (*a, *b))
    len_a, len_b = max(a1 - a0, 0), max(b1 - b0, 0)
    inter = max(min(a1, b1) - max(a0, b0), 0)
    uni = len_a + len_b - inter
    iou = inter / uni if uni > 0 else Fraction(0)
    if mode == "iou":
        return iou
    if mode == "iop":
        return inter / len_a if len_a > 0 else Fraction(0)
    if mode == "iog":
        return inter / len_b if len_b > 0 else Fraction(0)
    hull = max(a1, b1) - min(a0, b0)
    return iou - (hull - uni) / hull if hull > 0 else iou


EXTREME_PAIRS = [
    ([-1e308, 1.0], [SUB, 2 * SUB]),         # a subnormal span inside a huge one: IoG 1
    ([SUB, 2 * SUB], [-1e308, 1.0]),         # the same, swapped: IoP 1
    ([0.0, 3 * SUB], [-1.7e308, SUB]),       # IoP 1/3
    ([-1e308, SUB], [0.0, SUB]),             # IoG 1
    ([-1.7e308, 1.7e308], [SUB, 3 * SUB]),   # the pair's hull and len(a) overflow: IoG 1
    ([-1.7e308, 1.7e308], [-1.7e308, 1.7e308]),
    ([-1.7e308, 1.7e308], [0.0, 1.7e308]),
    ([-1.7e308, -1.7e308], [1.7e308, 1.7e308]),
    ([-1.7e308, 0.0], [2 * SUB, 1.7e308]),
    ([-1e308, 2.2250738585072014e-308], [1e-310, 2e-310]),
]


@pytest.mark.parametrize("a,b", EXTREME_PAIRS)
@pytest.mark.parametrize("mode", ["iou", "iop", "iog", "giou"])
def test_temporal_iou_extreme_spans_match_exact_arithmetic(a, b, mode):
    want = float(_exact(a, b, mode))
    got = temporal_iou(np.array([a]), np.array([b]), mode)[0, 0]
    assert got == pytest.approx(want, rel=4e-16, abs=0), (a, b, mode)
    assert paired_temporal_iou(np.array([a]), np.array([b]), mode)[0] == got


def test_temporal_iou_subnormal_inside_huge_span_has_iog_one():
    got = temporal_iou(np.array([[-1e308, 1.0]]), np.array([[SUB, 2 * SUB]]), "iog")
    assert got[0, 0] == 1.0


def test_grounding_overlap_subnormal_prediction_inside_huge_gt():
    # NExT-GQA rule: IoP = inter / (p_end - p_start) = SUB / SUB = 1.
    res = grounding_overlap(np.array([[SUB, 2 * SUB]]), np.array([[-1e308, 1.0]]),
                            np.array([0, 1]))
    assert res.iop[0] == 1.0
    # [0, 3 SUB] against [-1.7e308, SUB]: IoP exactly 1/3 (SUB / 3 SUB).
    res = grounding_overlap(np.array([[0.0, 3 * SUB]]), np.array([[-1.7e308, SUB]]),
                            np.array([0, 1]))
    assert res.iop[0] == pytest.approx(1 / 3, rel=1e-15)
    # Overflowing hull and length: [-1.7e308, 1.7e308] against itself is 1 and 1.
    big = np.array([[-1.7e308, 1.7e308]])
    res = grounding_overlap(big, big, np.array([0, 1]))
    assert (res.iou[0], res.iop[0]) == (1.0, 1.0)


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("call", [
    lambda s: grounding_overlap(s, s, None),
    lambda s: grounding_overlap(s, None, torch.tensor([0, 1, 2])),
    lambda s: temporal_iou(s, None),
    lambda s: paired_temporal_iou(None, s),
])
def test_torch_ops_name_a_missing_array(call):
    spans = torch.tensor([[0.0, 1.0], [1.0, 2.0]])
    with pytest.raises(TypeError, match=r"^\w+: \w+ is required, got None; pass a torch tensor"):
        call(spans)


X = np.zeros((2, 4))


@pytest.mark.parametrize("call,name", [
    (lambda v: span_argmax(X, X, k=v), "k"),
    (lambda v: top_spans(X, v, reduce="sum"), "k"),
])
def test_counts_beyond_int64_are_refused_naming_the_range(call, name):
    with pytest.raises(ValueError, match=rf"^\w+: {name} must lie in \[1, 2\*\*63 - 1\], "
                                         rf"got {2**70}$"):
        call(2**70)


def test_huge_max_len_and_min_len_mean_no_limit():
    x = np.array([[0.0, 3.0, -1.0, 2.0]])
    # the best span of start + end: start 3.0 at 1, end 3.0 at 1 -> (1, 1), 6.0
    for max_len in (2**70, 2**63, 2**40):
        spans, scores = span_argmax(x, x, max_len=max_len)
        assert spans.tolist() == [[1, 1]] and scores.tolist() == [6.0]
        spans, _ = top_spans(x, 2, reduce="sum", max_len=max_len)
        assert spans.tolist() == [[[0, 3], [1, 3]]]  # both sum 4.0: smaller start first
    # min_len longer than any row: no span, not an error
    spans, scores = span_argmax(x, x, min_len=2**70)
    assert spans.tolist() == [[-1, -1]] and scores.tolist() == [-np.inf]
    assert io_to_spans(np.array([[0.9, 0.9]]), min_len=2**70).spans.shape == (0, 2)
    with pytest.raises(ValueError, match=r"max_len must be >= min_len"):
        span_argmax(x, x, max_len=2**70, min_len=2**71)


@pytest.mark.parametrize("tensor", [False, True])
def test_band_width_is_capped_at_t(tensor):
    x = np.arange(8.0).reshape(2, 4)
    frames = np.ones((2, 4, 3))
    q = np.ones((2, 3))
    if tensor:
        x, frames, q = (torch.from_numpy(v).requires_grad_() for v in (x, frames, q))
    for max_len in (2**40, 2**70, 5):
        band = span_scores(x, reduce="sum", max_len=max_len)
        if tensor:
            band.sum().backward()
            assert x.grad.shape == (2, 4)
            band = band.detach()
        assert tuple(band.shape) == (2, 4, 4)
        # span [0, 3] of row 0 sums 0 + 1 + 2 + 3
        assert float(band[0, 0, 3]) == 6.0
        sims = span_similarity_all(frames, q, pool="mean_of_cos", max_len=max_len)
        if tensor:
            sims.sum().backward()
            sims = sims.detach()
        assert tuple(sims.shape) == (2, 4, 4)
        assert float(sims[1, 0, 3]) == pytest.approx(1.0)


def test_result_too_large_is_a_memory_error_naming_the_op():
    # 2**40 rows of 2 int64 each: 16 TiB, refused before anything is written.
    with pytest.raises(MemoryError, match=r"^top_spans: cannot allocate the result"):
        top_spans(np.zeros((1, 4)), 2**40, reduce="sum")
    with pytest.raises(MemoryError, match=r"^span_argmax: cannot allocate the result: .*TiB"):
        span_argmax(torch.zeros(1, 4, requires_grad=True), torch.zeros(1, 4), k=2**40)


def test_generate_dvd_deeply_nested_scene_is_one_line_error(tmp_path):
    import argparse

    from fastvqa.errors import InputError
    from fastvqa.generate.dvd import cli
    from fastvqa.generate.dvd.scene import load_cater_scene

    folder = tmp_path / "scenes"
    folder.mkdir()
    nested = folder / "deep.json"
    nested.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(InputError, match=r"deep\.json: JSON nested too deeply"):
        load_cater_scene(nested)
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--scenes", str(folder), "--out", str(tmp_path / "o.json"),
                              "--seed", "1", "--no-progress"])
    with pytest.raises(InputError, match=r"deep\.json"):
        cli.run(args)
    assert not (tmp_path / "o.json").exists()


def test_frames_repr_is_short_and_names_shape_dtype_times():
    from fastvqa.video.api import Frames

    data = np.zeros((300, 64, 64, 3), dtype=np.uint8)
    pts = np.arange(300) / 25.0
    frames = Frames(data, pts, np.full(300, 0.04), np.arange(300))
    text = repr(frames)
    assert len(text) < 400 and "\n" not in text
    assert "shape=(300, 64, 64, 3)" in text and "dtype=uint8" in text
    assert "0.000" in text and "11.960" in text and "..." in text  # first and last time
    assert isinstance(frames, tuple) and frames.data is data  # still the NamedTuple
