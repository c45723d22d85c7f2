# SPDX-License-Identifier: Apache-2.0
"""The eager CPU shortcut for torch callers: run the NumPy implementation on
views of plain CPU tensors and wrap its outputs.

A torch call costs what torch charges per tensor (about 2 us for each
``Tensor.numpy()`` view in, and for each ``torch.from_numpy`` wrapper out)
plus whatever Python runs around the kernel. The custom-op route
(:mod:`fastvqa.ops._torch_common`) adds its own input preparation, result
indexing on tensors and, through the dispatcher, tens of microseconds more.
:func:`numpy_on_cpu_tensors` takes the cheapest route where it is exact: the
op's own NumPy path, which returns what the torch path returns for these
inputs, value for value and dtype for dtype.

It applies only when nothing is lost by it, else the call goes on to the
torch path unchanged:

- eager mode: not compiling or tracing, no dispatch or torch-function mode,
  no functorch transform, no forward-mode AD level;
- every array argument is a plain CPU ``torch.Tensor`` (not a subclass,
  fake, meta, sparse or CUDA tensor, nor a negative/conjugate view), none of
  them NumPy or anything else;
- float arguments are float32 or float64 (the dtypes both paths compute in
  natively; mixed ones promote to float64 in both), index arguments int64
  (integer or half-precision floats follow torch's own promotion rules on
  the torch path instead);
- no tensor requires grad while grad mode is on (a differentiable op needs
  autograd; the others detach on the torch path, which handles that case);
  ``Tensor.numpy()`` itself refuses those, and negative, conjugate and sparse
  tensors, which then take the torch path too;
- no ``out=`` tensor (its result must be that very tensor).

Outputs are new tensors over the NumPy outputs' memory (``torch.from_numpy``),
never views of an input: an output that is one (an op that passes an input
through) is copied first.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Iterable
from typing import Callable

import numpy as np

#: Off switch (tests compare the paths by turning it off).
enabled = True

# torch's names, bound on first use so that importing fastvqa never imports torch
_bound = False
_tensor = _int64 = _from_numpy = None
_native: tuple = ()
_plain_eager = _forward_ad = None  # _torch_common's eager-mode test; forward-mode AD
_modules = sys.modules


def _bind_torch() -> None:
    global _bound, _tensor, _int64, _from_numpy, _native, _plain_eager, _forward_ad
    import torch
    import torch.autograd.forward_ad as forward_ad

    from fastvqa.ops import _torch_common

    _tensor, _int64, _from_numpy = torch.Tensor, torch.int64, torch.from_numpy
    _native = (torch.float32, torch.float64)
    _plain_eager, _forward_ad = _torch_common._plain_eager, forward_ad
    _bound = True


def numpy_on_cpu_tensors(floats: Iterable[str], index: Iterable[str] = (),
                         blockers: Iterable[str] = ()) -> Callable:
    """Decorate a public op so that eager calls on plain CPU tensors run its
    NumPy path on ``Tensor.numpy()`` views (the conditions are in the module
    doc). ``floats``/``index``: the names of its float and int64 array
    parameters; ``blockers``: parameters that, when not ``None``, keep the
    call on the torch path (``out``)."""
    floats, index, blockers = tuple(floats), tuple(index), tuple(blockers)

    def decorate(fn: Callable) -> Callable:
        positions = {p.name: i for i, p in enumerate(inspect.signature(fn).parameters.values())
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
        source = _wrapper_source([(name, positions.get(name), name in floats)
                                  for name in floats + index],
                                 [(name, positions.get(name)) for name in blockers])
        # Compiled inside a factory, so that the wrapper closes over ``fn`` and
        # reads this module's globals (``enabled``, torch's bound names) live.
        factory = "def make(fn):\n" + "".join(f"    {line}\n" for line in source.splitlines()) \
            + "    return wrapper\n"
        namespace: dict = {}
        exec(compile(factory, f"<fastvqa eager wrapper of {fn.__name__}>", "exec"),
             globals(), namespace)
        return functools.wraps(fn)(namespace["make"](fn))

    return decorate


def _wrapper_source(arrays: list, blocking: list) -> str:
    """The wrapper of one op, written out for its own parameters.

    The wrapper is generated, not a loop over a parameter table, because it
    runs on every call and the generic loop cost about 3 us more per call
    than this straight-line code (measured at 3 elements; what is left is
    torch's own price of a view in and a tensor out). ``arrays``: ``(name,
    position or None, is_float)``; ``blocking``: ``(name, position or None)``.
    """
    def get(i, name, pos):
        value = f"kwargs.get({name!r})" if pos is None else \
            f"(args[{pos}] if n > {pos} else kwargs.get({name!r}))"
        return f"    x{i} = {value}"

    xs = [f"x{i}" for i in range(len(arrays))]
    lines = ["def wrapper(*args, **kwargs):",
             "    if not enabled or _modules.get('torch') is None:  # None: import blocked",
             "        return fn(*args, **kwargs)",
             "    if not _bound:",
             "        _bind_torch()",
             "    n = len(args)"]
    lines += [get(i, name, pos) for i, (name, pos, _) in enumerate(arrays)]
    # NumPy inputs (or a mix, or a subclass), or no array at all: the usual paths.
    lines += ["    if (" + " or ".join(f"({x} is not None and type({x}) is not _tensor)"
                                      for x in xs) + "):",
              "        return fn(*args, **kwargs)",
              "    if " + " and ".join(f"{x} is None" for x in xs) + ":",
              "        return fn(*args, **kwargs)"]
    for name, pos in blocking:
        lines += [get("b", name, pos), "    if xb is not None:", "        return fn(*args, **kwargs)"]
    # Before any query of the tensors (torch.compile traces this wrapper and
    # must not meet them): anything but plain eager mode.
    lines += ["    if not _plain_eager() or _forward_ad._current_level >= 0:",
              "        return fn(*args, **kwargs)",
              "    try:"]
    for i, (name, pos, is_float) in enumerate(arrays):
        dtype_ok = f"x{i}.dtype in _native" if is_float else f"x{i}.dtype is _int64"
        # Another device or dtype: the usual paths. Tensor.numpy() itself
        # refuses a tensor that requires grad, a negative or conjugate view,
        # a sparse layout: the usual paths too.
        lines += [f"        if x{i} is not None:",
                  f"            if not x{i}.is_cpu or not {dtype_ok}:",
                  "                return fn(*args, **kwargs)",
                  f"            x{i} = x{i}.numpy()"]
    lines += ["    except (RuntimeError, TypeError):",
              "        return fn(*args, **kwargs)"]
    if any(pos is not None for _, pos, _ in arrays):
        lines += ["    args = list(args)"]
    for i, (name, pos, _) in enumerate(arrays):
        lines += [f"    if x{i} is not None:"]
        if pos is None:
            lines += [f"        kwargs[{name!r}] = x{i}"]
        else:
            lines += [f"        if n > {pos}:", f"            args[{pos}] = x{i}",
                      "        else:", f"            kwargs[{name!r}] = x{i}"]
    lines += [f"    return _wrap(fn(*args, **kwargs), ({', '.join(xs)},))"]
    return "\n".join(lines) + "\n"


def _wrap(result, views: tuple):
    """``result`` (an array, or a tuple of arrays and other values) with its
    NumPy arrays as torch tensors; the tuple's type (a NamedTuple) is kept."""
    from_numpy, ndarray = _from_numpy, np.ndarray
    if isinstance(result, ndarray):
        return from_numpy(_owned(result, views))
    if isinstance(result, tuple):
        fields = [from_numpy(_owned(r, views)) if isinstance(r, ndarray) else r for r in result]
        return result._make(fields) if hasattr(result, "_make") else tuple(fields)
    return result


def _owned(array: np.ndarray, views: tuple) -> np.ndarray:
    """``array``, or a copy of it when it is one of the inputs' views or a
    view of one, or is read-only (``torch.from_numpy`` would share or warn).

    One level of ``base`` is enough: an input view's own base is its tensor,
    not an array, so NumPy makes every view derived from it point at it
    directly (it collapses chains of bases only through arrays)."""
    base = array.base
    for view in views:
        if view is not None and (array is view or base is view):
            return array.copy()
    return array if array.flags.writeable else array.copy()
