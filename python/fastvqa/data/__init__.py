# SPDX-License-Identifier: Apache-2.0
"""Loaders for each benchmark's files, returning :class:`QARecord` lists.

Malformed files raise :class:`DataFormatError` naming the file, the record and
the field. Loaders are imported on first use.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_getattr
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


__getattr__ = lazy_getattr(__name__, _LAZY)
