# SPDX-License-Identifier: Apache-2.0
"""Writing outputs without overwriting anything and without half-written files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Union


def temp_sibling(path: Path) -> Path:
    """A name beside ``path`` (same folder, so a rename is atomic) that
    nothing else uses: ``.<name>.<pid>.tmp``."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_new(path: Union[str, Path], data: Union[bytes, str]) -> Path:
    """Write ``data`` to ``path``, which must not exist: through a temporary
    name in the same folder, linked into place only once it is complete
    (``os.link`` fails rather than overwrite, also in a race), so a failure
    leaves neither ``path`` nor a partial file. FileExistsError when ``path``
    exists. Creates the parent folders."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        raise FileExistsError(f"{path} exists; refusing to overwrite it (choose another path)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_sibling(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with open(tmp, "xb") as f:
            f.write(raw)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise FileExistsError(f"{path} exists; refusing to overwrite it "
                                  "(choose another path)") from None
        except OSError:  # a file system without hard links: rename (checked above)
            if path.exists():
                raise FileExistsError(f"{path} exists; refusing to overwrite it "
                                      "(choose another path)") from None
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def make_new_folder(path: Union[str, Path], fill: Callable[[Path], None]) -> Path:
    """Create the folder ``path`` (which must not exist) by ``fill(tmp)``
    writing into a temporary sibling folder, renamed into place on success;
    on failure the temporary folder is removed and ``path`` never appears."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        raise FileExistsError(f"{path} exists; refusing to overwrite it (choose another path)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_sibling(path)
    tmp.mkdir()
    try:
        fill(tmp)
        if path.exists():
            raise FileExistsError(f"{path} exists; refusing to overwrite it "
                                  "(choose another path)")
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path
