#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The compiled kernels under AddressSanitizer and UndefinedBehaviorSanitizer:
# builds a CPU-only debug extension with -fsanitize=address,undefined into
# build/sanitize, stages it beside the Python sources in
# build/sanitize/site/fastvqa (symlinks to python/fastvqa, so the source tree's
# own _C*.so is never touched) and runs the test files that call the kernels
# with libasan preloaded. Any sanitizer report aborts the Python process, so
# the run exits non-zero on the first one; a clean run exits 0. It builds the
# portable baseline only (FASTVQA_NO_VECTOR_CLONES): the release builds pick
# their AVX2 clones on this machine, so this is where the baseline is tested.
#
# Usage (from anywhere; runs in the repository root, in the environment whose
# python has pybind11, numpy, pytest, hypothesis and torch):
#   scripts/sanitize.sh                    # build, then the kernel test files
#   scripts/sanitize.sh tests/test_nms_1d.py -k soft   # other pytest arguments
# Environment knobs:
#   PYTHON=python3.11   interpreter (default: python)
#   SKIP_BUILD=1        reuse build/sanitize as it is
#   CXX=clang++         compiler (default: the system c++; the runtime libraries
#                       are asked of the same compiler)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
py="${PYTHON:-python}"
build="$root/build/sanitize"
start=$SECONDS
log() { printf '\n=== [%4ds] %s\n' "$((SECONDS - start))" "$*"; }

cxx="${CXX:-c++}"
san_flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  log "configure and build (CPU only, Debug, -O1 $san_flags)"
  mkdir -p "$build"
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" \
    -DSKBUILD_PROJECT_NAME=fastvqa -DSKBUILD_PROJECT_VERSION=0.1.0 \
    -DFASTVQA_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug -DFASTVQA_CXX_OPT=-O1 \
    -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_CXX_FLAGS="$san_flags -DFASTVQA_NO_VECTOR_CLONES" \
    -DCMAKE_SHARED_LINKER_FLAGS="$san_flags" -DCMAKE_MODULE_LINKER_FLAGS="$san_flags" \
    -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF \
    -Dpybind11_DIR="$("$py" -m pybind11 --cmakedir)" -DPython_EXECUTABLE="$(command -v "$py")" \
    >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
  cmake --build "$build" -j "$(nproc)"
fi

log "staging build/sanitize/site/fastvqa"
site="$build/site"
rm -rf "$site"
mkdir -p "$site/fastvqa"
for entry in "$root"/python/fastvqa/*; do
  case "$(basename "$entry")" in _C*.so | __pycache__) continue ;; esac
  ln -s "$entry" "$site/fastvqa/"
done
so=$(ls "$build"/_C*.so)
cp "$so" "$site/fastvqa/"

# Python is not built with ASan, so the runtime must be loaded first; libstdc++
# too, or ASan cannot find the real __cxa_throw it intercepts. GCC links
# libubsan into the module itself.
libasan=$("$cxx" -print-file-name=libasan.so)
libstdcxx=$("$cxx" -print-file-name=libstdc++.so)
[[ -e "$libasan" ]] || { echo "no libasan.so from $cxx -print-file-name" >&2; exit 1; }
export LD_PRELOAD="$libasan $libstdcxx${LD_PRELOAD:+ $LD_PRELOAD}"
# Python and its libraries leak by design at exit. (PYTHONMALLOC=malloc would
# let ASan see the interpreter's small objects too, but slows every test; the
# kernels' arrays come from NumPy's or torch's malloc either way.) torch runs
# under ASan as it is: test_nn and the torch parts of test_interop are included.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:detect_odr_violation=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
# Two threads: enough to exercise the thread pool's paths, cheap under ASan.
export FASTVQA_NUM_THREADS="${FASTVQA_NUM_THREADS:-2}"

"$py" -c "import fastvqa, sys; f = fastvqa._C.__file__; assert f.startswith('$site'), f; print('sanitized module:', f)"

tests=(tests/test_temporal_iou.py tests/test_span_argmax.py tests/test_span_scores.py
       tests/test_span_similarity.py tests/test_nms_1d.py tests/test_io_tags.py
       tests/test_interop.py tests/test_nn.py tests/test_smoke.py tests/test_kernel_safety.py)
# The staged module is not an installed distribution, so the check of the
# installed package's metadata cannot apply here.
deselect=(--deselect tests/test_smoke.py::test_build_info_names_the_installed_distribution)
if [[ $# -gt 0 ]]; then tests=("$@"); fi

log "pytest under ASan + UBSan: ${tests[*]}"
# -p no:cacheprovider: nothing is written into the source tree.
"$py" -m pytest -q -p no:cacheprovider "${deselect[@]}" "${tests[@]}"
log "clean: no sanitizer report"
