# SPDX-License-Identifier: Apache-2.0
"""The error every loader raises for a malformed file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from fastvqa.errors import InputError


class DataFormatError(InputError):
    """A file does not hold what its format requires (an
    :class:`~fastvqa.errors.InputError`, so a ``ValueError``).

    The message names the file, the record (index or id) and the field, e.g.
    ``gsub_test.json: record '2440175990' (video): field 'duration': expected a
    number, got 'abc'``.

    >>> err = DataFormatError("data/gsub_test.json", "expected a number, got 'abc'",
    ...                       record="24", field="duration")
    >>> print(err)
    gsub_test.json: record '24': field 'duration': expected a number, got 'abc'
    >>> isinstance(err, ValueError), err.field
    (True, 'duration')
    """

    def __init__(self, path: Any, reason: str, *, record: Any = None, field: Optional[str] = None):
        self.path = str(path)
        self.record = record
        self.field = field
        where = Path(self.path).name if self.path else "<input>"
        parts = [where]
        if record is not None:
            parts.append(f"record {record!r}" if isinstance(record, str) else f"record {record}")
        if field is not None:
            parts.append(f"field {field!r}")
        super().__init__(": ".join(parts) + ": " + reason)
