#!/usr/bin/env python3
"""Which order PyTorch's CPU `sum` adds float32 in, for the two reductions of the LSQ backward
(aten/src/ATen/native/quantized/FakeQuantPerTensorAffine.cpp and FakeQuantPerChannelAffine.cpp):
`dScale_vec.sum()` per tensor and `dScale_vec.sum(every dim but axis)` per channel.

xquant summed the LSQ parameter gradients in its own lane_sums.hpp order (double totals) and
was up to ~48 ulp from PyTorch. This probe tests candidate orders against torch on random
contiguous float32 tensors, with torch.set_num_threads(1, 2, 4), and prints how many sums each
reproduces bit for bit. The models read aten/src/ATen/native/cpu/SumKernel.cpp (cascade_sum:
vectorized_inner_sum, vectorized_outer_sum, scalar_inner_sum, scalar_outer_sum, multi_row_sum,
row_sum), TensorIteratorReduce.cpp (parallel_reduce, two_pass_reduction,
parallel_dim_reduction, round_columns) and ParallelOpenMP.h (invoke_parallel).

Measured with torch 2.15.0 (CPU capability AVX2, OpenMP, a 2-core host), ATEN_CPU_CAPABILITY
unset and =avx2 alike:

  per tensor, 40 sizes from 1 to 1,000,003 x 3 thread counts (120 sums):
    double_round_once      24 of 120   (a double sum rounded once, like lane_sums.hpp)
    cascade                86 of 120   (SumKernel cascade_sum, one thread: wrong on 34 of
                                        the 52 sums with n >= 32768 and 2 or 4 threads)
    two_pass              120 of 120   (cascade per thread chunk, then cascade of the buffer)
  per channel, 24 shapes/axes (axis 0, 1, middle, last; 1 to 3000 channels) x 3 thread
  counts (12,648 channel sums):
    double_round_once    4,005 of 12,648
    cascade_of_slice     3,943 of 12,648   (cascade_sum of each channel's elements, gathered)
    tensor_iterator     12,648 of 12,648   (the model below, the same for every thread count
                                            but for a single channel)

The orders, as reproduced by xq::torch::cpu::sum and sum_except_axis:

 - a full sum with one thread, or n < 32768 (at::internal::GRAIN_SIZE): cascade_sum of the
   contiguous vector (`cascade` below), plus the output's 0;
 - a full sum with T > 1 threads and n >= 32768: two_pass_reduction. invoke_parallel uses
   t = min(T, ceil(n / 32768)) threads; thread i sums [i * c, min(n, (i + 1) * c)),
   c = ceil(n / t), with cascade into buffer[i] = 0 + s_i; the T-entry buffer (zeros beyond
   t) is then summed with cascade again;
 - per channel, on the layout (outer, C, inner) (the dims before the axis, the axis, the dims
   after), TensorIterator moves the reduced dims first and coalesces them:
     inner > 1: per channel, out = 0, then for each outer index o in order,
                out += cascade(x[o, c, :]) (without its own leading 0): vectorized_inner_sum
                or scalar_inner_sum, one row per outer index; thread count does not matter
                (parallel_dim_reduction splits channels);
     inner = 1 (axis last): the columns of an (outer, C) matrix: vectorized_outer_sum when
                C >= 8 (32-channel groups with multi_row_sum over all rows, then 8-channel
                groups with row_sum, then single channels with row_sum), scalar_outer_sum
                when C < 8 (4-channel groups, then singles), each plus the output's 0. With
                T > 1 threads and numel >= 32768, parallel_dim_reduction splits the channels
                into invoke_parallel's chunks but round_columns moves each split down to a
                multiple of 32 channels, so each thread's groups are the serial ones;
     C = 1: the full sum above.

    python tools/probe_torch_reduction_order.py
"""

import numpy as np
import torch

f32 = np.float32
W = 8  # Vectorized<float>::size() on AVX2
GRAIN = 32768  # at::internal::GRAIN_SIZE


def ceil_log2(x):
    if x <= 2:
        return 1
    return int(x - 1).bit_length()


def seq(acc, rows):
    """acc + rows[0] + rows[1] + ... in float32, one at a time."""
    if len(rows) == 0:
        return acc
    return np.add.accumulate(np.concatenate([acc[None], rows]), axis=0, dtype=f32)[-1]


def multi_row_sum(a):
    """SumKernel.cpp multi_row_sum: a is (size, nrows, lanes); returns (nrows, lanes)."""
    size = a.shape[0]
    num_levels = 4
    level_power = max(4, ceil_log2(size) // num_levels)
    level_step = 1 << level_power
    level_mask = level_step - 1
    acc = np.zeros((num_levels,) + a.shape[1:], f32)
    i = 0
    while i + level_step <= size:
        acc[0] = seq(acc[0], a[i:i + level_step])
        i += level_step
        for j in range(1, num_levels):
            acc[j] = acc[j] + acc[j - 1]
            acc[j - 1] = 0
            if i & (level_mask << (j * level_power)):
                break
    acc[0] = seq(acc[0], a[i:])
    for j in range(1, num_levels):
        acc[0] = acc[0] + acc[j]
    return acc[0]


def row_sum(a):
    """SumKernel.cpp row_sum: a is (size, lanes); returns (lanes,)."""
    size = a.shape[0]
    size_ilp = size // 4
    partial = multi_row_sum(a[:size_ilp * 4].reshape(size_ilp, 4, a.shape[1]))
    partial[0] = seq(partial[0], a[size_ilp * 4:])
    for k in range(1, 4):
        partial[0] = partial[0] + partial[k]
    return partial[0]


def inner_raw(x):
    """One row of vectorized_inner_sum (n >= 8) or scalar row_sum (n < 8), before the store."""
    n = x.size
    if n >= W:
        vs = n // W
        v = row_sum(x[:vs * W].reshape(vs, W))
        acc = seq(f32(0), x[vs * W:])
        return seq(acc, v)
    return row_sum(x.reshape(n, 1))[0]


def cascade(x):
    return f32(f32(0) + inner_raw(np.ascontiguousarray(x).ravel()))


def two_pass(x, threads):
    n = x.size
    if threads == 1 or n < GRAIN:
        return cascade(x)
    used = min(threads, -(-n // GRAIN))
    chunk = -(-n // used)
    buf = np.zeros(threads, f32)
    for tid in range(used):
        b = tid * chunk
        if b < n:
            buf[tid] = cascade(x[b:b + chunk])
    return cascade(buf)


def outer_sum(a):
    """The columns of a contiguous (rows, cols) block: vectorized_outer_sum / scalar_outer_sum."""
    rows, cols = a.shape
    out = np.empty(cols, f32)
    j = 0
    if cols >= W:
        while j + 4 * W <= cols:
            out[j:j + 4 * W] = multi_row_sum(a[:, j:j + 4 * W].reshape(rows, 4, W)).ravel()
            j += 4 * W
        while j + W <= cols:
            out[j:j + W] = row_sum(a[:, j:j + W])
            j += W
    else:
        while j + 4 <= cols:
            out[j:j + 4] = multi_row_sum(a[:, j:j + 4].reshape(rows, 4, 1)).ravel()
            j += 4
    while j < cols:
        out[j] = row_sum(a[:, j:j + 1])[0]
        j += 1
    return (f32(0) + out).astype(f32)


def tensor_iterator(x, axis, threads):
    """The per-channel model (module docstring); threads only matter when C == 1."""
    shape = x.shape
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    C = shape[axis]
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    a = x.reshape(outer, C, inner)
    if C == 1:
        return np.array([two_pass(x.ravel(), threads)], f32)
    out = np.zeros(C, f32)
    if inner > 1:
        for c in range(C):
            acc = f32(0)
            for o in range(outer):
                acc = f32(acc + inner_raw(a[o, c]))
            out[c] = acc
        return out
    # parallel_dim_reduction would split the channels over threads, but round_columns puts
    # every split on a multiple of 32 channels (128 bytes), so each thread's groups are the
    # serial ones: the thread count does not matter (the probe checks it with 1, 2 and 4).
    out[:] = outer_sum(a[:, :, 0])
    return out


def double_round_once(x, axis=None):
    if axis is None:
        return f32(np.sum(x, dtype=np.float64))
    dims = tuple(d for d in range(x.ndim) if d != axis)
    return np.sum(x, axis=dims, dtype=np.float64).astype(f32)


def cascade_of_slice(x, axis):
    return np.array([cascade(np.take(x, c, axis=axis)) for c in range(x.shape[axis])], f32)


def main():
    rng = np.random.default_rng(7)
    sizes = [1, 2, 7, 8, 9, 10, 31, 33, 100, 127, 1000, 4097, 10000, 32767, 32768, 32769, 40000,
             65535, 65536, 65537, 65539, 70001, 98303, 98305, 100000, 131072, 131075, 150001,
             200000, 250007, 262144, 300001, 400000, 500001, 524288, 600000, 777777, 900001,
             1000000, 1000003]
    threads = [1, 2, 4]
    hits = {"double_round_once": 0, "cascade": 0, "two_pass": 0}
    total = 0
    for n in sizes:
        x = (rng.standard_normal(n) * rng.uniform(0.1, 10, n)).astype(f32)
        for t in threads:
            torch.set_num_threads(t)
            want = torch.from_numpy(x).sum().numpy()
            got = {"double_round_once": double_round_once(x), "cascade": cascade(x),
                   "two_pass": two_pass(x, t)}
            for k, v in got.items():
                hits[k] += int(np.array(v, f32).view(np.uint32) == want.view(np.uint32))
            total += 1
    print(f"per tensor: {total} sums:", hits)

    shapes = [((64, 3, 3, 3), 0), ((8, 16, 5, 5), 1), ((3, 3, 32, 64), 3), ((1000, 10), 1),
              ((10, 1000), 0), ((3, 3, 64, 100), 3), ((3, 3, 128, 200), 3), ((5, 5, 7, 300), 3),
              ((1024, 3), 1), ((2000, 5), 1), ((4096, 37), 1), ((3, 3, 3, 3000), 3),
              ((256, 64, 3, 3), 1), ((128, 256, 3, 3), 0), ((64, 1, 3, 3), 1), ((40000, 1), 1),
              ((9, 17), 1), ((7, 70000), 0), ((70000, 2), 1), ((3, 3, 32, 64), 2),
              ((16, 3, 1000), 1), ((12, 32, 7, 7), 1), ((50, 40, 30), 0), ((100, 70, 9), 1)]
    hits = {"double_round_once": 0, "cascade_of_slice": 0, "tensor_iterator": 0}
    total = 0
    for shape, axis in shapes:
        x = (rng.standard_normal(shape) * rng.uniform(0.1, 10, shape)).astype(f32)
        dims = [d for d in range(len(shape)) if d != axis]
        for t in threads:
            torch.set_num_threads(t)
            want = torch.from_numpy(x).sum(dims).numpy().view(np.uint32)
            got = {"double_round_once": double_round_once(x, axis), "cascade_of_slice": cascade_of_slice(x, axis),
                   "tensor_iterator": tensor_iterator(x, axis, t)}
            line = {}
            for k, v in got.items():
                h = int(np.sum(v.view(np.uint32) == want))
                hits[k] += h
                line[k] = h
            total += want.size
            print(shape, "axis", axis, "threads", t, f"{want.size} sums:", line)
    print(f"per channel: {total} sums:", hits)


if __name__ == "__main__":
    main()
