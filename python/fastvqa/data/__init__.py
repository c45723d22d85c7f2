# SPDX-License-Identifier: Apache-2.0
"""Loaders for each benchmark's files, returning :class:`QARecord` lists.

Malformed files raise :class:`DataFormatError` naming the file, the record and
the field. Loaders are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from fastvqa.data.errors import DataFormatError
from fastvqa.data.record import QARecord, spans_to_csr

_LAZY = {
    "load_nextgqa": "nextgqa",
    "load_deveqa": "deveqa",
    "load_wildqa": "wildqa",
    "load_dvd": "dvd",
    "load_sokbench": "sokbench",
    "load_activitynet_captions": "moment",
    "load_qvhighlights": "moment",
    "load_qvhighlights_submission": "moment",
}

__all__ = ["DataFormatError", "QARecord", "spans_to_csr", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fastvqa.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"fastvqa.data.{module}"), name)
    globals()[name] = value
    return value
