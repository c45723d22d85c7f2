# SPDX-License-Identifier: Apache-2.0
"""fastvqa._arrays: numpy_common_float returns only the arrays (0.1 also
returned their dtype, which every caller dropped); the unused
result_dtype_name and AllocFn are gone."""

from __future__ import annotations

import numpy as np
import pytest

from fastvqa import _arrays


def test_numpy_common_float_returns_the_arrays_only():
    a32, b64 = np.zeros(2, np.float32), np.ones((1, 2), np.float64)
    got = _arrays.numpy_common_float("op", a=a32, b=b64)
    assert isinstance(got, list) and len(got) == 2
    assert all(isinstance(x, np.ndarray) and x.dtype == np.float64 for x in got)
    np.testing.assert_array_equal(got[1], [[1.0, 1.0]])
    (only,) = _arrays.numpy_common_float("op", a=a32)
    assert only.dtype == np.float32 and only is a32  # already float32: not copied
    with pytest.raises(TypeError, match="op: a must hold real numbers"):
        _arrays.numpy_common_float("op", a=np.zeros(1, np.longdouble))


def test_dead_helpers_removed():
    assert not hasattr(_arrays, "result_dtype_name")
    assert not hasattr(_arrays, "AllocFn")
