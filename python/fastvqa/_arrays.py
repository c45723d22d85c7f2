# SPDX-License-Identifier: Apache-2.0
"""Array handling shared by the op wrappers: which framework an argument comes
from, dtype normalisation, output allocation in the caller's framework.

NumPy inputs stay NumPy (zero-copy through the buffer protocol); torch inputs
go through the ``torch.library`` ops of ``fastvqa.ops._torch_<op>`` (zero-copy
through DLPack). torch is never imported here.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def is_torch(x: Any) -> bool:
    """True for a ``torch.Tensor``, without importing torch."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def any_torch(*xs: Any) -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    tensor = torch.Tensor
    for x in xs:  # a loop, not any(genexpr): this runs on every op call
        if isinstance(x, tensor):
            return True
    return False


#: Array arguments of the ops that may be ``None`` (absent).
_OPTIONAL_ARRAYS = frozenset({"lengths", "offsets"})


def require_all_torch(op: str, **named: Any) -> None:
    """Mixing torch tensors with other arrays is a caller error, not a silent
    copy; so is ``None`` for a required array (only ``lengths`` and ``offsets``
    may be absent)."""
    for name, x in named.items():
        if x is None and name not in _OPTIONAL_ARRAYS:
            others = [n for n, v in named.items() if is_torch(v)]
            raise TypeError(f"{op}: {name} is required, got None; pass a torch tensor like "
                            f"{', '.join(others)}")
        if x is not None and not is_torch(x):
            others = [n for n, v in named.items() if is_torch(v)]
            raise TypeError(
                f"{op}: {name} must be a torch tensor like {', '.join(others)}, got "
                f"{type(x).__module__}.{type(x).__qualname__}; convert it with torch.as_tensor"
            )


def numpy_float(x: Any, op: str, name: str) -> np.ndarray:
    """``x`` as a float32/float64 ndarray (no copy when it already is one).

    Integer inputs become float64 (NumPy's promotion); float16 becomes float32.
    Booleans, complex and non-numeric inputs raise TypeError.
    """
    arr = np.asarray(x)
    kind = arr.dtype.kind
    native = arr.dtype.newbyteorder("=")
    if native in _FLOAT_DTYPES:
        # Kernels read native byte order: a byte-swapped (e.g. big-endian file)
        # array is converted here; the casts below already produce native order.
        return arr.astype(native, copy=False)
    if kind == "f" and arr.dtype.itemsize < 4:
        return arr.astype(np.float32)
    if kind in "iu":
        return arr.astype(np.float64)
    raise TypeError(
        f"{op}: {name} must hold real numbers (float32 or float64; integers are converted), "
        f"got dtype {native}"
    )


def numpy_common_float(op: str, **named: Any) -> list[np.ndarray]:
    """The ``named`` inputs as float arrays of one common dtype (float32 only
    when all inputs are, else float64), in the order given."""
    arrays = [numpy_float(x, op, name) for name, x in named.items()]
    dtype = np.result_type(*arrays)
    if dtype not in _FLOAT_DTYPES:  # e.g. longdouble
        raise TypeError(f"{op}: unsupported dtype {dtype}; use float32 or float64")
    return [a if a.dtype == dtype else a.astype(dtype) for a in arrays]


def numpy_index(x: Any, op: str, name: str) -> np.ndarray:
    """``x`` as an int64 ndarray; floats and booleans raise TypeError."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        native = arr.dtype.newbyteorder("=")  # named in native order, as numpy_float does
        raise TypeError(f"{op}: {name} must hold integers, got dtype {native}")
    # The cast also brings a byte-swapped array to native order.
    return arr.astype(np.int64, copy=False)


#: The kernels' allocator for NumPy outputs and scratch: they call
#: ``alloc(shape, dtype_name)``, which is ``np.empty`` itself (no wrapper frame
#: per array).
numpy_alloc = np.empty



def numpy_out(out: Any, op: str, shape: tuple[int, ...], dtype: np.dtype,
              **inputs: np.ndarray) -> np.ndarray:
    """Check a caller's preallocated NumPy output before a kernel writes it.

    ``out`` must be an ndarray of exactly ``shape`` and ``dtype`` (the result
    dtype, native byte order), C-contiguous, writeable, and share no memory
    with any of ``inputs`` (the arrays the kernel reads). Returns ``out``.
    """
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{op}: out must be a NumPy array like the inputs, got "
                        f"{type(out).__module__}.{type(out).__qualname__}")
    if out.shape != shape:
        raise ValueError(f"{op}: out must have shape {shape}, got {out.shape}")
    if out.dtype != dtype:
        raise TypeError(f"{op}: out must have the result dtype {dtype}, got {out.dtype}")
    if not out.flags.c_contiguous:
        raise ValueError(f"{op}: out must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError(f"{op}: out must be writeable")
    for name, x in inputs.items():
        # The bounds test is cheap; the exact test only runs when bounds meet.
        if np.may_share_memory(out, x):
            try:
                shared = np.shares_memory(out, x, max_work=10_000)
            except np.exceptions.TooHardError:
                shared = True
            if shared:
                raise ValueError(f"{op}: out must not overlap the input {name}")
    return out
