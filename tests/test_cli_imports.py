# SPDX-License-Identifier: Apache-2.0
"""The command line imports only what the command it runs needs: listing the
commands, a command's ``--help`` and an ``extract`` run leave the heavy
optional libraries and the other commands' modules unimported (each check in
a fresh interpreter, whose ``sys.modules`` is the record)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

#: Libraries no command's help needs (each costs 0.05-1 s to import).
HEAVY = ("torch", "torchvision", "open_clip", "av", "faiss", "sklearn", "scipy",
         "sentence_transformers", "safetensors", "matplotlib", "rich", "ray")
#: fastvqa modules of other commands: the evaluation registry (it loads every
#: benchmark's module), retrieval, audit, generate, demo, the metrics.
OTHER_COMMANDS = ("fastvqa.evaluation", "fastvqa.metrics", "fastvqa.retrieval",
                  "fastvqa.audit", "fastvqa.generate", "fastvqa.demo", "fastvqa.stats")

_RUN = """\
import json, sys
from fastvqa.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*args) -> set:
    """The modules a fresh ``python`` holds after ``fastvqa ARGS`` ran in it."""
    import fastvqa

    env = {**os.environ, "PYTHONPATH": str(Path(fastvqa.__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-c", _RUN, *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def _imported(modules: set, names) -> list:
    return sorted(n for n in names if n in modules or any(m.startswith(n + ".") for m in modules))


@pytest.mark.parametrize("args", [["--help"], [], ["--version"], ["extract", "--help"],
                                  ["decode", "--help"], ["store", "--help"]])
def test_help_imports_nothing_heavy(args):
    modules = _modules_after(*args)
    assert _imported(modules, HEAVY) == []
    assert _imported(modules, OTHER_COMMANDS) == []


def test_eval_help_imports_no_extract_or_video():
    modules = _modules_after("eval", "--help")
    assert "fastvqa.evaluation" in modules  # its own registry, listed in the help
    assert _imported(modules, HEAVY) == []
    assert _imported(modules, ("fastvqa.extract", "fastvqa.video", "fastvqa.retrieval",
                               "fastvqa.audit", "fastvqa.generate")) == []


def test_extract_run_imports_only_what_it_runs(tmp_path):
    pytest.importorskip("av")
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    from fastvqa.demo.synth import encode_video, make_scene

    folder = tmp_path / "videos"
    folder.mkdir()
    encode_video(folder / "a.mp4", make_scene(np.random.default_rng(0), 2.0), 2.0)
    modules = _modules_after("extract", folder, "--recipe", "imagenet-frames-1fps",
                             "--model", "fastvqa:tiny-frames", "--out", tmp_path / "store",
                             "--workers", "1", "--no-progress")
    assert (tmp_path / "store").is_dir()
    assert {"torch", "av", "safetensors"} <= modules  # the run did run
    # Neither the other model families nor the other commands.
    assert _imported(modules, ("torchvision", "open_clip", "faiss", "sklearn", "scipy",
                               "sentence_transformers", "ray", "fastvqa.retrieval",
                               "fastvqa.audit", "fastvqa.generate", "fastvqa.demo",
                               "fastvqa.stats")) == []
