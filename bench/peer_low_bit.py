#!/usr/bin/env python3
"""The low-bit formats: xquant's kernels and the peers' own functions, each against memcpy on
the same machine, in one run (issue 35; bench/README.md "Low-bit formats").

For each format, pass (forward, backward), size (n floats as an (n / 4096, 4096) tensor:
64Ki in L2, 1Mi in L3, 16Mi in DRAM) and thread count (1, 2): the peer's function under torch
eager on the CPU is timed alternately with a torch copy of n floats (`dst.copy_(src)`, on the
same `torch.set_num_threads`), giving `peer vs memcpy` = copy time / peer time (medians); then
xquant's benchmark binary (bench/low_bit_bench.cpp) runs that row once and reports its own
`vs_memcpy` (a memcpy timed alternately in its loop). Both are ratios to a copy of the same
bytes on the same threads, so the two columns compare even though torch's copy and glibc's
memcpy differ.

The peers' functions (the golden generators' own):
  mxfp4/mxfp8_torchao_rceil  torchao to_mx(RCEIL) + to_dtype
  mxfp4_microxcaling         microxcaling _quantize_mx(round="nearest")   (--microxcaling PATH)
  mxfp4_modelopt             ModelOpt MXFP4QTensor.quantize + dequantize
  nvfp4_torchao              torchao NVFP4Tensor.to_nvfp4(per_tensor_scale) + dequantize
  nvfp4_transformer_engine   TE NVFP4QuantizerRef.quantize (codes and scales; it has no dequantize)
                             (--transformer-engine PATH)
  fp8_torchao_per_tensor/row torchao Float8FakeQuantizer, forward and autograd backward
  fp8_transformer_engine     TE CurrentScalingQuantizerRef.quantize + dequantize
  int4_symmetric_g32         torchao IntxFakeQuantizer(int4, group 32), forward and backward
  int8_per_token             torchao IntxFakeQuantizer(int8, per_token, asymmetric)
  int4_weight_only_g128      torchao Int4WeightFakeQuantizer(group 128)
(ModelOpt's Triton kernel runs here only under Triton's interpreter, not timed.) A peer whose
backward is the identity or that has no CPU autograd gets "-" in the backward rows.

    python3 bench/peer_low_bit.py --bench build/bench/xquant_low_bit_bench \\
        --transformer-engine PATH --microxcaling PATH [--sizes 65536 1048576 16777216] [--threads 1 2]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import warnings

os.environ["CUDA_VISIBLE_DEVICES"] = ""
warnings.simplefilter("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))

COLS = 4096


def peer_functions(args):
    import torch
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_dtype, to_mx
    from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, per_tensor_amax_to_scale
    from torchao.quantization.granularity import PerRow, PerTensor
    from torchao.quantization.qat import Float8FakeQuantizeConfig, IntxFakeQuantizeConfig
    from torchao.quantization.qat.fake_quantize_config import Int4WeightFakeQuantizeConfig
    from torchao.quantization.qat.fake_quantizer import (Float8FakeQuantizer, Int4WeightFakeQuantizer,
                                                         IntxFakeQuantizer)

    def mx(elem):
        def f(x):
            s, d = to_mx(x, elem, 32, ScaleCalculationMode.RCEIL)
            return to_dtype(d, s, elem, 32, torch.float32)
        return f

    def nvfp4(x):
        q = NVFP4Tensor.to_nvfp4(x, per_tensor_scale=per_tensor_amax_to_scale(torch.max(torch.abs(x))))
        return q.dequantize(torch.float32)

    out = {
        "mxfp4_torchao_rceil": (mx(torch.float4_e2m1fn_x2), None),
        "mxfp8_torchao_rceil": (mx(torch.float8_e4m3fn), None),
        "nvfp4_torchao": (nvfp4, None),
        "fp8_torchao_per_tensor": (Float8FakeQuantizer(Float8FakeQuantizeConfig(torch.float8_e4m3fn, PerTensor())), True),
        "fp8_torchao_per_row": (Float8FakeQuantizer(Float8FakeQuantizeConfig(torch.float8_e4m3fn, PerRow())), True),
        "int4_symmetric_g32": (IntxFakeQuantizer(IntxFakeQuantizeConfig(torch.int4, group_size=32)), True),
        "int8_per_token": (IntxFakeQuantizer(IntxFakeQuantizeConfig(torch.int8, "per_token", is_symmetric=False)), True),
        "int4_weight_only_g128": (Int4WeightFakeQuantizer(
            Int4WeightFakeQuantizeConfig(group_size=128, activation_dtype=torch.bfloat16)), True),
    }
    try:
        from modelopt.torch.quantization.qtensor.mxfp4_tensor import MXFP4QTensor

        def modelopt_mxfp4(x):
            qt, scale = MXFP4QTensor.quantize(x, 32)
            return qt.dequantize(dtype=torch.float32, scale=scale, block_sizes={-1: 32})
        out["mxfp4_modelopt"] = (modelopt_mxfp4, None)
    except ImportError:
        pass
    if args.transformer_engine:
        import lowbit_golden as lg
        te_nvfp4, te_current, te_utils = lg.load_transformer_engine(args.transformer_engine)
        q4 = te_nvfp4.NVFP4QuantizerRef(dtype=te_utils.Fp4Formats.E2M1, rowwise=True, columnwise=False,
                                        quant_tile_shape=(1, 16))
        q8 = te_current.CurrentScalingQuantizerRef(torch.float8_e4m3fn, rowwise=True, columnwise=False)

        def te_fp8(x):
            r = q8.quantize(x)
            return q8.dequantize(r.data, r.scale)
        out["nvfp4_transformer_engine"] = (lambda x: q4.quantize(x), None)
        out["fp8_transformer_engine_per_tensor"] = (te_fp8, None)
    if args.microxcaling:
        import importlib
        sys.path.insert(0, args.microxcaling)
        mx_ops = importlib.import_module("mx.mx_ops")
        formats = importlib.import_module("mx.formats")
        fp4 = formats.ElemFormat.from_str("fp4_e2m1")
        out["mxfp4_microxcaling"] = (lambda x: mx_ops._quantize_mx(x, 8, fp4, axes=[-1], block_size=32,
                                                                    round="nearest"), None)
    return out


def median_pair(f, copy, reps):
    """Median times of f() and copy(), called alternately after one warm-up each."""
    f()
    copy()
    tf, tc = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        tf.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        copy()
        tc.append(time.perf_counter() - t0)
    return statistics.median(tf), statistics.median(tc)


def peer_ratio(fn, backward, n, threads, pass_):
    import torch
    torch.set_num_threads(threads)
    x = torch.sin(torch.arange(n, dtype=torch.float32) * 0.37).view(n // COLS, COLS)
    x = torch.where(torch.arange(n).view_as(x) % 97 == 0, x * 30, x)
    src, dst = torch.empty_like(x).copy_(x), torch.empty_like(x)
    reps = 15 if n <= (1 << 20) else 5
    if pass_ == "forward":
        with torch.no_grad():
            tf, tc = median_pair(lambda: fn(x), lambda: dst.copy_(src), reps)
        return tc / tf
    if not backward:
        return None
    dy = torch.ones_like(x)
    xr = x.clone().requires_grad_(True)

    def step():  # the forward is timed apart and taken off: the backward alone
        y = fn(xr)
        y.backward(dy)
        xr.grad = None
    with torch.no_grad():
        t_fwd, _ = median_pair(lambda: fn(x), lambda: dst.copy_(src), reps)
    t_both, tc = median_pair(step, lambda: dst.copy_(src), reps)
    return tc / max(t_both - t_fwd, 1e-9)


def xquant_ratio(bench, name, pass_, n, threads):
    flt = "^BM_%s_%s/n:%d/threads:%d/" % (name, pass_, n, threads)
    out = subprocess.run([bench, "--benchmark_filter=" + flt, "--benchmark_min_time=0.2", "--benchmark_format=json"],
                         capture_output=True, text=True, check=True).stdout
    runs = json.loads(out)["benchmarks"]
    return runs[0]["vs_memcpy"] if runs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--transformer-engine", default=None)
    ap.add_argument("--microxcaling", default=None)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1 << 16, 1 << 20, 1 << 24])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--only", nargs="*", default=None, help="format names")
    ap.add_argument("--json", default=None, help="write the rows here too")
    args = ap.parse_args()
    peers = peer_functions(args)
    names = ["mxfp4_torchao_rceil", "mxfp8_torchao_rceil", "mxfp4_microxcaling", "mxfp4_modelopt", "nvfp4_torchao",
             "nvfp4_transformer_engine", "nvfp4_modelopt_triton", "fp8_torchao_per_tensor", "fp8_torchao_per_row",
             "fp8_transformer_engine_per_tensor", "int4_symmetric_g32", "int8_per_token", "int4_weight_only_g128"]
    if args.only:
        names = [n for n in names if n in args.only]
    cols = [(n, t) for n in args.sizes for t in args.threads]
    header = "| format, pass | " + " | ".join("%s, %d thr" % ({1 << 16: "64Ki", 1 << 20: "1Mi", 1 << 24: "16Mi"}.get(n, str(n)), t)
                                           for n, t in cols) + " |"
    print(header)
    print("|---|" + "---:|" * len(cols))
    rows = []
    for name in names:
        for pass_ in ("forward", "backward"):
            cells = []
            for n, t in cols:
                xr = xquant_ratio(args.bench, name, pass_, n, t)
                pr = None
                if name in peers:
                    fn, bwd = peers[name]
                    pr = peer_ratio(fn, bwd, n, t, pass_)
                cells.append((xr, pr))
                rows.append({"format": name, "pass": pass_, "n": n, "threads": t, "xquant": xr, "peer": pr})
            fmt = lambda v: "-" if v is None else "%.2f" % v
            print("| %s %s | " % (name, pass_) + " | ".join("**%s** · %s" % (fmt(a), fmt(b)) for a, b in cells) + " |",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
