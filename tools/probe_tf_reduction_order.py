#!/usr/bin/env python3
"""Which order TensorFlow's CPU reduce_sum adds float32 in (issue 14, finding 14), for the
two reductions whose results reach outputs: over every axis but the last (larq's
MagnitudeAwareSign, tf.reduce_mean(tf.abs(kernel), axis=[0, ..., -2])) and over every
element (larq's SteTern TWN threshold, FakeQuant's d_min / d_max).

This probe tests candidate orders against TF on random tensors and prints how many sums
each reproduces bit for bit. Measured with tensorflow 2.21 (CPU wheel, AVX build) on an
AVX2 host:
  - axis=[0..-2]: `preserver_order` reproduces all 1298 channel sums (`packet_order`,
    which ignores Eigen's 16-row threshold, 1284); reduce_mean is that sum / rows in float32;
  - every element: `tree_order` reproduces every sum tried, 4 per size from 100 to
    2,359,296 elements, with 1 and with 2 intra-op threads; with 16 threads TF shards the
    sums of 589,824 elements and more (1 of 4, 0 of 4, 1 of 4 matched).
numerics/tf_cpu_reductions.hpp implements both; tools/gen_golden_tf_reductions.py makes
the goldens its tests compare with.

    TF_USE_LEGACY_KERAS=1 .venv-golden/bin/python tools/probe_tf_reduction_order.py [threads]
"""

import sys

import numpy as np
import tensorflow as tf

f32 = np.float32


def sequential(rows):
    acc = np.zeros(rows.shape[1:], f32)
    for r in rows:
        acc = (acc + r).astype(f32)
    return acc


def four_accumulators(rows):
    """Rows k, k+4, k+8, ... into accumulator k (whole groups of 4 only), the four added in
    order, then the leftover rows one by one."""
    full = rows.shape[0] // 4 * 4
    acc = sequential(np.stack([sequential(rows[k:full:4]) for k in range(4)]))
    for r in rows[full:]:
        acc = (acc + r).astype(f32)
    return acc


def packet_order(a):
    """Channels in whole 8-float packets (AVX): four_accumulators; the rest: sequential."""
    channels = a.shape[1]
    packed = channels // 8 * 8
    out = np.empty(channels, f32)
    if packed:
        out[:packed] = four_accumulators(a[:, :packed])
    if channels > packed:
        out[packed:] = sequential(a[:, packed:])
    return out


def preserver_order(a):
    """packet_order, except that with fewer than 16 rows every column is sequential."""
    return packet_order(a) if a.shape[0] >= 16 else sequential(a)


def horizontal_sum(p):
    half = [f32(p[i] + p[i + 4]) for i in range(4)]
    return f32(f32(half[0] + half[2]) + f32(half[1] + half[3]))


def leaf_order(x):
    """Four packet accumulators over blocks of 32, added in order, then the packets left,
    then the scalar tail (summed from 0) plus the packet's horizontal sum."""
    n = len(x)
    unrolled, vectorized = n // 32 * 32, n // 8 * 8
    blocks = x[:unrolled].reshape(-1, 4, 8)
    acc = sequential(np.stack([sequential(blocks[:, u, :]) for u in range(4)])) if unrolled \
        else np.zeros(8, f32)
    for j in range(unrolled, vectorized, 8):
        acc = (acc + x[j:j + 8]).astype(f32)
    tail = sequential(x[vectorized:].reshape(-1, 1))[0] if n > vectorized else f32(0)
    return f32(tail + horizontal_sum(acc))


def tree_order(x, first=0):
    """Eigen's tree reduction: runs over 8 * 1024 elements split at a packet boundary."""
    n = len(x)
    if n <= 8 * 1024:
        return leaf_order(x)
    split = 8 * (-(-(first + -(-n // 2)) // 8))
    left = min(split - first, n)
    acc = f32(f32(0) + tree_order(x[:left], first))
    return f32(acc + tree_order(x[left:], split)) if left < n else acc


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    rng = np.random.default_rng(1)
    shapes = [(3, 3, 4, 8), (3, 3, 16, 32), (5, 5, 32, 64), (64, 10), (100, 7), (3, 3, 64, 64),
              (3, 3, 128, 128), (3, 3, 256, 256), (784, 128), (4096, 16), (3, 3, 32, 12), (2, 2, 3, 20),
              (512, 512), (9, 17), (3, 8), (2, 8), (1, 8)]
    models = {"sequential": sequential, "four_accumulators": four_accumulators, "packet_order": packet_order,
              "preserver_order": preserver_order}
    for shape in shapes:
        x = rng.standard_normal(shape).astype(f32)
        axes = list(range(len(shape) - 1))
        want = tf.reduce_sum(tf.abs(x), axis=axes).numpy()
        a = np.abs(x).reshape(-1, shape[-1])
        hits = {name: int(np.sum(fn(a) == want)) for name, fn in models.items()}
        mean = tf.reduce_mean(tf.abs(x), axis=axes).numpy()
        mean_is_sum_over_n = np.array_equal(mean, (want / f32(a.shape[0])).astype(f32))
        print(shape, f"{want.size} sums:", hits, "mean == sum / n:", mean_is_sum_over_n)
    for n in [100, 1000, 8191, 8192, 8193, 20000, 100000, 589824, 2359296]:
        hits = 0
        for _ in range(4):
            x = np.abs(rng.standard_normal(n).astype(f32))
            hits += int(tree_order(x) == tf.reduce_sum(tf.constant(x)).numpy())
        print(f"full sum of {n}: tree_order reproduces {hits} of 4 ({threads} intra-op threads)")


if __name__ == "__main__":
    main()
