# SPDX-License-Identifier: Apache-2.0
"""Reading annotation and prediction files with errors that name the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Union

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


def read_keyed_predictions(
    path: Union[str, Path],
    valid: Callable[[Any], bool],
    *,
    container: str,
    value: Callable[[Any], str],
) -> Union[dict, list]:
    """A prediction file that is a JSON object (key -> prediction) or a JSON
    list (predictions in ground-truth order), every non-null entry passing
    ``valid``.

    Args:
        valid: accepts one prediction.
        container: how the expected layout is described in the error, e.g.
            ``"{record_key: answer} or a list of answers in ground-truth order"``.
        value: the error text for a rejected prediction (receives it).

    Raises:
        DataFormatError: naming the file and, for a bad entry, its key or position.
    """
    path = Path(path)
    data = read_json(path)
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list):
        items = enumerate(data)
    else:
        raise DataFormatError(path, f"expected a JSON object {container}, got "
                                    f"{type(data).__name__}")
    for key, item in items:
        if item is not None and not valid(item):
            raise DataFormatError(path, value(item), record=key)
    return data
