#!/usr/bin/env bash
# Makes the Python venv in which the ONNX tests run tools/onnx_check.py (onnx, onnxruntime
# and numpy) and the TensorBoard tests run tools/check_tensorboard_log.py (tensorboard): from
# PyPI, at pinned versions, in their own venv (Debian's python3 is
# externally managed, PEP 668: no pip install into it; a venv needs no --user or
# --break-system-packages). Called by scripts/install_deps.sh; idempotent: a venv that
# already has these versions is left as it is (under a second).
#
#   bash scripts/install_onnx_deps.sh          # ~/.cache/xquant-onnx-venv
#   XQ_ONNX_VENV=/some/dir bash scripts/install_onnx_deps.sh
#
# tests/CMakeLists.txt finds the venv at the same place (XQ_ONNX_VENV, else
# ~/.cache/xquant-onnx-venv), or takes -DXQ_ONNX_PYTHON=/path/to/python. Where the
# packages cannot be installed this script warns and exits 0: the ONNX tests then report
# themselves skipped, with the reason, instead of failing the build.
set -euo pipefail

log() { printf '[install_onnx_deps] %s\n' "$*"; }

# Pins: onnx 1.23.2 (opset 28, IR 14; its checker knows int4 and opset 21);
# onnxruntime 1.32.0 (what pip serves here; the PyPI list said 1.31.1); numpy 2.4.6
# (what pip resolves with them; the golden venv's numpy too).
# tensorboard 2.21.0: its reader checks the event files xquant writes (tools/check_tensorboard_log.py).
pins=(onnx==1.23.2 onnxruntime==1.32.0 numpy==2.4.6 tensorboard==2.21.0)

venv=${XQ_ONNX_VENV:-$HOME/.cache/xquant-onnx-venv}
py=$venv/bin/python3

check='import sys, onnx, onnxruntime, numpy, tensorboard
want = dict(a.split("==") for a in sys.argv[1:])
have = {"onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__, "numpy": numpy.__version__,
        "tensorboard": tensorboard.__version__}
sys.exit(0 if all(have[k] == v for k, v in want.items()) else 1)'

if [[ -x $py ]] && "$py" -c "$check" "${pins[@]}" 2>/dev/null; then
  log "venv $venv ready (${pins[*]})"
  exit 0
fi

base=$(command -v python3 || true)
if [[ -z $base ]]; then
  log "WARNING: no python3: the ONNX tests will be skipped" >&2
  exit 0
fi
if [[ ! -x $py ]]; then
  log "python3 -m venv $venv (with $base, $("$base" --version 2>&1))"
  mkdir -p "$(dirname "$venv")"
  if ! "$base" -m venv "$venv"; then
    # Debian's python3 needs python3-venv (install_deps.sh installs it).
    log "WARNING: cannot make a venv with $base (Debian: apt-get install python3-venv); the ONNX tests will be skipped" >&2
    rm -rf "$venv"
    exit 0
  fi
fi
log "pip install ${pins[*]} into $venv"
if ! "$py" -m pip install --quiet --disable-pip-version-check "${pins[@]}"; then
  log "WARNING: pip install failed: the ONNX tests will be skipped" >&2
  exit 0
fi
if "$py" -c "$check" "${pins[@]}"; then
  log "venv $venv ready: $("$py" -c 'import onnx, onnxruntime, numpy; print("onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__, "numpy", numpy.__version__)')"
else
  log "WARNING: $venv does not have ${pins[*]} after pip install; the ONNX tests will use what it has or be skipped" >&2
fi
