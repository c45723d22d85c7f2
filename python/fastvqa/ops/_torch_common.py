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
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

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


def _stream(t: Tensor) -> int:
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else 0


def _allocator(device: torch.device):
    def alloc(shape: tuple, dtype: str) -> Tensor:
        return torch.empty(shape, dtype=_DTYPES[dtype], device=device)

    return alloc


def _prep_float(t: Tensor, dtype: torch.dtype) -> Tensor:
    return t.detach().to(dtype)


def _prep_floats(op: str, **named: Tensor) -> tuple[list[Tensor], torch.dtype]:
    """The float inputs in their compute dtype, and the dtype the op returns
    (the torch counterpart of :func:`fastvqa._arrays.numpy_common_float`)."""
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
    t = t.detach().to(torch.int64)
    return t.contiguous() if t.is_cuda else t


def _check_devices(op: str, **named: Optional[Tensor]) -> None:
    devices = {name: t.device for name, t in named.items() if t is not None}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{n} on {d}" for n, d in devices.items())
        raise ValueError(f"{op}: all inputs must be on the same device, got {listing}")
