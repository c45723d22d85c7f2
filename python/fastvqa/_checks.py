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

:func:`choice` and :func:`flag` are the one check of a fixed set of values
and of a ``True``/``False`` switch for all of fastvqa. Their ``error``
keyword picks the class raised, of the :class:`~fastvqa.errors.InputError`
family: :class:`~fastvqa.errors.CommandError` where a library argument
mirrors a command-line option (the evaluation functions), whose message then
reads as the command line's, ``"<option>: expected one of a, b, got 'x'"``.

Checks the compiled core does (string choices such as ``reduce``, ``pool``,
``method``, array shapes) are not repeated here: :func:`string` checks only
that a value is a string, which pybind11 cannot report in one line.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Optional

from fastvqa.errors import CommandError, InputError, InputTypeError


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


def _refusal(value: Any, op: str, name: str, wanted: str,
             error: type[InputError]) -> InputError:
    """``error`` saying the value is not ``wanted`` ("one of a, b"), worded
    as a command-line option's check when ``error`` is a :class:`CommandError`."""
    if issubclass(error, CommandError):
        return error(f"{op or name}: expected {wanted}, got {value!r}")
    return error(f"{_subject(op, name)}must be {wanted}, got {value!r}")


def choice(value: Any, op: str, name: str, choices: tuple, *,
           error: type[InputError] = InputError) -> Any:
    """``value`` when it is one of ``choices`` (a Python-level option; the
    compiled core checks its own string options), else ``error`` (an
    :class:`~fastvqa.errors.InputError` class) naming the choices:
    ``"<op>: <name> must be one of a, b, got 'x'"``. ``bool`` is never a
    choice (``True == 1`` would pass for ``(0, 1)``).

    >>> choice("l2", "Index", "metric", ("ip", "l2"))
    'l2'
    >>> choice("cos", "Index", "metric", ("ip", "l2"))
    Traceback (most recent call last):
    fastvqa.errors.InputError: Index: metric must be one of ip, l2, got 'cos'
    """
    if isinstance(value, bool) or value not in choices:
        raise _refusal(value, op, name, f"one of {', '.join(map(str, choices))}", error)
    return value


def flag(value: Any, op: str, name: str, *,
         error: type[InputError] = InputTypeError) -> bool:
    """``value`` when it is ``True`` or ``False`` (not ``1``, not a NumPy
    bool), else ``error``: a switch such as ``strict``."""
    if not isinstance(value, bool):
        raise _refusal(value, op, name, "True or False", error)
    return value


def string(value: Any, op: str, name: str) -> str:
    """A ``str``; which strings are allowed is checked where they are used
    (in C++ for the ops)."""
    if not isinstance(value, str):
        raise InputTypeError(f"{_subject(op, name)}must be a string, got {type(value).__name__}")
    return value


__all__ = ["choice", "flag", "integer", "optional_integer", "optional_real", "real", "string",
           "unit_interval"]
