#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# GPU check for fastvqa, for a machine WITH an NVIDIA GPU:
#   1. nvidia-smi canary (fails if there is no usable GPU, so nothing below can
#      silently fall back to "skipped");
#   2. installs missing build/test dependencies (torch included);
#   3. builds and installs fastvqa with CUDA for this GPU
#      (FASTVQA_ENABLE_CUDA=ON FASTVQA_CUDA_ARCHS=native) and checks the build
#      really has CUDA kernels and sees the device;
#   4. `python -m fastvqa.cli info`;
#   5. `pytest tests -m cuda`, failing if any CUDA test is skipped (or none ran),
#      and `fastvqa train` for 2 epochs on the GPU (bf16, then fp16);
#   6. the op microbenchmarks (span_argmax, temporal_iou, span_scores, nms_1d,
#      span_similarity) with --device cuda and --device cpu, the DALI NVDEC
#      video benchmark (bench_video_gpu.py), and the FAISS GPU retrieval
#      benchmark (SKIP in the summary, not FAIL, when FAISS has no GPU build
#      here: faiss-gpu is an optional extra this script does not install).
#
# Everything goes under $OUT (default ./gpu_check_out): <step>.log for every
# step, nvidia-smi.txt, pytest_cuda.xml, the benchmark JSON files, and
# summary.txt (one PASS/FAIL line per step). Steps 1-3 stop the script when
# they fail; later steps are all attempted and the script exits non-zero at the
# end if any failed.
#
# Usage (from anywhere; runs in the repository root):
#   OUT=/tmp/gpu_out scripts/gpu_check.sh
# Environment knobs:
#   PYTHON=python3.11          interpreter to use (default: python3, else python)
#   TORCH_SPEC="torch>=2.4"    what to pip-install when torch is missing
#   DALI_SPEC, FAISS_SPEC      likewise for DALI (default nvidia-dali-cuda130,
#                              needs driver >= 580) and FAISS (default faiss-cpu;
#                              faiss-gpu or faiss-gpu-cuvs for the GPU benchmark)
#   PIP_INDEX_URL / PIP_EXTRA_INDEX_URL   honoured by pip as usual
#   SKIP_INSTALL=1             reuse an installed CUDA build (skip step 3's build)
#   BENCH_ARGS="--repeats 10"  extra arguments for every benchmark
#   PACK=1                     leave only summary.txt and gpu_check.tgz in $OUT
# Run it in a virtual environment if you do not want pip to touch the system
# Python. Step 2 also installs the optional backends the tests import (PyAV,
# DALI, FAISS, scikit-learn, matplotlib): a test module whose backend is
# missing skips at collection, and step 5's no-skip check counts that as a
# failure. Offline, install them first (pip install ".[test]" or carried
# wheels). See docs/gpu_check.md. Expected time on an H200: ~3-5 min (most of
# it the CUDA build), plus any downloads.

set -euo pipefail

OUT="${OUT:-./gpu_check_out}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

if [[ -n "${PYTHON:-}" ]]; then
  PY="$PYTHON"
elif command -v python3 >/dev/null 2>&1; then
  PY=python3
else
  PY=python
fi
export PYTHONUNBUFFERED=1
# Put a CUDA toolkit on PATH when it is installed in the usual place but not on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
FAILED=()

# PACK=1 (for remote runners that return only a few files): on any exit,
# even a timeout, fold everything under $OUT into gpu_check.tgz beside
# summary.txt and remove the loose files.
pack_out() {
  [[ "${PACK:-0}" == 1 ]] || return 0
  (cd "$OUT" && tar czf ../gpu_check.tgz.$$ --exclude=gpu_check.tgz . &&
    find . -mindepth 1 ! -name summary.txt -delete && mv ../gpu_check.tgz.$$ gpu_check.tgz) || true
}
trap pack_out EXIT

log() { echo "[gpu_check $(date -u +%H:%M:%S)] $*"; }

# run_step NAME fatal|soft CMD...: runs CMD with stdout+stderr tee'd to
# $OUT/NAME.log (only logged, not echoed, when QUIET=1), records PASS/FAIL in
# summary.txt; a failing fatal step ends the script.
run_step() {
  local name=$1 mode=$2
  shift 2
  local logf="$OUT/$name.log" t0=$SECONDS rc
  log "step $name: $*"
  { echo "\$ $*"; echo "# started $(date -u +%Y-%m-%dT%H:%M:%SZ)"; } >"$logf"
  set +e
  if [[ "${QUIET:-0}" == 1 ]]; then
    "$@" >>"$logf" 2>&1
    rc=$?
  else
    "$@" 2>&1 | tee -a "$logf"
    rc=${PIPESTATUS[0]}
  fi
  set -e
  local took=$((SECONDS - t0))
  if [[ $rc -eq 0 ]]; then
    echo "PASS  $name  (${took}s)" | tee -a "$SUMMARY"
    return 0
  fi
  echo "FAIL  $name  (rc=$rc, ${took}s, see $logf)" | tee -a "$SUMMARY"
  if [[ "${QUIET:-0}" == 1 ]]; then
    echo "---- last 60 lines of $logf ----"
    tail -n 60 "$logf"
  fi
  FAILED+=("$name")
  if [[ "$mode" == fatal ]]; then
    log "fatal step '$name' failed; stopping (logs in $OUT)"
    exit "$rc"
  fi
  return 0
}

# ---------------------------------------------------------------- step bodies

# Step bodies run with errexit off (run_step must see their status), so every
# command whose failure matters says `|| return 1`.

canary() {
  command -v nvidia-smi >/dev/null || { echo "nvidia-smi not found: no NVIDIA driver here"; return 1; }
  nvidia-smi | tee "$OUT/nvidia-smi.txt" || return 1
  nvidia-smi -L | tee -a "$OUT/nvidia-smi.txt" || return 1
  grep -q '^GPU ' "$OUT/nvidia-smi.txt" || { echo "nvidia-smi lists no GPU"; return 1; }
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,mig.mode.current \
    --format=csv | tee -a "$OUT/nvidia-smi.txt" || true
}

meta() {
  date -u
  uname -a
  "$PY" --version
  "$PY" -m pip --version
  command -v nvcc && nvcc --version || echo "nvcc: not on PATH"
  command -v cmake && cmake --version | head -1 || echo "cmake: not on PATH"
  nproc
  if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
    git rev-parse HEAD
    git status --short
  fi
}

pip_install() {
  # Retry with --break-system-packages on an externally managed (PEP 668) Python.
  local tmp
  tmp=$(mktemp)
  if "$PY" -m pip install "$@" 2>&1 | tee "$tmp"; then
    rm -f "$tmp"
    return 0
  fi
  if grep -q externally-managed-environment "$tmp"; then
    rm -f "$tmp"
    echo "retrying with --break-system-packages"
    "$PY" -m pip install --break-system-packages "$@"
    return $?
  fi
  rm -f "$tmp"
  return 1
}

deps() {
  local missing=() mod spec
  "$PY" -m pip --version >/dev/null 2>&1 || "$PY" -m ensurepip --upgrade || return 1
  # module:requirement pairs for what the build and the tests import. The
  # optional backends are here too: a test module whose backend is missing
  # skips at collection, which the no-skip step (rightly) counts as a failure.
  for pair in "torch:${TORCH_SPEC:-torch>=2.4}" "numpy:numpy>=1.22" "pytest:pytest>=7" \
              "hypothesis:hypothesis>=6" "scikit_build_core:scikit-build-core>=0.11" \
              "pybind11:pybind11>=2.13" "av:av>=12" "sklearn:scikit-learn>=1.3" \
              "matplotlib:matplotlib>=3.7" "faiss:${FAISS_SPEC:-faiss-cpu>=1.8}" \
              "nvidia.dali:${DALI_SPEC:-nvidia-dali-cuda130}"; do
    mod=${pair%%:*}
    spec=${pair#*:}
    if "$PY" -c "import $mod" >/dev/null 2>&1; then
      echo "have $mod"
    else
      echo "missing $mod -> $spec"
      missing+=("$spec")
    fi
  done
  # CMake >= 3.24 (for CUDA arch 'native') and ninja, as commands.
  if ! "$PY" - <<'EOF'
import re, shutil, subprocess, sys
exe = shutil.which("cmake")
if not exe:
    sys.exit(1)
v = re.search(r"(\d+)\.(\d+)", subprocess.run([exe, "--version"], capture_output=True, text=True).stdout)
sys.exit(0 if v and (int(v[1]), int(v[2])) >= (3, 24) else 1)
EOF
  then
    echo "missing cmake >= 3.24"
    missing+=("cmake>=3.24")
  fi
  command -v ninja >/dev/null || { echo "missing ninja"; missing+=("ninja"); }
  if ((${#missing[@]})); then
    pip_install "${missing[@]}" || return 1
  fi
  # Torch must see the GPU, or every CUDA test skips.
  "$PY" - <<'EOF'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if not torch.cuda.is_available():
    raise SystemExit(
        "torch cannot use the GPU (CPU-only wheel, or driver too old for its CUDA); install a "
        "CUDA build, e.g. TORCH_SPEC=torch PIP_INDEX_URL=https://download.pytorch.org/whl/cu126")
print("device 0:", torch.cuda.get_device_name(0))
EOF
}

build() {
  local jobs
  jobs=$(nproc)
  FASTVQA_ENABLE_CUDA=ON FASTVQA_CUDA_ARCHS=native CMAKE_BUILD_PARALLEL_LEVEL="$jobs" \
    "$PY" -m pip install --no-build-isolation -v \
      --config-settings=build-dir=build/gpu-check .
}

verify_build() {
  # Run outside the repository so the installed package is what gets imported.
  (cd "$OUT" && "$PY" - <<'EOF'
import json
import fastvqa
info = fastvqa.build_info()
print(json.dumps(info, indent=2))
if not info["cuda"]:
    raise SystemExit("fastvqa was built WITHOUT CUDA kernels")
n = fastvqa._C.cuda_device_count()
print("devices visible to fastvqa:", n)
if n < 1:
    raise SystemExit("fastvqa's CUDA runtime sees no device")
EOF
  )
}

cli_info() {
  (cd "$OUT" && "$PY" -m fastvqa.cli info && "$PY" -m fastvqa.cli info --json >"$OUT/info.json")
}

pytest_cuda() {
  "$PY" -m pytest tests -m cuda -v -rs -p no:cacheprovider --junitxml="$OUT/pytest_cuda.xml"
}

no_skips() {
  # Count from the JUnit XML: a CUDA check that ran nothing, or skipped
  # anything, did not test the GPU.
  [[ -f "$OUT/pytest_cuda.xml" ]] || { echo "no $OUT/pytest_cuda.xml (pytest did not run)"; return 1; }
  "$PY" - "$OUT/pytest_cuda.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = list(root.iter("testcase"))
skipped = [(c.get("classname"), c.get("name"), (c.find("skipped").get("message") or ""))
           for c in cases if c.find("skipped") is not None]
print(f"cuda tests: {len(cases)} run, {len(skipped)} skipped")
for cls, name, msg in skipped:
    print(f"  SKIPPED {cls}::{name}: {msg}")
if not cases:
    raise SystemExit("no CUDA test was collected: the GPU was not tested")
if skipped:
    raise SystemExit("CUDA tests were skipped on a GPU machine")
EOF
}

# fastvqa train on the GPU: a small demo benchmark, 2 epochs with bf16 autocast,
# then fp16 with its gradient scaler (the GPU path of fastvqa.train.fit).
train_cuda() {
  local w="$OUT/train_cuda"
  rm -rf "$w" && mkdir -p "$w"
  "$PY" -m fastvqa demo --videos 8 --duration 10 --store --out "$w/demo" --no-progress >/dev/null &&
  "$PY" -m fastvqa extract qvhighlights --text-recipe question-clip --gt "$w/demo/moments.jsonl" \
      --model fastvqa:tiny-text --pair-with "$w/demo/features" --out "$w/questions" --no-progress &&
  for amp in bf16 fp16; do
    cat > "$w/$amp.json" <<JSON
{"benchmark": "qvhighlights", "out": "$w/run_$amp", "device": "cuda",
 "data": {"train": "$w/demo/moments.jsonl", "video_store": "$w/demo/features",
          "query_store": "$w/questions"},
 "model": {"name": "moment_detr", "hidden": 64, "heads": 4, "ffn": 128},
 "optim": {"epochs": 2, "batch_size": 8, "lr": 1e-3, "amp": "$amp"}}
JSON
    "$PY" -m fastvqa train "$w/$amp.json" --no-progress || return 1
  done
}

# ---------------------------------------------------------------------- steps

# `timeout` runs a new bash for these two, so it needs them exported.
export PY OUT
export -f build pytest_cuda train_cuda

log "output folder: $OUT; python: $PY; repo: $REPO"
run_step nvidia-smi fatal canary
run_step meta soft meta
run_step deps fatal deps
if [[ "${SKIP_INSTALL:-0}" == 1 ]]; then
  log "SKIP_INSTALL=1: using the installed fastvqa"
else
  QUIET=1 run_step build fatal timeout 480 bash -c build
fi
run_step verify-build fatal verify_build
run_step cli-info soft cli_info
run_step pytest-cuda soft timeout 300 bash -c pytest_cuda
run_step no-skipped-cuda-tests soft no_skips
run_step train-cuda soft timeout 300 bash -c train_cuda
for dev in cuda cpu; do
  for bench in span_argmax temporal_iou span_scores nms_1d span_similarity; do
    # shellcheck disable=SC2086  # BENCH_ARGS is a word list on purpose
    run_step "bench_${bench}_${dev}" soft timeout 240 \
      "$PY" "benchmarks/bench_${bench}.py" --device "$dev" --out "$OUT" ${BENCH_ARGS:-}
  done
done

# shellcheck disable=SC2086
run_step bench_video_gpu soft timeout 480 "$PY" benchmarks/bench_video_gpu.py --out "$OUT" ${BENCH_ARGS:-}

# FAISS GPU retrieval: only with a GPU build of FAISS (the `faiss-gpu` extra).
# A GPU build that sees no GPU is a real failure, so only a missing or
# CPU-only FAISS is skipped; the benchmark itself reports the other cases.
faiss_gpu=$("$PY" - <<'EOF' 2>&1 | tail -n 1
try:
    import faiss
except ImportError:
    print("faiss is not installed (pip install 'fastvqa[faiss-gpu]')")
else:
    print("ok" if hasattr(faiss, "StandardGpuResources")
          else f"faiss {faiss.__version__} is a CPU-only build (pip install 'fastvqa[faiss-gpu]')")
EOF
) || true
if [[ "$faiss_gpu" == ok ]]; then
  # shellcheck disable=SC2086
  run_step bench_retrieval_cuda soft timeout 480 \
    "$PY" benchmarks/bench_retrieval.py --device cuda --out "$OUT" ${BENCH_ARGS:-}
else
  echo "SKIP  bench_retrieval_cuda  ($faiss_gpu)" | tee -a "$SUMMARY"
fi

echo
log "summary ($SUMMARY):"
cat "$SUMMARY"
if ((${#FAILED[@]})); then
  log "FAILED: ${FAILED[*]}"
  exit 1
fi
log "all steps passed"
