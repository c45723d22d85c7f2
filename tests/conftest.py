# SPDX-License-Identifier: Apache-2.0
"""Shared test setup: the device axis and the two CUDA skip reasons."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import fastvqa

# When a hypothesis test fails, hypothesis imports its patch writer, which (if
# libcst is installed) imports mypy_extensions and trips a DeprecationWarning;
# under ``filterwarnings = error`` that would turn an ordinary failure into a
# pytest INTERNALERROR. Importing it once here, quietly, keeps failures readable.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import hypothesis.extra._patching  # noqa: F401
    except ImportError:  # libcst not installed: nothing to pre-import
        pass


def cuda_skip_reason() -> str | None:
    """Why CUDA tests cannot run here, or None when they can.

    "Not built with CUDA" and "no GPU" are different problems (a wrong wheel
    versus a wrong machine), so they are reported differently. Queried lazily,
    never at import time.
    """
    if not fastvqa.build_info()["cuda"]:
        return "fastvqa was built without CUDA kernels (FASTVQA_ENABLE_CUDA=OFF or no nvcc)"
    try:
        import torch
    except ImportError:
        return "torch is not installed (CUDA tests allocate through torch)"
    if not torch.cuda.is_available():
        return "no CUDA device visible to torch (CUDA build, but no GPU or driver here)"
    if fastvqa._C.cuda_device_count() == 0:
        return "no CUDA device visible to fastvqa's runtime"
    return None


def pytest_collection_modifyitems(config, items):
    reason = None
    checked = False
    for item in items:
        if item.get_closest_marker("cuda") is None:
            continue
        if not checked:
            reason, checked = cuda_skip_reason(), True
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


#: Parametrize a test over devices: ``@pytest.mark.parametrize("device", DEVICES)``.
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


@pytest.fixture(autouse=True)
def _restore_rng_state():
    """Tests may seed freely without leaking into each other."""
    py_state = random.getstate()
    np_state = np.random.get_state()
    yield
    random.setstate(py_state)
    np.random.set_state(np_state)


#: The variable that points the tests at a folder of public annotation files
#: (NExT-GQA, WildQA, DVD, SOK-Bench...; see the README's "Tests" section).
SHARED_DATA_VARIABLE = "FASTVQA_TEST_DATA"
#: Why a test that reads those files is skipped where they are absent.
SHARED_DATA_SKIP = (f"needs the public annotation files: set {SHARED_DATA_VARIABLE} to a folder "
                    "holding them (nextgqa/, wildqa/, dvd/, sokbench/), or put them at "
                    "../shared/data beside the project")


def shared_data_dir():
    """The folder of real annotation files, or None where it is absent:
    ``$FASTVQA_TEST_DATA`` when set (``$FASTVQA_SHARED_DATA``, its older
    name, otherwise), else ``../shared/data`` beside the project. The one
    place the tests look for it."""
    import os
    from pathlib import Path

    env = os.environ.get(SHARED_DATA_VARIABLE) or os.environ.get("FASTVQA_SHARED_DATA")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    return path if path.is_dir() else None


@pytest.fixture
def shared_data():
    """Path to the real annotation files (:func:`shared_data_dir`); skips the
    test, naming ``FASTVQA_TEST_DATA``, where they are absent."""
    path = shared_data_dir()
    if path is None:
        pytest.skip(SHARED_DATA_SKIP)
    return path


def assert_opcheck(op, args, **kwargs):
    """``torch.library.opcheck`` raises on a failed check; this also asserts
    that every check it ran reported success, so a test using it states its
    expectation."""
    import warnings

    import torch

    with warnings.catch_warnings():
        # opcheck's own machinery (fake tensors, AOT dispatch) warns from inside
        # torch on some releases (2.14: "The .grad attribute of a Tensor that is
        # not a leaf ..." from torch._subclasses.meta_utils). Only warnings whose
        # origin is a torch module are let through; fastvqa's stay errors.
        warnings.filterwarnings("default", module=r"torch(\.|$)")
        results = torch.library.opcheck(op, args, **kwargs)
    assert results and all(v == "SUCCESS" for v in results.values()), results


def to_np(x) -> np.ndarray:
    """A result as a NumPy array: torch tensors detached and copied to the host
    (float16/bfloat16 widened to float32, which NumPy lacks or holds exactly);
    anything else through ``np.asarray``."""
    import torch

    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.dtype in (torch.float16, torch.bfloat16):
            x = x.float()
        return x.numpy()
    return np.asarray(x)
