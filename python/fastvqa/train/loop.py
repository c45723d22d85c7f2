# SPDX-License-Identifier: Apache-2.0
"""The training loop: :func:`fit`.

Plain PyTorch. One epoch draws its batches from a
:class:`~fastvqa.train.data.GlobalBatchSampler` seeded by ``(seed, epoch)``,
steps AdamW (linear warm-up, then a constant rate) with the gradient norm
clipped, then scores the validation set with the benchmark's exact metrics
(:mod:`fastvqa.train.scoring`), keeps the best weights by the chosen metric,
and writes the resumable state (:mod:`fastvqa.train.checkpoint`).

Resuming: a rerun of the same config in the same folder continues after the
last finished epoch, with the model, optimiser, schedule and torch random
state of that moment and the same batch order, so a run killed mid-epoch and
rerun ends with exactly the weights of a run never killed (on the CPU; GPU
kernels need not be deterministic).

Data parallel: under ``torchrun --nproc_per_node N`` (``WORLD_SIZE`` > 1)
each process joins the group (gloo on the CPU, NCCL on GPUs), trains on its
share of each global batch of ``N * batch_size`` through
``DistributedDataParallel``, scores its share of the validation set, and the
metrics are joined across ranks (``Metric.sync``) before they are computed;
rank 0 writes the files.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

from fastvqa.errors import InputError
from fastvqa.train import checkpoint as ckpt
from fastvqa.train.config import TrainConfig
from fastvqa.train.data import GlobalBatchSampler, make_dataset
from fastvqa.train.scoring import Scorer, headline

#: Batch keys moved to the device (the rest stay lists or CPU tensors).
_TENSORS = ("features", "mask", "query", "query_mask", "gold", "gold_mask", "gold_cw",
            "saliency", "saliency_mask")


class FitResult(NamedTuple):
    """What :func:`fit` returns: the run folder, the best epoch (1-based) and
    its metrics, the metric chosen by, and every epoch's log line."""

    out: Path
    best_epoch: Optional[int]
    best_metrics: dict
    metric: str
    history: list


class _Dist(NamedTuple):
    world: int
    rank: int
    local_rank: int
    owned: bool = False   # the group was started here (and is ended here)


def _distributed(device_type: str) -> _Dist:
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world <= 1:
        return _Dist(1, 0, 0)
    import torch.distributed as dist

    owned = not dist.is_initialized()
    if owned:
        dist.init_process_group("nccl" if device_type == "cuda" else "gloo")
    return _Dist(dist.get_world_size(), dist.get_rank(), int(os.environ.get("LOCAL_RANK", 0)),
                 owned)


def _device(config: TrainConfig, d: _Dist):
    import torch

    from fastvqa._device import parse_device

    parsed = parse_device(config.device) or parse_device("cpu")
    if not parsed.is_cuda:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise InputError(f"device {config.device!r}: no CUDA device is visible to torch")
    index = d.local_rank if parsed.index is None else parsed.index
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def _to(batch: dict, device) -> dict:
    return {k: (v.to(device, non_blocking=True) if k in _TENSORS and hasattr(v, "to") else v)
            for k, v in batch.items()}


def _model_inputs(batch: dict) -> tuple:
    return batch["features"], batch["mask"], batch["query"], batch["query_mask"]


def build_model(config: TrainConfig, dataset: Any):
    """The config's model (:func:`fastvqa.nn.build_model`) for the
    dataset's feature widths, initialised from the config's seed."""
    import torch

    from fastvqa.nn import build_model as build

    item = dataset[0]
    spec = dict(config.model)
    name = spec.pop("name")
    spec.setdefault("video_dim", int(item["features"].shape[-1]))
    spec.setdefault("query_dim", int(item["query"].shape[-1]))
    torch.manual_seed(config.seed)
    return build(name, **spec)


def _out_folder(config: TrainConfig, rank: int) -> tuple[Path, bool]:
    """The run folder, and whether it holds this run to resume. A folder of
    another run (another config hash) or of other files is refused."""
    out = Path(config.out)
    run = out / ckpt.RUN
    if run.exists():
        import json

        try:
            old = json.loads(run.read_text())
        except ValueError:
            raise InputError(f"{run}: not readable JSON; move the folder aside") from None
        if old.get("config_hash") != config.hash():
            raise InputError(f"{out}: holds another training run (its config differs from "
                             "this one's in more than out, device, workers and epochs); give "
                             "a new out folder")
        return out, True
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out}: exists and is not a fastvqa training run (no {ckpt.RUN}); "
                         "give a new or empty out folder")
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
    return out, False


def _autocast(config: TrainConfig, device):
    import torch

    if device.type != "cuda" or config.optim.amp == "off":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if config.optim.amp == "bf16" else torch.float16
    return torch.autocast("cuda", dtype=dtype)


def _loader(dataset, sampler, workers: int):
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_sampler=sampler, collate_fn=type(dataset).collate,
                      num_workers=workers)


def evaluate(model: Any, dataset: Any, benchmark: str, *, batch_size: int = 32, device=None,
             world: int = 1, rank: int = 0, workers: int = 0) -> dict:
    """The benchmark's metrics of ``model`` on ``dataset`` (a
    :class:`~fastvqa.extract.StoreDataset` with a query store); under
    ``torch.distributed`` (``world`` > 1) each rank scores every
    ``world``-th batch and the metrics are joined across ranks, so every
    rank returns the metrics of the whole set."""
    import torch

    net = getattr(model, "module", model)
    device = device or next(net.parameters()).device
    sampler = GlobalBatchSampler(len(dataset), batch_size, shuffle=False)
    scorer = Scorer(benchmark)
    # the step models decode steps to seconds by the steps' own times
    step_times = set(inspect.signature(net.decode).parameters) & {"start", "end"}
    was_training = net.training
    net.eval()
    try:
        with torch.no_grad():
            for k, indices in enumerate(sampler):
                if k % world != rank:
                    continue
                batch = _to(type(dataset).collate([dataset[i] for i in indices]), device)
                out = net(*_model_inputs(batch))
                times = {k: batch[k].to(device) for k in ("start", "end") if k in step_times}
                decoded = net.decode(out, batch["duration"].to(device), mask=batch["mask"],
                                     **times)
                saliency = getattr(out, "saliency", None)
                scorer.update(decoded, batch["records"],
                              None if saliency is None else saliency.float().cpu(),
                              batch["start"], batch["end"])
    finally:
        net.train(was_training)
    return scorer.compute(sync=world > 1)


def fit(config: TrainConfig, *, progress: Optional[bool] = None,
        on_step: Optional[Callable[[int], None]] = None) -> FitResult:
    """Train ``config``'s model on its data (module notes) and return the
    best epoch's metrics. ``progress``: a bar on a terminal (None: when
    stderr is one; off a terminal a line every 30 s); ``on_step(step)``:
    called after every optimiser step (1-based), e.g. to stop a run; an
    exception from it ends the run without writing anything for the
    unfinished epoch."""
    import torch

    from fastvqa._progress import Progress

    d = _distributed("cuda" if "cuda" in config.device else "cpu")
    device = _device(config, d)
    out, resuming = _out_folder(config, d.rank)
    if d.world > 1:   # every rank decides before rank 0 writes anything into the folder
        import torch.distributed as dist

        dist.barrier()
    train_set = make_dataset(config, config.data.train, config.data.train_split)
    val_set = make_dataset(config, config.data.val or config.data.train, config.data.val_split)
    model = build_model(config, train_set).to(device)
    net = model
    if d.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda"
                                      else None)
    sampler = GlobalBatchSampler(len(train_set), config.optim.batch_size, world=d.world,
                                 rank=d.rank, seed=config.seed)
    steps_per_epoch = len(sampler)
    total = steps_per_epoch * config.optim.epochs
    warm = int(config.optim.warmup * total)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.optim.lr,
                                  weight_decay=config.optim.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda"
                                  and config.optim.amp == "fp16")
    metric = config.eval.metric or headline(config.benchmark)
    start_epoch, step, best, history = 0, 0, None, []
    state = ckpt.load_state(out) if resuming else None
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        scaler.load_state_dict(state["scaler"])
        start_epoch, step, best = state["epoch"], state["step"], state["best"]
        history = list(state["history"])
        torch.set_rng_state(state["rng"])
        if device.type == "cuda" and state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(state["cuda_rng"], device)
    if d.rank == 0:
        ckpt.write_json(out / ckpt.RUN, _run_record(config, train_set, d, metric, best))
    loader = _loader(train_set, sampler, config.data.workers)
    for epoch in range(start_epoch, config.optim.epochs):
        sampler.set_epoch(epoch)
        net.train()
        began = time.monotonic()
        sums: dict = {}
        bar = Progress(steps_per_epoch, d.rank == 0 and progress is not False,
                       desc=f"epoch {epoch + 1}/{config.optim.epochs}", unit="step",
                       force=progress is True)
        try:
            for batch in loader:
                batch = _to(batch, device)
                with _autocast(config, device):
                    output = net(*_model_inputs(batch))
                    terms = model.loss(output, batch, **_normalizers(model, batch, d))
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(terms.total).backward()
                if config.optim.grad_clip > 0:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), config.optim.grad_clip)
                scaler.step(optimizer)
                scaler.update()
                schedule.step()
                step += 1
                for k, v in terms._asdict().items():
                    if torch.is_tensor(v) and v.dim() == 0:
                        sums[k] = sums.get(k, 0.0) + float(v.detach())
                bar.update()
                if on_step is not None:
                    on_step(step)
        finally:
            bar.close()
        line = {"epoch": epoch + 1, "step": step, "lr": schedule.get_last_lr()[0],
                "seconds": round(time.monotonic() - began, 3),
                "loss": _mean_over_ranks(sums, steps_per_epoch, d, device)}
        last = epoch + 1 == config.optim.epochs
        if (epoch + 1) % config.eval.every == 0 or last:
            scores = evaluate(model, val_set, config.benchmark,
                              batch_size=config.optim.batch_size, device=device,
                              world=d.world, rank=d.rank)
            if metric not in scores:
                raise InputError(f"eval.metric {metric!r} is not one of this benchmark's "
                                 f"metrics: {', '.join(scores)}")
            # undefined values (a length bucket no query falls in) are null in JSON
            scores = {k: (v if math.isfinite(v) else None) for k, v in scores.items()}
            line["metrics"] = scores
            if best is None or _rank(scores[metric]) > _rank(best["metrics"][metric]):
                best = {"epoch": epoch + 1, "metrics": scores}
                if d.rank == 0:
                    ckpt.save_best(out, model.state_dict(), {
                        "model": dict(config.model, **_dims(model)), "epoch": epoch + 1,
                        "metrics": scores, "benchmark": config.benchmark,
                        "config_hash": config.hash()})
        history.append(line)
        if d.rank == 0:
            ckpt.save_state(out, {
                "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "schedule": schedule.state_dict(), "scaler": scaler.state_dict(),
                "epoch": epoch + 1, "step": step, "best": best, "history": history,
                "rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda"
                else None})
            ckpt.write_log(out, history)
            _report(line, metric)
        if d.world > 1:
            import torch.distributed as dist

            dist.barrier()
    if d.rank == 0:
        ckpt.write_json(out / ckpt.RUN, _run_record(config, train_set, d, metric, best))
    if d.owned:
        import torch.distributed as dist

        dist.destroy_process_group()
    return FitResult(out, None if best is None else best["epoch"],
                     {} if best is None else best["metrics"], metric, history)


def _normalizers(model: Any, batch: dict, d: _Dist) -> dict:
    """Under data parallelism, ``normalizers=`` for a model whose loss
    divides by batch-dependent counts (``loss_counts``): the counts summed
    over the ranks and divided by their number, so that the gradients DDP
    averages are those of one process over the global batch. One process:
    nothing (the model's own counts are the global ones)."""
    counts = getattr(model, "loss_counts", None)
    if d.world == 1 or counts is None:
        return {}
    import torch
    import torch.distributed as dist

    local = counts(batch)
    keys = sorted(local)
    t = torch.tensor([float(local[k]) for k in keys], dtype=torch.float64,
                     device=batch["mask"].device)
    dist.all_reduce(t)
    return {"normalizers": {k: float(v) / d.world for k, v in zip(keys, t.tolist())}}


def _mean_over_ranks(sums: dict, steps: int, d: _Dist, device) -> dict:
    """Each loss term's mean over the epoch's steps (and over the ranks)."""
    out = {k: v / steps for k, v in sorted(sums.items())}
    if d.world == 1 or not out:
        return out
    import torch
    import torch.distributed as dist

    t = torch.tensor(list(out.values()), dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return {k: float(v) / d.world for k, v in zip(out, t.tolist())}


def _rank(value: Optional[float]) -> float:
    return -math.inf if value is None else value


def _dims(model: Any) -> dict:
    config = getattr(model, "config", None)
    return dict(config) if isinstance(config, dict) else {}


def _report(line: dict, metric: str) -> None:
    loss = line["loss"].get("total")
    text = f"epoch {line['epoch']}: loss {loss:.4f}" if loss is not None else \
        f"epoch {line['epoch']}"
    if "metrics" in line and line["metrics"][metric] is not None:
        text += f", {metric} {line['metrics'][metric]:.2f}"
    print(text, file=sys.stderr, flush=True)


def _run_record(config: TrainConfig, dataset: Any, d: _Dist, metric: str,
                best: Optional[dict]) -> dict:
    import torch

    import fastvqa

    return {"config": config.to_dict(), "config_hash": config.hash(),
            "features": getattr(dataset, "recipe_hashes", {}), "metric": metric,
            "best": best, "world_size": d.world,
            "versions": {"fastvqa": fastvqa.__version__, "torch": torch.__version__,
                         "python": sys.version.split()[0]}}


def load_model(path: Any, *, device: Any = "cpu"):
    """The model of a run's ``best.safetensors`` (or of the run folder),
    rebuilt from the config in its metadata, weights loaded, in eval mode."""
    from fastvqa.nn import build_model as build

    tensors, meta = ckpt.read_best(path)
    spec = dict(meta["model"])
    name = spec.pop("name")
    model = build(name, **spec)
    model.load_state_dict(tensors)
    return model.to(device).eval()


__all__ = ["FitResult", "build_model", "evaluate", "fit", "load_model"]
