#!/usr/bin/env python3
"""Golden vectors for torchao's range learning (issue 36; the learned scales of
include/xquant/numerics/torchao_affine.hpp), from torchao 0.18's own IntxFakeQuantizer with
`IntxFakeQuantizeConfig(torch.intB, group_size=G, is_symmetric=True, is_dynamic=False,
range_learning=True)` and torch's autograd:

  the first call (what `initialize_fake_quantizers` runs) computes each group's scale as the
  dynamic quantizer does, clamps it to >= 1e-9 and makes it an nn.Parameter; every call then
  fake-quantizes with it: q = clamp(round(x * (1 / scale)) + 0, qmin, qmax), (q - 0) * scale,
  round's gradient straight through, so the scale's gradient is the sum over its group of
  dy * q plus the reciprocal's path, -(sum of masked (dy * scale) * x) * (1 / scale)^2.

Each case runs two steps on one quantizer: the first call (initial scales, y, dx, the scale's
gradient), then the scales moved by a hashed factor in [0.5, 1.5] (as an optimizer moves them:
more or fewer values now clip) and a second call with another incoming gradient.

Inputs: exact ties under a power-of-two scale, all-zero groups, one-signed groups, and 80
hashed rows of 128 (tools/index_hash.py; not stored, outputs as FNV-1a 64 hashes).

Usage: python tools/gen_golden_lowbit_range_learning.py [--out DIR]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lowbit_golden as lg  # noqa: E402  (first: it sets the CPU environment torch is imported in)

import numpy as np  # noqa: E402

F = np.float32
RANDOM_SEED = 3900
RANDOM_ROWS, RANDOM_COLS = 80, 128


def ties(bits, cols):
    """Rows whose groups have amax (qmax - qmin) / 2: scale 1, so m + 0.5 is a tie."""
    qmin, qmax = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    amax = F((qmax - qmin) / 2)
    mids = [m + 0.5 for m in range(qmin - 1, qmax + 1)] + [qmin, qmax, qmax + 0.25]
    vals = np.concatenate([np.asarray(mids, F), np.nextafter(np.asarray(mids, F), F(np.inf))])
    rows = []
    per = cols - 2
    for s in range(0, len(vals), per):
        r = np.zeros(cols, dtype=F)
        r[:2] = [amax, -amax]
        chunk = vals[s:s + per]
        r[2:2 + len(chunk)] = chunk
        rows.append(r)
    return np.array(rows, dtype=F)


def run(x, bits, group, dy1, dy2, factor):
    import torch
    from torchao.quantization.qat import IntxFakeQuantizeConfig
    from torchao.quantization.qat.fake_quantizer import IntxFakeQuantizer
    cfg = IntxFakeQuantizeConfig(getattr(torch, "int%d" % bits), group_size=group, is_symmetric=True,
                                 is_dynamic=False, range_learning=True)
    fq = IntxFakeQuantizer(cfg)
    fq._initialized = True  # what initialize_fake_quantizers sets before its forward
    t = torch.from_numpy(x.copy()).requires_grad_(True)
    y = fq(t)
    out = {"scale": fq.scale.detach().numpy().reshape(-1).copy()}
    y.backward(torch.from_numpy(dy1.copy()))
    out.update({"y": y.detach().numpy(), "dx": t.grad.numpy().copy(), "dscale": fq.scale.grad.numpy().reshape(-1).copy()})
    with torch.no_grad():
        fq.scale.mul_(torch.from_numpy(factor.reshape(fq.scale.shape)))
        fq.scale.grad = None
    out["scale_2"] = fq.scale.detach().numpy().reshape(-1).copy()
    t2 = torch.from_numpy(x.copy()).requires_grad_(True)
    y2 = fq(t2)
    y2.backward(torch.from_numpy(dy2.copy()))
    out.update({"y_2": y2.detach().numpy(), "dx_2": t2.grad.numpy(), "dscale_2": fq.scale.grad.numpy().reshape(-1)})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=lg.GOLDEN_DIR)
    args = ap.parse_args()
    import torch
    import torchao
    torch.set_num_threads(1)
    dy_seed, dy2_seed, factor_seed = RANDOM_SEED + 1, RANDOM_SEED + 2, RANDOM_SEED + 3
    inputs = {"zeros_and_signs": np.stack([np.zeros(RANDOM_COLS, F), np.linspace(0.5, 3.0, RANDOM_COLS, dtype=F),
                                           -np.linspace(0.5, 3.0, RANDOM_COLS, dtype=F)]).astype(F)}
    for bits in (2, 4, 8):
        inputs["ties%d" % bits] = ties(bits, RANDOM_COLS)
    random = lg.random_rows(RANDOM_SEED, RANDOM_ROWS, RANDOM_COLS)
    cases = []
    for bits, group in ((4, 32), (4, 128), (2, 32), (8, 32)):
        for name in ("zeros_and_signs", "ties%d" % bits, "random"):
            x = random if name == "random" else inputs[name]
            dy1 = lg.random_unit(dy_seed, x.size).reshape(x.shape)
            dy2 = lg.random_unit(dy2_seed, x.size).reshape(x.shape)
            groups = x.size // group
            factor = (F(0.5) + (lg.random_unit(factor_seed, groups) + F(1.0)) * F(0.5)).astype(F)  # [0.5, 1.5)
            out = run(x, bits, group, dy1, dy2, factor)
            case = {"bits": bits, "group_size": group, "input": name, "values": int(x.size)}
            for key, v in out.items():
                v = np.asarray(v, dtype=F)
                if name == "random" and key not in ("scale", "scale_2"):
                    case[key + "_fnv1a64"] = lg.fnv1a64(v)
                else:
                    case[key] = lg.bits(v)
            cases.append(case)
    out = {"generator": "tools/gen_golden_lowbit_range_learning.py",
           "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__,
                        "torchao": torchao.__version__},
           "random": {"seed": RANDOM_SEED, "rows": RANDOM_ROWS, "cols": RANDOM_COLS, "dy_seed": dy_seed,
                      "dy2_seed": dy2_seed, "factor_seed": factor_seed},
           "inputs": {k: lg.tensor(v) for k, v in inputs.items()}, "cases": cases}
    lg.write_json(args.out, "low_bit_range_learning.json", out)


if __name__ == "__main__":
    main()
