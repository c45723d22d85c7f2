# SPDX-License-Identifier: Apache-2.0
"""The benchmark harness's ``--busy N``: N CPU-bound processes run while the
timing runs (from before the warm-up) and none is left afterwards, also when
the timed call raises; every benchmark script records ``busy`` in its config."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load_harness():
    spec = importlib.util.spec_from_file_location("fastvqa_bench_harness", BENCH / "_harness.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


H = _load_harness()


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (Linux: /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _args(busy: int):
    return H.base_parser("test").parse_args(
        ["--busy", str(busy), "--repeats", "2", "--warmup", "1", "--min-repeat-ms", "1"])


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_busy_option_parses_and_rejects_negative(capsys):
    assert H.base_parser("t").parse_args([]).busy == 0
    assert _args(3).busy == 3
    with pytest.raises(SystemExit):
        H.base_parser("t").parse_args(["--busy", "-1"])
    assert "--busy: must be >= 0, got -1" in capsys.readouterr().err


def test_busy_processes_spin_during_timing_and_are_gone_after():
    seen = []

    def fn():
        pids = H.busy_pids()
        seen.append((list(pids), [_running(p) for p in pids]))

    impl = H.Impl("case", "impl", "numpy", fn)
    H.time_all([impl], _args(2))
    # Warm-up and every timed call saw the same two live processes.
    assert len(seen) >= 3
    pids = seen[0][0]
    assert len(pids) == 2 and os.getpid() not in pids
    assert all(p == pids and alive == [True, True] for p, alive in seen)
    assert H.busy_pids() == []
    assert not any(_running(p) for p in pids)  # terminated and reaped


def test_busy_processes_use_cpu():
    import time

    with H.busy_load(1) as pids:
        before = _cpu_ticks(pids[0])
        time.sleep(0.3)
        after = _cpu_ticks(pids[0])
    # A spinning process gets ticks (100 per second) even on a loaded machine.
    assert after - before >= 3
    assert not _running(pids[0])


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_busy_processes_stopped_when_timing_raises(exc):
    pids = []

    def fn():
        pids.extend(H.busy_pids())
        raise exc("boom")

    with pytest.raises(exc):
        H.time_all([H.Impl("case", "impl", "numpy", fn)], _args(2))
    assert len(pids) == 2
    assert not any(_running(p) for p in pids)
    assert H.busy_pids() == []


def test_busy_zero_starts_nothing():
    with H.busy_load(0) as pids:
        assert pids == [] and H.busy_pids() == []


def test_environment_line_says_busy():
    env = {"cpu": "x", "cores": 2, "usable_cores": 2, "loadavg_at_start": [1.0, 1.0, 1.0],
           "python": "3", "numpy": "2", "torch": "2", "torch_threads": 2,
           "fastvqa": {"cuda": False, "threads": 2,
                       "version": "0", "compiler": "gcc"},
           "git": None, "thread_env": {}, "gpu": None}
    assert "| busy: 2" in H.environment_line(env, busy=2)
    assert "| busy: 0" in H.environment_line(env)


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("bench_*.py")))
def test_every_benchmark_records_busy_in_its_config(script):
    text = (BENCH / script).read_text()
    configs = len(re.findall(r"\bconfig = \{", text))
    assert configs >= 1
    assert text.count('"busy": args.busy') == configs
    # Timing either goes through time_all (busy inside) or is wrapped by hand.
    direct = len(re.findall(r"H\.measure\(", text))
    assert direct == 0 or "H.busy_load(args.busy)" in text
