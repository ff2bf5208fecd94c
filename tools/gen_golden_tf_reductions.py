#!/usr/bin/env python3
"""Golden sums from TensorFlow's CPU reductions, for numerics/tf_cpu_reductions.hpp and
the quantizers built on them (issue 14, finding 14).

Peer: tensorflow 2.21 (CPU wheel, AVX build) and larq 0.14, one intra-op thread (the
probe found the same bits with two; tf_cpu_reductions.hpp says when TF shards).

Inputs are not stored: element i of a case with seed s is made from an integer hash that
tests/numerics/test_tf_reductions.cpp reproduces,

    h = fmix32((i + s * 0x9E3779B9) mod 2^32)          (murmur3's finalizer)
    x = ((h >> 8) * 2^-23 - 1) * 2^((h & 7) - 3)       (exact in float32)

so the file holds only TF's results, as float32 bit patterns:
  - sum:        tf.reduce_sum of |x| (or x) over every element;
  - sum_rows:   tf.reduce_sum(|x|, axis=0) of a rows x cols matrix;
  - magnitude_aware_sign: |larq.quantizers.MagnitudeAwareSign()(x)| in the first row, i.e.
                the per-channel scales larq used, for kernels of several shapes;
  - ste_tern:   TWN's threshold 0.7 * reduce_sum(|x|) / size (the expression larq's
                ste_tern evaluates) and a checksum of larq's ternary output
                sum_i (y_i + 1) * fmix32(i) mod 2^32;
  - fake_quant: tf.quantization.fake_quant_with_min_max_vars_gradient and its per-channel
                twin: d_min and d_max (x scaled by 4, dy from a second seed).

Usage:  TF_USE_LEGACY_KERAS=1 .venv-golden/bin/python tools/gen_golden_tf_reductions.py [--out DIR]
"""

import argparse
import json
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import numpy as np  # noqa: E402

from index_hash import M32, fmix32, index_hash  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import larq as lq  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def hashed(shape, seed):
    n = int(np.prod(shape))
    h = index_hash(n, seed)
    mant = (h >> np.uint64(8)).astype(np.float64) * 2.0**-23 - 1.0
    scale = np.exp2((h & np.uint64(7)).astype(np.float64) - 3.0)
    return (mant * scale).astype(np.float32).reshape(shape)  # exact: 24 significant bits


def bits(a):
    a = np.asarray(a, np.float32)
    return [int(b) for b in a.reshape(-1).view(np.uint32)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "golden"))
    out = ap.parse_args().out
    doc = {"generator": "tools/gen_golden_tf_reductions.py",
           "peer": f"tensorflow {tf.__version__}, larq {lq.__version__}, 1 intra-op thread"}

    sums = []
    for seed, n in enumerate([1, 7, 8, 9, 31, 32, 33, 40, 63, 100, 1000, 8191, 8192, 8193, 8200,
                              16392, 20000, 65537, 100003, 589824], start=1):
        x = hashed((n,), seed)
        for absolute in (True, False):
            v = np.abs(x) if absolute else x
            sums.append({"n": n, "seed": seed, "abs": absolute,
                         "want": bits(tf.reduce_sum(tf.constant(v)).numpy())[0]})
    doc["sum"] = sums

    rows_cases = []
    for seed, (r, c) in enumerate([(1, 8), (3, 8), (12, 20), (9, 17), (15, 16), (16, 8), (17, 9), (64, 10),
                                   (100, 7), (144, 32), (288, 12), (784, 128), (4096, 16), (1000, 1),
                                   (20000, 3), (2304, 256)], start=100):
        a = np.abs(hashed((r, c), seed))
        rows_cases.append({"rows": r, "cols": c, "seed": seed,
                           "want": bits(tf.reduce_sum(tf.constant(a), axis=0).numpy())})
    doc["sum_rows"] = rows_cases

    mas = []
    for seed, shape in enumerate([(3, 3, 16, 32), (3, 3, 32, 12), (5, 5, 32, 64), (2, 2, 3, 20), (9, 17),
                                  (784, 1), (3, 3, 1, 8), (64, 10)], start=200):
        x = hashed(shape, seed)
        y = lq.quantizers.MagnitudeAwareSign()(tf.constant(x)).numpy()
        mas.append({"shape": list(shape), "seed": seed, "scales": bits(np.abs(y.reshape(-1, shape[-1])[0]))})
    doc["magnitude_aware_sign"] = mas

    tern = []
    for seed, shape in enumerate([(3, 3, 16, 32), (100,), (3, 3, 64, 64), (784, 128), (5, 5, 32, 64), (41,),
                                  (1000,), (4096,), (8193,), (20000,), (65537,), (3, 3, 128, 128), (3, 3, 256, 256)],
                                 start=300):
        x = tf.constant(hashed(shape, seed))
        threshold = 0.7 * tf.reduce_sum(tf.abs(x)) / tf.cast(tf.size(x), x.dtype)
        y = lq.quantizers.SteTern(ternary_weight_networks=True)(x).numpy().reshape(-1)
        weights = fmix32(np.arange(y.size, dtype=np.uint64))
        checksum = int(np.sum((y.astype(np.int64) + 1).astype(np.uint64) * weights) & M32)
        tern.append({"shape": list(shape), "seed": seed, "threshold": bits(threshold.numpy())[0],
                     "checksum": checksum})
    doc["ste_tern"] = tern

    fq = []
    for seed, shape in enumerate([(10,), (100,), (1000,), (8193,), (100003,), (100, 8), (1000, 10), (64, 3),
                                  (3, 3, 32, 64), (5000, 4)], start=400):
        x = hashed(shape, seed) * np.float32(4)
        dy = hashed(shape, seed + 1000)
        lo, hi = np.float32(-2.5), np.float32(2.0)
        if len(shape) == 1:
            _, dmin, dmax = tf.quantization.fake_quant_with_min_max_vars_gradient(dy, x, lo, hi)
        else:
            c = shape[-1]
            _, dmin, dmax = tf.quantization.fake_quant_with_min_max_vars_per_channel_gradient(
                dy, x, np.full(c, lo), np.full(c, hi))
        fq.append({"shape": list(shape), "seed": seed, "dy_seed": seed + 1000, "min": float(lo),
                   "max": float(hi), "dmin": bits(dmin.numpy()), "dmax": bits(dmax.numpy())})
    doc["fake_quant"] = fq

    path = os.path.join(out, "tf_reductions.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, path)
    print("wrote", path)


if __name__ == "__main__":
    main()
