#!/usr/bin/env bash
# The demo: installs the dependencies (Fashion-MNIST included: Debian's
# dataset-fashion-mnist), configures build/ (the tree scripts/test.sh uses; with tests and
# benchmarks off, so that only the examples have to configure), builds only the example
# `fashion_mnist_qat` (float training, PTQ, QAT fine-tuning, the integer engine and its
# parity with the simulation, ONNX export run in onnxruntime) and runs its quick
# mode (a 12,000-image subset, 2 float + 1 QAT epochs; the full run, 60,000 images and
# 8 + 2 epochs, is `bash scripts/demo.sh --full`). Other arguments go to the example as they are.
# Its output alone is on stdout; the configure and build logs go to stderr.
#
# Environment: XQ_BUILD_DIR (default build), XQ_WITH_CUDA=ON|OFF (default: ON iff nvcc
# is found), XQ_CMAKE_ARGS (extra configure arguments).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { printf '[demo] %s\n' "$*" >&2; }

XQ_SKIP_CONAN=1 bash scripts/install_deps.sh >&2

if [[ -d /usr/local/cuda/bin ]]; then PATH="/usr/local/cuda/bin:$PATH"; fi
export PATH

target=fashion_mnist_qat
build=${XQ_BUILD_DIR:-build}
cuda=${XQ_WITH_CUDA:-}
if [[ -z $cuda ]]; then
  if command -v nvcc >/dev/null 2>&1; then cuda=ON; else cuda=OFF; fi
fi
generator=()
if [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi
read -r -a extra_cmake_args <<<"${XQ_CMAKE_ARGS:-}"

log "configure $build"
cmake -S . -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DXQ_BUILD_TESTS=OFF -DXQ_BUILD_BENCHMARKS=OFF -DXQ_BUILD_EXAMPLES=ON \
  -DXQ_WITH_CUDA="$cuda" \
  "${extra_cmake_args[@]}" >&2

log "build $target"
cmake --build "$build" --target "$target" -j "$(nproc 2>/dev/null || echo 2)" >&2

# Wherever examples/CMakeLists.txt puts it (single- or multi-config layout).
exe=$(find "$build" -path "$build/_packaging" -prune -o -type f -name "$target" -perm -u+x -print \
      2>/dev/null | head -n1)
if [[ -z $exe ]]; then
  log "ERROR: $target was not built under $build"
  exit 1
fi
# Quick mode unless the first argument is --full; the other arguments follow (--log-dir DIR:
# TensorBoard's runs, README "See training in TensorBoard").
args=("$@")
if [[ ${#args[@]} -gt 0 && ${args[0]} == --full ]]; then
  args=("${args[@]:1}")
else
  args=(--quick "${args[@]}")
fi
# The exported ONNX file runs in onnxruntime when install_deps.sh made its venv.
onnx_py=${XQ_ONNX_VENV:-$HOME/.cache/xquant-onnx-venv}/bin/python3
if [[ -x $onnx_py ]] && "$onnx_py" -c 'import onnx, onnxruntime, numpy' 2>/dev/null; then
  args+=(--onnxruntime "$onnx_py")
else
  log "no onnxruntime venv ($onnx_py): the ONNX file is written but not run"
fi
args+=(--export-dir "$build/fashion_mnist_export")
log "run $exe ${args[*]}"
exec "$exe" "${args[@]}"
