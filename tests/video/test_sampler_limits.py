# SPDX-License-Identifier: Apache-2.0
"""Sampler arguments that are huge, zero, negative, NaN or infinite: a one-line
``InputError`` (a ``ValueError``) naming the sampler and the argument, raised
before anything is allocated; never an OverflowError, MemoryError or hang."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fastvqa.errors import InputError
from fastvqa.video.index import VideoIndex
from fastvqa.video.samplers import (MAX_INDICES, Clips, Fps, Hierarchical, Outside, SecondWindows,
                                    Uniform, from_spec)

HUGE_INTS = [2**24 + 1, 2**62, 2**63, 2**70]
HUGE_REALS = [1e300, 1e308, 5e-324]  # 5e-324 s segments: 1e323 of them


def _index():
    """100 frames at 10 fps (10 s), as a probe of such a file gives."""
    pts = np.arange(100)
    return VideoIndex(path="v.mp4", codec="h264", width=64, height=48, duration=10.0,
                      fps=10.0, timestamps=pts / 10, keyframes=np.array([0]),
                      time_base=Fraction(1, 10), pts=pts)


def _refusal(make) -> str:
    """The message of the InputError that ``make()`` (building and applying a
    sampler) raises."""
    with pytest.raises(InputError) as err:
        make().indices(_index())
    return str(err.value)


def _one_line_naming(text: str, sampler: str, argument: str) -> bool:
    return "\n" not in text and sampler in text and argument in text


@pytest.mark.parametrize("value", HUGE_INTS)
@pytest.mark.parametrize("name", ["length", "stride", "step"])
def test_clips_huge_integers(name, value):
    args = {"length": 2, "stride": 1, "step": 1, name: value}
    assert _one_line_naming(_refusal(lambda: Clips(**args)), "Clips", name)


@pytest.mark.parametrize("value", [0, -1, -2**70])
@pytest.mark.parametrize("name", ["length", "stride", "step"])
def test_clips_zero_or_negative(name, value):
    args = {"length": 2, "stride": 1, "step": 1, name: value}
    assert _one_line_naming(_refusal(lambda: Clips(**args)), "Clips", name)


@pytest.mark.parametrize("value", HUGE_INTS + [0, -1])
def test_uniform_outside_and_windows_counts(value):
    assert _one_line_naming(_refusal(lambda: Uniform(value)), "Uniform", "n")
    assert _one_line_naming(_refusal(lambda: Outside((1, 2), value)), "Outside", "n")
    assert _one_line_naming(_refusal(lambda: SecondWindows(value)), "SecondWindows", "window")
    assert _one_line_naming(_refusal(lambda: Hierarchical([5], [value])), "Hierarchical", "frames")


@pytest.mark.parametrize("value", [1e300, 1e308, float("inf"), float("nan"), 0.0, -1.0])
def test_rates(value):
    assert _one_line_naming(_refusal(lambda: Fps(value)), "Fps", "fps")
    assert _one_line_naming(_refusal(lambda: SecondWindows(2, value)), "SecondWindows", "fps")


@pytest.mark.parametrize("value", [5e-324, 1e-300, float("inf"), float("nan"), 0.0, -1.0])
def test_segment_lengths(value):
    assert _one_line_naming(_refusal(lambda: Hierarchical([value], [2])), "Hierarchical", "lengths")


@pytest.mark.parametrize("spec, sampler, argument", [
    (f"uniform:{2**70}", "Uniform", "n"),
    (f"clips:2,{2**70}", "Clips", "stride"),
    (f"clips:2,1,{2**70}", "Clips", "step"),
    (f"clips:{2**70},1", "Clips", "length"),
    ("fps:1e308", "Fps", "fps"),
    ("fps:nan", "Fps", "fps"),
    ("fps:inf", "Fps", "fps"),
    ("seconds:2,1e308", "SecondWindows", "fps"),
    ("hierarchical:5e-324/2", "Hierarchical", "lengths"),
])
def test_specs(spec, sampler, argument):
    assert _one_line_naming(_refusal(lambda: from_spec(spec)), sampler, argument)


def test_the_limit_itself_is_accepted():
    """Up to MAX_INDICES frame indices is not an error (hand count: one clip
    of 2 frames at stride MAX_INDICES in a 100-frame video)."""
    assert Clips(2, MAX_INDICES).indices(_index()).tolist() == [0, 1]
    assert Clips(2, 1, MAX_INDICES).indices(_index()).tolist() == []
    assert len(Fps(1e5).indices(_index())) == 10**6
    assert math.isfinite(Fps(1e5).fps)
