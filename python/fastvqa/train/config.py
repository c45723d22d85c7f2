# SPDX-License-Identifier: Apache-2.0
"""A training run as data: :class:`TrainConfig`, read from a TOML or JSON file
(:func:`load_config`) or built in code.

A config names everything that decides the trained weights: the data (the
benchmark's annotation files, the video and query feature stores), the model
(a :data:`fastvqa.nn.MODELS` name and its sizes), the optimiser and schedule,
the seed, and where the run writes. Its :meth:`TrainConfig.hash` is a sha256
of that content, so a resumed run can check it continues the same run.

Example file (``train.toml``)::

    benchmark = "deveqa"          # how the annotation files are read and scored
    out = "runs/demo"             # a new folder, or the run to resume
    seed = 0

    [data]
    train = "demo/deveqa.json"
    val = "demo/deveqa.json"      # default: the train file
    video_store = "stores/video"
    query_store = "stores/question"

    [model]
    name = "moment_detr"
    hidden = 128

    [optim]
    epochs = 30
    batch_size = 16
    lr = 1e-4
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from fastvqa.errors import InputError


@dataclass(frozen=True)
class DataConfig:
    """Where the examples come from. ``train`` / ``val``: annotation files
    (or folders) of ``TrainConfig.benchmark``, read with
    :func:`fastvqa.data.load_benchmark` at ``train_split`` / ``val_split``;
    ``val`` defaults to ``train``. ``video_store`` / ``query_store``: feature
    stores written by ``fastvqa extract`` (video) and ``fastvqa extract
    --text-recipe`` (the questions). ``workers``: DataLoader worker
    processes (0 reads in the training process)."""

    train: str
    video_store: str
    query_store: str
    val: Optional[str] = None
    train_split: str = "train"
    val_split: str = "val"
    workers: int = 0


@dataclass(frozen=True)
class OptimConfig:
    """AdamW with a linear warm-up over ``warmup`` (a fraction of all steps)
    then a constant rate; gradients clipped to a global norm of ``grad_clip``
    (0: not clipped). ``batch_size`` is per process: ``torchrun`` with N
    processes trains on global batches of ``N * batch_size``. ``amp``:
    mixed precision on a GPU (``"bf16"``, ``"fp16"``, ``"off"``; ignored on
    the CPU)."""

    epochs: int = 20
    batch_size: int = 16
    lr: float = 1e-4
    weight_decay: float = 1e-4
    warmup: float = 0.1
    grad_clip: float = 0.1
    amp: str = "bf16"


@dataclass(frozen=True)
class EvalConfig:
    """Evaluation after each ``every``-th epoch, through the benchmark's exact
    metrics (:mod:`fastvqa.train.scoring`); ``metric`` names the result key
    the best checkpoint is chosen by (higher is better), None: the
    benchmark's headline metric."""

    every: int = 1
    metric: Optional[str] = None


@dataclass(frozen=True)
class TrainConfig:
    """One training run (module notes). ``device``: ``"cpu"``, ``"cuda"`` or
    ``"cuda:K"`` (under ``torchrun`` each process takes its local rank's
    GPU); ``model``: ``{"name": ..., **sizes}`` for
    :func:`fastvqa.nn.build_model`."""

    benchmark: str
    out: str
    data: DataConfig
    model: Mapping[str, Any] = field(default_factory=lambda: {"name": "moment_detr"})
    optim: OptimConfig = field(default_factory=OptimConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    seed: int = 0
    device: str = "cpu"

    def to_dict(self) -> dict:
        """The config as plain JSON-ready data (what :func:`config_from_dict`
        reads back)."""
        out = dataclasses.asdict(self)
        out["model"] = dict(self.model)
        return out

    def hash(self) -> str:
        """sha256 of what decides the weights: everything but ``out``,
        ``device``, ``data.workers`` and ``optim.epochs`` (a run may be
        extended by more epochs and resumed elsewhere)."""
        d = self.to_dict()
        for key in ("out", "device"):
            d.pop(key)
        d["data"].pop("workers")
        d["optim"].pop("epochs")
        text = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


_SECTIONS = {"data": DataConfig, "optim": OptimConfig, "eval": EvalConfig}
_TOP = {f.name for f in dataclasses.fields(TrainConfig)}


def _section(cls, value: Any, where: str):
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected a table of settings, got {type(value).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise InputError(f"{where}: unknown setting(s) {', '.join(unknown)} (the settings are "
                         f"{', '.join(fields)})")
    missing = [n for n, f in fields.items() if f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING and n not in value]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")
    out = {}
    for name, v in value.items():
        default = fields[name].default
        out[name] = _typed(v, default, f"{where}.{name}")
    return cls(**out)


def _typed(v: Any, default: Any, where: str) -> Any:
    """``v`` checked against the default's type (an int where an int is
    expected, a number where a float is, a string where a string is)."""
    if isinstance(default, bool):
        ok = isinstance(v, bool)
    elif isinstance(default, int):
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif isinstance(default, float):
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        v = float(v) if ok else v
    else:  # strings and optional strings
        ok = v is None and default is None or isinstance(v, str)
    if not ok:
        want = type(default).__name__ if default is not None else "str"
        raise InputError(f"{where}: expected {want}, got {type(v).__name__} {v!r}")
    return v


def config_from_dict(d: Mapping[str, Any], *, where: str = "config") -> TrainConfig:
    """A :class:`TrainConfig` from plain data (a parsed TOML or JSON file),
    each setting checked; :class:`~fastvqa.errors.InputError` naming the
    setting otherwise."""
    if not isinstance(d, Mapping):
        raise InputError(f"{where}: expected a table of settings, got {type(d).__name__}")
    unknown = sorted(set(d) - _TOP)
    if unknown:
        raise InputError(f"{where}: unknown setting(s) {', '.join(unknown)} (the settings are "
                         f"{', '.join(sorted(_TOP))})")
    for name in ("benchmark", "out", "data"):
        if name not in d:
            raise InputError(f"{where}: missing {name}")
    kwargs: dict[str, Any] = {}
    for name in ("benchmark", "out", "device"):
        if name in d:
            kwargs[name] = _typed(d[name], "", f"{where}.{name}")
    if "seed" in d:
        kwargs["seed"] = _typed(d["seed"], 0, f"{where}.seed")
    for name, cls in _SECTIONS.items():
        if name in d:
            kwargs[name] = _section(cls, d[name], f"{where}.{name}")
    if "model" in d:
        model = d["model"]
        if not isinstance(model, Mapping) or not isinstance(model.get("name"), str):
            raise InputError(f"{where}.model: expected a table with a name (e.g. name = "
                             "\"moment_detr\")")
        kwargs["model"] = dict(model)
    config = TrainConfig(**kwargs)
    check_config(config, where)
    return config


def check_config(config: TrainConfig, where: str = "config") -> None:
    """Range checks a type check cannot make (positive sizes, a known
    benchmark and precision); :class:`~fastvqa.errors.InputError`."""
    from fastvqa.data.benchmarks import BENCHMARK_NAMES

    if config.benchmark not in BENCHMARK_NAMES:
        raise InputError(f"{where}.benchmark: {config.benchmark!r} is not one of "
                         f"{', '.join(BENCHMARK_NAMES)}")
    o = config.optim
    for name, value, low in (("epochs", o.epochs, 1), ("batch_size", o.batch_size, 1)):
        if value < low:
            raise InputError(f"{where}.optim.{name}: must be at least {low}, got {value}")
    for name, value in (("lr", o.lr), ("weight_decay", o.weight_decay),
                        ("grad_clip", o.grad_clip)):
        if not value >= 0 or value == float("inf"):
            raise InputError(f"{where}.optim.{name}: must be a finite number >= 0, got {value}")
    if not 0 <= o.warmup < 1:
        raise InputError(f"{where}.optim.warmup: a fraction of the steps in [0, 1), got "
                         f"{o.warmup}")
    if o.amp not in ("bf16", "fp16", "off"):
        raise InputError(f"{where}.optim.amp: one of bf16, fp16, off, got {o.amp!r}")
    if config.eval.every < 1:
        raise InputError(f"{where}.eval.every: must be at least 1, got {config.eval.every}")
    if config.data.workers < 0:
        raise InputError(f"{where}.data.workers: must be >= 0, got {config.data.workers}")
    from fastvqa._device import parse_device

    try:
        parse_device(config.device)
    except (InputError, TypeError) as err:
        raise InputError(f"{where}.device: {err}") from None


def load_config(path: Union[str, Path]) -> TrainConfig:
    """Read a run's config from a ``.toml`` (Python 3.11's ``tomllib``, or
    ``tomli``) or ``.json`` file. Relative paths in it stay relative to the
    current folder (where the command runs)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such config file")
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".toml":
        try:
            import tomllib
        except ImportError:  # Python < 3.11
            try:
                import tomli as tomllib
            except ImportError:
                raise InputError(f"{p}: reading TOML needs Python 3.11+ or `pip install "
                                 "tomli`; or write the config as JSON") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise InputError(f"{p}: not valid TOML ({err})") from None
    elif p.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(f"{p}: not valid JSON ({err.msg} at line {err.lineno})") from None
    else:
        raise InputError(f"{p}: a config is a .toml or .json file")
    return config_from_dict(data, where=str(p))


__all__ = ["DataConfig", "EvalConfig", "OptimConfig", "TrainConfig", "check_config",
           "config_from_dict", "load_config"]
