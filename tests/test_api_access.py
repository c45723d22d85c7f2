# SPDX-License-Identifier: Apache-2.0
"""Reaching the API: ``import fastvqa`` alone gives every subpackage
(``fastvqa.metrics.grounded_qa``), lazily and without torch; ``dir()`` lists
the lazy names; ``fastvqa --version``."""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fastvqa

#: The fastvqa under test (not a checkout's python/ that may differ from it).
PACKAGE_ROOT = Path(fastvqa.__file__).resolve().parents[1]

#: The subpackages ``fastvqa`` exposes as attributes.
SUBPACKAGES = ["audit", "data", "devi", "evaluation", "llm", "metrics", "nn", "ops", "parse",
               "ragged", "retrieval", "stats", "train", "video"]
#: Those whose names need torch to resolve (``fastvqa.nn``; ``VideoDataset``; the
#: training loop and its batch order).
NEEDS_TORCH = {"fastvqa.nn": None, "fastvqa.video": {"VideoDataset"},
               "fastvqa.train": {"GlobalBatchSampler", "fit", "evaluate", "load_model",
                                 "FitResult"}}


def _run(code: str, *args: str, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT), **(extra_env or {})}
    return subprocess.run([sys.executable, *args, *(["-c", textwrap.dedent(code)] if code else [])],
                          capture_output=True, text=True, env=env, timeout=300)


def test_import_fastvqa_then_every_subpackage_by_attribute():
    """The issue's ``python -c "import fastvqa; fastvqa.metrics.grounded_qa"``:
    an AttributeError before; now each subpackage resolves from the top
    level, and ``import fastvqa`` itself loads no subpackage and not torch."""
    proc = _run("""
        import sys
        import fastvqa

        loaded = sorted(m for m in sys.modules if m.startswith("fastvqa"))
        assert loaded == ["fastvqa", "fastvqa._C", "fastvqa._ext", "fastvqa._lazy"], loaded
        assert "torch" not in sys.modules

        import fastvqa.metrics.grounding as grounding
        assert fastvqa.metrics.grounded_qa is grounding.grounded_qa
        assert "torch" not in sys.modules, "fastvqa.metrics imported torch"
        import fastvqa.video.api as api
        assert fastvqa.video.read_frames is api.read_frames
        import fastvqa.ops.nms_1d
        assert fastvqa.ops.nms_1d is sys.modules["fastvqa.ops.nms_1d"].nms_1d  # not the module
        assert fastvqa.data.load_nextgqa.__module__ == "fastvqa.data.nextgqa"
        assert fastvqa.retrieval.Index.__module__ == "fastvqa.retrieval.index"
        assert fastvqa.errors.CommandError.__module__ == "fastvqa.errors"
        assert fastvqa.evaluation.nextgqa.__name__ == "fastvqa.evaluation.nextgqa"
        assert fastvqa.ragged.Ragged.__module__ == "fastvqa.ragged"
        assert fastvqa.errors.InputError.__module__ == "fastvqa.errors"
        assert "torch" not in sys.modules, "a NumPy-only subpackage imported torch"
        assert fastvqa.nn.__name__ == "fastvqa.nn"
        assert "torch" not in sys.modules, "import fastvqa.nn alone imported torch"
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize("module", ["fastvqa", *(f"fastvqa.{p}" for p in SUBPACKAGES)])
def test_unknown_name_is_an_attribute_error_naming_the_module(module):
    mod = importlib.import_module(module)
    with pytest.raises(AttributeError, match=rf"^module '{module}' has no attribute 'no_such_name'$"):
        getattr(mod, "no_such_name")
    assert not hasattr(mod, "no_such_name")


@pytest.mark.parametrize("module", ["fastvqa", *(f"fastvqa.{p}" for p in SUBPACKAGES)])
def test_dir_lists_and_all_resolves(module):
    """Tab completion sees every public name before it is imported, and every
    name in ``__all__`` resolves."""
    needs = NEEDS_TORCH.get(module, set())
    if needs is None:
        pytest.importorskip("torch")
    mod = importlib.import_module(module)
    listed = set(dir(mod))
    assert set(mod.__all__) <= listed, sorted(set(mod.__all__) - listed)
    assert len(mod.__all__) == len(set(mod.__all__))
    for name in mod.__all__:
        if needs and name in needs and importlib.util.find_spec("torch") is None:
            continue
        assert getattr(mod, name) is not None, name


def test_dir_lists_lazy_names_before_they_are_imported():
    proc = _run("""
        import sys
        import fastvqa
        assert {"metrics", "nn", "video", "data", "retrieval", "evaluation", "ops"} <= set(dir(fastvqa))
        assert "fastvqa.metrics" not in sys.modules, "dir(fastvqa) imported a subpackage"
        import fastvqa.metrics, fastvqa.video, fastvqa.nn
        assert "grounded_qa" in dir(fastvqa.metrics)
        assert "MetricResult" in dir(fastvqa.metrics)
        assert {"read_frames", "VideoDataset", "Clips"} <= set(dir(fastvqa.video))
        assert "SpanHead" in dir(fastvqa.nn)
        assert "nextgqa" in dir(fastvqa.evaluation)
        assert not [m for m in ("fastvqa.metrics.grounding", "fastvqa.video.api", "torch")
                    if m in sys.modules], "dir() imported what it lists"
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize("module", ["fastvqa", *(f"fastvqa.{p}" for p in SUBPACKAGES)])
def test_no_lazy_name_is_shadowed_by_a_submodule(module):
    """Importing ``pkg.x`` binds the module ``x`` on ``pkg``, which would hide
    a lazy export named ``x`` forever (fastvqa.ops therefore imports eagerly:
    its ops share their modules' names). A lazily exported name must not be a
    submodule's name unless it *is* that submodule."""
    mod = importlib.import_module(module)
    subs = {m.name for m in pkgutil.iter_modules(getattr(mod, "__path__", []))}  # a module: none
    for name in sorted(set(mod.__all__) & subs):
        importlib.import_module(f"{module}.{name}")  # what any other import may do first
        value = getattr(mod, name)
        if module == "fastvqa.ops":  # eager: the op was bound over its module at import
            assert callable(value) and not isinstance(value, type(mod)), name
        else:
            assert getattr(value, "__name__", None) == f"{module}.{name}", name


def test_ops_on_numpy_where_torch_import_is_blocked():
    proc = _run("""
        import sys
        sys.modules["torch"] = None  # `import torch` now raises ImportError
        import numpy as np
        import fastvqa.ops as O
        print(O.temporal_iou(np.array([[0.0, 2.0]]), np.array([[1.0, 3.0]]))[0, 0])
    """)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout.split()[-1]) == 1 / 3


def test_video_dataset_without_torch_keeps_its_install_hint():
    """The optional-dependency error passes through the lazy hook unchanged."""
    proc = _run("""
        import sys
        sys.modules["torch"] = None  # `import torch` now raises ImportError
        import fastvqa
        fastvqa.video.read_frames  # needs no torch
        try:
            fastvqa.video.VideoDataset
        except ImportError as err:
            print(err)
        try:
            from fastvqa.video import VideoDataset
        except ImportError as err:
            print(err)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["VideoDataset needs torch; pip install 'fastvqa[torch]'"] * 2


def test_lazy_exports_imports_once_and_caches(tmp_path, monkeypatch):
    """A package of two submodules, one exporting a name and one reached whole."""
    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from fastvqa._lazy import lazy_exports\n"
        "__getattr__, __dir__ = lazy_exports(__name__, {'value': 'impl'}, submodules=('whole',))\n"
        "__all__ = ['value', 'whole']\n")
    (pkg / "impl.py").write_text("import sys\nsys.impl_imports = getattr(sys, 'impl_imports', 0) + 1\n"
                                 "value = 42\n")
    (pkg / "whole.py").write_text("name = 'whole'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delattr(sys, "impl_imports", raising=False)
    import lazypkg

    try:
        assert "lazypkg.impl" not in sys.modules
        assert {"value", "whole"} <= set(dir(lazypkg))
        assert lazypkg.value == 42 and lazypkg.value == 42
        assert sys.impl_imports == 1
        assert vars(lazypkg)["value"] == 42  # cached: the hook is not asked again
        assert lazypkg.whole.name == "whole"
        with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'impl_x'"):
            lazypkg.impl_x
    finally:
        for name in ("lazypkg", "lazypkg.impl", "lazypkg.whole"):
            sys.modules.pop(name, None)


def test_lazy_exports_refuses_a_name_listed_twice():
    from fastvqa._lazy import lazy_exports

    with pytest.raises(ValueError, match=r"\['x'\] listed both"):
        lazy_exports("somepkg", {"x": "mod"}, submodules=("x",))


def test_cli_version():
    proc = _run("", "-m", "fastvqa.cli", "--version")
    assert proc.returncode == 0, proc.stderr
    # argparse ends the line after the version; an unversioned dev build has "".
    assert proc.stdout == f"fastvqa {fastvqa.__version__}".rstrip() + "\n"
    assert proc.stderr == ""
