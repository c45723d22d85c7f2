# SPDX-License-Identifier: Apache-2.0
"""The one progress bar fastvqa shows (decoding many videos, the demo's stages)."""

from __future__ import annotations

import sys
import threading


class Progress:
    """tqdm when installed, else a one-line counter on stderr; nothing when not
    ``enabled``. ``update`` is thread-safe (decoding workers call it)."""

    def __init__(self, total: int, enabled: bool, desc: str = "decoding", unit: str = "video"):
        self.total, self.enabled, self.done = total, enabled, 0
        self._desc = desc
        self._lock = threading.Lock()
        self._bar = None
        if enabled:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(total=total, desc=desc, unit=unit)
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
