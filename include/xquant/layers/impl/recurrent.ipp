#pragma once
/// \file recurrent.ipp
/// The recurrent layers' shared code (layers/recurrent.hpp).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/shape_check.hpp"
#include "../concatenate.hpp"
#include "../recurrent.hpp"
#include "../reshape.hpp"
#include "../slicing.hpp"

namespace xq {

XQ_DECL tensor orthogonal(std::size_t rows, std::size_t cols, std::mt19937& rng) {
  // QR of a tall (n x k) normal matrix by modified Gram-Schmidt in double: Q's columns
  // come out with R's diagonal positive, which is Keras's q * sign(diag(r)).
  const std::size_t n = std::max(rows, cols), k = std::min(rows, cols);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> a(n * k);
  for (double& v : a) v = normal(rng);
  for (std::size_t j = 0; j < k; ++j) {
    for (std::size_t p = 0; p < j; ++p) {
      double dot = 0;
      for (std::size_t i = 0; i < n; ++i) dot += a[i * k + p] * a[i * k + j];
      for (std::size_t i = 0; i < n; ++i) a[i * k + j] -= dot * a[i * k + p];
    }
    double norm = 0;
    for (std::size_t i = 0; i < n; ++i) norm += a[i * k + j] * a[i * k + j];
    norm = std::sqrt(norm);
    for (std::size_t i = 0; i < n; ++i) a[i * k + j] /= norm;
  }
  tensor q = tensor::from_shape({rows, cols});
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      q(r, c) = static_cast<float>(rows >= cols ? a[r * k + c] : a[c * k + r]);
  return q;
}

namespace detail {

/// Checks a recurrence's projected inputs (B, T, gates·units) and recurrent kernel
/// (units, gates·units); returns units.
inline std::size_t recurrence_units(const std::string& path, const var& projected, const var& kernel,
                                    std::size_t gates) {
  require_shape(path, projected.shape(), {any('B'), any('T'), any('G')});
  if (projected.shape()[1] == 0) throw shape_error(path, "a sequence of at least one step", shape_string(projected.shape()));
  if (kernel.dimension() != 2 || kernel.shape()[1] != gates * kernel.shape()[0] || kernel.shape()[0] == 0)
    throw shape_error(path, concat("a recurrent kernel of shape (units, ", gates, " * units)"),
                      shape_string(kernel.shape()));
  const std::size_t units = kernel.shape()[0];
  if (projected.shape()[2] != gates * units)
    throw shape_error(path, concat("projected inputs of shape (B, T, ", gates * units, ")"),
                      shape_string(projected.shape()));
  return units;
}

/// Step t of (B, T, G) as (B, G).
inline var time_step(const std::vector<var>& steps, std::size_t t) {
  const auto& s = steps[t].shape();
  return reshape_to(steps[t], {s[0], s[2]});
}

/// The steps' outputs (B, U) in the order computed, as (B, T, U).
inline var stack_steps(const std::vector<var>& outputs, const std::string& path) {
  std::vector<var> widened;
  widened.reserve(outputs.size());
  for (const var& h : outputs) widened.push_back(reshape_to(h, {h.shape()[0], 1, h.shape()[1]}));
  return ops::concatenate(widened, 1, path);
}

/// A (B, U) state of zeros, the initial h (and c).
inline var zero_state(std::size_t batch, std::size_t units) {
  tensor z = tensor::from_shape({batch, units});
  std::fill(z.begin(), z.end(), 0.0f);
  return var(std::move(z));
}

}  // namespace detail

}  // namespace xq
