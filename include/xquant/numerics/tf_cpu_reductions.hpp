#pragma once
/// \file tf_cpu_reductions.hpp
/// The order in which TensorFlow's CPU kernels add float32, reproduced bit for bit, for
/// the sums whose result reaches an output or a gradient: larq's per-channel mean |x|
/// (MagnitudeAwareSign) and TWN threshold (SteTern), and FakeQuant's d_min / d_max.
///
/// TF reduces with Eigen's tensor reductions, compiled for AVX in TF's x86 wheels
/// (8-float packets on every x86 CPU, AVX-512 ones included). Two paths matter:
///
///  - `sum`: a full reduction (`reduce_sum` over every element, FakeQuant's
///    `(dy * below_min).sum()`, or one channel's column of the per-channel op). Eigen's
///    vectorized InnerMostDimReducer with tree reduction: a run of more than 8 * 1024
///    elements is split at the packet boundary nearest its middle (counted from the
///    tensor's start) and the halves' sums added; a shorter run is summed in four packet
///    accumulators (packets 4k, 4k+1, 4k+2, 4k+3 of each block of 32 elements), which are
///    added in order, then the packets past the last whole block, then the scalar tail is
///    summed on its own from 0 and added to the packet's horizontal sum
///    ((p0+p4 + p2+p6) + (p1+p5 + p3+p7)).
///  - `sum_rows`: a reduction over every axis but the last (TF merges the reduced axes
///    into one): each whole packet of 8 columns sums its rows in four accumulators (rows
///    4k..4k+3 round robin, whole groups of 4 only), added in order, then the leftover
///    rows; with fewer than 16 rows, or in the columns past the last whole packet, rows
///    are added one by one. One column is a full reduction (TF drops size-1 axes).
///
/// Measured against tensorflow 2.21 (CPU wheel) on an AVX2 host by
/// tools/probe_tf_reduction_order.py and the golden vectors of
/// tools/gen_golden_tf_reductions.py: every sum bit-identical. Thread count: `sum_rows`
/// computes each column on one thread, so it does not depend on TF's thread pool. A full
/// reduction is split into per-thread shards by Eigen's cost model once it is large for
/// the pool: with TF's intra-op pool at 1 or 2 threads no size measured (up to 2,359,296
/// elements) was sharded; with 16 threads, sums of 589,824 elements and more were. There
/// the two orders differ by rounding only: each is within gamma(d) * sum|x_i| of the exact
/// sum, gamma(d) = d * 2^-24 / (1 - d * 2^-24), d = the longest chain of additions (for
/// `sum`: 256 + 8 + 3 + 1 + log2(n / 8192) + the number of shards; under 300 for any
/// n < 2^40), so |xquant - TF| <= 2 * gamma(300) * sum|x_i|, about 3.6e-5 * sum|x_i|.

#include <cstddef>

#include "../config.hpp"

namespace xq::tf::cpu {

/// Eigen's full float32 sum of `n` floats `stride` apart, in TF's order.
XQ_DECL float sum(const float* x, std::size_t n, std::size_t stride = 1);

/// The column sums of a row-major `rows` x `cols` matrix (TF's reduce_sum over every
/// axis but the last) into out[0 .. cols), in TF's order.
XQ_DECL void sum_rows(const float* x, std::size_t rows, std::size_t cols, float* out);

}  // namespace xq::tf::cpu

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tf_cpu_reductions.ipp"
#endif
