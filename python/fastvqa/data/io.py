# SPDX-License-Identifier: Apache-2.0
"""Reading annotation and prediction files with errors that name the file.

Every loader of :mod:`fastvqa.data` (and every ``fastvqa eval`` / ``fastvqa
baseline`` input) goes through these functions, so the checks live once:

- :func:`input_file`: the path exists, is not a folder and is a regular file
  (``/dev/zero``, a pipe or a socket would be read forever or block);
- :func:`read_json`: one JSON document, parsed once from the raw bytes (no
  extra text copy kept), with documents nested too deeply and integers too
  large for any field of these formats reported as :class:`DataFormatError`
  instead of ``RecursionError`` / ``OverflowError`` tracebacks later;
- :func:`iter_json_lines`: JSON Lines streamed line by line (the file is never
  held in memory whole);
- :func:`open_text`: a checked text file (CSV).
"""

from __future__ import annotations

import gc
import json
import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO, Union

from fastvqa.data.errors import DataFormatError

PathLike = Union[str, Path]

#: The largest magnitude an integer in an input file may have. Every integer
#: these formats hold (seconds, frame counts, option indices, qids) is far
#: below it; above it NumPy int64 arrays and ``float()`` overflow.
MAX_INT = 2**63 - 1


def input_file(path: PathLike) -> Path:
    """``path`` as a :class:`~pathlib.Path`, checked to be a readable regular file.

    Raises:
        FileNotFoundError: nothing at ``path``.
        IsADirectoryError: ``path`` is a folder.
        DataFormatError: ``path`` is not a regular file (a device such as
            ``/dev/zero``, a FIFO or a socket).
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} does not exist") from None
    except NotADirectoryError:
        raise FileNotFoundError(f"{path} does not exist (a parent is not a folder)") from None
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{path} is a folder; expected a file")
    if not stat.S_ISREG(mode):
        raise DataFormatError(path, "not a regular file (a device, pipe or socket); "
                                    "give a file")
    return path


def _parse_int(text: str) -> int:
    # Cheap for the usual short integers; the length test also keeps
    # Python's 4300-digit conversion limit (a ValueError) from being reached.
    digits = len(text) - (text[0] == "-")
    value = int(text) if digits <= 19 else None
    if value is None or abs(value) > MAX_INT:
        shown = text if len(text) <= 24 else f"{text[:12]}...{text[-6:]} ({digits} digits)"
        raise _TooLarge(shown)
    return value


class _TooLarge(Exception):
    pass


def loads(text: Union[str, bytes], path: PathLike, *, where: Any = None) -> Any:
    """``json.loads`` with fastvqa's checks (see :func:`read_json`); ``where``
    names the record (e.g. ``"line 3"``) in the error."""
    # A parse makes no reference cycles, but millions of new containers set
    # off the cyclic collector again and again (about 40% of the time on a
    # large prediction file): paused for the parse.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return json.loads(text, parse_int=_parse_int)
    except UnicodeDecodeError as err:
        raise DataFormatError(path, f"not a UTF-8 text file ({err})", record=where) from None
    except json.JSONDecodeError as err:
        # One JSON Lines line is one line: its column is what helps.
        detail = str(err) if where is None else f"{err.msg}: column {err.colno}"
        raise DataFormatError(path, f"not valid JSON ({detail})", record=where) from None
    except _TooLarge as err:
        raise DataFormatError(path, f"holds the integer {err}, too large for any field "
                                    f"(at most {MAX_INT} in magnitude)", record=where) from None
    except RecursionError:
        raise DataFormatError(path, "JSON nested too deeply to read (no benchmark file "
                                    "nests more than a few levels)", record=where) from None
    finally:
        if collecting:
            gc.enable()


def read_json(path: PathLike) -> Any:
    """The parsed JSON document at ``path``.

    Raises:
        FileNotFoundError / IsADirectoryError: no such file / a folder.
        DataFormatError: not a regular file, not UTF-8 text, not valid JSON
            (the message gives the parser's line and column), nested too deeply,
            or holding an integer beyond +-(2**63 - 1).
    """
    path = input_file(path)
    # Decoded while read: one text copy of the file, not bytes plus text.
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as err:
        raise DataFormatError(path, f"not a UTF-8 text file ({err})") from None
    return loads(text, path)


def iter_json_lines(path: PathLike) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed object)`` for each non-blank line of a JSON
    Lines file, read one line at a time.

    Raises:
        the errors of :func:`read_json`, the record named ``"line N"``.
    """
    path = input_file(path)
    with path.open("rb") as f:
        for line_no, line in enumerate(f, start=1):
            if line_no == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if not line.strip():
                continue
            yield line_no, loads(line, path, where=f"line {line_no}")


def first_char(path: PathLike) -> str:
    """The first non-blank character of a file ('' when it has none), read in
    64 KiB chunks (the file is not loaded whole): tells a JSON array from
    JSON Lines."""
    path = input_file(path)
    with path.open("rb") as f:
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                return ""
            stripped = chunk.lstrip(b" \t\r\n\xef\xbb\xbf")
            if stripped:
                return chr(stripped[0])


def open_text(path: PathLike, *, encoding: str = "utf-8") -> TextIO:
    """A checked regular file opened as text (``newline=""``, for csv)."""
    return input_file(path).open(newline="", encoding=encoding)


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
