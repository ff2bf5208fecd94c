#!/usr/bin/env bash
# Installs xquant's build and test dependencies from Debian's packages (and Conan 2 from
# PyPI; onnx, onnxruntime and numpy from PyPI into a venv for the ONNX tests:
# scripts/install_onnx_deps.sh). Idempotent: a package that `dpkg -s` reports as installed
# is skipped, and `apt-get update` runs only when something is missing (and only once).
#
#   bash scripts/install_deps.sh          # everything
#   XQ_SKIP_CONAN=1 bash scripts/install_deps.sh   # without Conan
#   XQ_SKIP_ONNX=1 bash scripts/install_deps.sh    # without the ONNX venv (its tests skip)
set -euo pipefail

log() { printf '[install_deps] %s\n' "$*"; }

# Debian 12 (bookworm) names. xtensor-dev pulls libxtensor-dev 0.24.3 (+ xtl-dev 0.7.x,
# nlohmann-json3-dev); libxsimd-dev is 8.1.0; catch2 is Catch2 v2 (2.13.10);
# dataset-fashion-mnist puts Fashion-MNIST's IDX files (30 MB) in
# /usr/share/datasets/fashion-mnist, for the example and the dataset test. fortunes: 2.6 MB
# of English text in /usr/share/games/fortunes, the transformer_lm example's corpus.
# clang + libclang-rt-dev (libFuzzer and the sanitizer runtimes, only recommended by
# clang, so named here) build tests/fuzz's checkpoint fuzzer; clang also runs the
# clang_syntax test (every header, test and example through clang++ -fsyntax-only), with
# OpenMP when libomp-dev (clang's omp.h, not a dependency of clang) is there. python3-venv: the venv of
# the ONNX tests (install_onnx_deps.sh), where python3 is Debian's. libdnnl-dev: oneDNN
# 2.6, the optional convolution backend (kernels/onednn_conv.hpp), so that CI tests it
# against the im2col oracle; its CMake package needs OpenCL's (ocl-icd-opencl-dev).
# libopenmpi-dev + openmpi-bin: Open MPI 4.1, the optional data-parallel room
# (include/xquant/distributed/), whose tests run two ranks under mpirun.
apt_packages=(
  cmake
  g++
  ninja-build
  pkg-config
  xtl-dev
  xtensor-dev
  libxsimd-dev
  nlohmann-json3-dev
  catch2
  libbenchmark-dev
  libopenblas-dev
  libopenblas-openmp-dev
  zlib1g-dev
  dataset-fashion-mnist
  fortunes
  libopenmpi-dev
  openmpi-bin
  clang
  libclang-rt-dev
  libomp-dev
  python3-venv
  libdnnl-dev
  ocl-icd-opencl-dev
)

if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  SUDO=()
fi

is_installed() {
  dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

apt_updated=0
apt_install() {
  # $@: packages that are missing
  if [[ $# -eq 0 ]]; then return 0; fi
  if [[ $(id -u) -ne 0 && ${#SUDO[@]} -eq 0 ]]; then
    log "ERROR: missing packages ($*) and not root, no sudo; install them by hand" >&2
    exit 1
  fi
  local install=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300
                 --no-install-recommends "$@")
  # With package lists on disk, try them first: `apt-get update` only when there are
  # none, or when they are too old to install from (unknown package, 404 on download).
  if [[ $apt_updated -eq 0 ]] && compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
    log "apt-get install $*"
    if "${install[@]}"; then return 0; fi
    log "install from the current package lists failed: updating them"
  fi
  if [[ $apt_updated -eq 0 ]]; then
    log "apt-get update"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout=300
    apt_updated=1
  fi
  log "apt-get install $*"
  "${install[@]}"
}

if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  log "no dpkg/apt-get here: not a Debian system, install the dependencies by hand" >&2
  log "(cmake >= 3.22, a C++17 compiler, xtensor 0.24, xsimd 8.1, xtl 0.7, Catch2 v2," >&2
  log " Google Benchmark, OpenBLAS, nlohmann-json, zlib, pkg-config, conan 2; optionally" >&2
  log " clang with libFuzzer, for the checkpoint fuzz test;" >&2
  log " Fashion-MNIST's IDX files in a directory named by XQ_FASHION_MNIST_DIR)" >&2
  exit 1
fi

missing=()
for p in "${apt_packages[@]}"; do
  if ! is_installed "$p"; then missing+=("$p"); fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  log "all ${#apt_packages[@]} Debian packages already installed"
else
  apt_install "${missing[@]}"
fi

# ---- onnx, onnxruntime, numpy, tensorboard (PyPI, in a venv): the ONNX and TensorBoard checks --
if [[ ${XQ_SKIP_ONNX:-0} == 1 ]]; then
  log "XQ_SKIP_ONNX=1: not checking the ONNX venv"
else
  bash "$(dirname "${BASH_SOURCE[0]}")/install_onnx_deps.sh"
fi

# ---- Conan 2 (PyPI) ----------------------------------------------------------------
if [[ ${XQ_SKIP_CONAN:-0} == 1 ]]; then
  log "XQ_SKIP_CONAN=1: not checking conan"
  exit 0
fi

if command -v conan >/dev/null 2>&1; then
  conan_version=$(conan --version 2>/dev/null || true)   # "Conan version 2.x.y"
  if [[ $conan_version =~ version\ 2\. ]]; then
    log "conan already installed: $conan_version"
    exit 0
  fi
  log "found '${conan_version:-conan}', want Conan 2"
fi

PY=$(command -v python3 || true)
if [[ -z $PY ]]; then
  apt_install python3
  PY=$(command -v python3)
fi
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  if ! is_installed python3-pip; then apt_install python3-pip; fi
fi

log "pip install 'conan>=2,<3' (with $PY)"
pip_args=(-m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'conan>=2,<3')
if ! "$PY" "${pip_args[@]}" 2>/tmp/xq_pip_err.$$; then
  if grep -q externally-managed /tmp/xq_pip_err.$$; then
    # Debian's own python3 (PEP 668): install for this user only.
    log "externally managed python: retrying with --user --break-system-packages"
    "$PY" "${pip_args[@]}" --user --break-system-packages
  else
    cat /tmp/xq_pip_err.$$ >&2
    rm -f /tmp/xq_pip_err.$$
    exit 1
  fi
fi
rm -f /tmp/xq_pip_err.$$

# pyenv shims appear only after a rehash; a --user install lands in ~/.local/bin.
if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
hash -r
if ! command -v conan >/dev/null 2>&1; then
  userbase=$("$PY" -m site --user-base 2>/dev/null || true)
  if [[ -n $userbase && -x $userbase/bin/conan ]]; then
    log "conan installed in $userbase/bin: add it to PATH"
    export PATH="$userbase/bin:$PATH"
  fi
fi
if command -v conan >/dev/null 2>&1; then
  log "conan ready: $(conan --version) ($(command -v conan))"
else
  log "WARNING: conan installed but not on PATH; the Conan packaging test will be skipped" >&2
fi
