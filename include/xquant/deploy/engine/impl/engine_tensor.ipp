#pragma once
/// \file engine_tensor.ipp
/// engine_tensor's code (deploy/engine/engine_tensor.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../engine_tensor.hpp"

namespace xq::deploy {

XQ_DECL const char* to_string(value_kind k) noexcept {
  switch (k) {
    case value_kind::real: return "real";
    case value_kind::integer: return "integer";
    case value_kind::accumulator: return "accumulator";
    case value_kind::bits: return "bits";
  }
  return "?";
}

XQ_DECL std::size_t engine_tensor::elements() const noexcept {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

XQ_DECL bool engine_tensor::holds_data() const noexcept {
  const std::size_t n = elements();
  switch (kind) {
    case value_kind::real: return real.size() == n;
    case value_kind::integer: return integer.size() == n;
    case value_kind::accumulator: return accumulator.size() == n;
    case value_kind::bits: {
      const std::size_t c = channels();
      return c ? bits.size() == (n / c) * words_per_pixel() : bits.empty();
    }
  }
  return false;
}

XQ_DECL tensor engine_tensor::to_real() const {
  tensor t = tensor::from_shape(shape);
  float* out = t.data();
  const std::size_t n = elements();
  switch (kind) {
    case value_kind::real: std::copy(real.begin(), real.end(), out); break;
    case value_kind::integer:
      for (std::size_t i = 0; i < n; ++i) out[i] = float(integer[i]) * scale;
      break;
    case value_kind::accumulator:
      for (std::size_t i = 0; i < n; ++i) out[i] = float(accumulator[i]);
      break;
    case value_kind::bits: {
      const std::size_t c = channels(), w = words_per_pixel();
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t p = i / c, k = i % c;
        out[i] = (bits[p * w + k / 64] >> (k % 64)) & 1u ? -1.0f : 1.0f;
      }
      break;
    }
  }
  return t;
}

XQ_DECL std::vector<std::int32_t> engine_tensor::integers() const {
  if (kind != value_kind::integer)
    throw argument_error("engine_tensor::integers", "an integer tensor", std::string("a ") + to_string(kind) + " one");
  std::vector<std::int32_t> q(integer.size());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = std::int32_t(integer[i]) + zero_point;
  return q;
}

XQ_DECL std::string describe(const integer_grid& g) {
  return xq::detail::concat("scale ", g.scale, " zero point ", g.zero_point, " [", g.qmin, ", ", g.qmax, "]");
}

XQ_DECL engine_tensor real_engine_tensor(std::vector<std::size_t> shape, std::vector<float> values) {
  engine_tensor t;
  t.shape = std::move(shape);
  t.real = std::move(values);
  return t;
}

}  // namespace xq::deploy
