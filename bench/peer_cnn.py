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
    loss_fn = nn.CrossEntropyLoss()

    def train_timer(model):
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()
        return step

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

    def median_ms(step):
        for _ in range(3):
            step()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        return 1e3 * statistics.median(times)

    return {"float_train": median_ms(train_timer(float_net)), "qat_train": median_ms(train_timer(qat_net)),
            "inference": median_ms(infer_timer(Net()))}


XQ_CASES = {"float_train": "BM_cnn_train_step/batch:64/real_time",
            "qat_train": "BM_cnn_qat_train_step/batch:64/fold:1/real_time",
            "inference": "BM_cnn_inference_step/batch:64/real_time"}


def xquant_steps(binary, threads, min_time):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    pattern = "^(BM_cnn_train_step|BM_cnn_qat_train_step/batch:64/fold:1|BM_cnn_inference_step)"
    out = subprocess.run([binary, f"--benchmark_filter={pattern}", "--benchmark_format=json",
                          f"--benchmark_min_time={min_time}"], env=env, check=True, capture_output=True,
                         text=True).stdout
    runs = {b["name"]: b for b in json.loads(out)["benchmarks"]}
    result = {}
    for key, name in XQ_CASES.items():
        if name not in runs:
            sys.exit(f"peer_cnn: {binary} did not report {name} (found: {', '.join(sorted(runs))})")
        b = runs[name]
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
        result[key] = b["real_time"] * scale
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="build/bench/xquant_cnn_bench", help="xquant's CNN benchmark binary")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20, help="PyTorch steps timed per case and round")
    ap.add_argument("--min-time", default="0.5", help="Google Benchmark's --benchmark_min_time per case")
    args = ap.parse_args()
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"peer_cnn: no benchmark binary at {args.bench} (build the xquant_cnn_bench target)")
    import torch
    print(f"torch {torch.__version__}; xquant {args.bench}; batch 64; {args.rounds} rounds")
    for threads in args.threads:
        ratios = {k: [] for k in XQ_CASES}
        overhead = {"torch": [], "xquant": []}
        for r in range(args.rounds):
            t = torch_steps(threads, args.steps)
            q = xquant_steps(args.bench, threads, args.min_time)
            for k in XQ_CASES:
                ratios[k].append(t[k] / q[k])
            overhead["torch"].append(t["qat_train"] / t["float_train"])
            overhead["xquant"].append(q["qat_train"] / q["float_train"])
            print(f"threads {threads} round {r + 1}: " +
                  ", ".join(f"{k} torch {t[k]:.1f} ms xquant {q[k]:.1f} ms" for k in XQ_CASES), flush=True)
        print(f"threads {threads}: torch / xquant (median of rounds; > 1: xquant faster): " +
              ", ".join(f"{k} {statistics.median(v):.2f} [{min(v):.2f}..{max(v):.2f}]" for k, v in ratios.items()))
        print(f"threads {threads}: QAT step / float step: torch {statistics.median(overhead['torch']):.2f}, "
              f"xquant {statistics.median(overhead['xquant']):.2f}", flush=True)


if __name__ == "__main__":
    main()
