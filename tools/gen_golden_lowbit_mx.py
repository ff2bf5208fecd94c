#!/usr/bin/env python3
"""Golden vectors for MX block quantization (issue 35; include/xquant/numerics/mx_block.hpp),
from the peers' own functions:

  torchao 0.18        prototype/mx_formats/mx_tensor.py: to_mx(x, elem, 32, ScaleCalculationMode.X)
                      then to_dtype(...) back to float32  (FLOOR, CEIL, EVEN, RCEIL)
  microxcaling        mx/mx_ops.py::_quantize_mx(x, 8, elem, axes=[-1], block_size=32, round=...),
                      imported from the repository snapshot given with --microxcaling (its git
                      commit is recorded; the code is not copied here)
  nvidia-modelopt     qtensor/mxfp4_tensor.py: MXFP4QTensor.quantize(x, 32) then .dequantize;
  0.47                qtensor/mxfp8_tensor.py: MXFP8QTensor (what ModelOpt's MXFP8_DEFAULT_CFG
                      exports)

Inputs: a (rows, 64) float32 matrix per case: "edge" rows (stored) — exact ties at every element
midpoint under a power-of-two block scale, values at and past saturation (amax 7.5 for FP4,
the FLOOR overflow), an all-zero block, a block with one huge outlier, tiny and subnormal
blocks, amax just above and below powers of two, NaN and ±Inf blocks (variants whose peer
handles them) — then hashed rows (tools/index_hash.py; not stored) to reach at least 10,000
values. The edge rows are stored once per element type ("inputs"; a case uses the first
"edge_rows" of them, its first "cols" columns); outputs as the FNV-1a 64 hash of their
little-endian float32 bits (tests/numerics/test_mx_block.cpp recomputes it), with every NaN
of the edge rows' outputs written as 0x7fc00000 first (NaN-ness compared, not payloads); block
scales likewise. microxcaling also gets a (rows, 40) case: a partial last block, which it pads,
and blocks along axis 0 (its `axes=[0]`): the one peer that takes another axis.

Usage: python tools/gen_golden_lowbit_mx.py --microxcaling /path/to/microxcaling [--out DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import warnings

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
warnings.simplefilter("ignore")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lowbit_golden as lg  # noqa: E402
from lowbit_golden import fnv1a64, random_rows  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")
RANDOM_ROWS = 160
COLS = 64
F = np.float32

ELEMENTS = {  # name: (max, emax, mantissa bits)
    "fp8_e4m3fn": (448.0, 8, 3), "fp8_e5m2": (57344.0, 15, 2), "fp6_e3m2": (28.0, 4, 2),
    "fp6_e2m3": (7.5, 2, 3), "fp4_e2m1": (6.0, 2, 1), "int8": (127.0 / 64.0, 0, 6),
}




def grid(name):
    """The element's non-negative values (from its definition: steps 2^(max(e, emin) - m))."""
    mx, emax, m = ELEMENTS[name]
    emin = {"fp8_e4m3fn": -6, "fp8_e5m2": -14, "fp6_e3m2": -2, "fp6_e2m3": 0, "fp4_e2m1": 0, "int8": 0}[name]
    vals = set()
    for e in range(emin, emax + 1):
        step = 2.0 ** (e - m)
        for k in range(0, 2 ** (m + 1)):
            v = k * step if e == emin else (2 ** m + k) * step
            if v <= mx and (e == emin or k < 2 ** m):
                vals.add(v)
    if name == "int8":
        vals = {k / 64.0 for k in range(128)}
    return np.array(sorted(vals), dtype=np.float64)




def edge_rows(name, with_specials):
    mx, emax, m = ELEMENTS[name]
    g = grid(name)
    rows = []
    mids = ((g[:-1] + g[1:]) / 2)
    for scale_e in (0, -3, 5):
        s = 2.0 ** scale_e
        # a block whose amax is the element max (so that every variant's scale is 2^scale_e
        # for FLOOR) holding ties at the element midpoints, and their neighbours
        vals = np.concatenate([[mx], mids, -mids[::-1]]) * s
        vals = vals.astype(np.float32)
        for start in range(0, len(vals), COLS):
            r = np.zeros(COLS, dtype=np.float32)
            chunk = vals[start:start + COLS]
            r[:len(chunk)] = chunk
            r[0] = F(mx * s)
            r[32] = F(mx * s)
            rows.append(r)
            rows.append(np.where(r == 0, r, np.nextafter(r, F(np.inf))).astype(np.float32))
            rows.append(np.where(r == 0, r, np.nextafter(r, F(0))).astype(np.float32))
    special = []
    special.append(np.zeros(COLS, dtype=np.float32))                                          # all-zero blocks
    r = np.zeros(COLS, dtype=np.float32); r[:] = F(-0.0); r[5] = F(0.0); special.append(r)     # signed zeros
    r = (np.arange(COLS, dtype=np.float32) - 32) / F(16); r[3] = F(1e30); r[40] = F(-3e25); special.append(r)  # outliers
    r = (np.arange(COLS, dtype=np.float32) - 32) * F(1e-41); special.append(r)                 # subnormal blocks
    r = (np.arange(COLS, dtype=np.float32) - 30) * F(3e-38); special.append(r)                 # tiny scales
    r = np.full(COLS, F(7.5)); r[1::2] = F(-1.25); special.append(r)                           # FLOOR overflow (fp4)
    for k in (-8, -1, 0, 1, 3, 9, 17, 100):                                                     # amax near 2^k * max
        base = F(2.0 ** k * mx)
        r = np.linspace(-1, 1, COLS).astype(np.float32) * base
        r[7] = np.nextafter(base, F(np.inf)); r[39] = np.nextafter(base, F(0)); special.append(r)
        r2 = r.copy(); r2[7] = F(base * F(1.0000001)); r2[39] = F(base * F(1.0000002)); special.append(r2)
    r = np.full(COLS, F(3.4028235e38)); r[::3] = F(1.0); special.append(r)
    if with_specials:
        r = np.linspace(-2, 2, COLS).astype(np.float32); r[4] = F(np.nan); r[40] = F(np.inf); special.append(r)
        r = np.linspace(-2, 2, COLS).astype(np.float32); r[33] = F(-np.inf); special.append(r)
    return np.array(rows + special, dtype=np.float32)


def run_torchao(x, name, mode):
    import torch
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2
    from torchao.prototype.mx_formats.mx_tensor import to_dtype, to_mx
    elem = {"fp8_e4m3fn": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2, "fp6_e2m3": DTYPE_FP6_E2M3,
            "fp6_e3m2": DTYPE_FP6_E3M2, "fp4_e2m1": torch.float4_e2m1fn_x2}[name]
    t = torch.from_numpy(x.copy())
    scale, data = to_mx(t, elem, 32, getattr(ScaleCalculationMode, mode))
    y = to_dtype(data, scale, elem, 32, torch.float32)
    s = scale.view(torch.uint8).numpy().astype(np.int64)
    return y.numpy(), np.where(s == 255, np.nan, np.ldexp(1.0, s - 127)).astype(np.float32)


def run_microxcaling(x, name, rnd, mx_mod, axis=-1):
    import torch
    fmt = {"fp8_e4m3fn": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "fp6_e3m2": "fp6_e3m2", "fp6_e2m3": "fp6_e2m3",
           "fp4_e2m1": "fp4_e2m1", "int8": "int8"}[name]
    y = mx_mod._quantize_mx(torch.from_numpy(x.copy()), 8, mx_mod.ElemFormat.from_str(fmt), axes=[axis],
                            block_size=32, round=rnd)
    return y.numpy(), None


def run_modelopt(x):
    import torch
    from modelopt.torch.quantization.qtensor.mxfp4_tensor import MXFP4QTensor
    qt, scale = MXFP4QTensor.quantize(torch.from_numpy(x.copy()), 32)
    y = qt.dequantize(dtype=torch.float32, scale=scale, block_sizes={-1: 32})
    s = scale.numpy().astype(np.int64).reshape(-1)
    return y.numpy(), np.ldexp(1.0, s - 127).astype(np.float32)


def load_microxcaling(path):
    import importlib
    sys.path.insert(0, path)
    mx_ops = importlib.import_module("mx.mx_ops")
    formats = importlib.import_module("mx.formats")
    mx_ops.ElemFormat = formats.ElemFormat
    commit = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return mx_ops, commit


def run_modelopt_mxfp8(x):
    import torch
    from modelopt.torch.quantization.qtensor.mxfp8_tensor import MXFP8QTensor
    qt, scale = MXFP8QTensor.quantize(torch.from_numpy(x.copy()))
    y = qt.dequantize(dtype=torch.float32, scale=scale)
    s = scale.numpy().astype(np.int64).reshape(-1)
    return y.numpy(), np.ldexp(1.0, s - 127).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--microxcaling", required=True, help="a checkout of microsoft/microxcaling (its mx/ package)")
    ap.add_argument("--microxcaling-commit", default=None, help="the commit, when the path is not a git checkout")
    args = ap.parse_args()
    import modelopt
    import torch
    import torchao
    torch.set_num_threads(1)
    mx_mod, commit = load_microxcaling(args.microxcaling)
    commit = args.microxcaling_commit or commit
    cases, inputs = [], {}
    seed = 3500

    def hashed_or_full(case, key, v):
        case[key + "_fnv1a64_nan_canonical"] = lg.fnv1a64_nan_canonical(v)

    def add(variant, name, case_seed, x, y, scales, cols, edges_n, axis=-1):
        case = {"op": "low_bit.mx", "name": "%s_%s%s%s" % (variant, name, "" if cols == COLS else "_cols%d" % cols,
                                                          "" if axis == -1 else "_axis%d" % axis),
                "attrs": {"variant": variant, "element": name, "block_size": 32, "random_rows": RANDOM_ROWS,
                          "cols": cols, "seed": case_seed, "edge_rows": edges_n, "axis": axis},
                "random_y_fnv1a64_f32": fnv1a64(y[edges_n:]), "values": int(x.size)}
        if edges_n:
            hashed_or_full(case, "edge_y", y[:edges_n])
        if scales is not None:
            case["scales_fnv1a64_f32"] = fnv1a64(scales)
        cases.append(case)

    for name in ["fp8_e4m3fn", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8"]:
        all_edges = edge_rows(name, True)
        inputs[name] = lg.tensor(all_edges)
        n_plain = len(edge_rows(name, False))
        for variant in ["torchao_floor", "torchao_ceil", "torchao_even", "torchao_rceil", "microxcaling_nearest",
                        "microxcaling_even", "modelopt_mxfp4", "modelopt_mxfp8_qtensor"]:
            if variant.startswith("torchao") and name == "int8":
                continue
            if variant == "modelopt_mxfp4" and name != "fp4_e2m1":
                continue
            if variant == "modelopt_mxfp8_qtensor" and name != "fp8_e4m3fn":
                continue
            # NaN/Inf blocks: torchao's FP6/FP4 casts turn NaN into payload-dependent codes and
            # ModelOpt's uint8 scale of NaN is undefined, so only FP8 torchao and microxcaling get them
            specials = variant.startswith("microxcaling") or (variant.startswith("torchao") and name.startswith("fp8"))
            shapes = [(COLS, -1)]
            if variant.startswith("microxcaling"):
                shapes += [(40, -1), (COLS, 0)]
            if variant == "modelopt_mxfp8_qtensor":
                shapes += [(40, -1)]  # it pads a partial last block too
            for cols, axis in shapes:
                seed += 1
                case_seed = seed
                e = all_edges if specials else all_edges[:n_plain]
                if axis == 0:
                    e = e[:0]  # blocks down the columns: the hashed rows only (160 = 5 blocks of 32)
                e = e[:, :cols]
                x = np.concatenate([e, random_rows(case_seed, RANDOM_ROWS, cols)]).astype(np.float32)
                if variant.startswith("torchao"):
                    y, s = run_torchao(x, name, variant.split("_")[1].upper())
                elif variant.startswith("microxcaling"):
                    y, s = run_microxcaling(x, name, variant.split("_")[1], mx_mod, axis)
                elif variant == "modelopt_mxfp4":
                    y, s = run_modelopt(x)
                else:
                    y, s = run_modelopt_mxfp8(x)
                add(variant, name, case_seed, x, y.astype(np.float32), s, cols, len(e), axis)
                print(cases[-1]["name"], x.size, "values")
    out = {"generator": "tools/gen_golden_lowbit_mx.py",
           "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__,
                        "torchao": torchao.__version__, "nvidia-modelopt": modelopt.__version__,
                        "microxcaling": commit},
           "inputs": inputs, "cases": cases}
    path = os.path.join(args.out, "low_bit_mx.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(cases), "cases", os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
