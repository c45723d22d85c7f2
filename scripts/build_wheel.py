#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Build one fastvqa wheel variant: ``fastvqa`` (CPU), ``fastvqa-cu12`` or ``fastvqa-cu13``.

All three import as ``fastvqa``. A distribution's name is fixed by the
literal ``[project]`` table of pyproject.toml (PEP 621 forbids a dynamic
name, and scikit-build-core's overrides cannot touch ``[project]``), so each
CUDA variant is built from a staged copy of the source tree whose
pyproject.toml is rewritten: name, summary, CUDA classifier, the extras that
pull the matching DALI and FAISS builds, and CMake settings fixed to that
variant (CUDA on, release archs, the expected toolkit major). The checkout
itself is never modified.

    python scripts/build_wheel.py --cuda 13 --out wheelhouse --repair
    python scripts/build_wheel.py --cuda none --out wheelhouse
    python scripts/build_wheel.py --cuda 12 --stage-only /tmp/fastvqa-cu12   # then: cibuildwheel /tmp/fastvqa-cu12

``--repair`` runs the ``repair-wheel-command`` of ``[tool.cibuildwheel.linux]``
(auditwheel, excluding CUDA driver libraries), the same command cibuildwheel
runs. The last line printed is the path of the finished wheel. The CUDA
compiler is whatever CMake finds: ``nvcc`` on PATH, or ``CUDACXX``; CMake
refuses to build ``fastvqa-cu12`` with a CUDA 13 nvcc and vice versa.

Needs Python >= 3.11 (tomllib) to run; the wheels it builds do not.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]

# The manylinux images that carry the CUDA toolkit (cibuildwheel's FAQ,
# "Building wheels with CUDA on Linux"); the CPU wheel uses cibuildwheel's default.
_CUDA_IMAGE = "quay.io/manylinux_cuda/manylinux_2_28_x86_64_cuda{}:latest"


@dataclass(frozen=True)
class Variant:
    """One wheel flavour. ``cuda_major`` None means the CPU wheel."""

    dist: str
    cuda_major: Optional[int]
    dali: str  # requirement for the [dali] extra (and the DALI line of [test])
    faiss: str  # requirement for the [faiss] extra
    image: str  # manylinux x86_64 image for cibuildwheel


VARIANTS = {
    "none": Variant("fastvqa", None, "nvidia-dali-cuda130", "faiss-cpu>=1.8", "manylinux_2_28"),
    # faiss-gpu: Meta's official CUDA 12 wheel; faiss-gpu-cuvs: its CUDA 13 build.
    "12": Variant("fastvqa-cu12", 12, "nvidia-dali-cuda120", "faiss-gpu>=1.10",
                  _CUDA_IMAGE.format("12_9")),
    "13": Variant("fastvqa-cu13", 13, "nvidia-dali-cuda130", "faiss-gpu-cuvs>=1.15",
                  _CUDA_IMAGE.format("13_1")),
}

# Never staged: build outputs and environments can be gigabytes and would
# leak a previous configuration into the variant.
_SKIP_TOP = {"build", "dist", "wheelhouse", ".git", ".hypothesis", ".pytest_cache", "gpu_check_out"}


class BuildError(RuntimeError):
    """A variant cannot be staged or built (message says why)."""


def cmake_setting(name: str) -> str:
    """Value of ``set(NAME "value")`` in CMakeLists.txt (the single source for archs and drivers)."""
    text = (ROOT / "CMakeLists.txt").read_text()
    found = re.findall(rf'^set\({re.escape(name)} "([^"]*)"\)', text, flags=re.M)
    if len(found) != 1:
        raise BuildError(f"expected one set({name} \"...\") in CMakeLists.txt, found {len(found)}")
    return found[0]


def _replace_once(text: str, pattern: str, repl: str) -> str:
    new, n = re.subn(pattern, repl, text, flags=re.M)
    if n != 1:
        raise BuildError(f"pyproject.toml: expected exactly one match for {pattern!r}, found {n}")
    return new


def variant_pyproject(text: str, variant: Variant) -> str:
    """The pyproject.toml text for ``variant``, from the checkout's (CPU) one.

    Edits the text line by line so comments and layout survive; every edit
    must match exactly once, so a reworded pyproject fails loudly here
    instead of producing a half-renamed wheel.
    """
    major = variant.cuda_major
    text = _replace_once(text, r'^(FASTVQA_ENABLE_CUDA = ).*$',
                         r'\g<1>"{}"'.format("ON" if major else "OFF"))
    text = _replace_once(text, r'^(\[tool\.cibuildwheel\.linux\]\nmanylinux-x86_64-image = ).*$',
                         rf'\g<1>"{variant.image}"')
    if major is None:
        return text
    archs = cmake_setting("FASTVQA_RELEASE_ARCHS")
    driver = cmake_setting(f"FASTVQA_MIN_DRIVER_CUDA{major}")
    sms = sorted({int(a.split("-")[0]) for a in archs.split(";")})
    text = _replace_once(text, r'^name = "fastvqa"$', f'name = "{variant.dist}"')
    text = _replace_once(
        text, r'^(description = ".*)"$',
        rf'\g<1>; CUDA {major} build (NVIDIA driver >= {driver}, sm_{sms[0]}-sm_{sms[-1]} + PTX)"')
    text = _replace_once(text, r'^(  "Environment :: GPU :: NVIDIA CUDA",)$',
                         rf'\g<1>\n  "Environment :: GPU :: NVIDIA CUDA :: {major}",')
    text = _replace_once(text, r'^dali = \[.*\]$', f'dali = ["{variant.dali}"]')
    # Only the FAISS build changes; the rest of [faiss] (scikit-learn) stays.
    text = _replace_once(text, r'^faiss = \["faiss-cpu[^"]*"', f'faiss = ["{variant.faiss}"')
    # [faiss] already is the GPU build here; a second extra would only confuse.
    text = _replace_once(text, r'^faiss-gpu = \[.*\]\n', "")
    text = _replace_once(text, r'^(  ")nvidia-dali-cuda\d+(.*)$', rf'\g<1>{variant.dali}\g<2>')
    text = _replace_once(text, r'^(FASTVQA_CUDA_ARCHS = \{ env = "FASTVQA_CUDA_ARCHS", default = )"auto"',
                         r'\g<1>"release"')
    text = _replace_once(text, r'^(FASTVQA_ENABLE_CUDA = .*)$',
                         rf'\g<1>\nFASTVQA_EXPECT_CUDA_MAJOR = "{major}"')
    return text


def check_variant_pyproject(text: str, variant: Variant) -> None:
    """Parse the staged pyproject and check the variant really landed in it."""
    data = tomllib.loads(text)
    project = data["project"]
    extras = project["optional-dependencies"]
    define = data["tool"]["scikit-build"]["cmake"]["define"]
    problems = []
    if project["name"] != variant.dist:
        problems.append(f"name is {project['name']!r}")
    if extras["dali"] != [variant.dali] or extras["faiss"][:1] != [variant.faiss]:
        problems.append(f"dali/faiss extras are {extras['dali']}/{extras['faiss']}")
    if not any(r.startswith(variant.dali) for r in extras["test"]):
        problems.append(f"[test] lacks {variant.dali}")
    want_cuda = "ON" if variant.cuda_major else "OFF"
    if define["FASTVQA_ENABLE_CUDA"] != want_cuda:
        problems.append(f"FASTVQA_ENABLE_CUDA is {define['FASTVQA_ENABLE_CUDA']!r}")
    if variant.cuda_major and define.get("FASTVQA_EXPECT_CUDA_MAJOR") != str(variant.cuda_major):
        problems.append("FASTVQA_EXPECT_CUDA_MAJOR missing")
    if data["tool"]["cibuildwheel"]["linux"]["manylinux-x86_64-image"] != variant.image:
        problems.append("cibuildwheel image not set")
    if problems:
        raise BuildError(f"staged pyproject for {variant.dist} is wrong: " + "; ".join(problems))


def source_files(root: Path) -> list[Path]:
    """Files a build needs, relative to ``root``: what git tracks or would
    track (not ignored), or, outside a git checkout, everything but build
    outputs and environments."""
    names = None
    if (root / ".git").exists() and shutil.which("git"):
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True)
        if proc.returncode == 0:
            names = [Path(n) for n in proc.stdout.decode().split("\0") if n]
        else:  # e.g. "dubious ownership" in a container; the walk below still works
            print(f"build_wheel.py: git ls-files failed ({proc.stderr.decode().strip()}); "
                  "copying the tree without git", file=sys.stderr)
    if names is None:
        names = [p.relative_to(root) for p in root.rglob("*")
                 if p.is_file() and p.suffix not in (".so", ".pyc")]
    return sorted(n for n in names
                  if n.parts[0] not in _SKIP_TOP and not n.parts[0].startswith(".venv")
                  and "__pycache__" not in n.parts and (root / n).is_file())


def stage(variant: Variant, dest: Path) -> Path:
    """Copy the source tree to ``dest`` (must not exist) with the variant's pyproject."""
    if dest.exists():
        raise BuildError(f"{dest} exists; refusing to overwrite it (choose another folder)")
    for rel in source_files(ROOT):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    text = variant_pyproject((ROOT / "pyproject.toml").read_text(), variant)
    check_variant_pyproject(text, variant)
    (dest / "pyproject.toml").write_text(text)
    return dest


def _run(cmd: Sequence[str], **kw) -> None:
    print("+", shlex.join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def build(staged: Path, out: Path, isolation: bool, build_dir: Optional[Path]) -> Path:
    """``pip wheel`` the staged tree into ``out``; returns the wheel's path."""
    with tempfile.TemporaryDirectory(prefix="fastvqa-wheel-") as tmp:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp, str(staged)]
        if not isolation:
            cmd.insert(4, "--no-build-isolation")
        if build_dir is not None:
            cmd += [f"--config-settings=build-dir={build_dir.resolve()}"]
        _run(cmd)
        return _move_single_wheel(Path(tmp), out)


def _move_single_wheel(src: Path, out: Path) -> Path:
    wheels = list(src.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"expected one wheel in {src}, got {[w.name for w in wheels]}")
    out.mkdir(parents=True, exist_ok=True)
    target = out / wheels[0].name
    if target.exists():
        raise BuildError(f"{target} exists; refusing to overwrite it")
    shutil.move(str(wheels[0]), target)
    return target


def repair(wheel: Path, out: Path) -> Path:
    """Run cibuildwheel's Linux repair command (auditwheel) on ``wheel``; returns the repaired wheel."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    template = data["tool"]["cibuildwheel"]["linux"]["repair-wheel-command"]
    with tempfile.TemporaryDirectory(prefix="fastvqa-repaired-") as dest:
        command = template.format(wheel=shlex.quote(str(wheel)), dest_dir=shlex.quote(dest))
        _run(["bash", "-c", command])
        target = _move_single_wheel(Path(dest), out)
    wheel.unlink()  # the unrepaired wheel would otherwise sit beside it with another tag
    return target


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuda", required=True, choices=sorted(VARIANTS),
                        help="'none' for the CPU wheel `fastvqa`, 12 or 13 for fastvqa-cu12/-cu13")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="folder for the finished wheel")
    where.add_argument("--stage-only", type=Path, metavar="DIR",
                       help="only write the variant's source tree to DIR (for cibuildwheel DIR)")
    parser.add_argument("--repair", action="store_true",
                        help="run auditwheel repair (the cibuildwheel repair command) on the wheel")
    parser.add_argument("--no-isolation", action="store_true",
                        help="build with the current environment's scikit-build-core/pybind11")
    parser.add_argument("--build-dir", type=Path,
                        help="CMake build folder to keep between runs (default: a throwaway one)")
    args = parser.parse_args(argv)
    variant = VARIANTS[args.cuda]
    try:
        if args.stage_only is not None:
            print(stage(variant, args.stage_only))
            return 0
        with tempfile.TemporaryDirectory(prefix=f"{variant.dist}-src-") as tmp:
            staged = stage(variant, Path(tmp) / "src")
            wheel = build(staged, args.out, isolation=not args.no_isolation, build_dir=args.build_dir)
        if args.repair:
            wheel = repair(wheel, args.out)
    except (BuildError, subprocess.CalledProcessError) as exc:
        print(f"build_wheel.py: error: {exc}", file=sys.stderr)
        return 2
    print(wheel)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
