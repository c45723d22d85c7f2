# SPDX-License-Identifier: Apache-2.0
"""fastvqa.video's decoding backends; the ``device`` vocabulary it reads is
fastvqa's one (:mod:`fastvqa._device`, whose names are importable from here
too)."""

from __future__ import annotations

from fastvqa._device import ACCEPTED, Device, gpu_visible, parse_device  # noqa: F401

#: The decoding backends, for every caller (read_frames, the command lines).
BACKENDS = ("auto", "pyav", "dali")
