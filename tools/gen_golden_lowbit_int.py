#!/usr/bin/env python3
"""Golden vectors for torchao's integer QAT numerics (issue 35; include/xquant/numerics/
torchao_affine.hpp), from torchao 0.18's own fake quantizers (quantization/qat/fake_quantizer.py)
with their autograd:

  IntxFakeQuantizer(IntxFakeQuantizeConfig(torch.intB, group_size=G, is_symmetric=True))
      groups of G along the last axis (G = the row: per channel), B = 2..8: the weights of
      Int8DynamicActivationIntxWeightConfig (8da4w: B = 4); scale = max(-min, max) / ((qmax - qmin) / 2)
      clamped by eps, q = clamp(round(x * (1 / scale)), qmin, qmax), (q - 0) * scale
  IntxFakeQuantizer(IntxFakeQuantizeConfig(torch.intB, "per_token", is_symmetric=False))
      per row, asymmetric: the activations of Int8DynamicActivationIntxWeightConfig (B = 8)
  Int4WeightFakeQuantizer(Int4WeightFakeQuantizeConfig(group_size=G, activation_dtype=torch.bfloat16))
      Int4WeightOnlyConfig's QAT: a float zero point, q = clamp(round((w - min) / scale), 0, 15),
      (q - 8) * scale + (min + 8 * scale); its gradient also flows through the scale and the
      group's min and max

Inputs, each its own tensor: exact ties at every .5 under a power-of-two scale and their
neighbouring floats, values at the range's ends, all-zero groups and tensors, huge outliers, tiny
and subnormal tensors, NaN and ±Inf, rows whose values are all one value (per token; a last axis of length 1 the peer refuses), and 80 hashed rows of 128
(tools/index_hash.py; not stored, outputs as FNV-1a 64 hashes), with a hashed incoming gradient.

Usage: python tools/gen_golden_lowbit_int.py [--out DIR]
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
RANDOM_SEED = 3800
RANDOM_ROWS, RANDOM_COLS = 80, 128


def rows_of(vals, cols, first):
    """Values in rows of `cols`, each row starting with `first` (its range end)."""
    per = cols - len(first)
    out = []
    for s in range(0, len(vals), per):
        r = np.zeros(cols, dtype=F)
        r[:len(first)] = first
        chunk = vals[s:s + per]
        r[len(first):len(first) + len(chunk)] = chunk
        out.append(r)
    return np.array(out, dtype=F)


def with_neighbours(v):
    v = np.asarray(v, dtype=F)
    return np.concatenate([v, np.nextafter(v, F(np.inf)), np.nextafter(v, F(-np.inf))]).astype(F)


def symmetric_ties(bits, k, cols):
    """Groups whose amax is (2^bits - 1) / 2 * 2^k: scale 2^k, so m + 0.5 (times 2^k) is a tie."""
    qmin, qmax = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    s = 2.0 ** k
    amax = F((qmax - qmin) / 2 * s)
    mids = [(m + 0.5) * s for m in range(qmin - 1, qmax + 1)] + [m * s for m in (qmin, qmax, qmax + 0.25)]
    return rows_of(with_neighbours(mids), cols, [amax, -amax])


def asymmetric_ties(k, cols):
    """Rows with min -128 * 2^k and max 127 * 2^k: scale 2^k, zero point 0."""
    s = 2.0 ** k
    mids = [(m + 0.5) * s for m in range(-129, 128)]
    return rows_of(with_neighbours(mids), cols, [F(-128 * s), F(127 * s)])


def int4_wo_ties(k, cols):
    """Groups with min -8 * 2^k and max 7 * 2^k: scale 2^k, (w - min) / scale = w / 2^k + 8."""
    s = 2.0 ** k
    mids = [(m + 0.5 - 8) * s for m in range(-1, 16)]
    return rows_of(with_neighbours(mids), cols, [F(-8 * s), F(7 * s)])


def common_edges(cols):
    t = {}
    t["zeros"] = np.zeros((2, cols), dtype=F)
    r = np.tile(np.linspace(-3.0, 3.0, cols, dtype=F), (3, 1))
    r[1] = 0.0
    r[2, :cols // 2] = F(-0.0)
    r[2, cols // 2:] = F(0.0)
    t["zero_rows"] = r
    for name, big in (("outlier_1e30", 1e30), ("outlier_3e38", 3.4e38)):
        r = np.tile(np.linspace(-1.0, 1.0, cols, dtype=F), (2, 1))
        r[0, 3] = F(big)
        r[1, 7] = F(-big)
        t[name] = r
    t["tiny"] = np.stack([(np.arange(cols, dtype=F) - cols // 2) * F(3e-38), (np.arange(cols, dtype=F) - cols // 2) * F(1e-42),
                          np.linspace(-1, 1, cols, dtype=F) * F(1e-30)]).astype(F)
    r = np.tile(np.linspace(-2.0, 2.0, cols, dtype=F), (3, 1))
    r[0, 4] = F(np.nan)
    r[1, 20] = F(np.inf)
    r[2, 30] = F(-np.inf)
    t["nan_inf"] = r
    # every value of a row the same (a token of one value): min = max
    t["constant_rows"] = np.tile(np.array([[0.3], [-1e-3], [0.0], [448.0], [-7e4], [1e-40], [5.0], [-0.0]], dtype=F), (1, cols))
    t["positive_only"] = np.tile(np.linspace(0.5, 3.0, cols, dtype=F), (2, 1))
    t["negative_only"] = -t["positive_only"]
    return t


def run_intx(x, cfg, dy):
    import torch
    from torchao.quantization.qat.fake_quantizer import IntxFakeQuantizer
    fq = IntxFakeQuantizer(cfg)
    t = torch.from_numpy(x.copy()).requires_grad_(True)
    y = fq(t)
    y.backward(torch.from_numpy(dy.copy()))
    return {"y": y.detach().numpy(), "dx": t.grad.numpy(),
            "scales": fq.scale.detach().to(torch.float32).numpy().reshape(-1),
            "zero_points": fq.zero_point.detach().to(torch.float32).numpy().reshape(-1)}


def run_int4_wo(x, group, dy):
    import torch
    from torchao.quantization.qat.fake_quantize_config import Int4WeightFakeQuantizeConfig
    from torchao.quantization.qat.fake_quantizer import Int4WeightFakeQuantizer
    fq = Int4WeightFakeQuantizer(Int4WeightFakeQuantizeConfig(group_size=group, activation_dtype=torch.bfloat16))
    t = torch.from_numpy(x.copy()).requires_grad_(True)
    y = fq(t)
    y.backward(torch.from_numpy(dy.copy()))
    return {"y": y.detach().numpy(), "dx": t.grad.numpy()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    import torch
    import torchao
    from torchao.quantization.qat import IntxFakeQuantizeConfig
    torch.set_num_threads(1)
    dy_seed = RANDOM_SEED + 1
    random = lg.random_rows(RANDOM_SEED, RANDOM_ROWS, RANDOM_COLS)
    inputs = {}
    for k, v in common_edges(RANDOM_COLS).items():
        inputs[k] = v
    for bits in range(2, 9):
        for k in (0, -20):
            inputs["sym%d_ties_k%d" % (bits, k)] = symmetric_ties(bits, k, RANDOM_COLS)
    for k in (0, -20, 15):
        inputs["asym_ties_k%d" % k] = asymmetric_ties(k, RANDOM_COLS)
        inputs["int4wo_ties_k%d" % k] = int4_wo_ties(k, RANDOM_COLS)
    inputs["one_value_rows"] = np.array([[0.3], [-1e-3], [0.0], [448.0], [-7e4], [1e-40], [5.0], [-0.0]], dtype=F)
    inputs["three_d"] = np.linspace(-5.0, 5.0, 2 * 3 * 32, dtype=F).reshape(2, 3, 32)

    variants = []  # (name, attrs, fn, the inputs it takes)
    edge_common = list(common_edges(RANDOM_COLS))
    for bits in range(2, 9):
        for group in ([16, 32, 64, 128] if bits == 4 else [32]):
            cfg = IntxFakeQuantizeConfig(getattr(torch, "int%d" % bits), group_size=group, is_symmetric=True)
            names = edge_common + ["sym%d_ties_k0" % bits, "sym%d_ties_k-20" % bits, "random"]
            variants.append(("torchao_intx_symmetric", {"bits": bits, "group_size": group},
                             lambda x, dy, c=cfg: run_intx(x, c, dy), names))
    for bits in (8, 4):
        cfg = IntxFakeQuantizeConfig(getattr(torch, "int%d" % bits), "per_token", is_symmetric=False)
        names = edge_common + ["asym_ties_k0", "asym_ties_k-20", "asym_ties_k15", "one_value_rows", "three_d", "random"]
        variants.append(("torchao_per_token_asymmetric", {"bits": bits}, lambda x, dy, c=cfg: run_intx(x, c, dy), names))
    for group in (32, 128):
        names = edge_common + ["int4wo_ties_k0", "int4wo_ties_k-20", "int4wo_ties_k15", "random"]
        variants.append(("torchao_int4_weight_only", {"group_size": group},
                         lambda x, dy, g=group: run_int4_wo(x, g, dy), names))

    cases, refused, used = [], [], set()
    for variant, attrs, fn, names in variants:
        total = 0
        for name in names:
            x = random if name == "random" else inputs[name]
            dy = lg.random_unit(dy_seed, x.size).reshape(x.shape)
            try:
                out = fn(x, dy)
            except Exception as e:
                refused.append({"variant": variant, "attrs": attrs, "input": name,
                                "error": "%s: %s" % (type(e).__name__, str(e)[:160])})
                continue
            used.add(name)
            case = {"variant": variant, "attrs": attrs, "input": name, "values": int(x.size)}
            for key, v in out.items():
                v = np.asarray(v, dtype=F)
                if key in ("y", "dx"):  # hashed (NaNs canonical); the scales tell where a difference is
                    case[key + "_fnv1a64_nan_canonical"] = lg.fnv1a64_nan_canonical(v)
                elif name == "random":
                    case[key + "_fnv1a64"] = lg.fnv1a64(v)
                else:
                    case[key] = lg.bits(v)
            cases.append(case)
            total += x.size
        print(variant, attrs, total, "values", [r["input"] for r in refused if r["variant"] == variant and r["attrs"] == attrs], "refused")
    out = {"generator": "tools/gen_golden_lowbit_int.py",
           "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__,
                        "torchao": torchao.__version__},
           "random": {"seed": RANDOM_SEED, "rows": RANDOM_ROWS, "cols": RANDOM_COLS, "dy_seed": dy_seed},
           "inputs": {k: lg.tensor(v) for k, v in inputs.items() if k in used}, "cases": cases, "refused": refused}
    path = os.path.join(args.out, "low_bit_int.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(cases), "cases", os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
