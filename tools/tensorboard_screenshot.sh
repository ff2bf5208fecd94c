#!/usr/bin/env bash
# A picture of TensorBoard showing a log: serves LOGDIR with `tensorboard --logdir` on
# 127.0.0.1, waits for it, takes a screenshot with headless Chromium (Debian's `chromium`;
# `apt-get install chromium`), and stops the server. How docs/plots/tensorboard_qat.png is made:
#
#   build/examples/fashion_mnist_qat --quick --log-dir runs/fashion_mnist
#   bash tools/tensorboard_screenshot.sh runs/fashion_mnist docs/plots/tensorboard_qat.png
#
# Environment: TENSORBOARD (default: the tools venv's, ~/.cache/xquant-onnx-venv/bin/tensorboard),
# XQ_TB_PORT (default 6123), XQ_TB_QUERY (what follows the URL's "?": the runs and tags shown;
# default the QAT run's losses, clipped shares and input ranges), XQ_TB_SIZE (default 1600,1100).
set -euo pipefail

logdir=${1:?usage: tensorboard_screenshot.sh LOGDIR OUT.png}
out=${2:?usage: tensorboard_screenshot.sh LOGDIR OUT.png}
tensorboard=${TENSORBOARD:-$HOME/.cache/xquant-onnx-venv/bin/tensorboard}
port=${XQ_TB_PORT:-6123}
query=${XQ_TB_QUERY:-runFilter=qat&tagFilter=batch_loss%7Cclipped%2Fconv%7Crange_max%2F.*input}
size=${XQ_TB_SIZE:-1600,1100}
browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n $browser ]] || { echo "tensorboard_screenshot: no chromium (apt-get install chromium)" >&2; exit 1; }

"$tensorboard" --logdir "$logdir" --host 127.0.0.1 --port "$port" >/tmp/xq_tensorboard_server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/data/environment', timeout=1)" 2>/dev/null; then break; fi
  sleep 1
done
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$size" \
  --virtual-time-budget=20000 --screenshot="$out" "http://127.0.0.1:$port/?darkMode=false#${XQ_TB_DASHBOARD:-scalars}&$query" 2>/dev/null
echo "tensorboard_screenshot: wrote $out"
