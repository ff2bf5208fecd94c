#pragma once
/// \file integer_linear_op.ipp
/// The integer linear op (deploy/engine/integer_linear_op.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../engine_kernels.hpp"
#include "../integer_linear_op.hpp"

namespace xq::deploy {

namespace detail {

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

XQ_DECL const char* integer_linear_op::kind() const noexcept {
  switch (shape_form) {
    case form::conv2d: return "conv2d";
    case form::depthwise_conv2d: return "depthwise_conv2d";
    case form::dense: break;
  }
  return "dense";
}

XQ_DECL void integer_linear_op::prepare() {
  largest_weight_ = 0;
  for (std::int16_t w : weights) largest_weight_ = std::max<std::int64_t>(largest_weight_, w < 0 ? -std::int64_t(w) : w);
  packed = packed_s16_matrix();
  if (shape_form == form::depthwise_conv2d || !out_channels || !in_channels) return;  // direct loops
  // Packed only where the weights are what the shape says (else the rule refuses the op).
  const std::uint64_t k = shape_form == form::dense
                              ? in_channels
                              : detail::saturating_product(detail::saturating_product(geometry.window[0], geometry.window[1]),
                                                           in_channels);
  if (detail::saturating_product(k, out_channels) != weights.size()) return;
  packed = shape_form == form::conv2d ? pack_conv2d_weights_s16(weights.data(), geometry.window[0], geometry.window[1],
                                                                in_channels, out_channels)
                                      : packed_s16_matrix(weights.data(), std::size_t(k), out_channels);
}

XQ_DECL void integer_linear_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = values.at(inputs.at(0));
  const std::size_t f = out_channels;
  if (!o.reference_kernels && shape_form != form::depthwise_conv2d) {
    linear_epilogue e;
    e.integer_output = integer_output;
    e.requant = integer_output && !float_bias ? &requant : nullptr;
    e.real_scale = real_scale.data();
    e.real_bias = real_bias.data();
    e.out_scale = out_scale;
    e.zero_point = out_zero_point;
    e.qmin = saturation_min();
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
    const std::int32_t lowest = saturation_min();  // out_qmin, or the fused ReLU's zero point
    if (float_bias) {
      const float inverse = 1.0f / out_scale;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t q = 0; q < f; ++q) {
          const float v = (float(acc[r * f + q]) * real_scale[q] + real_bias[q]) * inverse;
          const long z = std::lrint(std::max(-1e9f, std::min(1e9f, v))) + out_zero_point;
          y.integer[r * f + q] = static_cast<std::int16_t>(std::max<long>(lowest, std::min<long>(out_qmax, z)) - out_zero_point);
        }
    } else {
      requant.apply(acc.data(), rows, out_zero_point, lowest, out_qmax, y.integer.data());
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
  if (shape_form != form::dense) s << " " << deploy::describe(geometry);
  s << (integer_output && float_bias ? ", float bias" : bias.empty() ? ", no bias" : ", int32 bias");
  if (integer_output)
    s << ", requantized (" << (float_bias ? "float_multiplier" : to_string(requant.scheme())) << ") to scale " << out_scale << " zero point "
      << out_zero_point << " [" << out_qmin << ", " << out_qmax << "]" << (relu ? ", relu" : "");
  else
    s << ", float output";
  return s.str();
}

XQ_DECL engine_tensor integer_linear_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  const bool dense = shape_form == form::dense, depthwise = shape_form == form::depthwise_conv2d;
  const engine_tensor& x = expect_one(in, value_kind::integer, dense ? 0 : 4);
  const std::size_t f = out_channels;
  if (!in_channels || !f || !depth_multiplier || in_channels > (std::size_t(1) << 24) || f > (std::size_t(1) << 24) ||
      (depthwise && f != in_channels * depth_multiplier) || (!depthwise && depth_multiplier != 1))
    refuse("channel counts of at least 1 (depthwise: out = in * depth multiplier)",
           xq::detail::concat(in_channels, " in, ", f, " out, depth multiplier ", depth_multiplier));
  if (!dense) check_window(geometry, where());
  const std::uint64_t kh = geometry.window[0], kw = geometry.window[1];
  const std::uint64_t k = dense ? in_channels : depthwise ? kh * kw : kh * kw * in_channels;
  const std::uint64_t expected = dense ? std::uint64_t(in_channels) * f : depthwise ? kh * kw * f : k * f;
  if (weights.size() != expected)
    refuse(xq::detail::concat(expected, " weights for ", in_channels, " -> ", f, " channels"), xq::detail::concat(weights.size()));
  if (!bias.empty() && bias.size() != f) refuse(xq::detail::concat("0 or ", f, " biases"), xq::detail::concat(bias.size()));
  // conv2d: pack_conv2d_weights_s16's rows, each window row padded to a multiple of 4.
  const std::uint64_t run = kw * in_channels, packed_rows = dense ? k : kh * ((run + 3) / 4 * 4);
  if (largest_weight_ < 0 || (!depthwise && (packed.rows() != packed_rows || packed.cols() != f)))
    refuse("prepared weights (integer_linear_op::prepare)", "weights not packed for this shape");
  if (x.shape.size() < 2 || x.shape.back() != in_channels)
    refuse(xq::detail::concat("an integer tensor with ", in_channels, dense ? " features on the last axis" : " channels (NHWC)"),
           detail::tensor_string(x));
  // Every int32 sum exact: K products of the centred input and a weight, and the bias.
  const std::int64_t largest_input = std::max<std::int64_t>(std::int64_t(x.qmax) - x.zero_point, std::int64_t(x.zero_point) - x.qmin);
  std::int64_t largest_bias = 0;
  for (std::int32_t b : bias) largest_bias = std::max<std::int64_t>(largest_bias, b < 0 ? -std::int64_t(b) : b);
  const double bound = double(k) * double(largest_input) * double(largest_weight_) + double(largest_bias);
  if (!(bound < 2147483648.0))
    refuse("sums within int32 (K * max|input| * max|weight| + max|bias| < 2^31)",
           xq::detail::concat("K ", k, ", max|input| ", largest_input, ", max|weight| ", largest_weight_, ", max|bias| ", largest_bias));
  const bool scales = !integer_output || float_bias;
  if (scales && (real_scale.size() != f || real_bias.size() != f))
    refuse(xq::detail::concat(f, " output scales and biases"), xq::detail::concat(real_scale.size(), " and ", real_bias.size()));
  integer_grid out{out_scale, out_zero_point, out_qmin, out_qmax};
  if (integer_output) {
    if (!(out_scale > 0.0f) || !std::isfinite(out_scale) || out_qmin > out_qmax ||
        std::int64_t(out_qmax) - out_zero_point > 32767 || std::int64_t(out_qmin) - out_zero_point < -32768)
      refuse("an output grid of finite positive scale whose centred integers fit int16", deploy::describe(out));
    if (!float_bias && requant.channels() != f)
      refuse(xq::detail::concat(f, " requantization multipliers"), xq::detail::concat(requant.channels()));
  }
  std::vector<std::size_t> shape = x.shape;
  if (dense) {
    shape.back() = f;
  } else {
    const std::size_t oh = geometry.output_extent(x.shape[1], 0), ow = geometry.output_extent(x.shape[2], 1);
    if (!oh || !ow) refuse("an input at least as large as the window", detail::tensor_string(x));
    shape = {x.shape[0], oh, ow, f};
  }
  work = detail::saturating_product(detail::element_count(shape), k);
  return integer_output ? detail::integer_value_of(shape, out) : detail::value_of(value_kind::real, shape);
}

XQ_DECL void integer_linear_op::encode(op_writer& w) const {
  w.window("window", geometry);
  w.size("in_channels", in_channels);
  w.size("out_channels", out_channels);
  w.size("depth_multiplier", depth_multiplier);
  w.numbers("weights", weights);
  w.numbers("bias", bias);
  w.flag("integer_output", integer_output);
  w.flag("float_bias", float_bias);
  w.text("requantization", to_string(requant.scheme()));
  w.numbers("multipliers", requant.real_multipliers());
  w.number("out_scale", double(out_scale));
  w.integer("out_zero_point", out_zero_point);
  w.integer("out_qmin", out_qmin);
  w.integer("out_qmax", out_qmax);
  if (relu) w.flag("relu", true);  // absent in files from before the fusion, and where there is none
  w.numbers("real_scale", real_scale);
  w.numbers("real_bias", real_bias);
}

XQ_DECL std::size_t integer_linear_op::weight_bytes() const noexcept {
  return weights.size() + bias.size() * 4;  // int8 on disk and in a runtime
}

XQ_DECL std::unique_ptr<lowered_op> integer_linear_op::decode(const std::string& kind, const op_reader& r) {
  auto op = std::make_unique<integer_linear_op>();
  op->shape_form = kind == "conv2d" ? form::conv2d : kind == "depthwise_conv2d" ? form::depthwise_conv2d : form::dense;
  op->geometry = r.window("window");
  const std::size_t limit = std::size_t(1) << 24;
  op->in_channels = r.size("in_channels", limit);
  op->out_channels = r.size("out_channels", limit);
  op->depth_multiplier = r.size("depth_multiplier", limit);
  op->weights = r.numbers<std::int16_t>("weights");
  op->bias = r.numbers<std::int32_t>("bias");
  op->integer_output = r.flag("integer_output");
  op->float_bias = r.flag("float_bias");
  const requantization scheme = requantization_from_string(r.text("requantization"));
  op->out_scale = float(r.number("out_scale"));
  op->out_zero_point = std::int32_t(r.integer("out_zero_point", -65536, 65536));
  op->out_qmin = std::int32_t(r.integer("out_qmin", -32768, 65535));
  op->out_qmax = std::int32_t(r.integer("out_qmax", -32768, 65535));
  op->relu = r.has("relu") && r.flag("relu");
  op->real_scale = r.numbers<float>("real_scale");
  op->real_bias = r.numbers<float>("real_bias");
  std::vector<double> multipliers = r.numbers<double>("multipliers");
  // Only the int32-bias epilogue uses them; an op keeps what it was given all the same.
  if (!multipliers.empty() || (op->integer_output && !op->float_bias))
    op->requant = requantizer(scheme, std::move(multipliers), r.where());
  op->prepare();
  return op;
}

}  // namespace xq::deploy
