# SPDX-License-Identifier: Apache-2.0
"""Every output fastvqa writes: nothing the user has is overwritten, and a
failed run leaves nothing half-written. This is the one staged-write
mechanism of the package (the commands and the library's ``save``/``write``
functions all go through it).

:class:`OutputFiles` collects a run's output paths, files or folders, and

- refuses each before any work (:meth:`OutputFiles.add`) when something
  already exists under the name that will be written (also a dangling link;
  :func:`numpy_name` gives the name NumPy writes for a path), when two outputs
  share a path, or when its folder cannot be made;
- hands out temporary names in the output's own folder to write to
  (:meth:`OutputFiles.temp`; the folders missing above it are made, and
  removed again on failure);
- moves every temporary into place only when all of them were written
  (:meth:`OutputFiles.commit`), without overwriting anything even in a race:
  a file is hard-linked to its name (``os.link`` fails where the name exists),
  a folder renamed with ``RENAME_NOREPLACE`` where the system has it, else
  renamed right after a re-check. If one output cannot be placed, the ones
  already placed by this commit are removed again;
- on failure removes every temporary and every folder the run created.

:func:`check_new`, :func:`write_new`, :func:`open_new` and :func:`new_folder`
are the one-output forms.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from fastvqa.errors import CommandError

PathLike = Union[str, Path]

#: hex digits of the random part of a temporary's name (``.<name>.<hex>.part``)
_TEMP_HEX = 12


def leftover_temporaries(final: PathLike, *, folders: bool = False) -> list:
    """The temporary files a killed writer of the file ``final`` left beside
    it (``.<name>.<hex>.part``, the names :meth:`OutputFiles.temp` gives), for
    a rerun that owns ``final`` to remove. ``folders``: ``final`` is a folder
    output, and its temporary folders (``.<name>.<hex>.<random>.part``) are
    returned instead. Links are never returned."""
    final = Path(final)
    if not final.parent.is_dir():
        return []
    if folders:  # tempfile.mkdtemp adds its own random part (letters, digits, _)
        part = re.compile(rf"\.{re.escape(final.name)}\.[0-9a-f]{{{_TEMP_HEX}}}\.[a-z0-9_]+\.part")
    else:
        part = re.compile(rf"\.{re.escape(final.name)}\.[0-9a-f]{{{_TEMP_HEX}}}\.part")
    found = []
    for p in final.parent.glob(f".{glob.escape(final.name)}.*.part"):
        if not part.fullmatch(p.name) or p.is_symlink():
            continue
        if (p.is_dir() if folders else p.is_file()):
            found.append(p)
    return found


class OutputError(CommandError):
    """An output path cannot be used (it is given twice, it is not a file
    name, its folder cannot be made): a :class:`~fastvqa.errors.CommandError`,
    so the command line prints it as one line."""


class OutputExistsError(OutputError, FileExistsError):
    """Something exists under an output's name, or appeared there while the
    run worked; nothing was overwritten. Also a ``FileExistsError``, as the
    library's ``save``/``write`` functions have always raised."""


def numpy_name(path: PathLike, suffix: str = ".npz") -> Path:
    """The name ``np.savez(path, ...)`` (``suffix=".npz"``) or ``np.save``
    (``".npy"``) writes when given the name ``path``: ``path`` itself when it
    ends in ``suffix`` (case-sensitively, as NumPy checks), else ``path`` with
    ``suffix`` appended: ``clip.NPZ`` is written as ``clip.NPZ.npz``."""
    path = Path(path)
    return path if path.name.endswith(suffix) else path.with_name(path.name + suffix)


def _exists_message(path: Path) -> str:
    return f"{path} exists; refusing to overwrite it (choose another path)"


def _libc_renameat2():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):  # not Linux, or a glibc before 2.28
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    fn.restype = ctypes.c_int
    return fn


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100
_renameat2 = _libc_renameat2()


def _rename_no_replace(src: Path, dst: Path) -> None:
    """Renames ``src`` to ``dst``; FileExistsError when ``dst`` exists, also
    when it appears at the last moment where the kernel can say so
    (``renameat2(RENAME_NOREPLACE)``); elsewhere ``dst`` is checked right
    before the rename (a plain rename would replace an empty folder)."""
    if _renameat2 is not None:
        if _renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst),
                      _RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            raise FileExistsError(code, os.strerror(code), str(dst))
        if code not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(code, os.strerror(code), str(dst))
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst))
    os.rename(src, dst)


def _link_no_replace(src: Path, dst: Path) -> None:
    """Gives the file ``src`` the name ``dst`` and drops ``src``;
    FileExistsError when ``dst`` exists (``os.link`` never replaces). Where
    the file system has no hard links, a rename with the same guarantee as a
    folder's (:func:`_rename_no_replace`)."""
    try:
        os.link(src, dst)
    except FileExistsError:
        raise
    except OSError:  # no hard links here (FAT, some network file systems)
        _rename_no_replace(src, dst)
        return
    os.unlink(src)


def remove_path(path: Path) -> None:
    """Removes a file, a link or a whole folder; a missing one is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


class OutputFiles:
    """A run's outputs (files or folders), written through temporary names.

    Use::

        outputs = OutputFiles()
        pq = outputs.add(args.per_question, "--per-question")   # checks now
        ...                                                     # all the work
        with outputs:                                           # cleans up on error
            write(outputs.temp(pq))
            outputs.commit()

    ``with outputs:`` removes the temporaries (and the folders made for them)
    when the block fails, or when it ends without :meth:`commit`.
    """

    def __init__(self) -> None:
        self._finals: dict[Path, str] = {}
        self._folders: set[Path] = set()
        self._temps: dict[Path, Path] = {}
        self._made_dirs: list[Path] = []

    def add(self, path: Optional[PathLike], what: str = "output", *,
            folder: bool = False) -> Optional[Path]:
        """Registers the output ``path`` for option ``what`` (None: no such
        output, None is returned); ``folder``: it is a folder, written whole.
        ``path`` must be the exact name that will be written (for NumPy's own
        naming see :func:`numpy_name`). Refuses, before any work, an existing
        path (also a dangling link: :class:`OutputExistsError`), a path
        already given for another output, and one whose nearest existing
        parent is not a folder (:class:`OutputError`)."""
        if path is None:
            return None
        path = Path(path)
        if str(path) == "" or path.name in ("", ".", ".."):
            raise OutputError(f"{what}: {str(path)!r} is not a file name")
        if os.path.lexists(path):
            raise OutputExistsError(_exists_message(path))
        real = Path(os.path.realpath(path))
        for other, other_what in self._finals.items():
            if Path(os.path.realpath(other)) == real:
                raise OutputError(f"{what} and {other_what} name the same file {path}; "
                                  "give each its own path")
        parent = path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise OutputError(f"{what}: cannot write {path}: {parent} is not a folder")
        self._finals[path] = what
        if folder:
            self._folders.add(path)
        return path

    def temp(self, final: Path) -> Path:
        """A fresh temporary name in ``final``'s folder (the folders missing
        above it are made now, and removed again on failure). For a file
        output nothing exists under it yet (create it exclusively, or let a
        writer create it); for a folder output it is a new empty folder
        (with the permissions ``mkdir`` gives). One temporary per output: a
        second call replaces (and removes) the first."""
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
            except FileExistsError:
                # Another writer (a thread of the same cache) made it meanwhile:
                # it is theirs, so a failure here must not remove it.
                if d.is_dir():
                    continue
                raise OutputError(f"cannot make the folder {d}: it exists and is not a "
                                  "folder") from None
            except OSError as err:
                raise OutputError(f"cannot make the folder {d}: {err.strerror}") from None
            self._made_dirs.append(d)
        if final in self._temps:
            remove_path(self._temps.pop(final))
        prefix = f".{final.name}.{uuid.uuid4().hex[:_TEMP_HEX]}"
        if final in self._folders:
            tmp = Path(tempfile.mkdtemp(prefix=prefix + ".", suffix=".part", dir=final.parent))
            umask = os.umask(0)  # mkdtemp makes 0700; a folder output gets mkdir's mode
            os.umask(umask)
            os.chmod(tmp, 0o777 & ~umask)
        else:
            tmp = final.parent / f"{prefix}.part"
        self._temps[final] = tmp
        return tmp

    def commit(self) -> None:
        """Moves every temporary to its final name. When one was not written,
        or a final name appeared meanwhile (:class:`OutputExistsError`), the
        outputs this call already placed are removed again and nothing of
        the run is kept; what appeared is left as it is."""
        for final, tmp in self._temps.items():
            if not os.path.lexists(tmp):
                raise OutputError(f"{final} was not written")
        placed: list[Path] = []
        try:
            for final, tmp in self._temps.items():
                try:
                    if final in self._folders:
                        _rename_no_replace(tmp, final)
                    else:
                        _link_no_replace(tmp, final)
                except FileExistsError:
                    raise OutputExistsError(f"{final} appeared while this command ran; "
                                            "refusing to overwrite it") from None
                placed.append(final)
        except BaseException:
            for final in placed:
                remove_path(final)
            raise
        self._temps.clear()
        self._made_dirs.clear()

    def discard(self) -> None:
        """Removes the temporaries and the folders made for them (those that
        are still empty: something else may have written there)."""
        for tmp in self._temps.values():
            remove_path(tmp)
        self._temps.clear()
        for d in reversed(self._made_dirs):
            try:
                d.rmdir()
            except OSError:  # not empty: keep it
                pass
        self._made_dirs.clear()

    def __enter__(self) -> "OutputFiles":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None or self._temps:
            self.discard()


def check_new(path: Optional[PathLike], what: str = "output") -> Optional[Path]:
    """The check :meth:`OutputFiles.add` makes, for one output checked before
    a long computation: ``path`` does not exist (:class:`OutputExistsError`),
    is a file name and its nearest existing parent is a folder
    (:class:`OutputError`). Returns ``path`` as a Path (None passes)."""
    return OutputFiles().add(path, what)


@contextlib.contextmanager
def open_new(path: PathLike, mode: str = "xb", what: str = "output",
             **open_kwargs) -> Iterator:
    """``with open_new(path, "x") as f:`` writes the file ``path``, which must
    not exist (:class:`OutputExistsError`, before the block runs), through a
    temporary name in its folder; ``path`` appears, complete, only when the
    block ends without an error, and never replaces a file that appeared
    meanwhile. ``mode`` is ``"x"`` or ``"xb"``; ``open_kwargs`` go to
    :func:`open` (``encoding``, ``newline``)."""
    if mode not in ("x", "xb"):
        raise ValueError(f"open_new: mode must be 'x' or 'xb', got {mode!r}")
    outputs = OutputFiles()
    final = outputs.add(path, what)
    with outputs:
        with open(outputs.temp(final), mode, **open_kwargs) as f:
            yield f
        outputs.commit()


def write_new(path: PathLike, data: Union[bytes, str], what: str = "output") -> Path:
    """Writes ``data`` (bytes, or text as UTF-8) to the new file ``path``
    through :func:`open_new`: FileExistsError (:class:`OutputExistsError`)
    when ``path`` exists, nothing left behind on failure. The missing folders
    above ``path`` are made. Returns ``path``."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with open_new(path, "xb", what) as f:
        f.write(raw)
    return Path(path)


def new_folder(path: PathLike, fill: Callable[[Path], None], what: str = "output") -> Path:
    """Creates the folder ``path`` (which must not exist:
    :class:`OutputExistsError`) by ``fill(tmp)`` writing into a temporary
    folder beside it, moved into place only when ``fill`` returns; on failure
    neither ``path`` nor the temporary folder remains. Returns ``path``."""
    outputs = OutputFiles()
    final = outputs.add(path, what, folder=True)
    with outputs:
        fill(outputs.temp(final))
        outputs.commit()
    return Path(path)
