#!/usr/bin/env python3
"""Golden vectors for the low-bit element casts (issue 35; include/xquant/numerics/low_bit_float.hpp),
from the peers' own casts:

  ml_dtypes 0.6   np.float32 array .astype(float8_e4m3fn, float8_e5m2, float6_e3m2fn,
                  float6_e2m3fn, float4_e2m1fn, float8_e8m0fnu)
  onnx 1.23       the reference evaluator's Cast (saturate=1) to FLOAT8E4M3FN, FLOAT8E5M2 (opset 21)
                  and FLOAT4E2M1 (opset 23)
  torch 2.15      tensor.to(torch.float8_e4m3fn / float8_e5m2) (eager, CPU)
  torchao 0.18    custom_fp_utils: f32_to_f4_unpacked, f32_to_f6_e2m3_unpacked, f32_to_f6_e3m2_unpacked

Inputs per element type: every code's value, every midpoint between adjacent codes and the
floats one ulp either side of it, values at and past the top (the max, the next midpoint,
1e30, FLT_MAX), zeros, float32 subnormals, NaN and ±Inf (the "edges", stored), then 12,000
values made from tools/index_hash.py's hash (not stored): the hash's bits as a float32 for
the first 4,000 (every magnitude, NaN and Inf included), then uniform in
[-1.25 max, 1.25 max] scaled by 2^-(hash2 % 12). Outputs: for the edges, the element codes
each peer gives, two hex digits a code (a NaN's code kept as the peer wrote it); for the hashed
values, the FNV-1a 64 hash of the float32 values of those codes with every NaN canonical (and,
for torchao, whose NaN codes come from the NaN's payload bits, a NaN input's output too).

Usage: python tools/gen_golden_lowbit_elements.py [--out DIR]
"""

import argparse
import json
import os
import sys

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lowbit_golden as lg  # noqa: E402
from index_hash import index_hash  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")
RANDOM_COUNT = 12000

TYPES = {
    "fp8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
    "e8m0": ml_dtypes.float8_e8m0fnu,
}
BITS = {"fp8_e4m3fn": 8, "fp8_e5m2": 8, "fp6_e3m2": 6, "fp6_e2m3": 6, "fp4_e2m1": 4, "e8m0": 8}
SEED = {"fp8_e4m3fn": 41, "fp8_e5m2": 52, "fp6_e3m2": 632, "fp6_e2m3": 623, "fp4_e2m1": 421, "e8m0": 80}


def f32(v):
    return np.float32(v)


def random_inputs(name, mx):
    """The hashed inputs; tests/numerics/test_low_bit_float.cpp makes the same."""
    h = index_hash(RANDOM_COUNT, SEED[name])
    h2 = index_hash(RANDOM_COUNT, SEED[name] + 1000)
    raw = h.astype(np.uint32).view(np.float32)
    u = (h.astype(np.float64) / 4294967296.0 - 0.5) * 2.5 * float(mx)
    scaled = (u.astype(np.float32) * np.ldexp(np.float32(1.0), -(h2 % 12).astype(np.int32)).astype(np.float32))
    out = np.where(np.arange(RANDOM_COUNT) < 4000, raw, scaled).astype(np.float32)
    return out


def edge_inputs(name, T):
    codes = np.arange(2 ** BITS[name], dtype=np.uint8)
    vals = codes.view(T).astype(np.float32) if BITS[name] == 8 else \
        np.array([np.uint8(c).view(T).astype(np.float32) if False else codes[c:c + 1].view(T)[0].astype(np.float32)
                  for c in range(len(codes))], dtype=np.float32)
    fin = np.unique(vals[np.isfinite(vals)])
    pos = fin[fin >= 0]
    mids = ((pos[:-1].astype(np.float64) + pos[1:].astype(np.float64)) / 2).astype(np.float32)
    mx = pos.max()
    top = np.float32(np.float64(mx) * 2)  # the next step past max, roughly
    edge = list(vals) + list(mids) + list(np.nextafter(mids, np.float32(np.inf))) + \
        list(np.nextafter(mids, np.float32(0)))
    edge += [mx, np.nextafter(mx, np.float32(np.inf)), top, np.float32((np.float64(mx) + np.float64(top)) / 2),
             f32(1e30), f32(3.4028235e38), f32(0.0), f32(-0.0), f32(1e-45), f32(1.1754942e-38), f32(1e-40),
             f32(np.inf), f32(-np.inf), f32(np.nan), np.uint32(0xFFC00000).view(np.float32),
             f32(464.0), f32(465.0), f32(1000.0), f32(61440.0), f32(61439.996), f32(0.49999997), f32(0.75),
             f32(3.5), f32(5.0), f32(7.25), f32(30.0)]
    edge = np.array(edge, dtype=np.float32)
    edge = np.concatenate([edge, -edge])
    return edge


def hexcodes(codes):
    return "".join("%02x" % int(c) for c in np.asarray(codes, dtype=np.uint8))


def ml_codes(x, T):
    return x.astype(T).view(np.uint8)


def onnx_cast_codes(x, name):
    import onnx
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    to = {"fp8_e4m3fn": (TensorProto.FLOAT8E4M3FN, 21), "fp8_e5m2": (TensorProto.FLOAT8E5M2, 21),
          "fp4_e2m1": (TensorProto.FLOAT4E2M1, 23)}.get(name)
    if to is None:
        return None
    node = helper.make_node("Cast", ["x"], ["y"], to=to[0], saturate=1)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(x)])],
                          [helper.make_tensor_value_info("y", to[0], [len(x)])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", to[1])])
    y = ReferenceEvaluator(m).run(None, {"x": x})[0]
    return np.asarray(y).view(np.uint8)


def torch_codes(x, name):
    import torch
    t = {"fp8_e4m3fn": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}.get(name)
    if t is None:
        return None
    return torch.from_numpy(x).to(t).view(torch.uint8).numpy()


def torchao_codes(x, name):
    import torch
    from torchao.prototype.mx_formats import kernels as k
    fn = {"fp4_e2m1": k.f32_to_f4_unpacked, "fp6_e2m3": k.f32_to_f6_e2m3_unpacked,
          "fp6_e3m2": k.f32_to_f6_e3m2_unpacked}.get(name)
    if fn is None:
        return None
    return fn(torch.from_numpy(x)).numpy().astype(np.uint8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    import onnx
    import torch
    import torchao
    torch.set_num_threads(1)
    cases = []
    for name, T in TYPES.items():
        edge = edge_inputs(name, T)
        mx = float(np.float32(ml_dtypes.finfo(T).max))
        x = np.concatenate([edge, random_inputs(name, mx)]).astype(np.float32)
        ne = len(edge)
        outs, hashes = {}, {}
        for peer, fn in [("ml_dtypes", lambda v, n: ml_codes(v, T)), ("onnx_saturate", onnx_cast_codes),
                         ("torch", torch_codes), ("torchao", torchao_codes)]:
            c = fn(x.copy(), name)
            if c is None:
                continue
            outs[peer] = hexcodes(c[:ne])
            values = np.asarray(c[ne:], dtype=np.uint8).view(T).astype(np.float32)  # the codes' values
            if peer == "torchao":
                values[np.isnan(x[ne:])] = np.float32(np.nan)
            hashes[peer] = lg.fnv1a64_nan_canonical(values)
        cases.append({"op": "low_bit.cast", "name": name,
                      "attrs": {"element": name, "seed": SEED[name], "random_count": RANDOM_COUNT, "max": mx},
                      "tensors": {"edges": {"shape": [len(edge)],
                                            "f32": [int(v) for v in edge.view(np.uint32)]}},
                      "codes": outs, "random_values_fnv1a64_nan_canonical": hashes})
        print(name, len(x), "values;", ", ".join(outs))
    out = {"generator": "tools/gen_golden_lowbit_elements.py",
           "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__,
                        "onnx": onnx.__version__, "torch": torch.__version__, "torchao": torchao.__version__},
           "cases": cases}
    path = os.path.join(args.out, "low_bit_elements.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
