# SPDX-License-Identifier: Apache-2.0
"""Reading annotation and prediction files with errors that name the file.

Every loader of :mod:`fastvqa.data` (and every ``fastvqa eval`` / ``fastvqa
baseline`` input) goes through these functions, so the checks live once:

- :func:`input_file`: the path exists, is not a folder and is a regular file
  (``/dev/zero``, a pipe or a socket would be read forever or block);
- :func:`stream_json`: a JSON document whose top-level object or array is
  read entry by entry from a buffered text stream (about 1 MiB of the file in
  memory at a time), so a loader converts each entry to its compact form
  before the next is parsed; documents nested too deeply and integers too
  large for any field of these formats are reported as
  :class:`DataFormatError` instead of ``RecursionError`` / ``OverflowError``
  tracebacks later, with the same messages (parser line and column) as a
  whole-file ``json.loads``;
- :func:`read_json`: the same document built whole (small files);
- :func:`iter_input_files`: the files of a "file or folder" input;
- :func:`split_file`: the one file of a split, for a "file or folder" input;
- :func:`iter_json_lines`: JSON Lines streamed line by line (the file is never
  held in memory whole);
- :func:`open_text`: a checked text file (CSV).
"""

from __future__ import annotations

import gc
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, TextIO, Union

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

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "test.json").write_text("[]")
    ...     print(input_file(Path(d, "test.json")).name)
    test.json
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
    names the record (e.g. ``"line 3"``) in the error.

    >>> loads('{"qid": 1}', "preds.json")
    {'qid': 1}
    >>> loads("[1,", "preds.jsonl", where="line 3")
    Traceback (most recent call last):
    ...
    fastvqa.data.errors.DataFormatError: preds.jsonl: record 'line 3': not valid JSON ...
    """
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
    """The parsed JSON document at ``path``, built whole from
    :func:`stream_json` (the file's text is never held in memory at once).

    Raises:
        FileNotFoundError / IsADirectoryError: no such file / a folder.
        DataFormatError: not a regular file, not UTF-8 text, not valid JSON
            (the message gives the parser's line and column), nested too deeply,
            or holding an integer beyond +-(2**63 - 1).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "a.json").write_text('{"a": 1, "b": [2, 3]}')
    ...     print(read_json(Path(d, "a.json")))
    {'a': 1, 'b': [2, 3]}
    """
    with stream_json(path) as doc:
        if doc.kind is dict:
            return dict(doc)
        if doc.kind is list:
            return [value for _, value in doc]
        return doc.value


# ------------------------------------------------------------ streamed JSON

#: Characters read from the file at a time.
_CHUNK = 1 << 20
#: A parse error this close to the end of the buffer may be a token cut by
#: the chunk boundary (``tru``, ``-``, ``\u12``): more of the file is read and
#: the entry parsed again. Further back it is the file's own error.
_MARGIN = 64
_WS = re.compile(r"[ \t\n\r]*")
_WS_RUN = re.compile(r"(?:[ \t\n\r])+")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _decode_error(doc: str) -> tuple[str, int]:
    try:
        json.loads(doc)
    except json.JSONDecodeError as err:
        return err.msg, err.pos
    raise AssertionError(f"{doc!r} parsed")  # pragma: no cover


# The messages json.loads gives for errors in the top-level grammar, asked of
# the running Python's own json module (3.13 words trailing commas apart).
_MSG_VALUE, _ = _decode_error("")
_MSG_EXTRA, _ = _decode_error("1 2")
_MSG_KEY, _ = _decode_error("{1}")
_MSG_COLON, _ = _decode_error('{"a" 1}')
_MSG_COMMA, _ = _decode_error("[1 2]")
_MSG_OBJECT_COMMA, _ = _decode_error('{"a": 1 2}')
_MSG_OBJECT_TRAILING, _at = _decode_error('{"a": 1,}')
_OBJECT_TRAILING_AT_COMMA = _at == 7
_MSG_ARRAY_TRAILING, _at = _decode_error("[1,]")
_ARRAY_TRAILING_AT_COMMA = _at == 2


class _Invalid(Exception):
    """Internal: a JSON syntax error at an absolute character position."""

    def __init__(self, msg: str, pos: int):
        super().__init__(msg)
        self.msg = msg
        self.pos = pos


class JsonStream:
    """One JSON document read from a file in chunks; see :func:`stream_json`.

    Attributes:
        path: the file.
        kind: ``dict`` (a top-level object), ``list`` (a top-level array) or
            the type of a top-level scalar (``str``, ``int``, ``float``,
            ``bool``, ``type(None)``), known before any entry is read.
        value: a top-level scalar (None for an object or an array).

    Iterating gives ``(key, value)`` for each entry of an object (keys
    ``str``, in file order; a key the file repeats may come again, though
    only once within a run of :meth:`batches`, with its last value, so
    ``dict(stream)`` keeps the last value at the first position, as
    ``json.loads`` does) or ``(index, value)`` for an array; nothing for a
    scalar. Entries are parsed as they are reached, a run (up to about 1 MiB
    of text) at a time; nothing else of the file is kept. A syntax error after the last
    entry read is raised when iteration gets there, or, where the caller
    leaves the ``with`` block with a ``ValueError``/``TypeError`` (a rejected
    entry), in its place: the error a whole-file parse gives first. Iterate
    once.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "a.json").write_text('[10, "x"]')
    ...     with stream_json(Path(d, "a.json")) as doc:
    ...         print(doc.kind.__name__, list(doc))
    list [(0, 10), (1, 'x')]
    """

    def __init__(self, path: Path, f: TextIO):
        self.path = path
        self._f = f
        self._buf = ""
        self._pos = 0           # in _buf
        self._base = 0          # absolute character index of _buf[0]
        self._lines = 0         # newlines before _buf[0]
        self._last_nl = -1      # absolute index of the last of them
        self._eof = False
        self._scan = json.JSONDecoder(parse_int=_parse_int).scan_once
        self.value: Any = None
        self._started: Optional[Iterator] = None
        self._collecting = False
        self._cut: Optional[re.Pattern] = None  # see _batch
        self._slow_until = 0
        first = self._checked(self._peek)
        if first == "":  # nothing but whitespace: say so, not "Expecting value"
            raise DataFormatError(path, "is empty (no JSON in it); expected a JSON document")
        if first == "{":
            self.kind: type = dict
        elif first == "[":
            self.kind = list
        else:
            self.value = self._checked(self._value)
            self._checked(self._end)
            self.kind = type(self.value)

    # -- context manager: the file is closed on leaving the block, and the
    # cyclic garbage collector is paused inside it. Parsing and converting
    # entries make no reference cycles, but millions of new containers set
    # the collector off again and again (a third of the time of reading a
    # large grounding file).
    def __enter__(self) -> "JsonStream":
        self._collecting = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is not None and issubclass(exc_type, (ValueError, TypeError)):
                # The caller rejected an entry: a syntax error further on is
                # reported instead, as a whole-file parse would have (the
                # rest is parsed and dropped).
                try:
                    for _ in self._started or self._iter():
                        pass
                except DataFormatError as err:
                    raise err from None
        finally:
            self.close()
            if self._collecting:
                gc.enable()

    def close(self) -> None:
        self._f.close()

    def __iter__(self) -> Iterator[tuple[Union[str, int], Any]]:
        return self._iter()

    def batches(self) -> Iterator[Union[dict, list]]:
        """The entries in runs, as parsed: dicts (an object) or lists (an
        array) of consecutive entries, in file order (an object's key
        repeated within one run is there once, with its last value; across
        runs it comes again). For readers that check a run at once; use
        either this or plain iteration, once."""
        if self._started is None:
            if self.kind is dict or self.kind is list:
                self._started = self._checked_iter(self._entries(self.kind is dict))
            else:
                self._started = iter(())
        return self._started

    def _iter(self) -> Iterator[tuple[Union[str, int], Any]]:
        if self.kind is dict:
            return (item for run in self.batches() for item in run.items())
        return enumerate(value for run in self.batches() for value in run)

    # -- errors: every failure becomes one DataFormatError naming the file
    def _error(self, err: BaseException) -> DataFormatError:
        if isinstance(err, _Invalid):
            line, col = self._line_col(err.pos)
            detail = f"{err.msg}: line {line} column {col} (char {err.pos})"
            hint = ""
            if err.msg == _MSG_EXTRA and line > 1 and col == 1:
                # A second value at the start of a line: one value per line.
                hint = ("; this looks like JSON Lines (one value per line), and one JSON "
                        "document (an object or an array) is expected here")
            return DataFormatError(self.path, f"not valid JSON ({detail}){hint}")
        if isinstance(err, UnicodeDecodeError):
            # The codec's "position" counts from the chunk, not the file: left out.
            byte = err.object[err.start:err.start + 1].hex()
            return DataFormatError(self.path, f"not a UTF-8 text file (byte 0x{byte}: "
                                              f"{err.reason})")
        if isinstance(err, _TooLarge):
            return DataFormatError(self.path, f"holds the integer {err}, too large for any field "
                                              f"(at most {MAX_INT} in magnitude)")
        return DataFormatError(self.path, "JSON nested too deeply to read (no benchmark file "
                                          "nests more than a few levels)")

    _FAILURES = (_Invalid, UnicodeDecodeError, _TooLarge, RecursionError)

    def _checked(self, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except self._FAILURES as err:
            raise self._error(err) from None

    def _checked_iter(self, entries: Iterator) -> Iterator:
        try:
            yield from entries
        except self._FAILURES as err:
            raise self._error(err) from None

    def _line_col(self, pos: int) -> tuple[int, int]:
        """json's line and column of absolute position ``pos`` (in the buffer
        or after it: errors are raised before the buffer moves on)."""
        rel = pos - self._base
        newlines = self._buf.count("\n", 0, rel)
        last_nl = self._base + self._buf.rindex("\n", 0, rel) if newlines else self._last_nl
        return self._lines + newlines + 1, pos - last_nl

    # -- the buffer
    def _read(self, want: int) -> None:
        """Drops what was consumed and reads until ``want`` characters from
        the current position are buffered (or the file ends)."""
        if self._pos:
            done = self._buf[:self._pos]
            newlines = done.count("\n")
            if newlines:
                self._lines += newlines
                self._last_nl = self._base + done.rindex("\n")
            self._base += self._pos
            self._buf = self._buf[self._pos:]
            self._pos = 0
        parts = [self._buf]
        have = len(self._buf)
        while have < want and not self._eof:
            chunk = self._f.read(max(_CHUNK, want - have))
            if not chunk:
                self._eof = True
            parts.append(chunk)
            have += len(chunk)
        self._buf = "".join(parts)

    def _peek(self) -> str:
        """The next non-blank character ('' at the end of the file), not consumed."""
        while True:
            self._pos = _WS.match(self._buf, self._pos).end()
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if self._eof:
                return ""
            self._read(1)

    def _value(self) -> Any:
        """Parses the value at the current (non-blank) position."""
        want = _CHUNK
        while True:
            collecting = gc.isenabled()
            gc.disable()  # see loads(): no cycles, many containers
            try:
                value, end = self._scan(self._buf, self._pos)
            except StopIteration as stop:
                failure: Optional[_Invalid] = _Invalid(_MSG_VALUE, self._base + stop.value)
                at = stop.value
            except json.JSONDecodeError as err:
                failure, at = _Invalid(err.msg, self._base + err.pos), err.pos
                if err.msg.startswith("Unterminated string"):
                    at = len(self._buf)  # the string may go on in the next chunk
            else:
                # A number near the end may go on in the next chunk ("3" of "3.5").
                failure, at = None, end
            finally:
                if collecting:
                    gc.enable()
            if self._eof or at < len(self._buf) - _MARGIN:
                if failure is not None:
                    raise failure
                self._pos = end
                return value
            self._read(len(self._buf) - self._pos + want)
            want *= 2

    def _expect(self, char: str, msg: str) -> None:
        if self._peek() != char:
            raise _Invalid(msg, self._base + self._pos)
        self._pos += 1

    def _end(self) -> None:
        if self._peek():
            raise _Invalid(_MSG_EXTRA, self._base + self._pos)

    # -- batches: many entries in one call of the C parser
    #
    # Entry by entry, the Python around each parse costs several times the
    # parse itself. So once the first entry has shown what an entry looks
    # like, the buffered text up to a later separator is parsed in one call,
    # wrapped as a container of its own: "[" + text + "]". A cut is only ever
    # tried at a comma; when that comma is not a top-level separator (inside a
    # nested value, or in a string) the wrapped text is unbalanced or ends in
    # an open string and the parse fails, so a batch that parses holds
    # exactly the entries a whole-file parse gives (an object's repeated keys
    # within a batch keep the last value, as json.loads). On a failure the
    # entries are read one by one past the cut tried; a real syntax error is
    # always reported by the entry-by-entry path.

    _TRIES = 3

    def _learn_cut(self, value_start: int, is_object: bool) -> None:
        """The pattern a separator and the next entry's start match, learnt
        from the first entry (its value starts at buffer position
        ``value_start``): the comma, an object's key, then the brackets the
        value opens with and its first key (e.g. ``, {"qid":``)."""
        buf = self._buf
        j = value_start
        while j < len(buf) and buf[j] in "[{ \t\n\r":
            j += 1
        m = _STRING.match(buf, j)
        if m is not None and j > value_start:
            colon = _WS.match(buf, m.end()).end()
            if buf.startswith(":", colon):
                j = colon + 1  # the first key of an object value
        elif m is not None:
            j += 1  # a string value: its opening quote
        prefix = _WS.pattern.join(re.escape(piece)
                                  for piece in _WS_RUN.split(buf[value_start:j]))
        key = _STRING.pattern + _WS.pattern + ":" + _WS.pattern if is_object else ""
        self._cut = re.compile("," + _WS.pattern + key + prefix)

    def _batch(self, opener: str, closer: str) -> Any:
        """The entries from the current position to a separator near the end
        of the buffer, parsed at once (a dict or a list); the position then
        is at that separator. None where no cut parses."""
        if self._cut is None or self._base + self._pos < self._slow_until:
            return None
        if len(self._buf) - self._pos < _CHUNK and not self._eof:
            self._read(_CHUNK)
        buf, start = self._buf, self._pos
        tail = max(start, len(buf) - (1 << 16))
        cuts = [m.start() for m in self._cut.finditer(buf, tail)][-self._TRIES:]
        if not cuts:
            cuts = [m.start() for m in self._cut.finditer(buf, start)][-self._TRIES:]
        for cut in reversed(cuts):
            doc = opener + buf[start:cut] + closer
            collecting = gc.isenabled()
            gc.disable()
            try:
                value, end = self._scan(doc, 0)
            except (StopIteration, json.JSONDecodeError, _TooLarge, RecursionError):
                continue
            finally:
                if collecting:
                    gc.enable()
            if end == len(doc):
                self._pos = cut
                return value
        # Entry by entry past the first cut tried (or the buffer).
        self._slow_until = self._base + (cuts[-1] if cuts else len(buf))
        return None

    def _entries(self, is_object: bool) -> Iterator[Union[dict, list]]:
        """The entries of the top-level object (``is_object``) or array, in
        runs (dicts or lists)."""
        if is_object:
            opener, closer, comma_msg = "{", "}", _MSG_OBJECT_COMMA
            trailing_msg, trailing_at_comma = _MSG_OBJECT_TRAILING, _OBJECT_TRAILING_AT_COMMA
        else:
            opener, closer, comma_msg = "[", "]", _MSG_COMMA
            trailing_msg, trailing_at_comma = _MSG_ARRAY_TRAILING, _ARRAY_TRAILING_AT_COMMA
        self._pos += 1  # the opener
        if self._peek() == closer:
            self._pos += 1
            self._end()
            return
        while True:
            if is_object and self._peek() != '"':
                raise _Invalid(_MSG_KEY, self._base + self._pos)
            batch = self._batch(opener, closer)
            if batch is not None:
                yield batch
            else:
                key = self._value() if is_object else None
                if is_object:
                    self._expect(":", _MSG_COLON)
                    self._peek()
                value_start = self._pos
                value = self._value()
                if self._cut is None:
                    self._learn_cut(value_start, is_object)
                yield {key: value} if is_object else [value]
            if self._peek() == closer:
                self._pos += 1
                break
            comma = self._base + self._pos
            self._expect(",", comma_msg)
            if self._peek() == closer:
                raise _Invalid(trailing_msg, comma if trailing_at_comma
                               else self._base + self._pos)
        self._end()


def stream_json(path: PathLike) -> JsonStream:
    """The JSON document at ``path``, its top-level object or array read
    entry by entry (see :class:`JsonStream`); use it as a context manager::

        with stream_json(path) as doc:
            if doc.kind is not dict:
                raise DataFormatError(path, f"expected an object, got {doc.kind.__name__}")
            for key, value in doc:
                ...

    At most about 1 MiB of the file's text, plus the entry being parsed, is in
    memory at a time; what the caller keeps of each entry is all that grows.

    Raises:
        FileNotFoundError / IsADirectoryError: no such file / a folder.
        DataFormatError: not a regular file, not UTF-8 text, not valid JSON
            (the message gives the parser's line and column, as ``json.loads``
            on the whole file), nested too deeply, or holding an integer
            beyond +-(2**63 - 1). Errors in the top level are raised when
            construction or iteration reaches them.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "a.json").write_text('{"a": 1, "b": [2, 3]}')
    ...     with stream_json(Path(d, "a.json")) as doc:
    ...         print(doc.kind.__name__, list(doc))
    dict [('a', 1), ('b', [2, 3])]
    """
    path = input_file(path)
    f = path.open(encoding="utf-8-sig", newline="")
    try:
        return JsonStream(path, f)
    except BaseException:
        f.close()
        raise


def iter_json_lines(path: PathLike) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed object)`` for each non-blank line of a JSON
    Lines file, read one line at a time.

    Raises:
        the errors of :func:`read_json`, the record named ``"line N"``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "p.jsonl").write_text('{"qid": 1}\\n\\n{"qid": 2}\\n')
    ...     print(list(iter_json_lines(Path(d, "p.jsonl"))))
    [(1, {'qid': 1}), (3, {'qid': 2})]
    """
    path = input_file(path)
    first = True
    with path.open("rb") as f:
        for line_no, line in enumerate(f, start=1):
            if line_no == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if not line.strip():
                continue
            if first and line.strip() in (b"[", b"{"):
                # An indented JSON document: its first line opens it and holds nothing else.
                raise DataFormatError(path, f"line {line_no} is a lone {line.strip().decode()!r}: "
                                      "this looks like one JSON document spread over lines, "
                                      "and JSON Lines (one complete JSON object per line) are "
                                      "expected here")
            first = False
            yield line_no, loads(line, path, where=f"line {line_no}")


def first_char(path: PathLike) -> str:
    """The first non-blank character of a file ('' when it has none), read in
    64 KiB chunks (the file is not loaded whole): tells a JSON array from
    JSON Lines.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "a.json").write_text('  \\n[{"qid": 1}]')
    ...     print(first_char(Path(d, "a.json")))
    [
    """
    path = input_file(path)
    with path.open("rb") as f:
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                return ""
            stripped = chunk.lstrip(b" \t\r\n\xef\xbb\xbf")
            if stripped:
                return chr(stripped[0])


def split_file(path: PathLike, names: Iterable[str], *, split: str, what: str) -> Path:
    """The file a loader reads for ``path``: ``path`` itself when it is a
    file, or for a folder as released the first of ``names`` (the split's
    file names, e.g. ``("test.json",)``) that it holds. One rule for every
    loader that takes "the folder or the file".

    Raises:
        FileNotFoundError: nothing at ``path``; a folder without any of
            ``names`` (the message names them, the split and up to 8 files
            the folder does hold).
        DataFormatError: ``path`` is not a regular file nor a folder.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "dev.json").write_text("[]")
    ...     print(split_file(d, ["dev.json"], split="dev", what="split file").name)
    dev.json
    """
    path = Path(path)
    if not path.is_dir():
        return input_file(path)
    names = list(names)
    for name in names:
        if (path / name).is_file():
            return path / name
    present = sorted(p.name for p in path.iterdir() if p.is_file())[:8]
    raise FileNotFoundError(f"{path} holds no {' or '.join(names)} (the {what} of split "
                            f"{split!r}); it holds {', '.join(present) or 'no files'}")


def iter_input_files(path: PathLike, pattern: str = "*.json", *, exclude: Iterable[str] = (),
                     what: str = "input file") -> list[Path]:
    """The files an input given as "a file or a folder" stands for.

    Args:
        path: a file (returned alone, checked by :func:`input_file`) or a folder.
        pattern: for a folder, the :meth:`pathlib.Path.glob` pattern its files
            must match, relative to it: ``"*.json"`` the folder itself only,
            ``"**/*.json"`` every level below too.
        exclude: file names (not paths) left out of a folder, e.g.
            ``("metadata.json",)``.
        what: names the files in the error for a folder without any.

    Returns:
        ``[path]``, or the folder's matching regular files in sorted path order
        (other entries, such as sub-folders or files of other names, are
        ignored).

    Raises:
        FileNotFoundError: nothing at ``path``; a folder with no matching file.
        DataFormatError: ``path`` is not a regular file nor a folder.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for name in ("b.json", "a.json", "metadata.json", "notes.txt"):
    ...         _ = Path(d, name).write_text("[]")
    ...     print([p.name for p in iter_input_files(d, exclude=("metadata.json",))])
    ['a.json', 'b.json']
    """
    path = Path(path)
    if not path.is_dir():
        return [input_file(path)]
    skip = set(exclude)
    files = sorted(p for p in path.glob(pattern) if p.is_file() and p.name not in skip)
    if not files:
        raise FileNotFoundError(f"{path} holds no {what} matching {pattern!r}")
    return files


def merge_records(files: Iterable[Path], load: Callable[[Path], Iterable[Any]]) -> list[Any]:
    """The records ``load(file)`` gives for each file, in order, as one list.

    A record ``key`` (:attr:`fastvqa.data.QARecord.key`) may come from one
    file only: a key seen again is a :class:`DataFormatError` naming both files.

    >>> from fastvqa.data.record import QARecord
    >>> load = lambda f: [QARecord(f.stem, "0"), QARecord(f.stem, "1")]
    >>> [r.key for r in merge_records([Path("a.json"), Path("b.json")], load)]
    ['a_0', 'a_1', 'b_0', 'b_1']
    """
    records: list[Any] = []
    seen: dict[str, Path] = {}
    for file in files:
        for record in load(file):
            other = seen.setdefault(record.key, file)
            if other is not file:
                raise DataFormatError(file, f"duplicate record key {record.key!r} (also in "
                                            f"{other})", record=record.key)
            records.append(record)
    return records


def open_text(path: PathLike, *, encoding: str = "utf-8") -> TextIO:
    """A checked regular file opened as text (``newline=""``, for csv).

    >>> import csv, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "q.csv").write_text("qid,answer\\n1,a\\n")
    ...     with open_text(Path(d, "q.csv")) as f:
    ...         print(list(csv.DictReader(f)))
    [{'qid': '1', 'answer': 'a'}]
    """
    return input_file(path).open(newline="", encoding=encoding)


def read_keyed_predictions(
    path: Union[str, Path],
    valid: Callable[[Any], bool],
    *,
    container: str,
    value: Callable[[Any], str],
    types: Iterable[type] = (),
) -> Union[dict, list]:
    """A prediction file that is a JSON object (key -> prediction) or a JSON
    list (predictions in ground-truth order), every non-null entry passing
    ``valid``; read entry by entry (:func:`stream_json`).

    Args:
        valid: accepts one prediction.
        container: how the expected layout is described in the error, e.g.
            ``"{record_key: answer} or a list of answers in ground-truth order"``.
        value: the error text for a rejected prediction (receives it).
        types: exact types (``type(v) is t``) that ``valid`` accepts whatever
            the value: a run of entries of only these types (or null) is
            taken without calling ``valid`` on each.

    Raises:
        DataFormatError: naming the file and, for a bad entry, its key or position.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "p.json").write_text('{"v1_0": 2, "v1_1": null}')
    ...     print(read_keyed_predictions(Path(d, "p.json"), lambda v: isinstance(v, int),
    ...                                  container="{key: index}", value=repr))
    {'v1_0': 2, 'v1_1': None}
    """
    accepted = {type(None), *types}
    with stream_json(path) as doc:
        if doc.kind is not dict and doc.kind is not list:
            raise DataFormatError(doc.path, f"expected a JSON object {container}, got "
                                            f"{doc.kind.__name__}")
        keyed = doc.kind is dict
        data: Union[dict, list] = {} if keyed else []
        position = 0
        for run in doc.batches():
            values = run.values() if keyed else run
            if not set(map(type, values)) <= accepted:
                for key, item in (run.items() if keyed else enumerate(run, start=position)):
                    if item is not None and not valid(item):
                        raise DataFormatError(doc.path, value(item), record=key)
            if keyed:
                data.update(run)  # type: ignore[union-attr]
            else:
                data.extend(run)  # type: ignore[union-attr]
            position += len(run)
    return data
