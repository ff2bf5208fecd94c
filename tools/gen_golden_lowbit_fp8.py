#!/usr/bin/env python3
"""Golden vectors for FP8 with a scale per tensor or per row (issue 35;
include/xquant/numerics/float8_scaled.hpp), from the peers' own functions:

  torchao 0.18         quantization/qat/fake_quantizer.py: Float8FakeQuantizer(Float8FakeQuantizeConfig(
                       dtype, PerTensor() or PerRow())) (what Float8DynamicActivationFloat8WeightConfig's
                       QAT runs: _choose_scale_float8 = amax / max, _quantize_affine_float8 divides,
                       clamps and casts, _dequantize_affine_float8 multiplies), forward and its
                       autograd (the gradient also flows through the scale, and is cast to FP8 on
                       its way back through the cast)
  TransformerEngine    pytorch/custom_recipes/reference_current_scaling.py: CurrentScalingQuantizerRef(
                       dtype).quantize(x) and .dequantize (scale = max / amax, a product), imported
                       from the checkout given with --transformer-engine; per row: the reference
                       applied to each row (TE's recipes scale per tensor, or per 1x128 / 128x128
                       block in Float8BlockScaling, which has no pure-PyTorch reference)

Elements E4M3FN and E5M2. Inputs, each quantized as its own tensor: exact ties at every element
midpoint and their neighbouring floats under a power-of-two scale, an all-zero tensor and a zero
row, huge outliers (the rest underflows), tiny and subnormal tensors, NaN and ±Inf, rows of one
value, and 160 hashed rows of 64 (tools/index_hash.py; not stored; outputs as FNV-1a 64 hashes).
The incoming gradient of torchao's backward is hashed too (seed in the file).

Usage: python tools/gen_golden_lowbit_fp8.py --transformer-engine PATH [--out DIR]
"""

import argparse
import json
import os
import sys
import warnings

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
warnings.simplefilter("ignore")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lowbit_golden as lg  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")
F = np.float32
RANDOM_SEED = 3700
RANDOM_ROWS, RANDOM_COLS = 160, 64


def element_grid(dtype_name):
    """The element's non-negative finite values, from ml_dtypes (every code decoded)."""
    import ml_dtypes
    t = {"e4m3fn": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}[dtype_name]
    v = np.arange(256, dtype=np.uint8).view(t).astype(np.float64)
    v = v[np.isfinite(v) & (v >= 0)]
    return np.unique(v)


def ties(dtype_name, k):
    """Rows that each hold the tensor's amax max * 2^k (so the scale is 2^k: torchao max*2^k / max,
    TE max / (max*2^k)), then every element midpoint times 2^k, the float above and below it, both
    signs; values just past the max last."""
    g = element_grid(dtype_name)
    mx = g[-1]
    mids = (g[:-1] + g[1:]) / 2
    s = 2.0 ** k
    vals = []
    for m in mids:
        v = F(m * s)
        vals += [v, np.nextafter(v, F(np.inf)), np.nextafter(v, F(0))]
    vals = np.array(vals, dtype=F)
    vals = np.concatenate([vals, -vals, np.array([mx * 1.0001, mx * 1.1, -mx * 1.0625, mx * 0.99999], dtype=F) * F(s)])
    per_row = RANDOM_COLS - 1
    rows = []
    for start in range(0, len(vals), per_row):
        r = np.zeros(RANDOM_COLS, dtype=F)
        chunk = vals[start:start + per_row]
        r[1:1 + len(chunk)] = chunk
        r[0] = F(mx * s) if (start // per_row) % 2 == 0 else F(-mx * s)
        rows.append(r)
    return np.array(rows, dtype=F)


def edge_tensors(dtype_name):
    t = {}
    for k in (0, -30, 10):
        t["ties_k%d" % k] = ties(dtype_name, k)
    t["zeros"] = np.zeros((2, 32), dtype=F)
    r = np.tile(np.linspace(-3.0, 3.0, 32, dtype=F), (3, 1))
    r[1] = 0.0
    r[2, :16] = F(-0.0)
    t["zero_row"] = r
    for name, big in (("outlier_1e30", 1e30), ("outlier_3e38", 3.4e38)):
        r = np.tile(np.linspace(-1.0, 1.0, 32, dtype=F), (3, 1))
        r[1] *= F(1e-3)
        r[0, 3] = F(big)
        r[2, 7] = F(big)
        t[name] = r
    t["tiny"] = np.stack([(np.arange(32, dtype=F) - 15) * F(3e-38), (np.arange(32, dtype=F) - 16) * F(1e-41),
                          np.linspace(-1, 1, 32, dtype=F) * F(1e-30)]).astype(F)
    t["subnormal_only"] = ((np.arange(32, dtype=F) - 16) * F(1e-43)).reshape(2, 16)
    r = np.tile(np.linspace(-2.0, 2.0, 32, dtype=F), (3, 1))
    r[0, 4] = F(np.nan)
    r[1, 20] = F(np.inf)
    r[2, 30] = F(-np.inf)
    t["nan_inf"] = r
    t["one_value_rows"] = np.array([[0.3], [-1e-3], [0.0], [448.0], [-7e4], [1e-40], [5.0], [-0.0]], dtype=F)
    t["three_d"] = np.linspace(-5.0, 5.0, 2 * 3 * 8, dtype=F).reshape(2, 3, 8)
    return t


def run_torchao(x, dtype, per_row, dy):
    import torch
    from torchao.quantization.granularity import PerRow, PerTensor
    from torchao.quantization.qat import Float8FakeQuantizeConfig
    from torchao.quantization.qat.fake_quantizer import Float8FakeQuantizer
    from torchao.quantization.quant_primitives import _choose_scale_float8
    from torchao.quantization.utils import get_block_size
    gran = PerRow() if per_row else PerTensor()
    fq = Float8FakeQuantizer(Float8FakeQuantizeConfig(dtype, gran))
    t = torch.from_numpy(x.copy()).requires_grad_(True)
    y = fq(t)
    y.backward(torch.from_numpy(dy.copy()))
    scale = _choose_scale_float8(torch.from_numpy(x.copy()), get_block_size(x.shape, gran), dtype)
    return {"y": y.detach().numpy(), "scales": scale.numpy().reshape(-1), "dx": t.grad.numpy()}


def run_te(x, dtype, per_row, current):
    import torch
    q = current.CurrentScalingQuantizerRef(dtype, rowwise=True, columnwise=False)
    if not per_row:
        r = q.quantize(torch.from_numpy(x.copy()))
        y = q.dequantize(r.data, r.scale).numpy().reshape(x.shape)
        return {"y": y, "scales": r.scale.numpy().reshape(-1)}
    rows = x.reshape(-1, x.shape[-1])
    ys, scales = [], []
    for row in rows:
        r = q.quantize(torch.from_numpy(row.copy()).view(1, -1))
        ys.append(q.dequantize(r.data, r.scale).numpy().reshape(-1))
        scales.append(r.scale.numpy().reshape(-1)[0])
    return {"y": np.array(ys, dtype=F).reshape(x.shape), "scales": np.array(scales, dtype=F)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--transformer-engine", required=True, help="a checkout of NVIDIA/TransformerEngine")
    ap.add_argument("--transformer-engine-commit", default=None)
    args = ap.parse_args()
    import torch
    import torchao
    torch.set_num_threads(1)
    _, te_current, _ = lg.load_transformer_engine(args.transformer_engine)
    te_commit = args.transformer_engine_commit or lg.git_commit(args.transformer_engine)
    dtypes = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    dy_seed = RANDOM_SEED + 1
    random = lg.random_rows(RANDOM_SEED, RANDOM_ROWS, RANDOM_COLS)
    inputs, cases, refused = {}, [], []
    for dname, dtype in dtypes.items():
        edges = edge_tensors(dname)
        for k, v in edges.items():
            inputs["%s/%s" % (dname, k)] = lg.tensor(v)
        all_inputs = {("%s/%s" % (dname, k)): v for k, v in edges.items()}
        all_inputs["random"] = random
        for peer in ("torchao", "transformer_engine"):
            for per_row in (False, True):
                variant = "%s_%s_%s" % (peer, "per_row" if per_row else "per_tensor", dname)
                for name, x in all_inputs.items():
                    dy = lg.random_unit(dy_seed, x.size).reshape(x.shape)
                    try:
                        out = run_torchao(x, dtype, per_row, dy) if peer == "torchao" else run_te(x, dtype, per_row, te_current)
                    except Exception as e:
                        refused.append({"variant": variant, "input": name, "error": "%s: %s" % (type(e).__name__, str(e)[:160])})
                        continue
                    case = {"variant": variant, "input": name, "values": int(x.size)}
                    for key, v in out.items():
                        # outputs hashed (NaNs canonical); scales in full but for the hashed rows
                        if key != "scales":
                            case[key + "_fnv1a64_nan_canonical"] = lg.fnv1a64_nan_canonical(v)
                        elif name == "random":
                            case[key + "_fnv1a64"] = lg.fnv1a64(v)
                        else:
                            case[key] = lg.bits(v)
                    cases.append(case)
                print(variant, sum(c["values"] for c in cases if c["variant"] == variant), "values",
                      [r["input"] for r in refused if r["variant"] == variant], "refused")
    out = {"generator": "tools/gen_golden_lowbit_fp8.py",
           "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__,
                        "torchao": torchao.__version__, "transformer_engine": te_commit},
           "random": {"seed": RANDOM_SEED, "rows": RANDOM_ROWS, "cols": RANDOM_COLS, "dy_seed": dy_seed},
           "inputs": inputs, "cases": cases, "refused": refused}
    path = os.path.join(args.out, "low_bit_fp8.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(cases), "cases", os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
