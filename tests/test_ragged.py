# SPDX-License-Identifier: Apache-2.0
"""fastvqa.ragged: the one CSR type and its helpers (expected values by hand)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastvqa.errors import InputError, InputTypeError
from fastvqa.ragged import Ragged, check_offsets, from_rows, offsets_from_counts, segment_ids


def test_from_rows_with_width_and_empty_rows():
    r = from_rows([[[0, 1], [2, 3]], [], [[4.5, 6, 9]]], width=2)
    assert isinstance(r, Ragged) and r._fields == ("values", "offsets")
    assert r.values.dtype == np.float64 and r.values.flags.c_contiguous
    assert r.values.tolist() == [[0, 1], [2, 3], [4.5, 6]]  # a wider row keeps 2 columns
    assert r.offsets.dtype == np.int64 and r.offsets.tolist() == [0, 2, 2, 3]
    assert r.num_rows == 3 and r.lengths().tolist() == [2, 0, 1]
    assert r.segment_ids().tolist() == [0, 0, 2]
    assert [row.tolist() for row in r.rows()] == [[[0, 1], [2, 3]], [], [[4.5, 6]]]
    assert r.row(2).tolist() == [[4.5, 6]] and r.row(-3).tolist() == [[0, 1], [2, 3]]
    with pytest.raises(IndexError):
        r.row(3)


def test_from_rows_scalar_items_dtype_and_no_rows():
    r = from_rows([[3, 1], [], [7]], dtype=np.int64)
    assert r.values.dtype == np.int64 and r.values.tolist() == [3, 1, 7]
    assert r.offsets.tolist() == [0, 2, 2, 3]
    empty = from_rows([], width=2)
    assert empty.values.shape == (0, 2) and empty.offsets.tolist() == [0]
    assert empty.num_rows == 0 and list(empty.rows()) == []
    values, offsets = from_rows([], dtype=np.float32)  # unpacks like a pair
    assert values.shape == (0,) and values.dtype == np.float32 and offsets.tolist() == [0]


def test_from_rows_refuses_a_row_of_the_wrong_shape():
    with pytest.raises(InputError, match=r"row 1 must have shape \(k, 2\), got \(3,\)"):
        from_rows([[[0, 1]], [1, 2, 3]], width=2)
    with pytest.raises(InputError, match=r"row 0 must be 1-D"):
        from_rows([[[0, 1]]])


def test_offsets_from_counts():
    assert offsets_from_counts([2, 0, 3]).tolist() == [0, 2, 2, 5]
    assert offsets_from_counts(np.zeros(0, np.int64)).tolist() == [0]
    assert offsets_from_counts([]).tolist() == [0]
    with pytest.raises(InputTypeError, match="integers"):
        offsets_from_counts([1.5])


def test_check_offsets():
    assert check_offsets(np.array([0, 2, 2, 5], np.int32), 5).dtype == np.int64
    assert check_offsets(torch.tensor([0, 1]), 1, rows=1).tolist() == [0, 1]
    msg = r"f: gt must start at 0, never decrease and end at K = 5 \(the number of items\)"
    for bad in ([1, 5], [0, 4], [0, 3, 2, 5]):
        with pytest.raises(InputError, match=msg):
            check_offsets(bad, 5, op="f", name="gt")
    with pytest.raises(InputError, match=r"offsets\[2\] < offsets\[1\]"):
        check_offsets([0, 3, 2, 5], 5)
    with pytest.raises(InputError, match=r"must have shape \(n \+ 1,\) = \(3,\), got \(2,\)"):
        check_offsets([0, 5], 5, rows=2)
    with pytest.raises(InputError, match="must have shape"):
        check_offsets(np.zeros(0, np.int64), 0)
    with pytest.raises(InputTypeError, match="must hold integers, got dtype float64"):
        check_offsets([0.0, 1.0], 1)


def test_torch_offsets():
    off = torch.tensor([0, 2, 2, 3])
    assert segment_ids(off).tolist() == [0, 0, 2]
    r = Ragged(torch.arange(3) * 10, off)
    assert r.lengths().tolist() == [2, 0, 1]
    assert [row.tolist() for row in r.rows()] == [[0, 10], [], [20]]
    assert segment_ids(np.array([0, 0, 1])).tolist() == [1]
