# SPDX-License-Identifier: Apache-2.0
"""argparse ``type=`` converters shared by the command line: a bad value is
reported by argparse as ``argument --x: <message>`` with exit status 2."""

from __future__ import annotations

import argparse
from typing import Callable

from fastvqa import _checks
from fastvqa.errors import InputError

def _checked(check: Callable, value, message: str = "", **limits):
    """``check(value, "", "", **limits)`` (:mod:`fastvqa._checks`, the one
    definition of each range), its error as argparse's: ``message`` if given,
    else the check's own."""
    try:
        return check(value, "", "", **limits)
    except InputError as err:
        raise argparse.ArgumentTypeError(message or str(err)) from None


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An integer >= ``minimum``."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        return _checked(_checks.integer, value, f"expected an integer >= {minimum}, got {value}",
                        minimum=minimum)

    return convert


def int_in_range(low: int, high: int) -> Callable[[str], int]:
    """An integer in ``[low, high]``."""
    at_least = int_at_least(low)

    def convert(text: str) -> int:
        value = at_least(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"expected an integer in [{low}, {high}], got {value}")
        return value

    return convert


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def positive_float(text: str) -> float:
    """A finite number > 0."""
    return _checked(_checks.real, _number(text), f"expected a finite number > 0, got {text}",
                    positive=True, finite=True)


def unit_interval_positive(text: str) -> float:
    """A number in (0, 1] (a cosine or IoU threshold that must keep something)."""
    return _checked(_checks.unit_interval, _number(text), positive=True)


def unit_interval(text: str) -> float:
    """A number in [0, 1]."""
    return _checked(_checks.unit_interval, _number(text))
