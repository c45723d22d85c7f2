# SPDX-License-Identifier: Apache-2.0
"""Package attributes imported on first use (PEP 562 ``__getattr__``/``__dir__``).

The one lazy-export mechanism of fastvqa: every package that defers imports
(the top level and each subpackage but :mod:`fastvqa.ops`) ends with ::

    __getattr__, __dir__ = lazy_exports(__name__, {"name": "submodule", ...},
                                        submodules=("whole_submodule", ...))
    __all__ = sorted(...)  # its public names

so ``pkg.name`` imports ``pkg.submodule`` on first access, ``pkg.whole_submodule``
imports that submodule, and ``dir(pkg)`` (and tab completion) lists both
before either is imported.

A public name must not be the name of a submodule of the package: importing
``pkg.name`` (from anywhere) binds the module to ``pkg.name``, after which the
lazy hook is never asked again. :mod:`fastvqa.ops` names its modules after
their ops, so it imports them eagerly (cheap: NumPy and the extension only).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Iterable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str] | None = None, *,
                 submodules: Iterable[str] = ()
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``.

    Args:
        package: the package's ``__name__``.
        exports: public name -> the submodule (relative to ``package``) that
            defines it.
        submodules: submodules (relative names) reachable as attributes.

    Returns:
        ``(__getattr__, __dir__)``. ``__getattr__(name)`` imports the
        submodule on first access and caches the value in the package, so
        later lookups skip the hook; an unknown name raises ``AttributeError``
        naming the package, as Python's own lookup does. What the import
        raises (e.g. an ``ImportError`` naming the extra to install) is passed
        on unchanged. ``__dir__()`` is the package's globals plus every lazy
        name, sorted.
    """
    exports = dict(exports or {})
    submodules = frozenset(submodules)
    both = submodules.intersection(exports)
    if both:
        raise ValueError(f"{package}: {sorted(both)} listed both as names and as submodules")

    def __getattr__(name: str) -> Any:
        if name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        elif name in exports:
            value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | exports.keys() | submodules)

    return __getattr__, __dir__
