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


class _NoTensor:
    """Stands for ``torch.Tensor`` until torch's names are bound: no argument
    is of this type, so every call takes the usual paths until then."""


# torch's names, bound on first use so that importing fastvqa never imports torch
_bound = False
_tensor: type = _NoTensor
_from_numpy = _is_compiling = _dispatch_modes = _function_modes = None
_transforms = _tracing = _forward_ad = None
_modules = sys.modules
# NumPy's dtype singletons: Tensor.numpy() views carry them (native byte order)
_f32, _f64, _i64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)


def _bind_torch() -> None:
    global _bound, _tensor, _from_numpy, _is_compiling, _dispatch_modes, _function_modes
    global _transforms, _tracing, _forward_ad
    import torch
    import torch.autograd.forward_ad as forward_ad

    from fastvqa.ops import _torch_common as common

    # _torch_common's eager-mode test (_plain_eager), inlined into the wrappers
    _is_compiling, _dispatch_modes = common._is_compiling, common._dispatch_modes
    _function_modes, _transforms, _tracing = common._function_modes, common._transforms, \
        common._tracing
    _from_numpy, _forward_ad = torch.from_numpy, forward_ad
    _tensor = torch.Tensor
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
        unknown = set(floats + index + blockers) - {p.name for p in params}
        if unknown:
            raise TypeError(f"{fn.__name__} has no parameter {sorted(unknown)}")
        source = _wrapper_source(fn.__name__, params, floats, index, blockers)
        defaults = [p.default for p in params if p.default is not p.empty]
        namespace: dict = {}
        exec(compile(source, f"<fastvqa eager wrapper of {fn.__name__}>", "exec"),
             globals(), namespace)
        return functools.wraps(fn)(namespace["make"](fn, *defaults))

    return decorate


def _wrapper_source(name: str, params: list, floats: tuple, index: tuple,
                    blockers: tuple) -> str:
    """The wrapper of one op, written out with the op's own signature.

    It is generated, not a loop over a parameter table, because it runs on
    every call: with the op's signature Python binds the arguments itself (no
    ``*args``/``**kwargs`` to search), and straight-line tests cost a few
    hundred nanoseconds where a generic loop cost microseconds. What is left
    is torch's own price of a view in and a tensor out. The wrapper is a
    factory ``make(fn, *defaults)``, so that it closes over ``fn`` and the
    defaults and reads this module's globals (``enabled``, torch's bound
    names, ``_wrap``) live.
    """
    sig, call, defaults = [], [], []
    kinds = [p.kind for p in params]
    for p in params:
        if p.kind is p.KEYWORD_ONLY and "*" not in sig and not any(
                k is p.VAR_POSITIONAL for k in kinds):
            sig.append("*")
        text = p.name
        if p.default is not p.empty:
            text += f"=_d{len(defaults)}"
            defaults.append(p.name)
        if p.kind is p.VAR_POSITIONAL:
            sig.append("*" + p.name)
            call.append("*" + p.name)
            continue
        if p.kind is p.VAR_KEYWORD:
            sig.append("**" + p.name)
            call.append("**" + p.name)
            continue
        sig.append(text)
        if p.kind is p.POSITIONAL_ONLY and not any(k is p.POSITIONAL_ONLY
                                                    for k in kinds[params.index(p) + 1:]):
            sig.append("/")
        call.append(p.name if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                    else f"{p.name}={p.name}")
    required = {p.name for p in params if p.default is p.empty}
    arrays = floats + index
    views = {a: f"v{i}" for i, a in enumerate(arrays)}

    def is_tensor(a):  # a required array must be a tensor; an optional one may be None
        test = f"type({a}) is _tensor"
        return test if a in required else f"({a} is None or {test})"

    def dtype_ok(a):
        v = views[a]
        test = f"({v}.dtype is _f32 or {v}.dtype is _f64)" if a in floats else f"{v}.dtype is _i64"
        return test if a in required else f"({v} is None or {test})"

    tensors = [is_tensor(a) for a in arrays]
    if not any(a in required for a in arrays):  # at least one tensor
        tensors.append("(" + " or ".join(f"{a} is not None" for a in arrays) + ")")
    tensors += [f"{b} is None" for b in blockers]
    forwarded = ", ".join(call)
    # The same call with each array argument replaced by its view.
    on_views = ", ".join(views.get(c, c) if "=" not in c else
                         f"{c.split('=')[0]}={views.get(c.split('=')[0], c.split('=')[0])}"
                         for c in call)
    lines = [f"def make(fn, {', '.join(f'_d{i}' for i in range(len(defaults)))}):" if defaults
             else "def make(fn):",
             f"    def {name}({', '.join(sig)}):",
             "        if enabled and " + " and ".join(tensors) + ":",
             # Before any query of the tensors (torch.compile traces this
             # wrapper and must not meet them): anything but plain eager mode
             # takes the usual paths.
             "            if not (_is_compiling() or _dispatch_modes() or _function_modes()",
             "                    or _transforms() or _tracing() is not None",
             "                    or _forward_ad._current_level >= 0):",
             # Tensor.numpy() refuses another device (CUDA, meta), a tensor
             # that requires grad, a negative or conjugate view and a sparse
             # layout: those take the usual paths.
             "                try:"]
    for a in arrays:
        v = views[a]
        lines.append(f"                    {v} = {a}.numpy()" if a in required else
                     f"                    {v} = None if {a} is None else {a}.numpy()")
    lines += ["                except (RuntimeError, TypeError):",
              "                    pass",
              "                else:",
              "                    if " + " and ".join(dtype_ok(a) for a in arrays) + ":",
              f"                        return _wrap(fn({on_views}), ({', '.join(views.values())},))",
              "        elif not _bound and _modules.get('torch') is not None:  # None: import blocked",
              "            _bind_torch()",
              f"            return {name}({forwarded})",
              f"        return fn({forwarded})",
              f"    return {name}"]
    return "\n".join(lines) + "\n"


def _wrap(result, views: tuple):
    """``result`` (an array, or a tuple of arrays and other values) with its
    NumPy arrays as torch tensors; the tuple's type (a NamedTuple) is kept.

    A fresh, writeable array (what the kernels return) goes straight to
    ``torch.from_numpy``; anything else through :func:`_owned` first."""
    ndarray, from_numpy = np.ndarray, _from_numpy
    if type(result) is ndarray:
        if result.base is None and result.flags.writeable:
            return from_numpy(result)
        return from_numpy(_owned(result, views))
    if isinstance(result, tuple):
        fields = []
        for r in result:
            if type(r) is ndarray:
                r = from_numpy(r if r.base is None and r.flags.writeable else _owned(r, views))
            fields.append(r)
        # tuple.__new__: a NamedTuple's fields as they are, without _make's lookups
        return tuple.__new__(type(result), fields)
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
