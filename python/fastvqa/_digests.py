# SPDX-License-Identifier: Apache-2.0
"""What a run read, byte for byte: the sha256 of files and folders that the
records fastvqa writes beside its outputs carry (``fastvqa eval --json``'s
``inputs``, a feature store's source videos, a checkpoint's weights), so that
two results can be traced to the same inputs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any


def sha256_file(path: Any) -> str:
    """The hex sha256 of the file ``path``'s bytes (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def input_digests(inputs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What each input was, byte for byte: ``{keyword: {"path": str,
    "sha256": hex}}`` for a file; for a folder ``{"path": str, "files":
    {relative/path: hex}}``, one sha256 per regular file below it (every
    level, hidden files included, links followed), sorted by its
    ``/``-separated relative path. Inputs that are None are left out."""
    out: dict[str, dict[str, Any]] = {}
    for name, value in inputs.items():
        if value is None:
            continue
        path = Path(value)
        if path.is_dir():
            files = {f.relative_to(path).as_posix(): f for f in path.rglob("*") if f.is_file()}
            out[name] = {"path": str(value),
                         "files": {rel: sha256_file(files[rel]) for rel in sorted(files)}}
        else:
            out[name] = {"path": str(value), "sha256": sha256_file(path)}
    return out
