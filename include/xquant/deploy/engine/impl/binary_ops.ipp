#pragma once
/// \file binary_ops.ipp
/// The sign and binary linear ops (deploy/engine/binary_ops.hpp).

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../binary_gemm.hpp"
#include "../binary_ops.hpp"
#include "../engine_kernels.hpp"

namespace xq::deploy {

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
  const engine_tensor& x = values.at(inputs.at(0));
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
  if (!dense) s << " " << deploy::describe(geometry) << " (+1 padding)";
  s << ", XNOR-popcount into int32";
  return s.str();
}

XQ_DECL engine_tensor sign_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 1, 1);
  const engine_tensor& x = *in[0];
  if (x.kind == value_kind::bits || x.shape.empty())
    refuse("a real, integer or accumulator tensor of rank 1 or more", detail::tensor_string(x));
  work = detail::element_count(x.shape);
  return detail::value_of(value_kind::bits, x.shape);
}

XQ_DECL void sign_op::encode(op_writer&) const {}

XQ_DECL std::unique_ptr<lowered_op> sign_op::decode(const std::string&, const op_reader&) { return std::make_unique<sign_op>(); }

XQ_DECL engine_tensor binary_linear_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  const engine_tensor& x = expect_one(in, value_kind::bits, dense ? 2 : 4);
  if (!in_channels || !out_channels || in_channels > (std::size_t(1) << 24) || out_channels > (std::size_t(1) << 24))
    refuse("channel counts from 1 to 2^24", xq::detail::concat(in_channels, " in, ", out_channels, " out"));
  if (!dense) check_window(geometry, where());
  const std::uint64_t wpp = (in_channels + 63) / 64, taps = dense ? 1 : std::uint64_t(geometry.window[0]) * geometry.window[1];
  if (words_per_row != taps * wpp)
    refuse(xq::detail::concat(taps * wpp, " words per row for ", in_channels, " input channels"), xq::detail::concat(words_per_row));
  if (taps * in_channels >= (std::uint64_t(1) << 30))
    refuse("a window of fewer than 2^30 products (an int32 sum)", xq::detail::concat(taps * in_channels));
  if (weights.size() != std::uint64_t(out_channels) * words_per_row)
    refuse(xq::detail::concat(std::uint64_t(out_channels) * words_per_row, " weight words"), xq::detail::concat(weights.size()));
  if (x.shape.back() != in_channels)
    refuse(xq::detail::concat("bits of ", in_channels, " channels on the last axis"), detail::tensor_string(x));
  std::vector<std::size_t> shape;
  if (dense) {
    shape = {x.shape[0], out_channels};
  } else {
    const std::size_t oh = geometry.output_extent(x.shape[1], 0), ow = geometry.output_extent(x.shape[2], 1);
    if (!oh || !ow) refuse("an input at least as large as the window", detail::tensor_string(x));
    shape = {x.shape[0], oh, ow, out_channels};
  }
  work = detail::saturating_product(detail::element_count(shape), words_per_row);
  return detail::value_of(value_kind::accumulator, shape);
}

XQ_DECL void binary_linear_op::encode(op_writer& w) const {
  w.window("window", geometry);
  w.size("in_channels", in_channels);
  w.size("out_channels", out_channels);
  w.size("words_per_row", words_per_row);
  w.numbers("weights", weights);
}

XQ_DECL std::unique_ptr<lowered_op> binary_linear_op::decode(const std::string& kind, const op_reader& r) {
  auto op = std::make_unique<binary_linear_op>();
  op->dense = kind == "binary_dense";
  op->geometry = r.window("window");
  const std::size_t limit = std::size_t(1) << 24;
  op->in_channels = r.size("in_channels", limit);
  op->out_channels = r.size("out_channels", limit);
  op->words_per_row = r.size("words_per_row", std::size_t(1) << 40);
  op->weights = r.numbers<std::uint64_t>("weights");
  return op;
}

}  // namespace xq::deploy
