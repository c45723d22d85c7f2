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
_not_eager: tuple = ()  # predicates: compiling, a dispatch or function mode, functorch
_tracing = _forward_ad = None


def _bind_torch() -> None:
    global _bound, _tensor, _int64, _from_numpy, _native, _not_eager, _tracing
    global _forward_ad
    import torch
    import torch.autograd.forward_ad as forward_ad

    _tensor, _int64, _from_numpy = torch.Tensor, torch.int64, torch.from_numpy
    _native = (torch.float32, torch.float64)
    _not_eager = (torch.compiler.is_compiling, torch._C._len_torch_dispatch_stack,
                  torch._C._is_torch_function_mode_enabled,
                  torch._C._are_functorch_transforms_active)
    _tracing, _forward_ad = torch._C._get_tracing_state, forward_ad
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
        params = list(inspect.signature(fn).parameters.values())
        positions = {p.name: i for i, p in enumerate(params)
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
        arrays = [(name, positions.get(name), name in floats) for name in floats + index]
        blocking = [(name, positions.get(name)) for name in blockers]

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not enabled or "torch" not in sys.modules:
                return fn(*args, **kwargs)
            if not _bound:
                _bind_torch()
            # First (torch.compile traces this wrapper, and must not meet the
            # tensor queries below): anything but plain eager mode.
            for active in _not_eager:
                if active():
                    return fn(*args, **kwargs)
            if _tracing() is not None or _forward_ad._current_level >= 0:
                return fn(*args, **kwargs)
            tensor, native, int64 = _tensor, _native, _int64
            found = []
            for name, pos, is_float in arrays:
                x = args[pos] if pos is not None and pos < len(args) else kwargs.get(name)
                if x is None:
                    continue
                # A NumPy input (or a mix), a subclass, another device or
                # dtype: the usual paths.
                if (type(x) is not tensor or not x.is_cpu
                        or not ((x.dtype in native) if is_float else (x.dtype is int64))):
                    return fn(*args, **kwargs)
                found.append((name, pos, x))
            if not found:
                return fn(*args, **kwargs)
            for name, pos in blocking:
                if (args[pos] if pos is not None and pos < len(args)
                        else kwargs.get(name)) is not None:
                    return fn(*args, **kwargs)
            try:
                # Tensor.numpy() itself refuses what has no plain view: a
                # tensor that requires grad, a negative or conjugate view, a
                # sparse layout. Those take the usual paths.
                views = [x.numpy() for _, _, x in found]
            except (RuntimeError, TypeError):
                return fn(*args, **kwargs)
            args = list(args)
            for (name, pos, _), view in zip(found, views):
                if pos is not None and pos < len(args):
                    args[pos] = view
                else:
                    kwargs[name] = view
            return _wrap(fn(*args, **kwargs), views)

        return wrapper

    return decorate


def _wrap(result, views: list):
    """``result`` (an array, or a tuple of arrays and other values) with its
    NumPy arrays as torch tensors; the tuple's type (a NamedTuple) is kept."""
    from_numpy = _from_numpy
    if isinstance(result, np.ndarray):
        return from_numpy(_owned(result, views))
    if isinstance(result, tuple):
        fields = [from_numpy(_owned(r, views)) if isinstance(r, np.ndarray) else r
                  for r in result]
        return type(result)(*fields) if hasattr(result, "_fields") else tuple(fields)
    return result


def _owned(array: np.ndarray, views: list) -> np.ndarray:
    """``array``, or a copy of it when it is (a view of) one of the inputs'
    views or is read-only (``torch.from_numpy`` would share or warn)."""
    if not array.flags.writeable:
        return array.copy()
    node = array
    while type(node) is np.ndarray:  # the chain of bases up to the memory's owner
        for view in views:
            if node is view:
                return array.copy()
        node = node.base
    return array
