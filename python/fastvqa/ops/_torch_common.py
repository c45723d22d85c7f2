# SPDX-License-Identifier: Apache-2.0
"""What every ``torch.library`` registration of an op shares: dtype promotion
(float16/bfloat16 computed in float32), input preparation, output allocation
on the input's device, the caller's current CUDA stream.

Each op registers its custom ops in ``_torch_<op>.py`` (so code calling them
compiles under ``torch.compile(fullgraph=True)``); importing one imports
torch, and the public wrappers import it only when they receive a torch
tensor. Tensors reach the compiled core through DLPack (no copy, no libtorch
link); outputs are allocated with ``torch.empty`` on the input's device, and
CUDA work is queued on the caller's current stream.

The public entry points of every ``_torch_<op>`` module detach their float
inputs unless the op has a gradient: a result that claimed to need one would
only fail later, in backward(). Index inputs (lengths, offsets, spans) are
integer tensors, which never require grad, and anything else is refused by
:func:`_prep_index`, so they are passed as they are.

The eager fast path: going through the ``torch.library`` dispatcher costs tens
of microseconds a call (schema parsing of the arguments, the autograd and
fake-tensor machinery, then a DLPack export of every input and output), more
than the kernel itself on small inputs. Each op's body is therefore written
once, as ``_<op>_body(call, ...)`` taking a kernel runner: the custom op runs
it with :func:`_call` (DLPack, the current stream), and the entry point runs
it directly with :func:`_call_cpu` when :func:`_fast` says nothing is lost by
skipping the dispatcher (plain CPU tensors, eager mode, no tracing, mode,
functorch transform or gradient). ``_call_cpu`` hands the kernel NumPy views
of the tensors (``Tensor.numpy()`` shares memory; the compiled core reads them
through the buffer protocol into the same ``TensorView`` a DLPack import
gives, so it is the same kernel) and allocates outputs and scratch with
``numpy.empty``, as the NumPy path does; the outputs are returned as
``torch.from_numpy`` tensors: new CPU tensors with the dispatcher path's
dtype, shape and values, writable, picklable and shareable
(``share_memory_``), whose storage (NumPy's) cannot be resized in place
(``resize_`` to a larger size raises). Allocating them with ``torch.empty``
instead cost about 4x the whole NumPy call at small sizes (a Python tensor
created and freed per output and per scratch array). Float32/float64 calls
without gradients never get here: :mod:`fastvqa.ops._eager` runs the public
op's NumPy path on them before the torch path starts.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.autograd.forward_ad as _forward_ad
from torch import Tensor

from fastvqa._arrays import numpy_alloc as _numpy_alloc

_NATIVE = (torch.float32, torch.float64)
_INTEGER = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}


def _float_dtype(op: str, **named: Tensor) -> torch.dtype:
    """The dtype an op computes in and returns, from its float inputs."""
    result = None
    for name, t in named.items():
        if not (t.dtype.is_floating_point or t.dtype in _INTEGER):
            raise TypeError(f"{op}: {name} must hold real numbers, got {t.dtype}")
        dt = t.dtype if t.dtype.is_floating_point else torch.get_default_dtype()
        result = dt if result is None else torch.promote_types(result, dt)
    return result  # type: ignore[return-value]


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype in _NATIVE else torch.float32


def _stream(device: torch.device) -> int:
    """The caller's current CUDA stream on ``device`` (0 on the CPU)."""
    return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0


def _call(fn, device: torch.device, *args):
    """Run kernel ``fn`` on ``args`` (tensors exported through DLPack) on
    ``device``: the dispatcher path, inside the custom ops."""
    return fn(*args, _stream(device), _allocator(device))


def _call_cpu(fn, device: torch.device, *args):
    """Run kernel ``fn`` as :func:`_call` does, without the dispatcher: CPU
    tensors go in as NumPy views, outputs (and scratch) are NumPy arrays, and
    the outputs come back wrapped as torch tensors (``torch.from_numpy``)."""
    out = fn(*[a.numpy() if type(a) is Tensor else a for a in args], 0, _numpy_alloc)
    if type(out) is tuple:
        return tuple(torch.from_numpy(o) for o in out)
    return torch.from_numpy(out)


# Bound once: _fast runs on every eager call.
_is_compiling = torch.compiler.is_compiling
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._is_torch_function_mode_enabled
_transforms = torch._C._are_functorch_transforms_active
_tracing = torch._C._get_tracing_state
_grad_enabled = torch.is_grad_enabled


def _plain_eager() -> bool:
    """True in plain eager mode: not compiling or tracing, no dispatch or
    torch-function mode, no functorch transform (both eager shortcuts,
    :func:`_fast` and :mod:`fastvqa.ops._eager`, require it)."""
    return not (_is_compiling() or _dispatch_modes() or _function_modes() or _transforms()
                or _tracing() is not None)


def _fast(*tensors: Optional[Tensor], grad: bool = False) -> bool:
    """True when an eager call may skip the dispatcher (see the module doc):
    not compiling or tracing, no dispatch or torch-function mode, no functorch
    transform, every tensor a plain CPU ``torch.Tensor`` (not a subclass,
    fake, meta or CUDA tensor, nor a negative-bit view, which has no NumPy
    view) and, for an op with a gradient (``grad``), no tensor needing one
    (nor forward-mode AD)."""
    if not _plain_eager():
        return False
    for t in tensors:
        if t is not None and (type(t) is not Tensor or not t.is_cpu or t.is_neg()):
            return False
    if grad and (_forward_ad._current_level >= 0
                 or (_grad_enabled() and any(t is not None and t.requires_grad
                                             for t in tensors))):
        return False
    return True


def _fast_autograd(*tensors: Optional[Tensor]) -> bool:
    """True when an eager call that needs a gradient may take it through a
    plain ``torch.autograd.Function`` on the NumPy path instead of the
    registered custom op: :func:`_fast`'s conditions, gradients recorded
    (``torch.is_grad_enabled()``) and no forward-mode AD. Eager only: under
    ``torch.compile``, tracing, dispatch or torch-function modes and
    functorch transforms the custom op (which those see) runs instead."""
    return _fast(*tensors) and _grad_enabled() and _forward_ad._current_level < 0


def _allocator(device: torch.device):
    def alloc(shape: tuple, dtype: str) -> Tensor:
        try:
            return torch.empty(shape, dtype=_DTYPES[dtype], device=device)
        except RuntimeError as err:
            # torch says "can't allocate memory" (CPU) or raises OutOfMemoryError
            # (CUDA); a MemoryError, as NumPy raises, which the binding prefixes
            # with the op's name.
            if not (isinstance(err, torch.OutOfMemoryError)
                    or "can't allocate memory" in str(err)):
                raise
            size = _DTYPES[dtype].itemsize
            for d in shape:
                size *= int(d)
            raise MemoryError(f"{size / 2**30:.1f} GiB for shape {tuple(shape)} and dtype "
                              f"{dtype} on {device}") from None

    return alloc


def _prep_float(t: Tensor, dtype: torch.dtype) -> Tensor:
    return t.detach().to(dtype)


def _cast(t: Tensor, dtype: torch.dtype) -> Tensor:
    """``t.to(dtype)``, without the call when ``t`` already has it (``to``
    returns ``t`` itself then too)."""
    return t if t.dtype is dtype else t.to(dtype)


def _prep_floats(op: str, **named: Tensor) -> tuple[list[Tensor], torch.dtype]:
    """The float inputs in their compute dtype, and the dtype the op returns
    (the torch counterpart of :func:`fastvqa._arrays.numpy_common_float`)."""
    ts = list(named.values())
    first = ts[0].dtype
    if first in _NATIVE and all(t.dtype is first for t in ts):
        # The common case, computed natively: no promotion, no conversion.
        return [t.detach() if t.requires_grad else t for t in ts], first
    out_dtype = _float_dtype(op, **named)
    work = _compute_dtype(out_dtype)
    return [_prep_float(t, work) for t in named.values()], out_dtype


def _prep_index(t: Optional[Tensor], op: str, name: str) -> Optional[Tensor]:
    if t is None:  # optional index inputs (lengths, offsets) pass through
        return None
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise TypeError(f"{op}: {name} must hold integers, got {t.dtype}")
    # Row pointers and lengths are read on the host before launch; on CUDA the
    # copy wants one contiguous block.
    t = _cast(t, torch.int64)  # integers never require grad: nothing to detach
    return t.contiguous() if t.is_cuda else t


def _check_devices(op: str, **named: Optional[Tensor]) -> None:
    if all(t is None or t.is_cpu for t in named.values()):
        return  # the common case, without making a torch.device per tensor
    devices = {name: t.device for name, t in named.items() if t is not None}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{n} on {d}" for n, d in devices.items())
        raise ValueError(f"{op}: all inputs must be on the same device, got {listing}")
