# SPDX-License-Identifier: Apache-2.0
"""Run every benchmark that carries a BENCHMARKS.md target, idle and busy, for
one or more builds of fastvqa, and tabulate each target's verdict.

Each script runs at its target sizes once on otherwise idle cores (``--busy
0``) and once with ``--busy 2`` (two spinning processes beside it, see
``_harness.busy_load``), for every build named with ``--python NAME=PATH`` (an
interpreter whose ``import fastvqa`` is that build; benchmarks/build_envs.py
makes the README's source build and the release wheel side by side). Without
``--python`` the build is this interpreter's (``this``). Results go under
``OUT/BUILD/busyN/SCRIPT`` (JSON and log). The table then lists every entry of
those JSON files that names a target (``"target"`` and ``"target_met"``
fields) with its measured value for each build and condition. An entry
whose script reports that its target cannot be met, with the measured reason
(``"target_met": null`` and an ``"explained"`` text), is listed as EXPLAINED
with that reason under the table, not as a miss. A script that
fails (a check between implementations; a missing optional peer is only a
skipped row) is reported and the run goes on; the exit status is 1 when a
script failed or a target was missed, 0 otherwise.

Usage: python benchmarks/run_targets.py [--out DIR] [--busy 2] [--only NAME ...]
           [--python source=/tmp/b/source/bin/python --python wheel=/tmp/b/wheel/bin/python]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

HERE = Path(__file__).resolve().parent

#: name -> the script and its arguments at the target sizes (the scripts' defaults)
SCRIPTS = {
    "span_argmax": ["bench_span_argmax.py"],
    "temporal_iou": ["bench_temporal_iou.py"],
    "grounded_qa": ["bench_grounded_qa.py"],
    "span_scores": ["bench_span_scores.py"],
    "nms_1d": ["bench_nms_1d.py"],
    "nms_1d_scaling": ["bench_nms_1d.py", "--scaling"],
    "video_decode": ["bench_video_decode.py"],
    "retrieval": ["bench_retrieval.py"],
    "call_overhead": ["bench_call_overhead.py"],
    "extract": ["bench_extract.py"],
}

#: a target entry's verdict when its script reports why it cannot be met
EXPLAINED = "explained"

#: the measured value of a target entry, by the first field present
VALUE_FIELDS = ("speedup", "ratio_to_read", "ratio_to_memset", "max_len_ratio", "overhead_us",
                "exponent")


def _targets(node, path=()):
    """Every dict under ``node`` with ``target`` and ``target_met`` keys, with
    a label made of the identifying fields around it."""
    if isinstance(node, dict):
        if "target" in node and "target_met" in node and node["target"] is not None:
            label = " / ".join(str(node[k]) for k in ("case", "impl", "input", "name")
                               if node.get(k) is not None) or "/".join(map(str, path))
            value = next((node[k] for k in VALUE_FIELDS if node.get(k) is not None), None)
            # A target the script judges unmeetable for a measured reason
            # ("explained", target_met None) is listed as such, not as a miss.
            met = EXPLAINED if node["target_met"] is None and node.get("explained") \
                else node["target_met"]
            yield label, node["target"], value, met, node.get("explained")
        for key, child in node.items():
            yield from _targets(child, path + (key,))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _targets(child, path + (i,))


def _run(name: str, argv: list, busy: int, out: Path, python: str = sys.executable) -> bool:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [python, str(HERE / argv[0]), *argv[1:], "--busy", str(busy), "--out", str(out)]
    print(f"[{time.strftime('%H:%M:%S')}] {name} busy={busy} ({python}): {' '.join(cmd[1:])}",
          flush=True)
    log = out / "log.txt"
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    if rc != 0:
        print(f"  {name} exited {rc}; see {log}")
    return rc == 0


def _build(text: str) -> tuple:
    name, sep, python = text.partition("=")
    if not sep or not name or not python:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    if not Path(python).exists():
        raise argparse.ArgumentTypeError(f"{python}: no such interpreter")
    return name, python


def _fastvqa_of(python: str) -> str:
    """Where ``python`` imports fastvqa from (printed with the results)."""
    out = subprocess.run([python, "-c", "import fastvqa; print(fastvqa.__file__)"],
                         capture_output=True, text=True, cwd="/")
    return out.stdout.strip() if out.returncode == 0 else f"(import failed: {out.stderr[-200:]})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=HERE / "results" / "targets")
    p.add_argument("--busy", type=int, default=2, help="busy processes of the second run")
    p.add_argument("--only", nargs="+", choices=sorted(SCRIPTS), default=None)
    p.add_argument("--python", type=_build, action="append", metavar="NAME=PATH",
                   help="a build to run, by its interpreter (repeat for several builds)")
    args = p.parse_args()
    names = args.only or list(SCRIPTS)
    builds = dict(args.python or [("this", sys.executable)])
    for build, python in builds.items():
        print(f"{build}: {python} imports {_fastvqa_of(python)}")
    runs = [(build, busy) for busy in (0, args.busy) for build in builds]
    ok = True
    for build, busy in runs:
        for name in names:
            ok &= _run(name, SCRIPTS[name], busy, args.out / build / f"busy{busy}" / name,
                       builds[build])
    rows, missed, explained, reasons = [], 0, 0, {}
    for name in names:
        found = {}
        for run in runs:
            build, busy = run
            for path in sorted((args.out / build / f"busy{busy}" / name).glob("*.json")):
                data = json.loads(path.read_text())
                for label, target, value, met, why in _targets(data):
                    found.setdefault(label, {})[run] = (target, value, met)
                    if why:
                        reasons[label] = why
        for label, by_run in found.items():
            cells = []
            for run in runs:
                target, value, met = by_run.get(run, (None, None, None))
                missed += met is False
                explained += met == EXPLAINED
                verdict = "EXPLAINED" if met == EXPLAINED else "PASS" if met else "FAIL"
                cells.append("-" if met is None else
                             f"{value:.3g} {verdict}" if isinstance(value, float) else verdict)
            target = next(t for t, _, _ in by_run.values())
            rows.append([name, label, target, *cells])
    print()
    if not rows:
        print("no target entries found in the results")
        return 1
    H.print_table(["benchmark", "entry", "target", *(f"{b} busy {n}" for b, n in runs)], rows)
    print(f"{len(rows)} targets, {missed} missed, {explained} cells explained; scripts "
          f"{'all ran' if ok else 'FAILED'}")
    for label, why in reasons.items():
        print(f"explained: {label}: {why}")
    return 0 if ok and not missed else 1


if __name__ == "__main__":
    raise SystemExit(main())
