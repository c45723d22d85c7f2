#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Compiles every CUDA source of fastvqa against the CUDA 12 toolkit headers
# and assembles the device code with CUDA 12's ptxas, for every release
# architecture, on a machine that has no CUDA 12 nvcc.
#
# Why: the fastvqa-cu12 wheel is built by cibuildwheel in NVIDIA's manylinux
# CUDA 12 image, which this kind of machine cannot pull, and PyPI's
# nvidia-cuda-nvcc-cu12 ships ptxas and libdevice but not nvcc. Clang can
# compile CUDA itself, so this check uses Debian's clang as the CUDA front end
# with the CUDA 12 headers, libdevice and ptxas from NVIDIA's PyPI wheels. It
# catches code that needs CUDA 13 (headers, intrinsics, CCCL) and device code
# that ptxas 12 rejects. It does not link a module (fatbinary/nvlink are not
# on PyPI) and clang is not nvcc, so the wheel build itself stays unverified
# here; see docs/packaging.md.
#
# Usage: scripts/check_cuda12_sources.sh   (installs clang-16 with apt-get when
# missing and run as root; downloads about 70 MB of wheels into a temp folder)
# Environment: CLANG=clang++-16, CUDA12_VERSION=12.1 (the newest CUDA clang 16
# handles), KEEP=1 keeps the temp folder.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

clang="${CLANG:-clang++-16}"
version="${CUDA12_VERSION:-12.1}"
python_bin="${PYTHON:-python3}"

if ! command -v "$clang" >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${clang%%++*} (apt-get)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${clang/clang++/clang}" >/dev/null
  else
    echo "check_cuda12_sources: $clang not found; install clang 16 (e.g. apt-get install clang-16)" >&2
    exit 2
  fi
fi

work=$(mktemp -d)
[[ -n "${KEEP:-}" ]] || trap 'rm -rf "$work"' EXIT

echo "CUDA $version headers, libdevice and ptxas from PyPI"
"$python_bin" -m pip download --quiet --no-deps --dest "$work/wheels" \
  "nvidia-cuda-runtime-cu12==$version.*" "nvidia-cuda-cccl-cu12==$version.*" \
  "nvidia-cuda-nvcc-cu12==$version.*"
for wheel in "$work"/wheels/*.whl; do
  "$python_bin" -m zipfile -e "$wheel" "$work/x"
done

# The layout clang expects of --cuda-path: include/, nvvm/libdevice/, bin/ptxas.
root="$work/cuda"
mkdir -p "$root/include"
for part in cuda_runtime cuda_cccl cuda_nvcc; do
  cp -r "$work/x/nvidia/$part/include/." "$root/include/"
done
ln -s "$work/x/nvidia/cuda_nvcc/nvvm" "$root/nvvm"
ln -s "$work/x/nvidia/cuda_nvcc/bin" "$root/bin"
chmod +x "$root/bin/ptxas"
# Clang's CUDA wrapper includes a cuRAND header; fastvqa uses no cuRAND.
echo "// fastvqa uses no cuRAND" > "$root/include/curand_mtgp32_kernel.h"
grep -m1 "define CUDA_VERSION" "$root/include/cuda.h"
"$root/bin/ptxas" --version | tail -1

# The sources and architectures the CMake build compiles.
mapfile -t sources < <(grep -o 'csrc/[^ )]*\.cu' CMakeLists.txt)
archs=$(sed -n 's/^set(FASTVQA_RELEASE_ARCHS "\(.*\)")$/\1/p' CMakeLists.txt |
        tr ';' '\n' | sed -n 's/-real$//p')
[[ ${#sources[@]} -gt 0 && -n "$archs" ]] || { echo "no sources or archs found" >&2; exit 1; }

flags=(-x cuda "--cuda-path=$root" -Wno-unknown-cuda-version -std=c++17 -O3 -Icsrc -c)
failed=0
for src in "${sources[@]}"; do
  name=$(basename "$src" .cu)
  for arch in $archs; do
    if ! "$clang" "${flags[@]}" --cuda-device-only "--cuda-gpu-arch=sm_$arch" "$src" \
         -o "$work/$name.sm_$arch.cubin"; then
      echo "FAIL  $src  device sm_$arch"; failed=1
    fi
  done
  if ! "$clang" "${flags[@]}" --cuda-host-only -fPIC "$src" -o "$work/$name.host.o"; then
    echo "FAIL  $src  host"; failed=1
  fi
  [[ $failed -eq 1 ]] || echo "ok    $src  (sm_${archs//$'\n'/, sm_}; host)"
done
if [[ $failed -ne 0 ]]; then
  echo "check_cuda12_sources: some CUDA sources do not build against CUDA $version" >&2
  exit 1
fi
echo "all ${#sources[@]} CUDA sources compile against CUDA $version and assemble with its ptxas"
