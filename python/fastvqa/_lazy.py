# SPDX-License-Identifier: Apache-2.0
"""Package attributes imported on first use (PEP 562 ``__getattr__``)."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps a public name
    to the submodule defining it; the submodule is imported on first access
    and the value cached in the package, so later lookups skip this hook.

    Usage, in ``<package>/__init__.py``: ``__getattr__ = lazy_getattr(__name__, _LAZY)``.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
