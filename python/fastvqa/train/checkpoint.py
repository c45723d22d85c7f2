# SPDX-License-Identifier: Apache-2.0
"""What a training run writes into its folder, each file replaced
atomically (written beside, then renamed), so a run killed at any moment
leaves the last complete state:

- ``run.json``: the config, its hash, the feature stores' recipe hashes, the
  versions, and (at the end) the best epoch and metric;
- ``log.jsonl``: one line per epoch (losses, learning rate, metrics, time);
- ``last.pt``: the state after the last finished epoch (model, optimiser,
  schedule, step, the torch random state), what a rerun resumes from
  (``torch.load(weights_only=True)``: no pickled code is run);
- ``best.safetensors``: the weights of the best epoch so far by the chosen
  metric, with the model config, epoch and metrics in its metadata (what
  :func:`fastvqa.train.load_model` reads).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

from fastvqa.errors import InputError

RUN = "run.json"
LOG = "log.jsonl"
LAST = "last.pt"
BEST = "best.safetensors"


def _replace(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON at ``path``, atomically."""
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"
    _replace(path, lambda p: p.write_text(text))


def write_log(folder: Path, history: list) -> None:
    """The run's ``log.jsonl``, one JSON line per finished epoch, written
    from the history ``last.pt`` holds (after it), atomically: a run killed
    between the two files, and resumed, neither loses nor repeats a line."""
    text = "".join(json.dumps(line, sort_keys=True, allow_nan=False) + "\n" for line in history)
    _replace(folder / LOG, lambda p: p.write_text(text))


def save_state(folder: Path, state: dict) -> None:
    """``last.pt``: the resumable state, atomically."""
    import torch

    _replace(folder / LAST, lambda p: torch.save(state, p))


def load_state(folder: Path) -> Optional[dict]:
    """The state ``last.pt`` holds, or None when the run has none yet."""
    import torch

    path = folder / LAST
    if not path.exists():
        return None
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a damaged file: say so, do not guess
        raise InputError(f"{path}: cannot read the run's last state ({type(err).__name__}: "
                         f"{err}); move it aside to train from the start") from None


def save_best(folder: Path, model_state: dict, metadata: dict) -> None:
    """``best.safetensors``: the weights (contiguous CPU copies) with
    ``metadata`` (JSON-encoded values) in the file's header."""
    from safetensors.torch import save_file

    tensors = {k: v.detach().to("cpu").contiguous() for k, v in model_state.items()}
    meta = {k: json.dumps(v, sort_keys=True) for k, v in metadata.items()}
    _replace(folder / BEST, lambda p: save_file(tensors, str(p), metadata=meta))


def read_best(path: Any) -> tuple[dict, dict]:
    """``(tensors, metadata)`` of a ``best.safetensors`` (or a run folder
    holding one)."""
    from safetensors import safe_open

    p = Path(path)
    if p.is_dir():
        p = p / BEST
    if not p.is_file():
        raise InputError(f"{p}: no such weights file (a training run writes {BEST} after "
                         "its first evaluation)")
    try:
        with safe_open(str(p), framework="pt") as f:
            meta = {k: json.loads(v) for k, v in (f.metadata() or {}).items()}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as err:
        raise InputError(f"{p}: not a readable safetensors file ({err})") from None
    if "model" not in meta:
        raise InputError(f"{p}: has no model config in its metadata (not written by "
                         "fastvqa train)")
    return tensors, meta


__all__ = ["BEST", "LAST", "LOG", "RUN", "load_state", "read_best", "save_best",
           "save_state", "write_json", "write_log"]
