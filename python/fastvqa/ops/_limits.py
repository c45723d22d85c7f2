# SPDX-License-Identifier: Apache-2.0
"""The integer arguments of the span ops (``min_len``, ``max_len``, ``k``),
checked in Python before they reach a binding that holds them in int64: an
integer too large for it would otherwise end in pybind's "Unable to cast"
RuntimeError instead of a one-line error naming the argument."""

from __future__ import annotations

from typing import Any, Optional

from fastvqa import _checks
from fastvqa.errors import InputError

#: The largest value an int64 argument of a binding holds.
INT64_MAX = 2**63 - 1


def span_lengths(min_len: Any, max_len: Any, op: str) -> tuple[int, Optional[int]]:
    """``(min_len, max_len)`` checked as integers (``max_len`` may be
    ``None``); their lower bounds and order are the binding's checks, made
    here only where clamping would hide the order. No row holds ``2**63``
    steps, so a longer limit means the same as ``2**63 - 1`` and is passed as
    that (the binding clamps ``max_len`` to ``T`` in turn)."""
    min_len = _checks.integer(min_len, op, "min_len")
    max_len = _checks.optional_integer(max_len, op, "max_len")
    if max_len is None:
        return min(min_len, INT64_MAX), None
    if INT64_MAX < max_len < min_len:
        raise InputError(f"{op}: max_len must be >= min_len, got max_len = {max_len} and "
                         f"min_len = {min_len}")
    return min(min_len, INT64_MAX), min(max_len, INT64_MAX)


def count(value: Any, op: str, name: str) -> int:
    """A count of results (``k``): an integer in ``[1, 2**63 - 1]``. It sets
    the result's shape, so a larger one is refused rather than clamped."""
    value = _checks.integer(value, op, name, minimum=1)
    if value > INT64_MAX:
        raise InputError(f"{op}: {name} must lie in [1, 2**63 - 1], got {value}")
    return value
