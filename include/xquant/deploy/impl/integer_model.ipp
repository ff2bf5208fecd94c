#pragma once
/// \file integer_model.ipp
/// The integer engine's operations (deploy/integer_model.hpp).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/tape.hpp"
#include "../../core/var.hpp"
#include "../../core/graph_trace.hpp"
#include "../../kernels/padding.hpp"
#include "../../kernels/parallel.hpp"
#include "../../kernels/threads.hpp"
#include "../../layers/activation.hpp"
#include "../../layers/add.hpp"
#include "../../layers/average_pool2d.hpp"
#include "../../layers/conv2d.hpp"
#include "../../layers/dense.hpp"
#include "../../layers/depthwise_conv2d.hpp"
#include "../../layers/global_average_pool2d.hpp"
#include "../../layers/multiply.hpp"
#include "../../layers/tied_projection.hpp"
#include "../binary_gemm.hpp"
#include "../engine_kernels.hpp"
#include "../integer_model.hpp"

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

XQ_DECL std::size_t window_geometry::output_extent(std::size_t in, int a) const noexcept {
  const std::size_t padded = in + pads[std::size_t(a)] + pads[std::size_t(a) + 2];
  const std::size_t extent = (window[std::size_t(a)] - 1) * dilation[std::size_t(a)] + 1;
  return padded >= extent ? (padded - extent) / strides[std::size_t(a)] + 1 : 0;
}

namespace detail {

inline std::string window_string(const window_geometry& g) {
  std::ostringstream s;
  s << g.window[0] << "x" << g.window[1] << " stride " << g.strides[0] << "x" << g.strides[1];
  if (g.dilation[0] != 1 || g.dilation[1] != 1) s << " dilation " << g.dilation[0] << "x" << g.dilation[1];
  if (g.pads[0] || g.pads[1] || g.pads[2] || g.pads[3])
    s << " pads " << g.pads[0] << "," << g.pads[1] << "," << g.pads[2] << "," << g.pads[3];
  return s.str();
}

inline const engine_tensor& input_of(const std::vector<engine_tensor>& values, const lowered_op& op, value_kind k) {
  const engine_tensor& t = values.at(op.inputs.at(0));
  if (t.kind != k)
    throw argument_error(op.path + " (" + op.kind() + ")", std::string("a ") + to_string(k) + " input",
                         std::string("a ") + to_string(t.kind) + " one");
  return t;
}

/// Rows of im2col over a centred int16 NHWC input (padding is centred 0 = real 0):
/// one row per output pixel, KH * KW * C columns, row stride `lda` (>= K).
inline void im2col_s16(const engine_tensor& x, const window_geometry& g, std::size_t oh, std::size_t ow,
                       std::size_t lda, std::vector<std::int16_t>& cols) {
  const std::size_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
  const std::size_t kh = g.window[0], kw = g.window[1];
  cols.assign(n * oh * ow * lda, 0);
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j) {
        std::int16_t* row = cols.data() + ((b * oh + i) * ow + j) * lda;
        for (std::size_t u = 0; u < kh; ++u) {
          const long y = long(i * g.strides[0] + u * g.dilation[0]) - long(g.pads[0]);
          for (std::size_t v = 0; v < kw; ++v) {
            const long xx = long(j * g.strides[1] + v * g.dilation[1]) - long(g.pads[1]);
            std::int16_t* dst = row + (u * kw + v) * c;
            if (y < 0 || y >= long(h) || xx < 0 || xx >= long(w)) continue;  // zeros
            const std::int16_t* src = x.integer.data() + ((b * h + std::size_t(y)) * w + std::size_t(xx)) * c;
            std::copy(src, src + c, dst);
          }
        }
      }
}

}  // namespace detail

// --- quantize / dequantize ---------------------------------------------------------

XQ_DECL void quantize_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& x = detail::input_of(values, *this, value_kind::real);
  tensor t = tensor::from_shape(x.shape);
  std::copy(x.real.begin(), x.real.end(), t.data());
  const quantization_grid g = quantizer.grid(1);
  const std::vector<std::int32_t> q = quantizer.integers(t);
  engine_tensor y;
  y.kind = value_kind::integer;
  y.shape = x.shape;
  y.scale = g.scale[0];
  y.zero_point = g.zero_point[0];
  y.qmin = g.qmin;
  y.qmax = g.qmax;
  y.integer.resize(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) y.integer[i] = std::int16_t(q[i] - y.zero_point);
  values[output] = std::move(y);
}

XQ_DECL std::string quantize_op::describe() const { return "quantize " + xq::describe(quantizer.grid(1)); }

XQ_DECL void dequantize_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& x = detail::input_of(values, *this, value_kind::integer);
  engine_tensor y;
  y.shape = x.shape;
  y.real.resize(x.integer.size());
  for (std::size_t i = 0; i < y.real.size(); ++i) y.real[i] = float(x.integer[i]) * x.scale;
  values[output] = std::move(y);
}

XQ_DECL std::string dequantize_op::describe() const { return "dequantize"; }

// --- integer conv / depthwise / dense ------------------------------------------------

XQ_DECL const char* integer_linear_op::kind() const noexcept {
  switch (shape_form) {
    case form::conv2d: return "conv2d";
    case form::depthwise_conv2d: return "depthwise_conv2d";
    case form::dense: break;
  }
  return "dense";
}

XQ_DECL void integer_linear_op::prepare() {
  if (shape_form == form::depthwise_conv2d) return;  // direct loops
  const std::size_t k = weights.size() / out_channels;
  packed = shape_form == form::conv2d ? pack_conv2d_weights_s16(weights.data(), geometry.window[0], geometry.window[1],
                                                                in_channels, out_channels)
                                      : packed_s16_matrix(weights.data(), k, out_channels);
}

XQ_DECL void integer_linear_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = detail::input_of(values, *this, value_kind::integer);
  const std::size_t f = out_channels;
  if (!o.reference_kernels && shape_form != form::depthwise_conv2d) {
    linear_epilogue e;
    e.integer_output = integer_output;
    e.requant = integer_output && !float_bias ? &requant : nullptr;
    e.real_scale = real_scale.data();
    e.real_bias = real_bias.data();
    e.out_scale = out_scale;
    e.zero_point = out_zero_point;
    e.qmin = out_qmin;
    e.qmax = out_qmax;
    const std::int32_t* b = bias.empty() ? nullptr : bias.data();
    engine_tensor y;
    std::size_t elements = 0;
    if (shape_form == form::dense) {
      if (x.channels() != in_channels)
        throw argument_error(path + " (dense)", xq::detail::concat("inputs with ", in_channels, " features on the last axis"),
                             xq::detail::concat(x.channels()));
      y.shape = x.shape;
      y.shape.back() = f;
    } else {
      y.shape = {x.shape[0], geometry.output_extent(x.shape[1], 0), geometry.output_extent(x.shape[2], 1), f};
    }
    elements = y.elements();
    if (integer_output) {
      y.kind = value_kind::integer;
      y.scale = out_scale;
      y.zero_point = out_zero_point;
      y.qmin = out_qmin;
      y.qmax = out_qmax;
      y.integer.resize(elements);
    } else {
      y.real.resize(elements);
    }
    if (shape_form == form::dense) {
      const std::size_t rows = x.elements() / in_channels;
      std::vector<std::int32_t> acc(rows * f);
      gemm_s16(rows, x.integer.data(), in_channels, packed, b, acc.data());
      apply_epilogue(e, acc.data(), rows, f, y.integer.data(), y.real.data());
    } else {
      conv2d_nhwc_s16(x.integer.data(), x.shape[0], x.shape[1], x.shape[2], x.shape[3], geometry, packed, b, e,
                      y.integer.data(), y.real.data());
    }
    values[output] = std::move(y);
    return;
  }
  std::vector<std::int32_t> acc;
  std::vector<std::size_t> out_shape;
  std::size_t rows = 0;
  if (shape_form == form::dense) {
    // Keras Dense: the last axis, every other axis a row.
    const std::size_t k = in_channels;
    if (x.channels() != k)
      throw argument_error(path + " (dense)", xq::detail::concat("inputs with ", k, " features on the last axis"),
                           xq::detail::concat(x.channels()));
    rows = x.elements() / k;
    acc.resize(rows * f);
    const std::int32_t* b = bias.empty() ? nullptr : bias.data();
    if (o.reference_kernels)
      gemm_s16_reference(rows, f, k, x.integer.data(), k, weights.data(), b, acc.data());
    else
      gemm_s16(rows, x.integer.data(), k, packed, b, acc.data());
    out_shape = x.shape;
    out_shape.back() = f;
  } else {
    const std::size_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
    const std::size_t oh = geometry.output_extent(h, 0), ow = geometry.output_extent(w, 1);
    rows = n * oh * ow;
    out_shape = {n, oh, ow, f};
    acc.resize(rows * f);
    if (shape_form == form::conv2d) {
      const std::size_t k = geometry.window[0] * geometry.window[1] * c;
      std::vector<std::int16_t> cols;
      detail::im2col_s16(x, geometry, oh, ow, k, cols);
      const std::int32_t* b = bias.empty() ? nullptr : bias.data();
      if (o.reference_kernels)
        gemm_s16_reference(rows, f, k, cols.data(), k, weights.data(), b, acc.data());
      else
        gemm_s16(rows, cols.data(), k, packed, b, acc.data());
    } else {  // depthwise: output channel ch * M + m reads input channel ch
      const std::size_t m = depth_multiplier, kh = geometry.window[0], kw = geometry.window[1];
      for (std::size_t b = 0; b < n; ++b)
        for (std::size_t i = 0; i < oh; ++i)
          for (std::size_t j = 0; j < ow; ++j) {
            std::int32_t* out = acc.data() + ((b * oh + i) * ow + j) * f;
            for (std::size_t q = 0; q < f; ++q) out[q] = bias.empty() ? 0 : bias[q];
            for (std::size_t u = 0; u < kh; ++u) {
              const long y = long(i * geometry.strides[0] + u * geometry.dilation[0]) - long(geometry.pads[0]);
              if (y < 0 || y >= long(h)) continue;
              for (std::size_t v = 0; v < kw; ++v) {
                const long xx = long(j * geometry.strides[1] + v * geometry.dilation[1]) - long(geometry.pads[1]);
                if (xx < 0 || xx >= long(w)) continue;
                const std::int16_t* px = x.integer.data() + ((b * h + std::size_t(y)) * w + std::size_t(xx)) * c;
                const std::int16_t* wk = weights.data() + (u * kw + v) * c * m;
                for (std::size_t ch = 0; ch < c; ++ch)
                  for (std::size_t mm = 0; mm < m; ++mm)
                    out[ch * m + mm] += std::int32_t(px[ch]) * std::int32_t(wk[ch * m + mm]);
              }
            }
          }
    }
  }
  engine_tensor y;
  y.shape = out_shape;
  if (integer_output) {
    y.kind = value_kind::integer;
    y.scale = out_scale;
    y.zero_point = out_zero_point;
    y.qmin = out_qmin;
    y.qmax = out_qmax;
    y.integer.resize(acc.size());
    if (float_bias) {
      const float inverse = 1.0f / out_scale;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t q = 0; q < f; ++q) {
          const float v = (float(acc[r * f + q]) * real_scale[q] + real_bias[q]) * inverse;
          const long z = std::lrint(std::max(-1e9f, std::min(1e9f, v))) + out_zero_point;
          y.integer[r * f + q] = static_cast<std::int16_t>(std::max<long>(out_qmin, std::min<long>(out_qmax, z)) - out_zero_point);
        }
    } else {
      requant.apply(acc.data(), rows, out_zero_point, out_qmin, out_qmax, y.integer.data());
    }
  } else {
    y.kind = value_kind::real;
    y.real.resize(acc.size());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t q = 0; q < f; ++q)
        y.real[r * f + q] = float(acc[r * f + q]) * real_scale[q] + real_bias[q];
  }
  values[output] = std::move(y);
}

XQ_DECL std::string integer_linear_op::describe() const {
  std::ostringstream s;
  s << kind() << " " << in_channels << "->" << out_channels;
  if (shape_form != form::dense) s << " " << detail::window_string(geometry);
  s << (integer_output && float_bias ? ", float bias" : bias.empty() ? ", no bias" : ", int32 bias");
  if (integer_output)
    s << ", requantized (" << (float_bias ? "float_multiplier" : to_string(requant.scheme())) << ") to scale " << out_scale << " zero point "
      << out_zero_point << " [" << out_qmin << ", " << out_qmax << "]";
  else
    s << ", float output";
  return s.str();
}

// --- pooling, relu, reshape, batch norm ----------------------------------------------

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

XQ_DECL void max_pool_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = values.at(inputs.at(0));
  if (x.shape.size() != 4 || x.kind == value_kind::bits)
    throw argument_error(path + " (max_pool2d)", "a rank-4 real, integer or accumulator tensor",
                         std::string("a ") + to_string(x.kind) + " tensor of rank " + std::to_string(x.shape.size()));
  const std::size_t oh = geometry.output_extent(x.shape[1], 0), ow = geometry.output_extent(x.shape[2], 1);
  engine_tensor y;  // grid and kind carried over
  y.kind = x.kind;
  y.scale = x.scale;
  y.zero_point = x.zero_point;
  y.qmin = x.qmin;
  y.qmax = x.qmax;
  y.shape = {x.shape[0], oh, ow, x.shape[3]};
  const std::size_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
  if (!o.reference_kernels) {
    switch (x.kind) {
      case value_kind::real:
        y.real.resize(y.elements());
        max_pool_nhwc_f32(x.real.data(), n, h, w, c, geometry, y.real.data());
        break;
      case value_kind::integer:
        y.integer.resize(y.elements());
        max_pool_nhwc_s16(x.integer.data(), n, h, w, c, geometry, y.integer.data());
        break;
      case value_kind::accumulator:
        y.accumulator.resize(y.elements());
        max_pool_nhwc_s32(x.accumulator.data(), n, h, w, c, geometry, y.accumulator.data());
        break;
      case value_kind::bits: break;
    }
    values[output] = std::move(y);
    return;
  }
  switch (x.kind) {
    case value_kind::real: detail::max_pool_nhwc(x.real, x.shape, geometry, oh, ow, y.real); break;
    case value_kind::integer: detail::max_pool_nhwc(x.integer, x.shape, geometry, oh, ow, y.integer); break;
    case value_kind::accumulator:
      detail::max_pool_nhwc(x.accumulator, x.shape, geometry, oh, ow, y.accumulator);
      break;
    case value_kind::bits: break;
  }
  values[output] = std::move(y);
}

XQ_DECL std::string max_pool_op::describe() const { return "max_pool2d " + detail::window_string(geometry); }

XQ_DECL void integer_average_pool_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& x = values.at(inputs.at(0));
  if (x.shape.size() != 4 || x.kind != value_kind::integer)
    throw argument_error(path + " (integer_average_pool2d)", "a rank-4 integer tensor",
                         std::string("a ") + to_string(x.kind) + " tensor of rank " + std::to_string(x.shape.size()));
  const std::size_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
  const std::size_t oh = geometry.output_extent(h, 0), ow = geometry.output_extent(w, 1);
  engine_tensor y;  // the input's grid
  y.kind = value_kind::integer;
  y.scale = x.scale;
  y.zero_point = x.zero_point;
  y.qmin = x.qmin;
  y.qmax = x.qmax;
  y.shape = {n, oh, ow, c};
  y.integer.resize(y.elements());
  std::vector<std::int64_t> sum(c);
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j) {
        std::fill(sum.begin(), sum.end(), 0);
        std::int64_t count = 0;
        detail::for_each_window_pixel(geometry, h, w, c, b, i, j, [&](std::size_t at) {
          const std::int16_t* p = x.integer.data() + at;
          for (std::size_t q = 0; q < c; ++q) sum[q] += p[q];
          ++count;
        });
        std::int16_t* o = y.integer.data() + ((b * oh + i) * ow + j) * c;
        for (std::size_t q = 0; q < c; ++q) {
          // TFLite: (sum ± count / 2) / count, truncating: half away from zero.
          const std::int64_t s = sum[q];
          o[q] = count ? std::int16_t((s >= 0 ? s + count / 2 : s - count / 2) / count) : std::int16_t(0);
        }
      }
  values[output] = std::move(y);
}

XQ_DECL std::string integer_average_pool_op::describe() const {
  return "integer_average_pool2d " + detail::window_string(geometry);
}

XQ_DECL void relu_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  engine_tensor y = values.at(inputs.at(0));
  switch (y.kind) {
    case value_kind::real:
      for (float& v : y.real) v = v > 0.0f ? v : 0.0f;
      break;
    case value_kind::integer:
      for (std::int16_t& v : y.integer) v = std::max<std::int16_t>(v, 0);
      break;
    case value_kind::accumulator:
      for (std::int32_t& v : y.accumulator) v = std::max<std::int32_t>(v, 0);
      break;
    case value_kind::bits:
      throw argument_error(path + " (relu)", "a real, integer or accumulator tensor", "bits");
  }
  values[output] = std::move(y);
}

XQ_DECL std::string relu_op::describe() const { return "relu"; }

XQ_DECL void reshape_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  engine_tensor y = values.at(inputs.at(0));
  std::size_t per_sample = 1;
  for (std::size_t d : target) per_sample *= d;
  const std::size_t n = y.shape.empty() ? 0 : y.shape[0];
  if (y.kind == value_kind::bits || per_sample * n != y.elements())
    throw argument_error(path + " (reshape)", xq::detail::concat(per_sample, " elements per sample, not bits"),
                         xq::detail::concat(y.elements() / std::max<std::size_t>(n, 1), " per sample of a ",
                                        to_string(y.kind), " tensor"));
  y.shape = {n};
  y.shape.insert(y.shape.end(), target.begin(), target.end());
  values[output] = std::move(y);
}

XQ_DECL std::string reshape_op::describe() const {
  std::ostringstream s;
  s << "reshape to (N";
  for (std::size_t d : target) s << ", " << d;
  s << ")";
  return s.str();
}

XQ_DECL void batch_norm_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = values.at(inputs.at(0));
  if (x.kind != value_kind::real && x.kind != value_kind::accumulator)
    throw argument_error(path + " (batch_norm)", "a real or accumulator tensor", to_string(x.kind));
  engine_tensor y;
  y.shape = x.shape;
  const std::size_t c = mean.size(), n = x.elements();
  y.real.resize(n);
  if (!o.reference_kernels) {
    if (x.kind == value_kind::real)
      batch_norm_f32(x.real.data(), n, mean.data(), scale.data(), offset.data(), c, y.real.data());
    else
      batch_norm_f32(x.accumulator.data(), n, mean.data(), scale.data(), offset.data(), c, y.real.data());
    values[output] = std::move(y);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x.kind == value_kind::real ? x.real[i] : float(x.accumulator[i]);
    y.real[i] = (v - mean[i % c]) * scale[i % c] + offset[i % c];
  }
  values[output] = std::move(y);
}

XQ_DECL std::string batch_norm_op::describe() const {
  return xq::detail::concat("batch_norm (", mean.size(), " channels, float)");
}

// --- binary --------------------------------------------------------------------------

XQ_DECL void sign_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = values.at(inputs.at(0));
  engine_tensor y;
  y.kind = value_kind::bits;
  y.shape = x.shape;
  const std::size_t c = y.channels(), wpp = y.words_per_pixel(), pixels = c ? x.elements() / c : 0;
  y.bits.assign(pixels * wpp, 0);
  if (!o.reference_kernels && x.kind == value_kind::real) {
    sign_bits(x.real.data(), pixels, c, y.bits.data());
    values[output] = std::move(y);
    return;
  }
  for (std::size_t p = 0; p < pixels; ++p)
    for (std::size_t k = 0; k < c; ++k) {
      const std::size_t i = p * c + k;
      const float v = x.kind == value_kind::real         ? x.real[i]
                      : x.kind == value_kind::accumulator ? float(x.accumulator[i])
                                                          : float(x.integer[i]);
      // -1 only for a negative normal number: TF reads denormals as 0, and sign(0) = +1.
      if (v <= -FLT_MIN) y.bits[p * wpp + k / 64] |= std::uint64_t(1) << (k % 64);
    }
  values[output] = std::move(y);
}

XQ_DECL std::string sign_op::describe() const { return "sign (Larq: x >= 0 -> +1), bit-packed"; }

XQ_DECL void binary_linear_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = detail::input_of(values, *this, value_kind::bits);
  const std::size_t wpp = x.words_per_pixel();
  engine_tensor y;
  y.kind = value_kind::accumulator;
  std::vector<std::uint64_t> cols;
  std::size_t rows = 0;
  const std::uint64_t* a = nullptr;
  std::int32_t k = 0;
  if (!dense && !o.reference_kernels) {
    const std::size_t n = x.shape[0], h = x.shape[1], w = x.shape[2];
    y.shape = {n, geometry.output_extent(h, 0), geometry.output_extent(w, 1), out_channels};
    y.accumulator.resize(y.elements());
    binary_conv2d_nhwc(x.bits.data(), n, h, w, wpp, geometry, weights.data(), out_channels,
                       std::int32_t(geometry.window[0] * geometry.window[1] * in_channels), y.accumulator.data());
    values[output] = std::move(y);
    return;
  }
  if (dense) {
    rows = x.shape[0];
    a = x.bits.data();
    k = std::int32_t(in_channels);
    y.shape = {rows, out_channels};
  } else {
    const std::size_t n = x.shape[0], h = x.shape[1], w = x.shape[2];
    const std::size_t oh = geometry.output_extent(h, 0), ow = geometry.output_extent(w, 1);
    const std::size_t kh = geometry.window[0], kw = geometry.window[1];
    rows = n * oh * ow;
    cols.assign(rows * words_per_row, 0);  // padding: zero bits, i.e. +1 (pad_values = 1)
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j) {
          std::uint64_t* row = cols.data() + ((b * oh + i) * ow + j) * words_per_row;
          for (std::size_t u = 0; u < kh; ++u) {
            const long yy = long(i * geometry.strides[0] + u * geometry.dilation[0]) - long(geometry.pads[0]);
            for (std::size_t v = 0; v < kw; ++v) {
              const long xx = long(j * geometry.strides[1] + v * geometry.dilation[1]) - long(geometry.pads[1]);
              if (yy < 0 || yy >= long(h) || xx < 0 || xx >= long(w)) continue;
              const std::uint64_t* src = x.bits.data() + ((b * h + std::size_t(yy)) * w + std::size_t(xx)) * wpp;
              std::copy(src, src + wpp, row + (u * kw + v) * wpp);
            }
          }
        }
    a = cols.data();
    k = std::int32_t(kh * kw * in_channels);
    y.shape = {n, oh, ow, out_channels};
  }
  y.accumulator.resize(rows * out_channels);
  if (o.reference_kernels)
    binary_gemm_reference(rows, out_channels, words_per_row, k, a, weights.data(), y.accumulator.data());
  else
    binary_gemm(rows, out_channels, words_per_row, k, a, weights.data(), y.accumulator.data());
  values[output] = std::move(y);
}

XQ_DECL std::string binary_linear_op::describe() const {
  std::ostringstream s;
  s << kind() << " " << in_channels << "->" << out_channels;
  if (!dense) s << " " << detail::window_string(geometry) << " (+1 padding)";
  s << ", XNOR-popcount into int32";
  return s.str();
}

// --- float layers --------------------------------------------------------------------

XQ_DECL bool real_linear_op::unit_kernel() const noexcept {
  if (dense || depthwise || kernel.dimension() != 4) return false;
  for (float v : kernel)
    if (v != 1.0f && v != -1.0f && v != 0.0f) return false;
  return true;
}

XQ_DECL void real_linear_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = detail::input_of(values, *this, value_kind::real);
  if (!o.reference_kernels && unit_kernel() && x.shape.size() == 4 && x.shape[3] == kernel.shape()[2]) {
    // A binarized stem: summed directly, the bits of the im2col + GEMM path below.
    conv2d_geometry cg;
    cg.strides = strides;
    cg.dilation = dilation;
    cg.padding = padding ? xq::padding::same : xq::padding::valid;
    const window2d w = resolve_window(path, x.shape, kernel.shape()[0], kernel.shape()[1], cg);  // checks the size
    const window_axis rows = resolve_axis(w.in_h, w.k_h, w.stride_h, w.dilation_h, cg.padding);
    const window_axis cols = resolve_axis(w.in_w, w.k_w, w.stride_w, w.dilation_w, cg.padding);
    window_geometry g;
    g.window = {w.k_h, w.k_w};
    g.strides = strides;
    g.dilation = dilation;
    g.pads = {rows.pad_before, cols.pad_before, rows.pad_after, cols.pad_after};
    const std::size_t f = kernel.shape()[3];
    engine_tensor out;
    const float* b = has_bias ? bias.data() : nullptr;
    if (pooled) {
      out.shape = {w.batch, pool.output_extent(w.out_h, 0), pool.output_extent(w.out_w, 1), f};
      out.real.resize(out.elements());
      unit_kernel_conv2d_max_pool_f32(x.real.data(), w.batch, w.in_h, w.in_w, w.channels, g, kernel.data(), f, b, pool,
                                      out.real.data());
    } else {
      out.shape = {w.batch, w.out_h, w.out_w, f};
      out.real.resize(out.elements());
      unit_kernel_conv2d_f32(x.real.data(), w.batch, w.in_h, w.in_w, w.channels, g, kernel.data(), f, b,
                             out.real.data());
    }
    values[output] = std::move(out);
    return;
  }
  tensor in = tensor::from_shape(x.shape);
  std::copy(x.real.begin(), x.real.end(), in.data());
  const xq::no_grad scope;
  const var xv(std::move(in)), kv(kernel), bv = has_bias ? var(bias) : var();
  const var* b = has_bias ? &bv : nullptr;
  var y;
  if (dense && transposed) {
    y = ops::matmul_transposed(xv, kv, b, path);
  } else if (dense) {
    y = ops::matmul_bias(xv, kv, b, path);
  } else {
    conv2d_geometry g;
    g.strides = strides;
    g.dilation = dilation;
    g.padding = padding ? xq::padding::same : xq::padding::valid;
    y = depthwise ? ops::depthwise_conv2d(xv, kv, b, g, path) : ops::conv2d(xv, kv, b, g, path);
  }
  engine_tensor out;
  out.shape.assign(y.value().shape().begin(), y.value().shape().end());
  out.real.assign(y.value().begin(), y.value().end());
  if (pooled && out.shape.size() == 4) {  // the fused max pool, as max_pool_op computes it
    const std::size_t oh = pool.output_extent(out.shape[1], 0), ow = pool.output_extent(out.shape[2], 1);
    engine_tensor p;
    p.shape = {out.shape[0], oh, ow, out.shape[3]};
    if (o.reference_kernels) {
      detail::max_pool_nhwc(out.real, out.shape, pool, oh, ow, p.real);
    } else {
      p.real.resize(p.elements());
      max_pool_nhwc_f32(out.real.data(), out.shape[0], out.shape[1], out.shape[2], out.shape[3], pool, p.real.data());
    }
    out = std::move(p);
  }
  values[output] = std::move(out);
}

XQ_DECL std::string real_linear_op::describe() const {
  std::ostringstream s;
  s << kind() << " kernel " << xq::detail::shape_string(kernel.shape()) << (has_bias ? " + bias" : "") << " (float32)";
  if (pooled) s << ", then max_pool2d " << detail::window_string(pool);
  return s.str();
}

// --- float functions, concatenation, clamp, gather ------------------------------------

namespace detail {

inline tensor real_tensor_of(const engine_tensor& x, const lowered_op& op) {
  if (x.kind != value_kind::real)
    throw argument_error(op.path + " (" + op.kind() + ")", "real inputs", std::string("a ") + to_string(x.kind) + " one");
  tensor t = tensor::from_shape(x.shape);
  std::copy(x.real.begin(), x.real.end(), t.data());
  return t;
}

inline engine_tensor real_engine_tensor(const tensor& t) {
  engine_tensor out;
  out.shape.assign(t.shape().begin(), t.shape().end());
  out.real.assign(t.begin(), t.end());
  return out;
}

constexpr const char* real_functions[] = {"average_pool2d", "global_average_pool2d", "relu6", "leaky_relu", "sigmoid",
                                          "tanh", "swish", "softmax", "add", "multiply"};

}  // namespace detail

XQ_DECL bool real_function_op::known(const std::string& f) noexcept {
  for (const char* k : detail::real_functions)
    if (f == k) return true;
  return false;
}

XQ_DECL const char* real_function_op::kind() const noexcept {
  for (const char* k : detail::real_functions)
    if (function == k) return k;
  return "real_function";
}

XQ_DECL void real_function_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const xq::no_grad scope;
  const graph_trace swallowed;  // a parity pass traces the model: the engine's calls are not part of it
  std::vector<var> in;
  for (std::size_t k : inputs) in.emplace_back(detail::real_tensor_of(values.at(k), *this));
  if (in.empty()) throw argument_error(path + " (" + kind() + ")", "at least one input", "none");
  var y;
  const var& x = in[0];
  if (function == "average_pool2d")
    y = ops::average_pool2d(x, pool, strides, padding ? xq::padding::same : xq::padding::valid, path);
  else if (function == "global_average_pool2d") y = ops::global_average_pool2d(x, keepdims, path);
  else if (function == "relu6") y = ops::relu6(x);
  else if (function == "leaky_relu") y = ops::leaky_relu(x, alpha);
  else if (function == "sigmoid") y = ops::sigmoid(x);
  else if (function == "tanh") y = ops::tanh(x);
  else if (function == "swish") y = ops::swish(x);
  else if (function == "softmax") y = ops::softmax(x, path);
  else if (function == "add") y = ops::add(in, path);
  else if (function == "multiply") y = ops::multiply(in, path);
  else throw argument_error(path, "a known float function", "\"" + function + "\"");
  values[output] = detail::real_engine_tensor(y.value());
}

XQ_DECL std::string real_function_op::describe() const {
  std::ostringstream s;
  s << function;
  if (function == "average_pool2d")
    s << " " << pool[0] << "x" << pool[1] << " stride " << strides[0] << "x" << strides[1]
      << (padding ? " same" : " valid");
  if (function == "global_average_pool2d" && keepdims) s << " keepdims";
  if (function == "leaky_relu") s << " alpha " << alpha;
  s << " (float32, xquant's own function)";
  return s.str();
}

XQ_DECL void concatenate_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const std::string where = path + " (concatenate)";
  if (inputs.empty()) throw argument_error(where, "at least one input", "none");
  const engine_tensor& first = values.at(inputs[0]);
  if (first.kind != value_kind::real && first.kind != value_kind::integer)
    throw argument_error(where, "real or integer inputs", to_string(first.kind));
  if (axis >= first.shape.size())
    throw argument_error(where, xq::detail::concat("inputs of rank above ", axis), xq::detail::concat(first.shape.size()));
  std::size_t outer = 1, inner = 1, along = 0;
  for (std::size_t d = 0; d < axis; ++d) outer *= first.shape[d];
  for (std::size_t d = axis + 1; d < first.shape.size(); ++d) inner *= first.shape[d];
  for (std::size_t k : inputs) {
    const engine_tensor& t = values.at(k);
    bool ok = t.kind == first.kind && t.shape.size() == first.shape.size();
    for (std::size_t d = 0; ok && d < t.shape.size(); ++d) ok = d == axis || t.shape[d] == first.shape[d];
    if (ok && t.kind == value_kind::integer)
      ok = t.scale == first.scale && t.zero_point == first.zero_point && t.qmin == first.qmin && t.qmax == first.qmax;
    if (!ok)
      throw argument_error(where, "inputs of one kind (integers on one grid) and matching shapes",
                           std::string("a ") + to_string(t.kind) + " input of another shape or grid");
    along += t.shape[axis];
  }
  engine_tensor y = first;
  y.shape[axis] = along;
  y.real.clear();
  y.integer.clear();
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t k : inputs) {
      const engine_tensor& t = values.at(k);
      const std::size_t width = t.shape[axis] * inner;
      if (t.kind == value_kind::real)
        y.real.insert(y.real.end(), t.real.begin() + std::ptrdiff_t(o * width), t.real.begin() + std::ptrdiff_t((o + 1) * width));
      else
        y.integer.insert(y.integer.end(), t.integer.begin() + std::ptrdiff_t(o * width),
                         t.integer.begin() + std::ptrdiff_t((o + 1) * width));
    }
  values[output] = std::move(y);
}

XQ_DECL std::string concatenate_op::describe() const { return xq::detail::concat("concatenate along axis ", axis); }

// --- integer merges ----------------------------------------------------------------

namespace detail {

/// Input `k` of `op`: an integer tensor on a grid of scale `scale`, shaped as `like` (if given).
inline const engine_tensor& integer_input(const std::vector<engine_tensor>& values, const lowered_op& op, std::size_t k,
                                          float scale, const engine_tensor* like) {
  const engine_tensor& t = values.at(op.inputs.at(k));
  const std::string where = op.path + " (" + op.kind() + ")";
  if (t.kind != value_kind::integer)
    throw argument_error(where, xq::detail::concat("an integer input ", k), std::string("a ") + to_string(t.kind) + " one");
  if (t.scale != scale)
    throw argument_error(where, xq::detail::concat("input ", k, " on a grid of scale ", scale),
                         xq::detail::concat("scale ", t.scale));
  if (like && t.shape != like->shape)
    throw argument_error(where, "inputs of one shape " + xq::detail::shape_string(like->shape),
                         xq::detail::concat("input ", k, " of shape ", xq::detail::shape_string(t.shape)));
  return t;
}

/// An integer tensor on grid `g`, shaped as `like`, with room for its elements.
inline engine_tensor integer_output(const engine_tensor& like, const integer_grid& g) {
  engine_tensor y;
  y.kind = value_kind::integer;
  y.shape = like.shape;
  y.scale = g.scale;
  y.zero_point = g.zero_point;
  y.qmin = g.qmin;
  y.qmax = g.qmax;
  y.integer.resize(like.integer.size());
  return y;
}

inline std::int32_t saturate_int32(std::int64_t v) noexcept {
  return static_cast<std::int32_t>(std::max<std::int64_t>(std::numeric_limits<std::int32_t>::min(),
                                                          std::min<std::int64_t>(std::numeric_limits<std::int32_t>::max(), v)));
}

/// q + zero_point saturated to the grid, centred again.
inline std::int16_t saturate_centred(std::int64_t q, const integer_grid& g) noexcept {
  return static_cast<std::int16_t>(std::max<std::int64_t>(g.qmin, std::min<std::int64_t>(g.qmax, q + g.zero_point)) -
                                   g.zero_point);
}

inline std::string grid_string(const integer_grid& g) {
  return xq::detail::concat("scale ", g.scale, " zero point ", g.zero_point, " [", g.qmin, ", ", g.qmax, "]");
}

}  // namespace detail

XQ_DECL void integer_add_op::prepare() {
  if (input_scales.empty()) throw argument_error(path + " (integer_add)", "at least one input scale", "none");
  float largest = 0.0f;
  for (float s : input_scales) {
    if (!(s > 0.0f) || !std::isfinite(s))
      throw argument_error(path + " (integer_add)", "finite positive input scales", xq::detail::concat(s));
    largest = std::max(largest, s);
  }
  if (!(out.scale > 0.0f) || !std::isfinite(out.scale))
    throw argument_error(path + " (integer_add)", "a finite positive output scale", xq::detail::concat(out.scale));
  if (left_shift < 0 || left_shift > 20)
    throw argument_error(path + " (integer_add)", "a left shift from 0 to 20 bits", xq::detail::concat(left_shift));
  input_multipliers_.clear();
  if (scheme == requantization::float_multiplier) return;
  // TFLite's Prepare, in double from the float scales.
  const double twice_max = 2.0 * double(largest);
  for (float s : input_scales) input_multipliers_.emplace_back(scheme, std::vector<double>{double(s) / twice_max}, path);
  output_multiplier_ =
      requantizer(scheme, {twice_max / (double(std::int64_t(1) << left_shift) * double(out.scale))}, path);
}

XQ_DECL void integer_add_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  if (inputs.size() != input_scales.size() ||
      (scheme != requantization::float_multiplier && input_multipliers_.size() != inputs.size()))
    throw argument_error(path + " (integer_add)", xq::detail::concat(input_scales.size(), " prepared inputs"),
                         xq::detail::concat(inputs.size(), " inputs and ", input_multipliers_.size(), " multipliers"));
  const engine_tensor& first = detail::integer_input(values, *this, 0, input_scales[0], nullptr);
  std::vector<const std::int16_t*> in;
  for (std::size_t k = 0; k < inputs.size(); ++k)
    in.push_back(detail::integer_input(values, *this, k, input_scales[k], &first).integer.data());
  engine_tensor y = detail::integer_output(first, out);
  const std::size_t n = y.integer.size();
  if (scheme == requantization::float_multiplier) {
    for (std::size_t e = 0; e < n; ++e) {
      float sum = 0.0f;
      for (std::size_t k = 0; k < in.size(); ++k) {
        const float v = input_scales[k] * static_cast<float>(in[k][e]);
        sum = k ? sum + v : v;
      }
      y.integer[e] = detail::saturate_centred(static_cast<std::int64_t>(std::nearbyint(sum / out.scale)), out);
    }
  } else {
    for (std::size_t e = 0; e < n; ++e) {
      // int32 throughout, as TFLite; the lowering picks left_shift so nothing saturates.
      std::int64_t sum = 0;
      for (std::size_t k = 0; k < in.size(); ++k)
        sum += input_multipliers_[k](detail::saturate_int32(std::int64_t(in[k][e]) << left_shift), 0);
      y.integer[e] = detail::saturate_centred(output_multiplier_(detail::saturate_int32(sum), 0), out);
    }
  }
  values[output] = std::move(y);
}

XQ_DECL std::string integer_add_op::describe() const {
  std::ostringstream s;
  s << "integer add of " << inputs.size() << " inputs (scales";
  for (float v : input_scales) s << " " << v;
  s << ") onto " << detail::grid_string(out) << ", " << to_string(scheme);
  if (scheme != requantization::float_multiplier) s << ", left shift " << left_shift;
  return s.str();
}

XQ_DECL void integer_multiply_op::prepare() {
  if (input_scales.size() != 2)
    throw argument_error(path + " (integer_multiply)", "two input scales", xq::detail::concat(input_scales.size()));
  requant_ = requantizer(scheme, {double(input_scales[0]) * double(input_scales[1]) / double(out.scale)},
                         path + " (integer_multiply)");
}

XQ_DECL void integer_multiply_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  if (inputs.size() != 2 || input_scales.size() != 2 || requant_.channels() != 1)
    throw argument_error(path + " (integer_multiply)", "two inputs, two scales and a prepared multiplier",
                         xq::detail::concat(inputs.size(), " inputs, ", input_scales.size(), " scales, ",
                                            requant_.channels(), " multipliers"));
  const engine_tensor& a = detail::integer_input(values, *this, 0, input_scales[0], nullptr);
  const engine_tensor& b = detail::integer_input(values, *this, 1, input_scales[1], &a);
  engine_tensor y = detail::integer_output(a, out);
  for (std::size_t e = 0; e < y.integer.size(); ++e)
    y.integer[e] = detail::saturate_centred(requant_(std::int32_t(a.integer[e]) * std::int32_t(b.integer[e]), 0), out);
  values[output] = std::move(y);
}

XQ_DECL std::string integer_multiply_op::describe() const {
  return xq::detail::concat("integer multiply (scales ", input_scales.at(0), " ", input_scales.at(1), ") onto ",
                            detail::grid_string(out), ", ", to_string(scheme));
}

XQ_DECL void rescale_op::prepare() {
  requant_ = requantizer(scheme, {double(in_scale) / double(out.scale)}, path + " (rescale)");
}

XQ_DECL void rescale_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  if (requant_.channels() != 1)
    throw argument_error(path + " (rescale)", "a prepared multiplier", xq::detail::concat(requant_.channels()));
  const engine_tensor& x = detail::integer_input(values, *this, 0, in_scale, nullptr);
  engine_tensor y = detail::integer_output(x, out);
  for (std::size_t e = 0; e < y.integer.size(); ++e) y.integer[e] = detail::saturate_centred(requant_(x.integer[e], 0), out);
  values[output] = std::move(y);
}

XQ_DECL std::string rescale_op::describe() const {
  return xq::detail::concat("rescale from scale ", in_scale, " onto ", detail::grid_string(out), ", ",
                            to_string(scheme));
}

XQ_DECL void clamp_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  engine_tensor y = detail::input_of(values, *this, value_kind::integer);
  for (std::int16_t& v : y.integer) v = static_cast<std::int16_t>(std::max<std::int32_t>(lo, std::min<std::int32_t>(hi, v)));
  values[output] = std::move(y);
}

XQ_DECL std::string clamp_op::describe() const {
  return xq::detail::concat("clamp to [", lo, ", ", hi, "] (centred integers)");
}

XQ_DECL void gather_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& ids = detail::input_of(values, *this, value_kind::real);
  engine_tensor y;
  y.shape = ids.shape;
  y.shape.push_back(dim);
  y.real.resize(ids.real.size() * dim);
  for (std::size_t i = 0; i < ids.real.size(); ++i) {
    const float id = ids.real[i];
    if (!(id >= 0.0f && id < static_cast<float>(rows) && std::floor(id) == id))
      throw argument_error(path + " (gather)", xq::detail::concat("integer ids in [0, ", rows, ")"),
                           xq::detail::concat("id ", id, " at flat position ", i));
    const std::size_t r = static_cast<std::size_t>(id);
    float* out = y.real.data() + i * dim;
    if (quantized)
      for (std::size_t d = 0; d < dim; ++d) out[d] = float(integers[r * dim + d]) * row_scale[r];
    else
      std::copy(table.begin() + std::ptrdiff_t(r * dim), table.begin() + std::ptrdiff_t((r + 1) * dim), out);
  }
  values[output] = std::move(y);
}

XQ_DECL std::string gather_op::describe() const {
  return xq::detail::concat("gather rows of a ", rows, "x", dim, quantized ? " int8 table (a scale per row)" : " float table");
}

// --- the model -----------------------------------------------------------------------

XQ_DECL std::vector<engine_tensor> integer_model::run_all(const tensor& x, const run_options& o) const {
  if (x.dimension() != input_shape.size() + 1 ||
      !std::equal(input_shape.begin(), input_shape.end(), x.shape().begin() + 1))
    throw argument_error("integer_model::run",
                         "an input of shape (N" + [&] {
                           std::string s;
                           for (std::size_t d : input_shape) s += ", " + std::to_string(d);
                           return s;
                         }() + ")",
                         xq::detail::shape_string(x.shape()));
  std::vector<engine_tensor> values(value_count);
  engine_tensor& in = values.at(input_value);
  in.shape.assign(x.shape().begin(), x.shape().end());
  in.real.assign(x.begin(), x.end());
  for (const auto& op : ops) op->run(values, o);
  return values;
}

XQ_DECL tensor integer_model::run(const tensor& x, const run_options& o) const {
  const std::size_t n = x.dimension() ? x.shape()[0] : 0;
  const std::size_t slice = o.batch_slice ? o.batch_slice : 8;
  bool invariant = true;
  for (const auto& op : ops) invariant = invariant && op->batch_invariant();
  if (n <= slice || !invariant || o.reference_kernels) return run_all(x, o).at(output_value).to_real();
  const std::size_t per_sample = x.size() / n, slices = (n + slice - 1) / slice;
  std::vector<engine_tensor> outputs(slices);
  std::vector<std::exception_ptr> errors(slices);
  kernels::parallel_items(kernels::blas_has_thread_pool() ? 1 : kernels::max_threads(), slices, [&](std::size_t s0, std::size_t s1) {
    for (std::size_t s = s0; s < s1; ++s) {
      try {
        const std::size_t b0 = s * slice, b1 = std::min(n, b0 + slice);
        std::vector<std::size_t> shape(x.shape().begin(), x.shape().end());
        shape[0] = b1 - b0;
        tensor part = tensor::from_shape(shape);
        std::copy(x.data() + b0 * per_sample, x.data() + b1 * per_sample, part.data());
        outputs[s] = std::move(run_all(part, o).at(output_value));
      } catch (...) {
        errors[s] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<std::size_t> shape = outputs[0].shape;
  shape[0] = n;
  tensor y = tensor::from_shape(shape);
  float* out = y.data();
  for (const engine_tensor& part : outputs) {
    const tensor r = part.to_real();
    out = std::copy(r.begin(), r.end(), out);
  }
  return y;
}

XQ_DECL std::string integer_model::summary() const {
  std::ostringstream s;
  s << "integer model: " << ops.size() << " ops, requantization " << to_string(scheme) << ", "
    << weight_bytes() << " bytes of weights\n";
  for (const auto& op : ops) {
    s << "  %" << op->output << " = " << op->kind() << "(";
    for (std::size_t i = 0; i < op->inputs.size(); ++i) s << (i ? ", %" : "%") << op->inputs[i];
    s << ")  " << op->path << ": " << op->describe() << "\n";
  }
  return s.str();
}

XQ_DECL std::size_t integer_model::weight_bytes() const {
  std::size_t bytes = 0;
  for (const auto& op : ops) {
    if (auto* l = dynamic_cast<const integer_linear_op*>(op.get()))
      bytes += l->weights.size() + l->bias.size() * 4;  // int8 on disk and in a runtime
    else if (auto* b = dynamic_cast<const binary_linear_op*>(op.get()))
      bytes += b->weights.size() * 8;
    else if (auto* r = dynamic_cast<const real_linear_op*>(op.get()))
      bytes += (r->kernel.size() + (r->has_bias ? r->bias.size() : 0)) * 4;
    else if (auto* g = dynamic_cast<const gather_op*>(op.get()))
      bytes += g->quantized ? g->integers.size() + g->row_scale.size() * 4 : g->table.size() * 4;
  }
  return bytes;
}

}  // namespace xq::deploy
