#pragma once
/// \file tf_cpu_reductions.ipp
/// TensorFlow's CPU summation orders (numerics/tf_cpu_reductions.hpp).

#include <algorithm>
#include <cstddef>

#include "../tf_cpu_reductions.hpp"

namespace xq::tf::cpu {

namespace detail {

constexpr std::size_t packet = 8;          // AVX: TF's x86 wheels
constexpr std::size_t leaf_packets = 1024;  // Eigen's kLeafSize
constexpr std::size_t unroll_rows = 16;     // InnerMostDimPreserver unrolls from 16 rows

/// Eigen's predux of an AVX packet: the halves added, then lanes 0+2 and 1+3.
inline float horizontal_sum(const float* p) {
  float half[4];
  for (std::size_t l = 0; l < 4; ++l) half[l] = p[l] + p[l + 4];
  return (half[0] + half[2]) + (half[1] + half[3]);
}

/// One leaf of the tree: four packet accumulators, then the packets left, then the tail.
inline float leaf_sum(const float* x, std::size_t n, std::size_t stride) {
  constexpr std::size_t P = packet;
  const std::size_t unrolled = n / (4 * P) * (4 * P);
  const std::size_t vectorized = n / P * P;
  float acc[4][P] = {};
  for (std::size_t j = 0; j < unrolled; j += 4 * P)
    for (std::size_t u = 0; u < 4; ++u)
      for (std::size_t l = 0; l < P; ++l) acc[u][l] += x[(j + u * P + l) * stride];
  for (std::size_t u = 1; u < 4; ++u)
    for (std::size_t l = 0; l < P; ++l) acc[0][l] += acc[u][l];
  for (std::size_t j = unrolled; j < vectorized; j += P)
    for (std::size_t l = 0; l < P; ++l) acc[0][l] += x[(j + l) * stride];
  float tail = 0.0f;
  for (std::size_t j = vectorized; j < n; ++j) tail += x[j * stride];
  return tail + horizontal_sum(acc[0]);
}

/// Elements [first, first + n) of the whole run, which starts at x.
inline float tree_sum(const float* x, std::size_t first, std::size_t n, std::size_t stride) {
  constexpr std::size_t P = packet;
  if (n <= P * leaf_packets) return leaf_sum(x, n, stride);
  const std::size_t split = P * ((first + (n + 1) / 2 + P - 1) / P);
  const std::size_t left = std::min(split - first, n);
  float acc = 0.0f + tree_sum(x, first, left, stride);
  if (left < n) acc += tree_sum(x + left * stride, split, n - left, stride);
  return acc;
}

}  // namespace detail

XQ_DECL float sum(const float* x, std::size_t n, std::size_t stride) {
  return detail::tree_sum(x, 0, n, stride);
}

XQ_DECL void sum_rows(const float* x, std::size_t rows, std::size_t cols, float* out) {
  constexpr std::size_t P = detail::packet;
  if (cols == 1) {  // TF drops the size-1 axis: a full reduction
    out[0] = sum(x, rows);
    return;
  }
  const std::size_t packed = cols / P * P;
  const std::size_t grouped = rows >= detail::unroll_rows ? rows / 4 * 4 : 0;
  for (std::size_t c0 = 0; c0 < packed; c0 += P) {
    float acc[4][P] = {};
    for (std::size_t r = 0; r < grouped; r += 4)
      for (std::size_t u = 0; u < 4; ++u)
        for (std::size_t l = 0; l < P; ++l) acc[u][l] += x[(r + u) * cols + c0 + l];
    for (std::size_t u = 1; grouped && u < 4; ++u)
      for (std::size_t l = 0; l < P; ++l) acc[0][l] += acc[u][l];
    for (std::size_t r = grouped; r < rows; ++r)
      for (std::size_t l = 0; l < P; ++l) acc[0][l] += x[r * cols + c0 + l];
    std::copy(acc[0], acc[0] + P, out + c0);
  }
  for (std::size_t c = packed; c < cols; ++c) {
    float s = 0.0f;
    for (std::size_t r = 0; r < rows; ++r) s += x[r * cols + c];
    out[c] = s;
  }
}

}  // namespace xq::tf::cpu
