# SPDX-License-Identifier: Apache-2.0
"""The ``fastvqa`` command line."""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
from typing import Optional, Sequence

# Optional backends, by the import name fastvqa would use and the extra that installs it.
_BACKENDS = (
    ("torch", "torch", "fastvqa[torch]"),
    ("DALI", "nvidia.dali", "fastvqa[dali]"),
    ("FAISS", "faiss", "fastvqa[faiss]"),
    ("PyAV", "av", "fastvqa[video]"),
    ("sentence-transformers", "sentence_transformers", "fastvqa[text]"),
)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing or broken
        return False


def _gpu_report(info: dict) -> dict:
    """GPU visibility without importing torch: our own runtime when built with
    CUDA, otherwise whether nvidia-smi lists a device."""
    from fastvqa._ext import _C

    report = {"visible_to_fastvqa": _C.cuda_device_count(), "driver_version": None}
    if info["cuda"]:
        version = _C.cuda_driver_version()
        report["driver_version"] = f"{version // 1000}.{version % 1000 // 10}" if version else None
    smi = shutil.which("nvidia-smi")
    listed = None
    if smi:
        try:
            proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10)
            listed = [ln for ln in proc.stdout.splitlines() if ln.startswith("GPU ")]
        except (OSError, subprocess.SubprocessError):
            listed = None
    report["nvidia_smi"] = listed
    return report


def _cmd_info(args: argparse.Namespace) -> int:
    import fastvqa

    info = fastvqa.build_info()
    backends = {name: _importable(module) for name, module, _ in _BACKENDS}
    gpu = _gpu_report(info)
    if args.json:
        print(json.dumps({"build": info, "backends": backends, "gpu": gpu}, indent=2))
        return 0
    rows = [
        ("fastvqa", info["version"]),
        ("python", sys.version.split()[0]),
        ("compiler", info["compiler"]),
        ("openmp", f"yes ({info['openmp_max_threads']} threads)" if info["openmp"] else "no"),
        (
            "cuda kernels",
            f"yes (CUDA {info['cuda_version']}, archs {';'.join(info['cuda_archs'])}, "
            f"{info['cuda_runtime']} runtime)"
            if info["cuda"]
            else "no (CPU-only build; install fastvqa-cu12/-cu13 or build with nvcc on PATH)",
        ),
    ]
    if info["cuda"]:
        count = gpu["visible_to_fastvqa"]
        driver = f", driver {gpu['driver_version']}" if gpu["driver_version"] else ""
        rows.append(("gpu", f"{count} visible{driver}" if count else "none visible (CPU path only)"))
    else:
        listed = gpu["nvidia_smi"]
        rows.append(("gpu", f"{len(listed)} listed by nvidia-smi" if listed else "none found"))
    for name, module, extra in _BACKENDS:
        rows.append((name, "importable" if backends[name] else f"not installed ({extra})"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastvqa", description="fast, exact tools for grounded video question answering"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser("info", help="show what this build contains and which backends exist")
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    info.set_defaults(func=_cmd_info)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
