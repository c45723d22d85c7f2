# SPDX-License-Identifier: Apache-2.0
"""The one grammar of every ``fastvqa`` command (issue 31):

- a benchmark is the positional BENCHMARK right after the command word;
- ``--json`` is a flag: print the result as JSON on stdout instead of the table;
- files are written by ``--out FILE`` (repeatable where a command writes
  several), each in the format its suffix names, never over an existing file;
- a printed table's format is ``--table-format``.

The spellings this replaced (``--benchmark NAME``, ``--json FILE``,
``--markdown FILE``, ``--html FILE``, ``--table FILE``, ``--groups-out FILE``)
keep working for one release, hidden from ``--help``; each use prints one
line of the same shape on stderr (:func:`notice`), and giving an old and its
new spelling together is a one-line :class:`~fastvqa.errors.CommandError`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Optional, Sequence

from fastvqa.errors import CommandError

#: What every notice ends with.
REMOVAL = "the old spelling will be removed in the next release"

#: The notices of the running command, printed when it succeeds
#: (:func:`flush_notices`): a failed run prints its one error line only.
_PENDING: list[str] = []


def notice(command: str, old: str, new: str) -> None:
    """Queues the one line an old spelling prints on stderr, the same for
    every command."""
    line = f"fastvqa {command}: {old} is now {new}; {REMOVAL}"
    if line not in _PENDING:
        _PENDING.append(line)


def flush_notices(print_them: bool = True) -> None:
    """Prints the queued notices on stderr (or, ``print_them`` False, drops
    them: the run failed) and empties the queue."""
    if print_them:
        for line in _PENDING:
            print(line, file=sys.stderr)
    _PENDING.clear()


def add_old(p: argparse.ArgumentParser, flag: str, **kwargs) -> argparse.Action:
    """An old spelling, kept for one release and hidden from ``--help``
    (docs/changes.md lists it)."""
    return p.add_argument(flag, help=argparse.SUPPRESS, **kwargs)


class JsonFlag(argparse.Action):
    """``--json``, a flag, which for one release also takes the old optional
    FILE (then stored as ``old_json``). ``--help`` shows it as the flag it
    is (:func:`help_view`); only the old spelling ever gives it a value."""

    shown_as_flag = True

    def __init__(self, option_strings, dest, help=None, **kwargs):
        # default None, not False: a flag off by default shows no default in --help.
        super().__init__(option_strings, dest, nargs="?", const=True, default=None, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        if values is True:
            setattr(namespace, self.dest, True)
        else:
            setattr(namespace, "old_json", values)


def add_json(p: argparse.ArgumentParser, help: str, *, old_file: bool = False) -> None:
    """``--json`` (print JSON instead of the table); ``old_file``: the
    command once wrote ``--json FILE``, still accepted for one release."""
    if old_file:
        p.add_argument("--json", action=JsonFlag, help=help)
        p.set_defaults(old_json=None)
    else:
        p.add_argument("--json", action="store_true", help=help)


def add_benchmark(p: argparse.ArgumentParser, names: Sequence[str], help: str, *,
                  optional: bool = False) -> None:
    """The positional BENCHMARK, with the old ``--benchmark NAME`` hidden.
    Parsed as optional so the old spelling can stand in for it; unless
    ``optional``, ``--help`` shows it as required and :func:`benchmark`
    requires one of the two."""
    action = p.add_argument("benchmark", nargs="?", choices=names, metavar="BENCHMARK",
                            help=help)
    action.shown_required = not optional
    add_old(p, "--benchmark", dest="old_benchmark", metavar="NAME", choices=names)


def benchmark(args: argparse.Namespace, command: str, *, required: bool = True
              ) -> Optional[str]:
    """The benchmark named by the positional, or by the old ``--benchmark``
    (announced); both at once, or neither where one is ``required``, is a
    CommandError. Also stored back as ``args.benchmark``."""
    old = getattr(args, "old_benchmark", None)
    if old is not None:
        if args.benchmark is not None:
            raise CommandError(f"the benchmark is given twice ({args.benchmark} and "
                               f"--benchmark {old}); name it once, right after "
                               f"'fastvqa {command}'")
        notice(command, "--benchmark NAME", f"the positional BENCHMARK (fastvqa {command} "
                                            "NAME ...)")
        args.benchmark = old
    if required and args.benchmark is None:
        raise CommandError(f"name the benchmark right after 'fastvqa {command}'")
    return args.benchmark


def add_out(p: argparse.ArgumentParser, formats: Mapping[str, str], what: str) -> None:
    """``--out FILE``, repeatable, the format by the suffix: ``formats``
    maps each suffix to a description for the help."""
    kinds = ", ".join(f"{s} ({d})" for s, d in formats.items())
    p.add_argument("--out", action="append", metavar="FILE",
                   help=f"write {what} to FILE, in the format its suffix names: {kinds}; "
                        "repeat for several files; never overwrites")


def out_files(args: argparse.Namespace, command: str, formats: Mapping[str, str],
              old: Iterable[tuple[str, Optional[str], Optional[str], str]] = ()
              ) -> list[tuple[Path, str, str]]:
    """``(path, format, option)`` of every file to write: each ``--out``, its
    format ``formats[suffix]`` (another suffix is a CommandError naming the
    supported ones), then each old spelling given, announced. ``old`` holds
    ``(flag, value, format, suffixes)``: a format of None is taken from the
    suffix like ``--out``'s; ``suffixes`` is what the notice says FILE ends in.
    An old spelling together with ``--out`` is a CommandError."""
    new = list(getattr(args, "out", None) or ())
    given = [o for o in old if o[1] is not None]
    if given and new:
        raise CommandError(f"{given[0][0]} FILE is the old spelling of --out FILE; give every "
                           "file with --out")
    files = [(Path(v), out_format(v, formats, command), "--out") for v in new]
    for flag, value, fmt, suffixes in given:
        notice(command, f"{flag} FILE", f"--out FILE (FILE ending in {suffixes})")
        files.append((Path(value), fmt or out_format(value, formats, command), flag))
    return files


def out_format(path: str, formats: Mapping[str, str], command: str) -> str:
    """The format ``--out path`` asks for, by its suffix (any case)."""
    suffix = Path(path).suffix.lower()
    if suffix not in formats:
        raise CommandError(f"--out {path}: fastvqa {command} writes "
                           f"{', '.join(formats)} files (the suffix picks the format), "
                           f"not {suffix or 'no suffix'!r}")
    return formats[suffix]


@contextlib.contextmanager
def help_view(actions: Iterable[argparse.Action]) -> Iterator[None]:
    """While help is formatted: a :class:`JsonFlag` shows as the flag it is
    and a BENCHMARK that :func:`benchmark` requires shows as required
    (argparse would print ``--json [JSON]`` and ``[BENCHMARK]``)."""
    changed = []
    for action in actions:
        if getattr(action, "shown_as_flag", False):
            changed.append((action, action.nargs))
            action.nargs = 0
        elif getattr(action, "shown_required", False):
            changed.append((action, action.nargs))
            action.nargs = None
    try:
        yield
    finally:
        for action, nargs in changed:
            action.nargs = nargs
