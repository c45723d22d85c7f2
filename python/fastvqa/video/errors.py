# SPDX-License-Identifier: Apache-2.0
"""The error every video reader raises for a file it cannot decode."""

from __future__ import annotations

from typing import Any

from fastvqa.errors import InputError


class VideoError(InputError):
    """A video file cannot be read: missing, empty, truncated, corrupt,
    audio-only, or in a container or codec the backend does not support. An
    :class:`fastvqa.errors.InputError` (so a ``ValueError``).

    The message names the file and the reason, e.g.
    ``clip.mp4: no video stream (audio only: 1 audio stream)``. ``path`` and
    ``reason`` are kept as attributes for programs that sort failures.
    """

    def __init__(self, path: Any, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")

    def __reduce__(self):  # picklable across DataLoader worker processes
        return (type(self), (self.path, self.reason))
