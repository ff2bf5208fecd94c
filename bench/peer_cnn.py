#!/usr/bin/env python3
"""xquant against PyTorch on the Fashion-MNIST CNN (issue 15): the same network, batch 64,
Adam, the same thread count, measured interleaved so that both see the same machine.

The network is examples/fashion_mnist/cnn.hpp: conv 3x3 (32, same, no bias) -> batch norm
-> relu -> max pool 2, the same block with 64 filters, flatten, dense 128, relu, dropout
0.25, dense 10; sparse softmax cross-entropy. xquant's side is bench/cnn_bench.cpp
(`BM_cnn_train_step`, `BM_cnn_qat_train_step/batch:64/fold:1`, `BM_cnn_inference_step`);
PyTorch's is the same model in eager mode, its QAT twin made as PyTorch's docs make one
(fuse_modules_qat of conv + bn + relu, the 'x86' default QAT qconfig with its fused
observer and fake-quant, prepare_qat), inference under no_grad in eval mode.

Each round times PyTorch's three steps (median of `--steps` steps after warm-up) and then
runs xquant's benchmark binary once for its three (Google Benchmark, wall-clock); the
ratios are PyTorch's time over xquant's (> 1: xquant is faster), one per round, then
their median. `qat_overhead` is each framework's QAT step over its own float step.

    python3 bench/peer_cnn.py --bench build/bench/xquant_cnn_bench --threads 1 2 --rounds 3

`--network bnn` does the same for the binarized CNN of examples/fashion_mnist_bnn/bnn.hpp
and its float twin (xquant: `BM_bnn_over_float_train_step/metrics:0` of
xquant_binary_bench; PyTorch: the same layers with a sign straight-through estimator on
the latent weights (gradient where |w| <= 1), ApproxSign on the inputs (gradient 2 - 2|x|
where |x| <= 1), +1 padding of the binary convolutions, batch norms after them), training
steps only:

    python3 bench/peer_cnn.py --network bnn --bench build/bench/xquant_binary_bench

Needs torch (pip install torch --index-url https://download.pytorch.org/whl/cpu).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings


def median_ms(step, steps):
    """The median time of `steps` calls of step() after three warm-up calls, in ms."""
    for _ in range(3):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def train_timer(model, x, y, after_step=None):
    """One training step of `model` on the batch (x, y): cross-entropy, backward, Adam."""
    import torch

    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        if after_step:
            after_step()
    return step


def torch_steps(threads, steps, batch=64):
    import torch
    import torch.nn as nn
    import torch.ao.quantization as tq

    warnings.filterwarnings("ignore")  # torch.ao.quantization's deprecation notices
    torch.manual_seed(1)
    torch.set_num_threads(threads)

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout, momentum=0.1),
                             nn.ReLU(), nn.MaxPool2d(2))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
            self.b1, self.b2 = block(1, 32), block(32, 64)
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(7 * 7 * 64, 128), nn.ReLU(), nn.Dropout(0.25),
                                      nn.Linear(128, 10))

        def forward(self, x):
            return self.dequant(self.head(self.b2(self.b1(self.quant(x)))))

    x = torch.rand(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def infer_timer(model):
        model.eval()

        def step():
            with torch.no_grad():
                model(x)
        return step

    float_net = Net()
    qat_net = Net()
    qat_net.train()
    tq.fuse_modules_qat(qat_net, [["b1.0", "b1.1", "b1.2"], ["b2.0", "b2.1", "b2.2"], ["head.1", "head.2"]],
                        inplace=True)
    qat_net.qconfig = tq.get_default_qat_qconfig("x86")
    tq.prepare_qat(qat_net, inplace=True)

    return {"float_train": median_ms(train_timer(float_net, x, y), steps),
            "qat_train": median_ms(train_timer(qat_net, x, y), steps),
            "inference": median_ms(infer_timer(Net()), steps)}


def torch_bnn_steps(threads, steps, batch=64):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    warnings.filterwarnings("ignore")
    torch.manual_seed(1)
    torch.set_num_threads(threads)

    class SteSign(torch.autograd.Function):  # larq's ste_sign: sign(0) = +1, gradient where |x| <= 1
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.where(x >= 0, 1.0, -1.0)

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensors
            return dy * (x.abs() <= 1).to(dy.dtype)

    class ApproxSign(SteSign):  # Bi-Real Net: gradient 2 - 2|x| where |x| <= 1
        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensors
            return dy * torch.clamp(2 - 2 * x.abs(), min=0)

    class BinaryConv(nn.Conv2d):
        def __init__(self, cin, cout, binary_input):
            super().__init__(cin, cout, 3, padding=0, bias=False)
            self.binary_input = binary_input

        def forward(self, x):
            if self.binary_input:
                x = ApproxSign.apply(x)
            x = F.pad(x, (1, 1, 1, 1), value=1.0 if self.binary_input else 0.0)
            return F.conv2d(x, SteSign.apply(self.weight))

    class BinaryDense(nn.Linear):
        def __init__(self, cin, cout):
            super().__init__(cin, cout, bias=False)

        def forward(self, x):
            return F.linear(ApproxSign.apply(x), SteSign.apply(self.weight))

    def network(binary):
        conv = (lambda cin, cout, bi: BinaryConv(cin, cout, bi)) if binary else \
            (lambda cin, cout, bi: nn.Conv2d(cin, cout, 3, padding=1, bias=False))
        dense = BinaryDense if binary else (lambda cin, cout: nn.Linear(cin, cout, bias=False))
        return nn.Sequential(conv(1, 64, False), nn.MaxPool2d(2), nn.BatchNorm2d(64),
                             conv(64, 128, True), nn.MaxPool2d(2), nn.BatchNorm2d(128),
                             conv(128, 128, True), nn.BatchNorm2d(128), nn.Flatten(),
                             dense(7 * 7 * 128, 256), nn.BatchNorm1d(256), dense(256, 10), nn.BatchNorm1d(10))

    x = torch.rand(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    bnn = network(True)

    def clip_latent_weights():  # to [-1, 1] after each step, as xquant's weight_clip
        with torch.no_grad():
            for m in bnn.modules():
                if isinstance(m, (BinaryConv, BinaryDense)):
                    m.weight.clamp_(-1, 1)

    return {"float_train": median_ms(train_timer(network(False), x, y), steps),
            "bnn_train": median_ms(train_timer(bnn, x, y, clip_latent_weights), steps)}


# What each network measures: xquant's benchmark filter, then per case the benchmark name
# and the counter that holds its time in ms (None: the benchmark's own real time).
NETWORKS = {
    "cnn": {"filter": "^(BM_cnn_train_step|BM_cnn_qat_train_step/batch:64/fold:1|BM_cnn_inference_step)",
            "cases": {"float_train": ("BM_cnn_train_step/batch:64/real_time", None),
                      "qat_train": ("BM_cnn_qat_train_step/batch:64/fold:1/real_time", None),
                      "inference": ("BM_cnn_inference_step/batch:64/real_time", None)},
            "torch": torch_steps, "overhead": ("qat_train", "QAT step / float step"),
            "default_bench": "build/bench/xquant_cnn_bench"},
    "bnn": {"filter": "^BM_bnn_over_float_train_step/metrics:0",
            "cases": {"float_train": ("BM_bnn_over_float_train_step/metrics:0/manual_time", "float_ms"),
                      "bnn_train": ("BM_bnn_over_float_train_step/metrics:0/manual_time", "bnn_ms")},
            "torch": torch_bnn_steps, "overhead": ("bnn_train", "BNN step / float twin's step"),
            "default_bench": "build/bench/xquant_binary_bench"},
}


def xquant_steps(binary, threads, min_time, network):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([binary, f"--benchmark_filter={network['filter']}", "--benchmark_format=json",
                          f"--benchmark_min_time={min_time}"], env=env, check=True, capture_output=True,
                         text=True).stdout
    runs = {b["name"]: b for b in json.loads(out)["benchmarks"]}
    result = {}
    for key, (name, counter) in network["cases"].items():
        if name not in runs:
            sys.exit(f"peer_cnn: {binary} did not report {name} (found: {', '.join(sorted(runs))})")
        b = runs[name]
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
        result[key] = b[counter] if counter else b["real_time"] * scale
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--network", choices=sorted(NETWORKS), default="cnn")
    ap.add_argument("--bench", help="xquant's benchmark binary (default: build/bench/xquant_cnn_bench, "
                                    "or xquant_binary_bench for --network bnn)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20, help="PyTorch steps timed per case and round")
    ap.add_argument("--min-time", default="0.5", help="Google Benchmark's --benchmark_min_time per case")
    args = ap.parse_args()
    network = NETWORKS[args.network]
    bench = args.bench or network["default_bench"]
    if not os.access(bench, os.X_OK):
        sys.exit(f"peer_cnn: no benchmark binary at {bench} (build it: cmake --build build --target "
                 f"{os.path.basename(network['default_bench'])})")
    import torch
    print(f"torch {torch.__version__}; xquant {bench}; {args.network}, batch 64; {args.rounds} rounds")
    cases = network["cases"]
    slow_case, slow_label = network["overhead"]
    for threads in args.threads:
        ratios = {k: [] for k in cases}
        overhead = {"torch": [], "xquant": []}
        for r in range(args.rounds):
            t = network["torch"](threads, args.steps)
            q = xquant_steps(bench, threads, args.min_time, network)
            for k in cases:
                ratios[k].append(t[k] / q[k])
            overhead["torch"].append(t[slow_case] / t["float_train"])
            overhead["xquant"].append(q[slow_case] / q["float_train"])
            print(f"threads {threads} round {r + 1}: " +
                  ", ".join(f"{k} torch {t[k]:.1f} ms xquant {q[k]:.1f} ms" for k in cases), flush=True)
        print(f"threads {threads}: torch / xquant (median of rounds; > 1: xquant faster): " +
              ", ".join(f"{k} {statistics.median(v):.2f} [{min(v):.2f}..{max(v):.2f}]" for k, v in ratios.items()))
        print(f"threads {threads}: {slow_label}: torch {statistics.median(overhead['torch']):.2f}, "
              f"xquant {statistics.median(overhead['xquant']):.2f}", flush=True)


if __name__ == "__main__":
    main()
