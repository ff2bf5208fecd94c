#pragma once
/// \file cuda/block_scaled.cuh
/// The block-scaled walker (kernels/block_scaled.hpp) for cuda_policy: the same formats, their
/// states and kernels, run by CUDA threads with V = float, so outputs, states and masks are
/// bit-identical to scalar_policy (device code is compiled with --fmad=false; a NaN's payload
/// may differ). Every pointer must be device memory; the layouts and state order are the host
/// walker's.
///
/// One thread per (tile of block rows, block): it reduces its block's values (over the tile's
/// rows) in order, computes the state and the kernel's parameters, and quantizes the block.
/// A format whose state is scalar host code (`vector_state = false`: MX, whose exponent needs
/// torch's log2 tables) gets its statistics from the device, its states from the host (one
/// float per block each way), then the device applies them.
///
/// Only usable in translation units compiled by nvcc.

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../block_scaled.hpp"
#include "../policy.hpp"
#include "device_buffer.cuh"
#include "walkers.cuh"

namespace xq::kernels {

namespace cuda_detail {

struct block_grid {
  std::size_t rows, nb, L, inner, B, T, tiles;
};

__device__ __forceinline__ std::size_t element_at(const block_grid& g, std::size_t row, std::size_t c) {
  const std::size_t o = row / g.inner, i = row % g.inner;
  return (o * g.L + c) * g.inner + i;
}
__device__ __forceinline__ std::size_t state_at(const block_grid& g, std::size_t row, std::size_t b) {
  const std::size_t o = row / g.inner, i = row % g.inner;
  return (o * g.nb + b) * g.inner + i;
}

/// The statistics of block b of the tile starting at row r0, in element order.
template <class Format>
__device__ void tile_stats(const block_grid& g, const float* x, std::size_t r0, std::size_t b, float& a, float& s) {
  const std::size_t r1 = r0 + g.T < g.rows ? r0 + g.T : g.rows;
  const std::size_t c0 = b * g.B, c1 = c0 + g.B < g.L ? c0 + g.B : g.L;
  float lo = INFINITY, hi = Format::statistic == block_statistic::abs_max ? 0.0f : -INFINITY;
  bool nan = false;
  for (std::size_t r = r0; r < r1; ++r)
    for (std::size_t c = c0; c < c1; ++c) {
      const float v = x[element_at(g, r, c)];
      if (Format::statistic == block_statistic::abs_max) {
        const float m = math::abs(v);
        if (m != m) nan = true;
        else if (m > hi) hi = m;
      } else if (v != v) {
        nan = true;
      } else {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    }
  if (nan) {
    a = s = NAN;
  } else if (Format::statistic == block_statistic::abs_max) {
    a = hi;
    s = 0.0f;
  } else {
    a = lo;
    s = hi;
  }
}

template <class Format>
__global__ void block_stats_kernel(const Format f, block_grid g, const float* __restrict__ x, float* __restrict__ sa,
                                   float* __restrict__ sb) {
  (void)f;
  for (std::size_t item = first_index<std::size_t>(); item < g.tiles * g.nb; item += grid_stride<std::size_t>()) {
    float a, s;
    tile_stats<Format>(g, x, (item / g.nb) * g.T, item % g.nb, a, s);
    sa[item] = a;
    sb[item] = s;
  }
}

/// Observe: compute the states (from the statistics, or from `precomputed` states of the
/// host, one per (tile, block)); else read them. Then quantize.
template <class Format, bool Observe>
__global__ void block_rows_kernel(const Format f, block_grid g, const float* __restrict__ x, float* __restrict__ y,
                                  float* __restrict__ state, bool* __restrict__ mask, const float* precomputed) {
  constexpr std::size_t S = Format::state_size, P = Format::param_count;
  for (std::size_t item = first_index<std::size_t>(); item < g.tiles * g.nb; item += grid_stride<std::size_t>()) {
    const std::size_t r0 = (item / g.nb) * g.T, b = item % g.nb;
    const std::size_t r1 = r0 + g.T < g.rows ? r0 + g.T : g.rows;
    float st[S];
    if (Observe) {
      if constexpr (detail::has_vector_state<Format>::value) {
        float a, s;
        tile_stats<Format>(g, x, r0, b, a, s);
        f.block_state(a, s, st);
      } else {  // states computed on the host (scalar code)
        for (std::size_t k = 0; k < S; ++k) st[k] = precomputed[item * S + k];
      }
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t k = 0; k < S; ++k) state[state_at(g, r, b) * S + k] = st[k];
    } else {
      for (std::size_t k = 0; k < S; ++k) st[k] = state[state_at(g, r0, b) * S + k];
    }
    float p[P];
    f.kernel_params(st, p);
    const auto kernel = f.kernel(p);
    const std::size_t c0 = b * g.B, c1 = c0 + g.B < g.L ? c0 + g.B : g.L;
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t c = c0; c < c1; ++c) {
        const std::size_t at = element_at(g, r, c);
        const float v = x[at];
        y[at] = kernel.forward(v);
        if (mask) {
          if constexpr (detail::has_identity_gradient<Format>::value) mask[at] = true;
          else mask[at] = kernel.passes(v);
        }
      }
  }
}

template <class Format>
__global__ void block_backward_kernel(const Format f, block_grid g, const bool* __restrict__ mask,
                                      const float* __restrict__ dy, float* __restrict__ dx,
                                      const float* __restrict__ state) {
  constexpr std::size_t S = Format::state_size, P = Format::param_count;
  for (std::size_t item = first_index<std::size_t>(); item < g.rows * g.nb; item += grid_stride<std::size_t>()) {
    const std::size_t r = item / g.nb, b = item % g.nb;
    float p[P];
    f.kernel_params(state + state_at(g, r, b) * S, p);
    const auto kernel = f.kernel(p);
    const std::size_t c0 = b * g.B, c1 = c0 + g.B < g.L ? c0 + g.B : g.L;
    for (std::size_t c = c0; c < c1; ++c) {
      const std::size_t at = element_at(g, r, c);
      dx[at] = kernel.backward(dy[at], mask[at] ? 1.0f : 0.0f);
    }
  }
}

__global__ void tensor_stats_kernel(block_statistic kind, const float* __restrict__ x, std::size_t n,
                                           float* __restrict__ lo_out, float* __restrict__ hi_out,
                                           unsigned* __restrict__ nan_out) {
  __shared__ float lo_s[block_size], hi_s[block_size];
  __shared__ unsigned nan_s[block_size];
  float lo = INFINITY, hi = kind == block_statistic::abs_max ? 0.0f : -INFINITY;
  unsigned nan = 0;
  for (std::size_t i = first_index<std::size_t>(); i < n; i += grid_stride<std::size_t>()) {
    const float v = kind == block_statistic::abs_max ? math::abs(x[i]) : x[i];
    if (v != v) nan = 1;
    else {
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
  }
  lo_s[threadIdx.x] = lo;
  hi_s[threadIdx.x] = hi;
  nan_s[threadIdx.x] = nan;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      lo_s[threadIdx.x] = lo_s[threadIdx.x + s] < lo_s[threadIdx.x] ? lo_s[threadIdx.x + s] : lo_s[threadIdx.x];
      hi_s[threadIdx.x] = hi_s[threadIdx.x + s] > hi_s[threadIdx.x] ? hi_s[threadIdx.x + s] : hi_s[threadIdx.x];
      nan_s[threadIdx.x] |= nan_s[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    lo_out[blockIdx.x] = lo_s[0];
    hi_out[blockIdx.x] = hi_s[0];
    nan_out[blockIdx.x] = nan_s[0];
  }
}

inline block_grid grid_of(const block_layout& bl) {
  block_grid g;
  g.rows = bl.rows();
  g.nb = bl.blocks_per_row();
  g.L = bl.shape.channels;
  g.inner = bl.shape.inner;
  g.B = bl.block;
  g.T = bl.tile_rows;
  g.tiles = (g.rows + g.T - 1) / g.T;
  return g;
}

template <class Format, bool Observe>
void block_scaled_walk(const Format& f, const block_layout& bl, const float* x, float* y, float* state, bool* mask) {
  const block_grid g = grid_of(bl);
  const std::size_t items = g.tiles * g.nb;
  if (bl.shape.size() == 0 || items == 0) return;
  const unsigned grid = grid_size(items);
  if constexpr (Observe && !detail::has_vector_state<Format>::value) {
    // The states are scalar host code: statistics here, states there, back here.
    constexpr std::size_t S = Format::state_size;
    cuda::device_buffer<float> sa(items), sb(items), pre(items * S);
    block_stats_kernel<<<grid, block_size>>>(f, g, x, sa.data(), sb.data());
    cuda::check_launch("xq::kernels::block_scaled_forward (cuda_policy): statistics");
    const std::vector<float> ha = sa.to_host(), hb = sb.to_host();
    std::vector<float> hs(items * S);
    for (std::size_t i = 0; i < items; ++i) f.block_state(ha[i], hb[i], &hs[i * S]);
    pre.copy_from(hs.data(), hs.size());
    block_rows_kernel<Format, true><<<grid, block_size>>>(f, g, x, y, state, mask, pre.data());
    cuda::check_launch("xq::kernels::block_scaled_forward (cuda_policy)");
    cuda::check(cudaDeviceSynchronize(), "xq::kernels::block_scaled_forward (cuda_policy)");
  } else {
    block_rows_kernel<Format, Observe><<<grid, block_size>>>(f, g, x, y, state, mask, nullptr);
    cuda::check_launch("xq::kernels::block_scaled_forward (cuda_policy)");
  }
}

}  // namespace cuda_detail

/// block_scaled_forward for device pointers (block_scaled.hpp).
template <class Format>
void block_scaled_forward(cuda_policy, const Format& f, const block_layout& bl, const float* x, float* y,
                          float* state, bool* mask = nullptr) {
  cuda_detail::block_scaled_walk<Format, true>(f, bl, x, y, state, mask);
}

/// block_scaled_apply for device pointers.
template <class Format>
void block_scaled_apply(cuda_policy, const Format& f, const block_layout& bl, const float* x, float* y,
                        const float* state, bool* mask = nullptr) {
  cuda_detail::block_scaled_walk<Format, false>(f, bl, x, y, const_cast<float*>(state), mask);
}

/// block_scaled_backward for device pointers (dx = dy for a format whose gradient is the identity).
template <class Format>
void block_scaled_backward(cuda_policy, const Format& f, const block_layout& bl, const bool* mask, const float* dy,
                           float* dx, const float* state) {
  const std::size_t n = bl.shape.size();
  if (n == 0) return;
  if constexpr (detail::has_identity_gradient<Format>::value) {
    (void)f;
    (void)mask;
    (void)state;
    cuda::check(cudaMemcpy(dx, dy, n * sizeof(float), cudaMemcpyDeviceToDevice),
                "xq::kernels::block_scaled_backward (cuda_policy)");
  } else {
    const cuda_detail::block_grid g = cuda_detail::grid_of(bl);
    cuda_detail::block_backward_kernel<<<cuda_detail::grid_size(g.rows * g.nb), cuda_detail::block_size>>>(
        f, g, mask, dy, dx, state);
    cuda::check_launch("xq::kernels::block_scaled_backward (cuda_policy)");
  }
}

/// tensor_stats for device pointers: the same statistics (max and min do not depend on the order).
inline block_stats tensor_stats(cuda_policy, block_statistic kind, const float* x, std::size_t n) {
  float lo = INFINITY, hi = kind == block_statistic::abs_max ? 0.0f : -INFINITY;
  bool nan = false;
  if (n) {
    const unsigned grid = cuda_detail::grid_size(n);
    cuda::device_buffer<float> l(grid), h(grid);
    cuda::device_buffer<unsigned> f(grid);
    cuda_detail::tensor_stats_kernel<<<grid, cuda_detail::block_size>>>(kind, x, n, l.data(), h.data(), f.data());
    cuda::check_launch("xq::kernels::tensor_stats (cuda_policy)");
    const std::vector<float> hl = l.to_host(), hh = h.to_host();
    const std::vector<unsigned> hf = f.to_host();
    for (unsigned i = 0; i < grid; ++i) {
      lo = hl[i] < lo ? hl[i] : lo;
      hi = hh[i] > hi ? hh[i] : hi;
      nan = nan || hf[i] != 0;
    }
  }
  return detail::finish_stats(kind, lo, hi, nan);
}

}  // namespace xq::kernels

#endif  // __CUDACC__
