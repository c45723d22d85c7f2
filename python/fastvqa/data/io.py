# SPDX-License-Identifier: Apache-2.0
"""Reading annotation and prediction files with errors that name the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Union

from fastvqa.data.errors import DataFormatError


def read_json(path: Union[str, Path]) -> Any:
    """The parsed JSON document at ``path``.

    Raises:
        FileNotFoundError / IsADirectoryError: as ``open`` does.
        DataFormatError: the file is not UTF-8 text or not valid JSON (the
            message gives the parser's line and column).
    """
    path = Path(path)
    with path.open("rb") as f:
        raw = f.read()
    try:
        return json.loads(raw)
    except UnicodeDecodeError as err:
        raise DataFormatError(path, f"not a UTF-8 text file ({err})") from None
    except json.JSONDecodeError as err:
        raise DataFormatError(path, f"not valid JSON ({err})") from None
