#!/usr/bin/env python3
"""Golden vectors for NVFP4 (issue 35; include/xquant/numerics/nvfp4_block.hpp): E2M1 elements,
a UE4M3 scale per 16 values and a float32 scale per tensor, from the peers' own functions:

  torchao 0.18         prototype/mx_formats/nvfp4_tensor.py: NVFP4Tensor.to_nvfp4(x,
                       per_tensor_scale=per_tensor_amax_to_scale(max|x|)) and .dequantize()
                       (what NVFP4FakeQuantizeConfig(use_per_tensor_scale=True) runs), and the
                       one-level form (per_tensor_scale=None)
  TransformerEngine    pytorch/custom_recipes/reference_nvfp4.py: NVFP4QuantizerRef(E2M1,
                       quant_tile_shape=(1, 16) or (16, 16)).quantize(x), rowwise; imported from
                       the checkout given with --transformer-engine (commit recorded). It has no
                       dequantize (its GEMM folds the global scale into alpha): the file keeps its
                       codes, block scales and global amax
  nvidia-modelopt      qtensor/nvfp4_tensor.py: NVFP4QTensor.quantize(x, 16) and .dequantize()
  0.47                 tensor_quant.static_blockwise_fp4_fake_quant(x as (blocks, 16), block amax,
                       global amax): the Triton kernels kernels/quantization/gemm/fp4_kernel.py and
                       common/nvfp4_quant.py, run by Triton's interpreter (TRITON_INTERPRET=1) on
                       the CPU; with its autograd (straight-through where |x| <= block amax).
                       Its dynamic kernel fp4_kernel_hopper.fp4_fake_quant_block cannot run here:
                       Triton 3.9 (what torch 2.15 pins) removed the block pointers it is written
                       with, on every device.

Inputs, each quantized as its own tensor (the global scale is per tensor): exact ties at every
E2M1 midpoint and their neighbouring floats under power-of-two block and tensor scales (block
scales 2^-12 to 2^8: below E4M3's smallest subnormal, subnormal, normal), values past 6 after the
scale's own rounding, an all-zero tensor, zero and -0 blocks, a huge outlier (the other blocks'
scales underflow), tiny and subnormal tensors, NaN and ±Inf, one block, a partial last block
(the peers that pad it), and 160 hashed rows of 64 (tools/index_hash.py; not stored, their outputs
as FNV-1a 64 hashes). Small inputs and their outputs are stored in full.

Usage: TRITON_INTERPRET=1 python tools/gen_golden_lowbit_nvfp4.py --transformer-engine PATH [--out DIR]
"""

import argparse
import json
import os
import sys
import warnings

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
os.environ["TRITON_INTERPRET"] = "1"
warnings.simplefilter("ignore")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lowbit_golden as lg  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "golden")
F = np.float32
RANDOM_SEED = 3600
RANDOM_ROWS, RANDOM_COLS = 160, 64
MIDPOINTS = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]


def ties(k):
    """Blocks of 16 whose amax is 6 * 2^(j+k) in a tensor of amax 2688 * 2^k: global scale 2^k
    (torchao, ModelOpt) or 2^-k (TE), block scale 2^j, so that every other value m * 2^(j+k)
    scales to an exact E2M1 midpoint m (block 0 of a row), the float above it (block 1), the
    float below it (block 2), and values around and past 6 (block 3)."""
    rows = []
    head = np.zeros(64, dtype=F)
    head[0] = F(2688.0 * 2.0 ** k)
    head[1:8] = F(448.0 * 2.0 ** k) * np.array(MIDPOINTS, dtype=F)
    head[8:15] = -head[1:8]
    head[16:] = np.linspace(-6.0, 6.0, 48, dtype=F) * F(2.0 ** k)
    rows.append(head)
    mids = np.array(MIDPOINTS + [-m for m in MIDPOINTS], dtype=F)
    for j in [-12, -10, -9, -8, -7, -6, -5, -3, -1, 0, 1, 2, 4, 6, 7, 8]:
        s = F(2.0 ** (j + k))
        r = np.zeros(64, dtype=F)
        for b, f in enumerate([lambda v: v, lambda v: np.nextafter(v, F(np.inf) * np.sign(v)),
                               lambda v: np.nextafter(v, F(0))]):
            r[16 * b] = F(6.0) * s
            r[16 * b + 1:16 * b + 15] = f(mids * s)
            r[16 * b + 15] = F(-0.0) if b == 0 else F(0.0)
        r[48:64] = np.array([6.0, 5.5, 5.75, 6.25, 6.5, 7.0, -6.0, -5.9, -6.1, 4.5, 3.25, -0.125,
                             0.0625, 1.0, 2.0, 3.0], dtype=F) * s
        rows.append(r)
    return np.array(rows, dtype=F)


def edge_tensors():
    t = {}
    for k in (0, -20, 12, -118):
        t["ties_k%d" % k] = ties(k)
    t["zeros"] = np.zeros((2, 32), dtype=F)
    r = np.tile(np.linspace(-3.0, 3.0, 64, dtype=F), (4, 1))
    r[0, :16] = 0.0
    r[1, 16:32] = F(-0.0)
    r[2, 32:48] = 0.0
    r[2, 40] = F(-1e-3)
    r[3, :] = F(-0.0)
    r[3, 5] = F(0.75)
    t["zero_blocks"] = r
    for name, big in (("outlier_1e30", 1e30), ("outlier_3e38", 3.4e38), ("outlier_1e10", 1e10)):
        r = np.tile(np.linspace(-1.0, 1.0, 64, dtype=F), (3, 1))
        r[1] *= F(1e-3)
        r[2] *= F(1e3)
        r[0, 3] = F(big)
        t[name] = r
    t["tiny"] = np.stack([(np.arange(64, dtype=F) - 30) * F(3e-38), (np.arange(64, dtype=F) - 32) * F(1e-41),
                          np.linspace(-1, 1, 64, dtype=F) * F(1e-30)]).astype(F)
    t["subnormal_only"] = ((np.arange(64, dtype=F) - 32) * F(1e-42)).reshape(2, 32)
    # the block scale rounds down in E4M3 (amax/6 = 1.0625 * 2^j, a tie, goes to 1): values past 6
    sat = []
    for frac in (1.0625, 1.1875, 1.0624999, 1.9375, 1.96875):
        r = np.linspace(-1.0, 1.0, 32, dtype=F) * F(6.0 * frac)
        r[0] = F(6.0 * frac)
        r[16] = F(-6.0 * frac)
        sat.append(r)
    sat = np.array(sat, dtype=F)
    sat[0, 5] = F(2688.0)  # the tensor amax: global scale 1
    t["saturate"] = sat
    t["one_block"] = np.array([[0.1, -0.2, 0.3, 0.7, 1.1, -1.7, 2.2, 2.6, -3.3, 3.9, 4.9, 5.1, -5.6, 6.0, 0.0, 0.05]],
                              dtype=F)
    r = np.tile(np.linspace(-2.0, 2.0, 64, dtype=F), (3, 1))
    r[0, 4] = F(np.nan)
    r[1, 20] = F(np.inf)
    r[2, 40] = F(-np.inf)
    t["nan_inf_rows"] = r
    t["nan_block"] = np.array([np.linspace(-2.0, 2.0, 32, dtype=F)], dtype=F)
    t["nan_block"][0, 20] = F(np.nan)
    t["partial"] = np.tile(np.linspace(-2.5, 2.5, 40, dtype=F), (4, 1)) * np.array([[1], [3], [1e-2], [77]], dtype=F)
    return t


def unpack_nibbles(packed, shape):
    """Packed uint8 (low nibble = the even element) to one code per element."""
    p = np.asarray(packed).astype(np.uint8)
    out = np.empty(p.shape[:-1] + (p.shape[-1] * 2,), dtype=np.uint8)
    out[..., 0::2] = p & 0x0F
    out[..., 1::2] = p >> 4
    return out.reshape(shape)


def codes_hex(codes, y=None):
    """One hex digit per code; '.' where the peer's output is NaN (there torchao's cast makes the
    code from the NaN's payload bits, which the arithmetic before it chose: not compared)."""
    c = np.asarray(codes, dtype=np.uint8).reshape(-1)
    nan = np.zeros(c.shape, dtype=bool) if y is None else np.isnan(np.asarray(y, dtype=F).reshape(-1))
    return "".join("." if n else "%x" % int(v) for v, n in zip(c, nan))


def run_torchao(x, two_level):
    import torch
    from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, per_tensor_amax_to_scale
    t = torch.from_numpy(x.copy())
    pts = per_tensor_amax_to_scale(torch.max(torch.abs(t))) if two_level else None
    q = NVFP4Tensor.to_nvfp4(t, per_tensor_scale=pts)
    y = q.dequantize(torch.float32).numpy()
    codes = unpack_nibbles(q.qdata.view(torch.uint8).numpy(), x.shape)
    scales = q.scale.to(torch.float32).numpy().reshape(-1)
    return {"y": y, "codes": codes, "scales": scales,
            "tensor_scale": None if pts is None else F(pts.item())}


def run_te(x, nvfp4, ru, tile):
    import torch
    q = nvfp4.NVFP4QuantizerRef(dtype=ru.Fp4Formats.E2M1, rowwise=True, columnwise=False, quant_tile_shape=tile)
    r = q.quantize(torch.from_numpy(x.copy()))
    m, n = x.shape
    codes = unpack_nibbles(r.data.numpy(), (m, n))
    scales = r.scale.to(torch.float32).numpy()[:m, :(n + 15) // 16].reshape(-1)
    return {"codes": codes, "scales": scales, "global_amax": F(r.global_amax_row.item())}


def run_modelopt_qtensor(x):
    import torch
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor
    qt, scale, scale_2 = NVFP4QTensor.quantize(torch.from_numpy(x.copy()), 16)
    y = qt.dequantize(dtype=torch.float32, scale=scale, double_scale=scale_2, block_sizes={-1: 16}).numpy()
    codes = unpack_nibbles(qt._quantized_data.numpy(), x.shape)
    return {"y": y, "codes": codes, "scales": scale.to(torch.float32).numpy().reshape(-1),
            "tensor_scale": F(scale_2.item())}


def run_modelopt_triton(x, fake_quant, dy):
    import torch
    from modelopt.torch.kernels.quantization.gemm.fp4_kernel import compute_fp4_scales
    t = torch.from_numpy(x.copy()).view(-1, 16)
    amax = t.abs().amax(dim=-1, keepdim=True)
    gamax = t.abs().max()
    t.requires_grad_(True)
    y = fake_quant(t, amax, gamax, True, 448.0, torch.float32, False)
    y.backward(torch.from_numpy(dy.copy()).view(-1, 16))
    scales = compute_fp4_scales(amax, gamax, True, 448.0)
    return {"y": y.detach().numpy().reshape(x.shape), "scales": scales.numpy().reshape(-1),
            "dx": t.grad.numpy().reshape(x.shape)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--transformer-engine", required=True, help="a checkout of NVIDIA/TransformerEngine")
    ap.add_argument("--transformer-engine-commit", default=None)
    args = ap.parse_args()
    import modelopt
    import torch
    import torchao
    import triton
    torch.set_num_threads(1)
    te_nvfp4, _, te_utils = lg.load_transformer_engine(args.transformer_engine)
    te_commit = args.transformer_engine_commit or lg.git_commit(args.transformer_engine)
    triton_fake_quant = lg.load_modelopt_triton()

    inputs = edge_tensors()
    random = lg.random_rows(RANDOM_SEED, RANDOM_ROWS, RANDOM_COLS)
    stored_inputs = {k: lg.tensor(v) for k, v in inputs.items()}
    all_inputs = dict(inputs)
    all_inputs["random"] = random
    dy_seed = RANDOM_SEED + 1

    variants = {
        "torchao": lambda x: run_torchao(x, True),
        "torchao_one_level": lambda x: run_torchao(x, False),
        "transformer_engine_1x16": lambda x: run_te(x, te_nvfp4, te_utils, (1, 16)),
        "transformer_engine_16x16": lambda x: run_te(x, te_nvfp4, te_utils, (16, 16)),
        "modelopt_qtensor": run_modelopt_qtensor,
        "modelopt_triton": None,
    }
    cases, refused = [], []
    for variant, fn in variants.items():
        for name, x in all_inputs.items():
            if variant == "modelopt_triton" and x.shape[-1] % 16 != 0:
                # its blocks are the flattened tensor's runs of 16: a partial row block would
                # straddle two rows (ModelOpt's quantizer reshapes only whole blocks)
                refused.append({"variant": variant, "input": name, "error": "rows are not whole blocks"})
                continue
            try:
                if variant == "modelopt_triton":
                    dy = lg.random_unit(dy_seed, x.size).reshape(x.shape)
                    out = run_modelopt_triton(x, triton_fake_quant, dy)
                else:
                    out = fn(x)
            except Exception as e:  # the peer refuses this input: recorded, not a case
                refused.append({"variant": variant, "input": name, "error": "%s: %s" % (type(e).__name__, str(e)[:160])})
                continue
            case = {"variant": variant, "input": name, "values": int(x.size)}
            for key, v in out.items():
                if v is None:
                    continue
                if key == "codes":
                    if name == "random":
                        case["codes_fnv1a64"] = lg.fnv1a64(np.asarray(v, dtype=F))
                    else:
                        case["codes"] = codes_hex(v, out.get("y"))
                elif np.ndim(v) == 0:
                    case[key] = int(np.asarray(v, dtype=F).view(np.uint32))
                elif key in ("y", "dx"):  # hashed (NaNs canonical); codes and scales tell where
                    case[key + "_fnv1a64_nan_canonical"] = lg.fnv1a64_nan_canonical(v)
                elif name == "random":
                    case[key + "_fnv1a64"] = lg.fnv1a64(v)
                else:
                    case[key] = lg.bits(v)
            cases.append(case)
        print(variant, sum(c["values"] for c in cases if c["variant"] == variant), "values",
              [r["input"] for r in refused if r["variant"] == variant], "refused")
    out = {"generator": "tools/gen_golden_lowbit_nvfp4.py",
           "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__,
                        "torchao": torchao.__version__, "nvidia-modelopt": modelopt.__version__,
                        "triton": triton.__version__, "transformer_engine": te_commit},
           "random": {"seed": RANDOM_SEED, "rows": RANDOM_ROWS, "cols": RANDOM_COLS, "dy_seed": dy_seed},
           "inputs": stored_inputs, "cases": cases, "refused": refused}
    path = os.path.join(args.out, "low_bit_nvfp4.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(cases), "cases", os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
