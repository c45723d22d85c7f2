# SPDX-License-Identifier: Apache-2.0
"""Output files of the command line: nothing the user has is overwritten,
and a failed run leaves nothing half-written.

:class:`OutputFiles` collects a command's output paths, refuses each before any
work when something already exists under the name that will be written (or
two outputs share a path), hands out temporary names in the same folder to
write to, and moves them into place only when every output was written
(:meth:`OutputFiles.commit`). On failure every temporary file, and every
folder the run created for its outputs, is removed.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Optional, Union

from fastvqa.evaluation import CommandError

PathLike = Union[str, Path]


class OutputError(CommandError):
    """An output path cannot be used (it exists, it is given twice, its
    folder cannot be made): a :class:`~fastvqa.evaluation.CommandError`, so
    the command line prints it as one line."""


class OutputFiles:
    """A command's outputs, written through temporary names.

    Use::

        outputs = OutputFiles()
        pq = outputs.add(args.per_question, "--per-question")   # checks now
        ...                                                     # all the work
        with outputs:                                           # cleans up on error
            write(outputs.temp(pq))
            outputs.commit()
    """

    def __init__(self) -> None:
        self._finals: dict[Path, str] = {}
        self._temps: dict[Path, Path] = {}
        self._made_dirs: list[Path] = []

    def add(self, path: Optional[PathLike], what: str) -> Optional[Path]:
        """Registers the output ``path`` (the exact name that will be written;
        None: no such output) for option ``what``; refuses an existing path
        (also a dangling link) and a path already given for another output."""
        if path is None:
            return None
        path = Path(path)
        if str(path) == "" or path.name in ("", ".", ".."):
            raise OutputError(f"{what}: {str(path)!r} is not a file name")
        if os.path.lexists(path):
            raise OutputError(f"{path} exists; refusing to overwrite it (choose another path)")
        real = Path(os.path.realpath(path))
        for other, other_what in self._finals.items():
            if Path(os.path.realpath(other)) == real:
                raise OutputError(f"{what} and {other_what} name the same file {path}; "
                                  "give each its own path")
        parent = path.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise OutputError(f"{what}: cannot write {path}: {parent} is not a folder")
        self._finals[path] = what
        return path

    def temp(self, final: Path) -> Path:
        """A fresh temporary name in ``final``'s folder (made if missing;
        removed again on failure). Nothing exists under it yet."""
        if final not in self._finals:
            raise KeyError(f"{final} was not added")
        folder = final.parent
        missing = []
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for d in reversed(missing):
            try:
                d.mkdir()
            except OSError as err:
                raise OutputError(f"cannot make the folder {d}: {err.strerror}") from None
            self._made_dirs.append(d)
        tmp = final.parent / f".{final.name}.{uuid.uuid4().hex[:12]}.part"
        self._temps[final] = tmp
        return tmp

    def commit(self) -> None:
        """Moves every temporary file to its final name. Refuses (and keeps
        nothing) when a final name appeared meanwhile."""
        for final, tmp in self._temps.items():
            if not tmp.exists():
                raise OutputError(f"{final} was not written")
            if os.path.lexists(final):
                raise OutputError(f"{final} appeared while this command ran; refusing to "
                                  "overwrite it")
        for final, tmp in self._temps.items():
            os.replace(tmp, final)
        self._temps.clear()
        self._made_dirs.clear()

    def discard(self) -> None:
        """Removes the temporary files and the folders made for them."""
        for tmp in self._temps.values():
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        self._temps.clear()
        for d in reversed(self._made_dirs):
            try:
                d.rmdir()
            except OSError:  # not empty (something else wrote there): keep it
                pass
        self._made_dirs.clear()

    def __enter__(self) -> "OutputFiles":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None or self._temps:
            self.discard()
