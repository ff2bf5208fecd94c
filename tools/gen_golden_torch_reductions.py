#!/usr/bin/env python3
"""Golden vectors for PyTorch's CPU sum orders and the LSQ backward's d_scale / d_zero_point
on tensors large enough for those orders to matter (tests/data/golden/torch_reductions.json).

tools/gen_golden.py keeps its tensors small and torch on one thread; here the tensors reach
1,000,000 elements and torch runs with 1, 2 and 4 threads, so the file stores no inputs:
every input is made from its index by a hash that the C++ test repeats exactly,

    h = fmix32(uint32(i + seed * 0x9E3779B9))          (murmur3's finalizer)
    v = float32((h >> 8) * 2^-24) * 2 - 1               (exact: a multiple of 2^-23 in [-1, 1))

and only the outputs (float32 bit patterns, as in tools/gen_golden.py) are written. Cases:

  torch.sum                       x.sum() with torch.set_num_threads(threads)
  torch.sum_except_axis           x.sum(every dim but axis)
  torch.fake_quantize_learnable_per_tensor_affine_backward
  torch.fake_quantize_learnable_per_channel_affine_backward
                                  aten::_fake_quantize_learnable_per_*_affine_backward called
                                  directly (the op the autograd node runs), dx not stored
                                  (test_torch_fake_quant.cpp checks dx on the other golden file)

The orders behind them: tools/probe_torch_reduction_order.py. Deterministic: running it twice
gives the same file. ATEN_CPU_CAPABILITY is pinned to avx2 as in tools/gen_golden.py.

Usage:  python tools/gen_golden_torch_reductions.py [--out DIR]
"""

import os

os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402

from index_hash import index_hash  # noqa: E402
import torch  # noqa: E402

f32 = np.float32


def hashed(shape, seed):
    n = int(np.prod(shape, dtype=np.int64))
    h = index_hash(n, seed)
    v = (h >> np.uint64(8)).astype(f32) * f32(2.0 ** -24) * f32(2) - f32(1)
    return v.astype(f32).reshape(shape)


def enc(a):
    a = np.array(a, dtype=f32, order="C")
    return {"shape": [int(s) for s in a.shape], "f32": [int(v) for v in a.reshape(-1).view(np.uint32)]}


THREADS = [1, 2, 4]
SUM_SIZES = [10, 1000, 32767, 32768, 40000, 65537, 100003, 250000, 1000000]
CHANNEL_SHAPES = [((64, 3, 3, 3), 0), ((8, 16, 5, 5), 1), ((3, 3, 32, 64), 3), ((1000, 10), 1),
                  ((10, 1000), 0), ((3, 3, 64, 100), 3), ((40000, 1), 1), ((100, 70, 9), 1),
                  ((2000, 5), 1), ((9, 17), 1), ((3, 3, 32, 64), 2)]
TENSOR_SIZES = [1000, 32768, 40000, 100003, 1000000]


def gen():
    cases = []
    for n in SUM_SIZES:
        x = torch.from_numpy(hashed((n,), 3))
        for t in THREADS:
            torch.set_num_threads(t)
            cases.append({"op": "torch.sum", "name": f"n{n}_t{t}", "attrs": {"shape": [n], "seed": 3, "threads": t},
                          "outputs": {"sum": enc(x.sum().numpy())}})
    for shape, axis in CHANNEL_SHAPES:
        x = torch.from_numpy(hashed(shape, 4))
        dims = [d for d in range(len(shape)) if d != axis]
        for t in THREADS[:2]:
            torch.set_num_threads(t)
            cases.append({"op": "torch.sum_except_axis", "name": f"{'x'.join(map(str, shape))}_a{axis}_t{t}",
                          "attrs": {"shape": list(shape), "axis": axis, "seed": 4, "threads": t},
                          "outputs": {"sum": enc(x.sum(dims).numpy())}})
    qmin, qmax = -128, 127
    lsq_t = torch.ops.aten._fake_quantize_learnable_per_tensor_affine_backward
    lsq_c = torch.ops.aten._fake_quantize_learnable_per_channel_affine_backward
    for n in TENSOR_SIZES:
        x, dy = torch.from_numpy(hashed((n,), 1)), torch.from_numpy(hashed((n,), 2))
        scale, zp = f32(0.005), f32(2.7)
        gf = f32(1.0 / math.sqrt(n * qmax))
        for t in THREADS:
            torch.set_num_threads(t)
            _, ds, dz = lsq_t(dy, x, torch.tensor([scale]), torch.tensor([zp]), qmin, qmax, float(gf))
            cases.append({"op": "torch.fake_quantize_learnable_per_tensor_affine_backward", "name": f"n{n}_t{t}",
                          "attrs": {"shape": [n], "x_seed": 1, "dy_seed": 2, "threads": t,
                                    "quant_min": qmin, "quant_max": qmax},
                          "tensors": {"scale": enc(scale), "zero_point": enc(zp), "grad_factor": enc(gf)},
                          "outputs": {"dscale": enc(ds.reshape(()).numpy()), "dzero_point": enc(dz.reshape(()).numpy())}})
    for shape, axis in CHANNEL_SHAPES:
        x, dy = torch.from_numpy(hashed(shape, 5)), torch.from_numpy(hashed(shape, 6))
        C = shape[axis]
        c = np.arange(C)
        scale = (f32(0.003) + f32(0.0001) * (c % 23).astype(f32)).astype(f32)
        zp = ((c % 9).astype(f32) - f32(4) + f32(0.3)).astype(f32)
        gf = f32(1.0 / math.sqrt(np.prod(shape) / C * qmax))
        for t in THREADS[:2]:
            torch.set_num_threads(t)
            _, ds, dz = lsq_c(dy, x, torch.from_numpy(scale), torch.from_numpy(zp), axis, qmin, qmax, float(gf))
            cases.append({"op": "torch.fake_quantize_learnable_per_channel_affine_backward",
                          "name": f"{'x'.join(map(str, shape))}_a{axis}_t{t}",
                          "attrs": {"shape": list(shape), "axis": axis, "x_seed": 5, "dy_seed": 6, "threads": t,
                                    "quant_min": qmin, "quant_max": qmax},
                          "tensors": {"scale": enc(scale), "zero_point": enc(zp), "grad_factor": enc(gf)},
                          "outputs": {"dscale": enc(ds.numpy()), "dzero_point": enc(dz.numpy())}})
    return {"generator": "tools/gen_golden_torch_reductions.py",
            "versions": {"numpy": np.__version__, "torch": torch.__version__,
                         "cpu_capability": torch.backends.cpu.get_cpu_capability()},
            "inputs": "v = float32((fmix32(uint32(i + seed * 0x9E3779B9)) >> 8) * 2^-24) * 2 - 1",
            "cases": cases}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", "golden"))
    args = ap.parse_args()
    path = os.path.join(args.out, "torch_reductions.json")
    with open(path, "w") as f:
        json.dump(gen(), f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
