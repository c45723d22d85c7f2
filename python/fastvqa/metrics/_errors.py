# SPDX-License-Identifier: Apache-2.0
"""The metrics' errors for arguments a caller can fix.

Every check in :mod:`fastvqa.metrics` that rejects the caller's data or
options (shapes and lengths, keys that do not match, a prediction of the
wrong type, an invalid option value) raises one of these, so the command line
prints it as a one-line error (:mod:`fastvqa.errors`), while anything else
that escapes a metric (a kernel's ``ValueError`` on input the metric already
validated, an ``IndexError``...) is a fastvqa bug and keeps its traceback.
"""

from __future__ import annotations

from fastvqa.errors import InputError


class InputTypeError(InputError, TypeError):
    """An argument of the wrong kind (a string where spans are expected, a
    float prediction...): an :class:`~fastvqa.errors.InputError` that is also
    a ``TypeError``, as the metrics' docstrings promise."""


__all__ = ["InputError", "InputTypeError"]
