# SPDX-License-Identifier: Apache-2.0
"""Ragged (CSR) arrays: one type and the few helpers that build and check it.

A ragged array of ``n`` rows is a pair ``(values, offsets)``: ``values`` holds
every row's items one after the other along axis 0, and ``offsets`` is the
``[n + 1]`` int64 array of row boundaries, so row ``i`` is
``values[offsets[i]:offsets[i + 1]]``. ``offsets`` starts at 0, never
decreases and ends at ``len(values)``; a row may be empty (two equal
offsets), and ``n = 0`` is ``offsets == [0]``.

This is the layout every ragged input and output of fastvqa uses: the
ground truth of :func:`fastvqa.ops.grounding_overlap`, the groups of
:func:`fastvqa.ops.nms_1d`, the spans of :func:`fastvqa.ops.io_to_spans`,
:func:`fastvqa.data.spans_to_csr` and the metrics' internal tables. Building
needs only NumPy; :meth:`Ragged.lengths`, :meth:`Ragged.row` and
:meth:`Ragged.rows` also work on torch tensors (an op's torch result).
:func:`union_length` measures one row of spans (the time it covers).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Iterator, NamedTuple, Optional

import numpy as np

from fastvqa import _arrays
from fastvqa.errors import InputError, InputTypeError

__all__ = ["Ragged", "check_offsets", "from_rows", "offsets_from_counts", "segment_ids",
           "union_length"]


class Ragged(NamedTuple):
    """``n`` rows of items as ``(values, offsets)``: row ``i`` is
    ``values[offsets[i]:offsets[i + 1]]``.

    ``values`` is ``[K, ...]`` (NumPy array or torch tensor), ``offsets`` is
    ``[n + 1]`` int64, starting at 0, non-decreasing, ending at ``K``. It
    unpacks as ``values, offsets = ragged``.

    >>> r = Ragged(np.array([1.0, 2.0, 3.0]), np.array([0, 2, 2, 3]))
    >>> r.num_rows, r.lengths(), r.row(0)
    (3, array([2, 0, 1]), array([1., 2.]))
    >>> list(r.rows())
    [array([1., 2.]), array([], dtype=float64), array([3.])]
    """

    values: Any
    offsets: Any

    @property
    def num_rows(self) -> int:
        """``n``, the number of rows (``len(offsets) - 1``)."""
        return int(self.offsets.shape[0]) - 1

    def lengths(self) -> Any:
        """``[n]`` int64 row lengths ``offsets[1:] - offsets[:-1]`` (same framework)."""
        return self.offsets[1:] - self.offsets[:-1]

    def segment_ids(self) -> Any:
        """``[K]`` int64: the row of each item (see :func:`segment_ids`)."""
        return segment_ids(self.offsets)

    def row(self, i: int) -> Any:
        """Row ``i`` (``0 <= i < n``), a view ``values[offsets[i]:offsets[i + 1]]``."""
        if not -self.num_rows <= i < self.num_rows:
            raise IndexError(f"Ragged: row {i} out of range for {self.num_rows} rows")
        i %= self.num_rows
        return self.values[int(self.offsets[i]):int(self.offsets[i + 1])]

    def rows(self) -> Iterator[Any]:
        """The rows in order, as views of ``values`` (empty rows included)."""
        bounds = self.offsets.tolist()
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            yield self.values[lo:hi]


def offsets_from_counts(counts: Any) -> np.ndarray:
    """``[n + 1]`` int64 offsets ``[0, c0, c0 + c1, ...]`` from ``[n]`` row counts.

    >>> offsets_from_counts([2, 0, 1])
    array([0, 2, 2, 3])
    """
    counts = np.asarray(counts)
    if counts.ndim != 1 or (counts.size and counts.dtype.kind not in "iu"):
        raise InputTypeError(f"offsets_from_counts: counts must be a 1-D array of integers, "
                             f"got shape {counts.shape}, dtype {counts.dtype}")
    offsets = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def from_rows(rows: Iterable[Any], *, width: Optional[int] = None,
              dtype: Any = np.float64) -> Ragged:
    """A :class:`Ragged` of NumPy arrays from a sequence of rows.

    Args:
        rows: ``n`` rows, each anything ``np.asarray`` takes: ``[k_i]`` items
            when ``width`` is None, else ``[k_i, width]`` (an empty row, ``[]``,
            is ``[0, width]``).
        width: the length of each item, or None for scalar items. Rows wider
            than ``width`` keep their first ``width`` columns (e.g. a
            ``[start, end, score]`` row read as a span).
        dtype: the dtype of ``values``.

    Returns:
        ``Ragged(values, offsets)``: ``values`` is ``[K]`` or ``[K, width]``
        C-contiguous of ``dtype`` (``K = sum k_i``; a fresh array, never a
        view of a row), ``offsets`` ``[n + 1]`` int64. ``n = 0`` gives
        ``K = 0`` and ``offsets == [0]``.

    Raises:
        InputError: a row that is not of that shape (naming the row).

    >>> values, offsets = from_rows([[1, 2], [], [3]])
    >>> values, offsets
    (array([1., 2., 3.]), array([0, 2, 2, 3]))
    >>> from_rows([[[0, 1, 0.9]]], width=2).values  # [start, end, score] read as a span
    array([[0., 1.]])
    """
    parts = []
    for i, row in enumerate(rows):
        arr = np.asarray(row, dtype=dtype)
        if width is None:
            if arr.ndim != 1:
                raise InputError(f"row {i} must be 1-D, got shape {arr.shape}")
        else:
            if arr.size == 0:
                arr = arr.reshape(0, width)
            if arr.ndim != 2 or arr.shape[1] < width:
                raise InputError(f"row {i} must have shape (k, {width}), got {arr.shape}")
            arr = arr[:, :width]
        parts.append(arr)
    tail = () if width is None else (width,)
    offsets = offsets_from_counts(np.fromiter((p.shape[0] for p in parts), dtype=np.int64,
                                              count=len(parts)))
    values = (np.concatenate(parts, axis=0) if parts else np.zeros((0, *tail), dtype=dtype))
    return Ragged(np.ascontiguousarray(values, dtype=dtype), offsets)


def check_offsets(offsets: Any, total: int, *, rows: Optional[int] = None,
                  op: str = "", name: str = "offsets") -> np.ndarray:
    """``offsets`` as a checked ``[n + 1]`` int64 NumPy array.

    Args:
        offsets: integer array (NumPy, torch or a list).
        total: ``K``, the number of items the offsets index (``len(values)``).
        rows: ``n`` if the number of rows is known (then the shape must be
            ``(n + 1,)``), else None.
        op: prefix of the error message (the function the user called).
        name: the argument's name in the message.

    Raises:
        InputTypeError: not integers. InputError: not 1-D, the wrong length,
        or not starting at 0, non-decreasing and ending at ``total`` (one
        message naming all three rules and the offending values).

    >>> check_offsets([0, 2, 3], 3)
    array([0, 2, 3])
    >>> check_offsets([0, 3, 2], 2, op="nms_1d")
    Traceback (most recent call last):
    ...
    fastvqa.errors.InputError: nms_1d: offsets must start at 0, never decrease and end at K = 2 ...
    """
    where = f"{op}: {name}" if op else name
    if _arrays.is_torch(offsets):
        offsets = offsets.detach().cpu().numpy()
    arr = np.asarray(offsets)
    if arr.dtype.kind not in "iu":
        raise InputTypeError(f"{where} must hold integers, got dtype {arr.dtype}")
    want = "(n + 1,)" if rows is None else f"(n + 1,) = ({rows + 1},)"
    if arr.ndim != 1 or arr.shape[0] < 1 or (rows is not None and arr.shape[0] != rows + 1):
        raise InputError(f"{where} must have shape {want}, got {arr.shape}")
    arr = arr.astype(np.int64, copy=False)
    if arr[0] != 0 or arr[-1] != total or (arr[1:] < arr[:-1]).any():
        bad = np.flatnonzero(arr[1:] < arr[:-1])
        detail = f"; offsets[{bad[0] + 1}] < offsets[{bad[0]}]" if bad.size else ""
        raise InputError(f"{where} must start at 0, never decrease and end at K = {total} (the "
                         f"number of items); got {arr[0]} ... {arr[-1]}{detail}")
    return arr


def segment_ids(offsets: Any) -> Any:
    """``[K]`` int64: ``out[k] = i`` for every item ``k`` of row ``i``
    (``offsets[i] <= k < offsets[i + 1]``); empty rows contribute nothing.
    Same framework and device as ``offsets`` (NumPy or torch).

    >>> segment_ids(np.array([0, 2, 2, 3]))
    array([0, 0, 2])
    """
    if _arrays.is_torch(offsets):
        import torch

        n = offsets.shape[0] - 1
        return torch.repeat_interleave(torch.arange(n, device=offsets.device),
                                       offsets[1:] - offsets[:-1])
    offsets = np.asarray(offsets)
    return np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))


def union_length(spans: Any) -> float:
    """Total length covered by ``spans`` (``(K, 2)`` ``[start, end]``), an
    overlap counted once; 0 for no spans.

    >>> print(union_length([[0, 2], [1, 3], [5, 6]]))  # [0, 3] and [5, 6]
    4.0
    """
    spans = np.asarray(spans, dtype=np.float64).reshape(-1, 2)
    total, reach = 0.0, -math.inf
    for start, end in spans[np.argsort(spans[:, 0], kind="stable")]:
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total
