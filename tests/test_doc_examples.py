# SPDX-License-Identifier: Apache-2.0
"""The ``>>>`` examples in fastvqa's docstrings run as written (as torchmetrics
runs its own): every module of the package is imported and its examples are
checked with :func:`doctest.testmod` (``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``).

A module whose import needs an optional library that is not installed (ray,
DALI, faiss, PyAV, sentence-transformers, open_clip, vLLM, ...) is skipped,
naming the library; any other import error fails.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import os
from pathlib import Path

import pytest

import fastvqa

#: Top-level names of the optional dependencies a module may import at load
#: time; a missing one skips that module instead of failing it.
OPTIONAL = {
    "PIL", "av", "bert_score", "faiss", "matplotlib", "nltk", "nvidia", "open_clip", "ray",
    "rouge_score", "sacrebleu", "safetensors", "scipy", "sentence_transformers", "sklearn",
    "torch", "torchvision", "transformers", "vllm",
}
#: Modules whose examples call an optional library that they import on first
#: use, not at load time: skipped, naming it, when it is missing.
EXAMPLES_NEED = {"fastvqa.llm.images": "PIL", "fastvqa.llm.vision": "PIL"}


def _module_names() -> list[str]:
    """Every module of the package, from its files (importing nothing), in
    dotted-name order. ``__main__`` modules are left out (importing one runs it)."""
    names = set()
    for root in fastvqa.__path__:
        root = Path(root)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__" and not d.startswith(".")]
            rel = Path(dirpath).relative_to(root).parts
            for f in filenames:
                if not f.endswith(".py") or f == "__main__.py":
                    continue
                stem = f[:-3]
                parts = ("fastvqa", *rel) if stem == "__init__" else ("fastvqa", *rel, stem)
                names.add(".".join(parts))
    return sorted(names)


def _missing_optional(err: ImportError) -> str | None:
    """The optional library whose absence ``err`` reports, or None."""
    name = getattr(err, "name", None)
    if name and name.split(".")[0] in OPTIONAL:
        return name
    text = str(err)
    for lib in sorted(OPTIONAL):
        if f"'{lib}" in text or f"No module named {lib}" in text or f"fastvqa[{lib}" in text:
            return lib
    return None


@pytest.mark.parametrize("name", _module_names())
def test_doc_examples(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError as err:
        lib = _missing_optional(err)
        if lib is None:
            raise
        pytest.skip(f"{name} needs the optional library {lib}, which is not installed")
    lib = EXAMPLES_NEED.get(name)
    if lib is not None and importlib.util.find_spec(lib) is None:
        pytest.skip(f"{name}'s examples need the optional library {lib}, which is not installed")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False, report=True)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
