# SPDX-License-Identifier: Apache-2.0
"""The one progress bar fastvqa shows (decoding many videos, the demo's stages,
encoding and mining in retrieval).

A bar is drawn only where someone watches: on a terminal (stderr is a tty) or
in a notebook. Where stderr is a file or a pipe (logs, CI, ``2> log``) no bar
is drawn, no carriage returns and no cursor escapes, unless the caller forces
it; long work there writes a plain log line instead, at most one every
:data:`LOG_INTERVAL` seconds (``FASTVQA_PROGRESS_INTERVAL`` changes it), and
a final one when it ends::

    extracting: 120/900 videos, 13.3%, 4.0 videos/s, eta 3m15s
    extracting: 900/900 videos, 100.0%, 5.0 videos/s, done in 3m00s

Work shorter than the interval writes nothing (a log of a quick command stays
clean). :func:`show_progress` is the bar rule for other libraries' bars
(sentence-transformers' ``show_progress_bar``).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from typing import Callable, Optional

#: seconds between two log lines off a terminal (default)
LOG_INTERVAL = 30.0


def log_interval() -> float:
    """:data:`LOG_INTERVAL`, or ``FASTVQA_PROGRESS_INTERVAL`` (seconds, >= 0)
    when set to a number; a value that is not one is ignored."""
    try:
        value = float(os.environ.get("FASTVQA_PROGRESS_INTERVAL", LOG_INTERVAL))
    except ValueError:
        return LOG_INTERVAL
    return value if math.isfinite(value) and value >= 0 else LOG_INTERVAL


def _duration(seconds: float) -> str:
    """``3m15s``, ``1h02m``, ``45s``: whole seconds, for a log line."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


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
    ``enabled``; when stderr is not a terminal (and not ``force``), periodic
    log lines (module doc) every ``interval`` seconds (default
    :func:`log_interval`) by ``clock`` (default ``time.monotonic``).
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
                 position: Optional[int] = None, interval: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.done = total, 0
        self.enabled = bool(enabled) and (bool(force) or stderr_is_terminal())
        # enabled but unwatched: plain lines into the log instead of a bar
        self._log = bool(enabled) and not self.enabled
        self._desc, self._unit = desc, unit
        self._clock = clock
        self._interval = log_interval() if interval is None else float(interval)
        self._began = self._last = clock()
        self._logged = False
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
            if self._log and self.done < self.total:
                now = self._clock()
                if now - self._last >= self._interval:
                    self._last = now
                    self._write_line(now, final=False)
            if not self.enabled:
                return
            if self._bar is not None:
                self._bar.update(n)
            else:
                end = "\n" if self.done >= self.total else ""
                print(f"\r{self._desc}: {self.done}/{self.total}", end=end, file=sys.stderr,
                      flush=True)

    def _write_line(self, now: float, final: bool) -> None:
        elapsed = now - self._began
        rate = self.done / elapsed if elapsed > 0 else 0.0
        share = f", {100.0 * self.done / self.total:.1f}%" if self.total > 0 else ""
        if final:
            tail = f"{'done in' if self.done >= self.total else 'stopped after'} " \
                   f"{_duration(elapsed)}"
        else:
            tail = f"eta {_duration((self.total - self.done) / rate)}" if rate > 0 else "eta ?"
        print(f"{self._desc}: {self.done}/{self.total} {self._unit}s{share}, "
              f"{rate:.1f} {self._unit}s/s, {tail}", file=sys.stderr, flush=True)
        self._logged = True

    def close(self) -> None:
        """Ends the bar; off a terminal, writes the final log line when the
        work wrote one before or lasted an interval (once)."""
        if self._log:
            with self._lock:
                now = self._clock()
                if self._logged or now - self._began >= self._interval:
                    self._write_line(now, final=True)
                self._log = False
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
