# SPDX-License-Identifier: Apache-2.0
"""The one progress bar fastvqa shows (decoding many videos, the demo's stages,
encoding and mining in retrieval).

A bar is drawn only where someone watches: on a terminal (stderr is a tty) or
in a notebook. Where stderr is a file or a pipe (logs, CI, ``2> log``) nothing
is written, no carriage returns and no cursor escapes, unless the caller
forces it. :func:`show_progress` is the same rule for other libraries' bars
(sentence-transformers' ``show_progress_bar``).
"""

from __future__ import annotations

import sys
import threading
from typing import Optional


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (or the process runs in a Jupyter kernel,
    whose bars are widgets)."""
    if "ipykernel" in sys.modules:
        return True
    try:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def show_progress(requested: Optional[bool] = None) -> bool:
    """Whether to draw a bar for a ``progress=`` argument: None (the usual
    default) only if stderr is a terminal (:func:`stderr_is_terminal`), True
    always (forced, also into a log), False never."""
    if requested is None:
        return stderr_is_terminal()
    return bool(requested)


class Progress:
    """tqdm when installed, else a one-line counter on stderr; nothing when not
    ``enabled``, and nothing when stderr is not a terminal unless ``force``.
    For a ``progress=None|True|False`` argument (:func:`show_progress`) pass
    ``Progress(n, progress is not False, force=progress is True)``.
    ``update`` is thread-safe (decoding workers call it); ``done`` counts
    either way.

    ``leave=False`` removes the bar when it closes and ``position`` picks its
    line (tqdm's meanings): an inner bar nested under an outer one takes
    ``position=1, leave=False``.
    """

    def __init__(self, total: int, enabled: bool = True, desc: str = "decoding",
                 unit: str = "video", *, force: bool = False, leave: bool = True,
                 position: Optional[int] = None):
        self.total, self.done = total, 0
        self.enabled = bool(enabled) and (bool(force) or stderr_is_terminal())
        self._desc = desc
        self._lock = threading.Lock()
        self._bar = None
        if self.enabled:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(total=total, desc=desc, unit=unit, leave=leave,
                                 position=position, file=sys.stderr)
            except ImportError:
                pass

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            if not self.enabled:
                return
            if self._bar is not None:
                self._bar.update(n)
            else:
                end = "\n" if self.done >= self.total else ""
                print(f"\r{self._desc}: {self.done}/{self.total}", end=end, file=sys.stderr,
                      flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
