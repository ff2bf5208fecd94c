#!/usr/bin/env bash
# The test command: installs the dependencies, configures build/ (Release; tests,
# benchmarks, examples and the compile-time budget check on; CUDA on when nvcc is found),
# builds everything and runs every CTest test, the packaging tests (labelled `packaging`)
# and the compile budget (labelled `compile_budget`, tools/compile_budget.py) included: the
# umbrella header, the README example and the QAT example must stay within their budgets
# (5 paired compiles each, the median ratio; tools/README.md has the figures; issue 12);
# a subset of the tests under ASan + UBSan (`sanitizers`, label `sanitize`) and the
# libFuzzer runs over every file loader (label `fuzz`; tests/fuzz) too (issue 14), the
# concurrency tests under ThreadSanitizer (`thread_sanitizer`, label `sanitize`; issue 34),
# and clang++ -fsyntax-only over every header, test and example (`clang_syntax`, label
# `clang`; issue 34).
#
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh -L packaging    # extra arguments go to ctest
#   bash scripts/test.sh -E packaging    # everything but the packaging tests
#
# Environment: XQ_BUILD_DIR (default build), XQ_WITH_CUDA=ON|OFF (default: ON iff nvcc
# is found), XQ_CMAKE_ARGS (extra configure arguments), CTEST_PARALLEL_LEVEL (ctest's own).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { printf '[test] %s\n' "$*"; }

bash scripts/install_deps.sh

# A --user pip install of conan lands in ~/.local/bin.
if [[ -d $HOME/.local/bin ]]; then PATH="$PATH:$HOME/.local/bin"; fi
if [[ -d /usr/local/cuda/bin ]]; then PATH="/usr/local/cuda/bin:$PATH"; fi
export PATH

build=${XQ_BUILD_DIR:-build}
cuda=${XQ_WITH_CUDA:-}
if [[ -z $cuda ]]; then
  if command -v nvcc >/dev/null 2>&1; then cuda=ON; else cuda=OFF; fi
fi

# Keep the generator an existing build dir was made with; else Ninja when available.
generator=()
if [[ ! -f $build/CMakeCache.txt ]]; then
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
fi
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
read -r -a extra_cmake_args <<<"${XQ_CMAKE_ARGS:-}"

jobs=$(nproc 2>/dev/null || echo 2)
log "configure $build (CUDA $cuda)"
start=$SECONDS
cmake -S . -B "$build" "${generator[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DXQ_BUILD_TESTS=ON -DXQ_BUILD_BENCHMARKS=ON -DXQ_BUILD_EXAMPLES=ON -DXQ_COMPILE_BUDGET=ON "-DXQ_COMPILE_BUDGET_ARGS=--repeat;5" \
  -DXQ_SANITIZE_TESTS=ON -DXQ_TSAN_TESTS=ON \
  -DXQ_WITH_CUDA="$cuda" \
  "${extra_cmake_args[@]}"

log "build -j$jobs"
cmake --build "$build" -j "$jobs"
log "configure + build: $((SECONDS - start)) s"

log "ctest $*"
start=$SECONDS
cd "$build"
status=0
if [[ $# -eq 0 ]]; then
  # The fuzzers (label fuzz) each run for a fixed time on one thread: two at a time halves
  # their wall time (about 100 s of CI). Every other test runs alone, as before: some time
  # threads or compare thread counts.
  ctest --output-on-failure --no-tests=error -LE fuzz || status=$?
  ctest --output-on-failure --no-tests=ignore -L fuzz -j 2 || status=$?
else
  ctest --output-on-failure --no-tests=error "$@" || status=$?
fi
log "ctest: $((SECONDS - start)) s, exit $status"
exit "$status"
