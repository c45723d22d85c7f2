# SPDX-License-Identifier: Apache-2.0
"""Validators of scalar arguments, shared by every module that takes them (the
ops, the samplers, the retrieval and metric options) and by the command-line
converters of :mod:`fastvqa._argtypes`.

Each takes the value, the function the user called (``op``) and the
argument's name, and returns the value as a plain ``int``/``float``/``str``
or raises, in one line, ``"<op>: <name> must ..., got ..."``:
:class:`~fastvqa.errors.InputTypeError` (a ``TypeError``) for a value of the
wrong kind, :class:`~fastvqa.errors.InputError` (a ``ValueError``) for one out
of range. ``bool`` is never a number here (``True`` is refused where an
integer is expected); NumPy scalars are accepted. With ``op`` and ``name``
both empty the message starts at ``must`` (the command line adds the option).

Checks the compiled core does (string choices such as ``reduce``, ``pool``,
``method``, array shapes) are not repeated here: :func:`string` checks only
that a value is a string, which pybind11 cannot report in one line.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Optional

from fastvqa.errors import InputError, InputTypeError


def _subject(op: str, name: str) -> str:
    if op and name:
        return f"{op}: {name} "
    return f"{op or name} " if (op or name) else ""


def integer(value: Any, op: str, name: str, *, minimum: Optional[int] = None) -> int:
    """An integer (``int``, NumPy integer, anything with ``__index__``; not
    ``bool``), optionally ``>= minimum``."""
    if isinstance(value, bool):
        raise InputTypeError(f"{_subject(op, name)}must be an integer, got bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise InputTypeError(
            f"{_subject(op, name)}must be an integer, got {type(value).__name__}") from None
    if minimum is not None and value < minimum:
        raise InputError(f"{_subject(op, name)}must be >= {minimum}, got {value}")
    return value


def optional_integer(value: Any, op: str, name: str, *,
                     minimum: Optional[int] = None) -> Optional[int]:
    """``None``, or :func:`integer`."""
    return None if value is None else integer(value, op, name, minimum=minimum)


def real(value: Any, op: str, name: str, *, minimum: Optional[float] = None,
         positive: bool = False, finite: bool = False) -> float:
    """A real number (``int``, ``float``, NumPy scalar; not ``bool``) as a
    float. ``finite`` refuses NaN and infinities; ``minimum`` refuses values
    below it and ``positive`` values ``<= 0`` (both refuse NaN)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputTypeError(
            f"{_subject(op, name)}must be a real number, got {type(value).__name__}")
    value = float(value)
    if finite and not math.isfinite(value):
        raise InputError(f"{_subject(op, name)}must be finite, got {value}")
    if minimum is not None and not value >= minimum:
        raise InputError(f"{_subject(op, name)}must be >= {minimum:g}, got {value}")
    if positive and not value > 0:
        raise InputError(f"{_subject(op, name)}must be > 0, got {value}")
    return value


def optional_real(value: Any, op: str, name: str, **limits: Any) -> Optional[float]:
    """``None``, or :func:`real` (same keyword limits)."""
    return None if value is None else real(value, op, name, **limits)


def unit_interval(value: Any, op: str, name: str, *, positive: bool = False) -> float:
    """A real number in ``[0, 1]`` (``positive``: in ``(0, 1]``, a threshold
    that must keep something; NaN refused) as a float."""
    value = real(value, op, name)
    if positive and not 0.0 < value <= 1.0:
        raise InputError(f"{_subject(op, name)}must lie in (0, 1], got {value}")
    if not 0.0 <= value <= 1.0:
        raise InputError(f"{_subject(op, name)}must lie in [0, 1], got {value}")
    return value


def choice(value: Any, op: str, name: str, choices: tuple) -> Any:
    """``value`` when it is one of ``choices`` (a Python-level option; the
    compiled core checks its own string options)."""
    if isinstance(value, bool) or value not in choices:
        raise InputError(f"{_subject(op, name)}must be one of "
                         f"{', '.join(map(repr, choices))}, got {value!r}")
    return value


def string(value: Any, op: str, name: str) -> str:
    """A ``str``; which strings are allowed is checked where they are used
    (in C++ for the ops)."""
    if not isinstance(value, str):
        raise InputTypeError(f"{_subject(op, name)}must be a string, got {type(value).__name__}")
    return value


__all__ = ["choice", "integer", "optional_integer", "optional_real", "real", "string",
           "unit_interval"]
