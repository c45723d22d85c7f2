# SPDX-License-Identifier: Apache-2.0
"""The one way a command names a user's Python function: ``module:function``
or ``path/file.py:function`` (``--llm``, ``--vlm``, a text model)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable

from fastvqa.errors import InputError


def load_callable(spec: str, what: str, *, error: type = InputError,
                  expected: str = "module:function") -> Callable:
    """The function ``spec`` names: ``module:function`` (the current folder is
    searched for modules too) or ``path/file.py:function``. Anything else
    raises ``error`` (one line starting with ``what``, e.g. ``"--llm
    'x:y'"``; ``expected`` says what would have been right).

    >>> load_callable("os.path:join", "--fn 'os.path:join'")("a", "b")
    'a/b'
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise error(f"{what}: expected {expected}")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise error(f"{what}: no such file {path}")
            loaded = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.append(os.getcwd())
            module = importlib.import_module(module_name)
    except error:
        raise
    except ImportError as err:
        raise error(f"{what}: cannot import {module_name} ({err})") from None
    except Exception as err:  # the user's module failed while importing
        raise error(f"{what}: importing {module_name} failed: {type(err).__name__}: "
                    f"{err}") from None
    fn = getattr(module, attr, None)
    if fn is None:
        raise error(f"{what}: {module_name} has no {attr!r}")
    if not callable(fn):
        raise error(f"{what}: {attr} is not callable")
    return fn


__all__ = ["load_callable"]
