#pragma once
/// \file pooling_ops.hpp
/// The engine's pooling ops: max pooling of any tensor but bits, and TFLite's integer
/// average pooling on the input's grid.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "lowered_op.hpp"
#include "window_geometry.hpp"

namespace xq::deploy {

/// Max pooling of any tensor kind but bits (padding never wins a max). Its rule: a rank-4
/// real, integer or accumulator tensor at least as large as the window, no dilation.
class max_pool_op final : public lowered_op {
 public:
  window_geometry geometry;
  const char* kind() const noexcept override { return "max_pool2d"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

/// Average pooling on centred integers, TFLite's integer kernel: each window's int64 sum
/// over the cells inside the image (padding is not counted, as Keras counts), divided by
/// that count and rounded half away from zero, on the input's own grid. Lowered only with
/// lower_options::average_pool = average_pooling::integer; the default pools the
/// dequantized floats as the simulation does (real_function_op).
class integer_average_pool_op final : public lowered_op {
 public:
  window_geometry geometry;
  const char* kind() const noexcept override { return "integer_average_pool2d"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

namespace detail {

/// Calls f(offset) with the offset of the first of the c values of each input pixel of
/// output window (b, i, j) of an (n, h, w, c) NHWC tensor, window rows then columns,
/// skipping the cells over the padding.
template <class F>
void for_each_window_pixel(const window_geometry& g, std::size_t h, std::size_t w, std::size_t c, std::size_t b,
                           std::size_t i, std::size_t j, F&& f) {
  for (std::size_t u = 0; u < g.window[0]; ++u) {
    const long y = long(i * g.strides[0] + u) - long(g.pads[0]);
    if (y < 0 || y >= long(h)) continue;
    for (std::size_t v = 0; v < g.window[1]; ++v) {
      const long xx = long(j * g.strides[1] + v) - long(g.pads[1]);
      if (xx < 0 || xx >= long(w)) continue;
      f(((b * h + std::size_t(y)) * w + std::size_t(xx)) * c);
    }
  }
}

template <class T>
void max_pool_nhwc(const std::vector<T>& in, const std::vector<std::size_t>& shape, const window_geometry& g,
                   std::size_t oh, std::size_t ow, std::vector<T>& out) {
  const std::size_t n = shape[0], h = shape[1], w = shape[2], c = shape[3];
  out.assign(n * oh * ow * c, std::numeric_limits<T>::lowest());
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j) {
        T* o = out.data() + ((b * oh + i) * ow + j) * c;
        for_each_window_pixel(g, h, w, c, b, i, j, [&](std::size_t at) {
          const T* p = in.data() + at;
          for (std::size_t q = 0; q < c; ++q) o[q] = std::max(o[q], p[q]);
        });
      }
}

}  // namespace detail

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/pooling_ops.ipp"
#endif
