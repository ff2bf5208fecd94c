#pragma once
/// \file torch_cpu_kernels.hpp
/// The few PyTorch CPU kernels that its calibrators go through, reproduced bit for bit
/// (torch 2.15, x86-64 AVX2 build: `ATEN_CPU_CAPABILITY=avx2`, the default on an AVX2
/// machine), so that the histogram calibrators built on them (nvidia_calibrators.hpp,
/// torch_histogram_observer.hpp) give the peers' float32 bits:
///
///  - `linspace`: aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp `linspace_kernel`, float
///    arithmetic, the first half counted up from `start`, the second down from `end`. The
///    AVX2 build contracts `start + step * idx` into an FMA (measured: all of 300 random
///    ranges match with an FMA, 749,037 values differ without one), so does this.
///  - `arange`: `arange_kernel`, start and step in double (`acc_type<float, false>`), two
///    8-float vectors per iteration whose lanes are `float(base + k * step)` from a float
///    base, the tail one by one (FMAs as above).
///  - `histc`: aten/src/ATen/native/Histogram.cpp `histogram_histc_out` and the
///    LINEAR_INTERPOLATION kernel of cpu/HistogramKernel.cpp: the bin is
///    `int64((x - lo) * bins / (hi - lo))` in float, with no correction against the edges.
///  - `sum`: cpu/SumKernel.cpp `cascade_sum` of a contiguous float vector: 8-lane vectors
///    summed four at a time in a four-level cascade, the scalar tail first, then the lanes.
///    `sum(x, n)` is torch's result with one thread, and with any thread count when
///    n < 32768 (at::internal::GRAIN_SIZE). `sum(x, n, threads)` adds TensorIteratorReduce.cpp
///    `two_pass_reduction`, what torch does with `torch.set_num_threads(threads)` and
///    n >= 32768: invoke_parallel (ParallelOpenMP.h) runs t = min(threads, ceil(n / 32768))
///    threads, thread i sums [i * c, (i + 1) * c), c = ceil(n / t), into buffer[i], and the
///    `threads` entries of the buffer (zeros past t) are summed the same way.
///  - `sum_except_axis`: `x.sum(every dim but axis)` of a contiguous tensor, per channel.
///    TensorIterator moves the reduced dims first and coalesces them, so on the layout
///    (outer, channels, inner): with inner > 1, each channel is 0 + the cascade sums of its
///    `outer` rows of `inner` floats, added in order (vectorized_inner_sum / scalar_inner_sum);
///    with inner == 1 (channel last) the columns of an (outer, channels) matrix,
///    vectorized_outer_sum for 8 channels or more (groups of 32 channels, then of 8, then
///    single ones), scalar_outer_sum below (groups of 4, then single ones); one channel is
///    the full sum. The thread count matters only for one channel: parallel_dim_reduction
///    splits the channels, and round_columns keeps each split on a multiple of 32 channels,
///    so every thread's groups are the serial ones.
///
/// Measured with tools/probe_torch_reduction_order.py (torch 2.15, AVX2, 1, 2 and 4
/// threads): `sum(x, n, threads)` reproduced 120 of 120 full sums (n from 1 to 1,000,003;
/// one-thread cascade alone: 86), and `sum_except_axis` 12,648 of 12,648 channel sums on
/// 24 shapes and axes (0, 1, middle and last; a double sum rounded once: 4,005).
///  - `cumsum`: cpu/ReduceOpsKernel.cpp `cumsum_cpu_kernel`, accumulated in double.
///
/// `ATEN_CPU_CAPABILITY=avx512` gives the same bits: torch 2.15 has no AVX-512 build of
/// sum_kernel_impl, linspace_kernel or arange_kernel (nm of libtorch_cpu.so), so avx512 runs
/// the AVX2 one (measured for linspace, arange and sum). Its scalar build (`default`) is
/// not reproduced: its linspace does not fuse and gives other bits. (Only the float-zero-
/// point fake quantization follows a chosen build: `cpu_capability`, torch_fake_quant.hpp.)

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../kernels/channel_layout.hpp"

namespace xq::torch::cpu {

/// `torch.linspace(start, end, steps)` in float32 (steps >= 1).
XQ_DECL std::vector<float> linspace(float start, float end, std::int64_t steps);

/// `torch.arange(start, end, step)` in float32, the bounds and step given as the doubles
/// torch converts its Scalars to (argument_error for a zero step or a non-finite size).
XQ_DECL std::vector<float> arange(double start, double end, double step);

/// `torch.histc(x, bins, min, max)` of n floats: float32 counts (argument_error for a
/// non-finite range or min > max, as torch refuses them). A range with min == max takes the
/// data's own min and max, then widens by one on each side if they are equal too.
XQ_DECL std::vector<float> histc(const float* x, std::size_t n, std::int64_t bins, double min, double max);

/// `torch.sum` of n contiguous floats, as torch computes it on one thread (or on any number
/// when n < 32768).
XQ_DECL float sum(const float* x, std::size_t n);

/// `torch.sum` of n contiguous floats after `torch.set_num_threads(threads)` (threads >= 1,
/// argument_error otherwise). xquant still adds on the calling thread: only the order is
/// torch's.
XQ_DECL float sum(const float* x, std::size_t n, int threads);

/// `x.sum(dims)` over every dim of x but its channel axis, x contiguous with the channel
/// `layout` (kernels::channel_layout::of(shape, axis)): out[c] for each of layout.channels.
/// `threads` as for sum; it matters only when there is a single channel.
XQ_DECL void sum_except_axis(const float* x, const kernels::channel_layout& layout, float* out, int threads = 1);

/// The thread count of the torch run whose reductions xquant reproduces where an operator
/// sums a whole tensor (the LSQ backward's d_scale and d_zero_point,
/// torch_learnable_fake_quant.hpp): what `torch.get_num_threads()` said there. The default,
/// 1, matches torch with one thread (tools/gen_golden.py) and with any thread count for
/// tensors under 32768 elements; torch's own default is the number of physical cores, so
/// reproduce a default torch run on a larger tensor by setting that number. Process-wide,
/// safe to read and set from any thread; xquant computes on the calling thread whatever it is.
XQ_DECL int reduction_threads() noexcept;

/// Sets reduction_threads() (argument_error unless threads >= 1).
XQ_DECL void set_reduction_threads(int threads);

/// `torch.cumsum` of n contiguous floats.
XQ_DECL std::vector<float> cumsum(const float* x, std::size_t n);

/// `torch.aminmax(x)` of n > 0 contiguous floats (ReduceAllOpsKernel.cpp
/// `aminmax_allreduce_kernel` -> `vec::reduce2_all`), as torch's build with `lanes`-float
/// vectors computes it on one thread (or any thread count when n < 32768): 8 lanes in the
/// default and AVX2 builds (and the avx512 capability, which runs the AVX2 kernel). The first vector is the accumulator, whole
/// vectors follow (`minimum`: x86 `minps(acc, v)`, which returns v when both are zeros, NaN
/// if either is), a partial last vector updates its own lanes only, and the lanes are
/// reduced by shuffles at strides lanes/2, ..., 1 (`tree`: the AVX2 and AVX-512 builds) or
/// one after another into lane 0 (the default build); under `lanes` values, lane 0 takes
/// them one after another. So it equals a plain min and max except in which zero it keeps
/// when the data hold both -0.0 and +0.0 (PyTorch's MinMaxObserver stores that zero).
XQ_DECL std::pair<float, float> aminmax(const float* x, std::size_t n, std::size_t lanes, bool tree);

}  // namespace xq::torch::cpu

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/torch_cpu_kernels.ipp"
#endif
