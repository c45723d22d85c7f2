# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the fastvqa microbenchmarks: command line, timing,
environment description, table printing and JSON output.

Timing model: each implementation gets ``warmup`` untimed calls, then
``repeats`` timed repeats. A repeat runs the call ``number`` times in a loop
(``number`` is chosen once, after warm-up, so that a repeat lasts at least
``--min-repeat-ms``; slow calls get ``number = 1``) and records the time per
call. We report the median and the interquartile range over the repeats. On
CUDA the device is synchronised before and after every repeat, so queued
kernels are counted.

Busy machine (``--busy N``): N extra CPU-bound processes (each a spinning
Python loop) run from before the warm-up until the timing ends, so a result
shows how an implementation degrades when the cores are shared (OpenMP
threads that spin or wait at barriers while descheduled suffer most). They
are stopped (terminated and reaped) when the timing ends, also on an error or
Ctrl-C, and each one exits by itself if the benchmark process dies. ``busy``
is recorded in the JSON config and on the environment line.

Not a test module: file names here never start with ``test_`` so pytest does
not collect them.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, List, Mapping, Optional, Sequence

import numpy as np

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


# ---------------------------------------------------------------- command line


def base_parser(description: str) -> argparse.ArgumentParser:
    """Options every benchmark shares; scripts add their sizes."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: NumPy and CPU torch inputs; cuda: torch CUDA tensors, "
                        "baselines in torch on the GPU")
    p.add_argument("--repeats", type=int, default=15, help="timed repeats per implementation")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls before timing")
    p.add_argument("--min-repeat-ms", type=float, default=20.0,
                   help="fast calls are looped so one repeat lasts at least this long")
    p.add_argument("--seed", type=int, default=0, help="seed of the (single) input draw")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help="folder for the JSON result (created if missing)")
    p.add_argument("--busy", type=_non_negative_int, default=0, metavar="N",
                   help="run N CPU-bound processes from warm-up to the end of the timing "
                        "(a shared machine)")
    return p


def _non_negative_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


# ---------------------------------------------------------------- busy machine

# Each busy process spins in pure Python (no imports beyond os), says it is
# running, and checks every few milliseconds that its parent is still the one
# that started it: if the benchmark is killed outright, the spinner exits too.
_SPIN = (
    "import os, sys\n"
    "parent = int(sys.argv[1])\n"
    "sys.stdout.write('r'); sys.stdout.flush()\n"
    "x = 0\n"
    "while os.getppid() == parent:\n"
    "    for i in range(200000):\n"
    "        x += i\n"
)

_active_busy: List[subprocess.Popen] = []


def busy_pids() -> List[int]:
    """Process ids of the busy processes now running (empty outside :func:`busy_load`)."""
    return [proc.pid for proc in _active_busy]


@contextmanager
def busy_load(n: int) -> Iterator[List[int]]:
    """Run ``n`` CPU-bound processes for the duration of the ``with`` block.

    Yields their process ids once all of them are running. On leaving the
    block (normally, by an exception or by KeyboardInterrupt) each one is
    terminated and reaped; none is left behind. ``n == 0`` does nothing.
    """
    if n < 0:
        raise ValueError(f"busy_load: n must be >= 0, got {n}")
    if _active_busy:
        raise RuntimeError("busy_load: already running (nested busy_load)")
    procs = _active_busy
    try:
        for _ in range(n):
            procs.append(subprocess.Popen(
                [sys.executable, "-S", "-c", _SPIN, str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE))
        for proc in procs:  # wait until each one spins
            if proc.stdout.read(1) != b"r":
                raise RuntimeError(f"busy_load: busy process {proc.pid} did not start "
                                   f"(exit status {proc.poll()})")
        yield [proc.pid for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        procs.clear()


def require_device(device: str) -> None:
    """Fail loudly (exit 2) when --device cuda cannot run; never fall back to CPU."""
    if device != "cuda":
        return
    import torch

    import fastvqa

    problems = []
    if not fastvqa.build_info()["cuda"]:
        problems.append("fastvqa was built without CUDA kernels")
    if not torch.cuda.is_available():
        problems.append(f"torch {torch.__version__} sees no CUDA device")
    elif fastvqa._C.cuda_device_count() == 0:
        problems.append("fastvqa's CUDA runtime sees no device")
    if problems:
        print("--device cuda: " + "; ".join(problems), file=sys.stderr)
        sys.exit(2)


# ---------------------------------------------------------------------- timing


def cuda_sync(device: str) -> Optional[Callable[[], None]]:
    if device != "cuda":
        return None
    import torch

    return torch.cuda.synchronize


def _number(fn: Callable[[], Any], min_repeat_s: float, sync: Callable[[], None],
            clock: Callable[[], float]) -> int:
    """Calls per timed block so that a block lasts about ``min_repeat_s``."""
    t0 = clock()
    fn()
    sync()
    one = clock() - t0
    return 1 if one >= min_repeat_s else min(10_000, math.ceil(min_repeat_s / max(one, 1e-7)))


def _summary(times: Sequence[float], number: int) -> dict:
    q25, med, q75 = np.percentile(times, [25, 50, 75])
    return {
        "median_s": float(med),
        "iqr_s": float(q75 - q25),
        "min_s": float(min(times)),
        "repeats": len(times),
        "number": number,
        "times_s": [float(t) for t in times],
    }


def measure_interleaved(
    fns: Mapping[Any, Callable[[], Any]],
    *,
    repeats: int,
    warmup: int,
    min_repeat_s: float = 0.02,
    sync: Optional[Callable[[], None]] = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict:
    """Time several functions round by round; returns ``{key: seconds per call}``
    (median, IQR, min, all repeats) in :func:`measure`'s format.

    After ``warmup`` untimed calls of each, every one of the ``repeats``
    rounds times one block of calls of each function (a block lasts about
    ``min_repeat_s``), in key order on even rounds and reversed on odd ones.
    Load that comes and goes (other processes, ``--busy``, a neighbour's
    build) then falls on every row of a round alike, so the ratios hold
    where the absolute times drift; the alternating order spreads the cost
    the first call after another function's block meets (the memory it
    left) over both sides. ``clock`` is the wall clock by default;
    ``time.thread_time`` counts only the calling thread's CPU time, for rows
    that all run on one thread and compare work, not waiting.
    """
    sync = sync or (lambda: None)
    keys = list(fns)
    for key in keys:
        for _ in range(max(warmup, 1)):
            fns[key]()
    sync()
    numbers = {key: _number(fns[key], min_repeat_s, sync, clock) for key in keys}
    times: dict = {key: [] for key in keys}
    for r in range(repeats):
        for key in (keys if r % 2 == 0 else keys[::-1]):
            fn, number = fns[key], numbers[key]
            sync()
            t0 = clock()
            for _ in range(number):
                fn()
            sync()
            times[key].append((clock() - t0) / number)
    return {key: _summary(times[key], numbers[key]) for key in keys}


def measure(
    fn: Callable[[], Any],
    *,
    repeats: int,
    warmup: int,
    min_repeat_s: float = 0.02,
    sync: Optional[Callable[[], None]] = None,
) -> dict:
    """Time ``fn()`` alone; returns seconds per call (median, IQR, min, all repeats)."""
    return measure_interleaved({None: fn}, repeats=repeats, warmup=warmup,
                               min_repeat_s=min_repeat_s, sync=sync)[None]


@dataclass
class Impl:
    """One timed row: ``fn()`` runs ``impl`` on inputs of kind ``input``.

    ``ref`` names the fastvqa row (``(impl, input)`` of the same case) this
    baseline is compared with; ``target`` is the minimum speedup
    (baseline time / fastvqa time) we aim for, or None.
    """

    case: str
    impl: str
    input: str
    fn: Callable[[], Any]
    ref: Optional[tuple] = None
    target: Optional[float] = None

    @property
    def key(self) -> tuple:
        return (self.case, self.impl, self.input)


def time_all(impls: Sequence[Impl], args: argparse.Namespace) -> dict:
    """Time every implementation, interleaved round by round
    (:func:`measure_interleaved`), under ``args.busy`` busy processes."""
    with busy_load(getattr(args, "busy", 0)):
        return measure_interleaved({i.key: i.fn for i in impls}, repeats=args.repeats,
                                   warmup=args.warmup, min_repeat_s=args.min_repeat_ms / 1e3,
                                   sync=cuda_sync(args.device))


def report(name: str, title: str, impls: Sequence[Impl], timed: dict, *, work: float,
           rate_unit: str, config: dict, env: dict, out_dir: Path) -> dict:
    """Print the table, the environment line and the target verdicts; write JSON.

    ``work`` is the amount of work per call (spans decoded, pairs compared);
    the rate column is ``work / median``.
    """
    results, rows, missed = [], [], []
    for i in impls:
        t = timed[i.key]
        entry = {"case": i.case, "impl": i.impl, "input": i.input, **t,
                 "rate": work / t["median_s"], "rate_unit": rate_unit, "speedup": None,
                 "compared_to": None, "target": i.target, "target_met": None}
        ratio_cell, target_cell, verdict = "-", "-", "-"
        if i.ref is not None:
            entry["speedup"] = t["median_s"] / timed[(i.case, *i.ref)]["median_s"]
            entry["compared_to"] = f"{i.ref[0]} ({i.ref[1]})"
            ratio_cell = f"{entry['speedup']:.1f}x vs {entry['compared_to']}"
        if i.target is not None:
            entry["target_met"] = entry["speedup"] >= i.target
            target_cell = f">= {i.target:g}x"
            verdict = "PASS" if entry["target_met"] else "FAIL"
            if not entry["target_met"]:
                missed.append(f"{i.case} {i.impl} ({i.input}): {entry['speedup']:.1f}x < {i.target:g}x")
        results.append(entry)
        rows.append([i.case, i.impl, i.input, fmt_time(t["median_s"]), fmt_time(t["iqr_s"]),
                     fmt_rate(entry["rate"]), ratio_cell, target_cell, verdict])
    print(f"\n{title}")
    table = print_table(["case", "implementation", "input", "median", "IQR", rate_unit,
                         "baseline / fastvqa", "target", "verdict"], rows)
    line = environment_line(env, busy=config.get("busy", 0))
    print(line)
    has_targets = any(i.target is not None for i in impls)
    if has_targets:
        print("targets: all met" if not missed else "targets NOT met: " + "; ".join(missed))
    path = write_json(out_dir, name, {
        "config": config, "environment": env,
        "check": {"passed": True, "message": "all implementations agree with fastvqa"},
        "results": results, "targets_met": (not missed) if has_targets else None,
        "table": table, "environment_line": line})
    print(f"wrote {path}")
    return {"results": results, "missed": missed}


# ----------------------------------------------------------------- environment


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_state() -> Optional[str]:
    """Commit of the checkout the scripts run from (the installed build may differ)."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                              capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def environment(device: str) -> dict:
    import torch

    import fastvqa

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count()
    env = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        # Threading knobs that were set (OpenMP waiting changes fastvqa's CPU times).
        "thread_env": {k: v for k, v in sorted(os.environ.items())
                       if k.startswith(("OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_"))},
        "fastvqa": fastvqa.build_info(),
        # Other work on the machine shows up here; the timings are only as good as this.
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "git": _git_state(),
        "device": device,
        "gpu": None,
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = {
            "name": props.name,
            "capability": f"{props.major}.{props.minor}",
            "memory_gib": round(props.total_memory / 2**30, 1),
            "torch_cuda": torch.version.cuda,
            "visible_to_fastvqa": fastvqa._C.cuda_device_count(),
        }
    return env


def environment_line(env: dict, busy: int = 0) -> str:
    """One line describing the machine; ``busy``: the ``--busy`` processes during timing."""
    fv = env["fastvqa"]
    cuda = (f"CUDA {fv['cuda_version']} archs {';'.join(fv['cuda_archs'])}"
            if fv["cuda"] else "no CUDA")
    omp = f"{fv['threads']} thr"
    line = (
        f"CPU: {env['cpu']} | cores: {env['cores']} (usable {env['usable_cores']}, "
        f"load {env['loadavg_at_start'][0]:.2f}) | "
        f"python {env['python']} | numpy {env['numpy']} | "
        f"torch {env['torch']} ({env['torch_threads']} thr) | "
        f"fastvqa {fv['version']} ({cuda}, {omp}, {fv['compiler']})"
    )
    line += f" | busy: {busy}"
    if env["git"]:
        line += f" | checkout {env['git']}"
    if env["thread_env"]:
        line += " | " + " ".join(f"{k}={v}" for k, v in env["thread_env"].items())
    if env["gpu"]:
        g = env["gpu"]
        line += f" | GPU: {g['name']} (sm {g['capability']}, {g['memory_gib']} GiB, torch CUDA {g['torch_cuda']})"
    return line


def to_numpy(x) -> np.ndarray:
    """An implementation's output (torch tensor on any device, or array-like) as NumPy."""
    import torch

    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


# ---------------------------------------------------------------------- output


def fmt_time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def fmt_rate(rate: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if rate >= scale:
            return f"{rate / scale:.2f}{unit}"
    return f"{rate:.1f}"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Print (and return) a Markdown table, so it can be pasted as is."""
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    lines = [
        "| " + " | ".join(str(h).ljust(w) for h, w in zip(headers, widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    for r in rows:
        lines.append("| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |")
    text = "\n".join(lines)
    print(text)
    return text


def write_json(out_dir: Path, name: str, payload: dict) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    payload = {
        "benchmark": name,
        "timestamp_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "argv": sys.argv,
        **payload,
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def fail_check(out_dir: Path, name: str, config: dict, env: dict, message: str) -> None:
    """fastvqa and a baseline disagree: record it, say so, exit 1 (nothing is timed)."""
    print(f"CHECK FAILED: {message}", file=sys.stderr)
    path = write_json(out_dir, name, {"config": config, "environment": env,
                                      "check": {"passed": False, "message": message},
                                      "results": []})
    print(f"wrote {path}", file=sys.stderr)
    sys.exit(1)
