// The binarized convolution's forward in training by XNOR-popcount (wrappers/xnor_forward.hpp):
// the sums equal the float convolution's bit for bit, it refuses anything but ±1 values,
// and a quant_conv2d with sign quantizers gives the same output and gradients as Larq's way
// written out (the quantized input padded with +1, a valid float convolution).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <xquant/layers/broadcasting.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/pad2d.hpp>
#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/wrappers/quant_conv2d.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xquant/wrappers/xnor_forward.hpp>

#include "../golden.hpp"
#include "../gradient_check.hpp"

namespace {

using shape_t = std::vector<std::size_t>;
using xq::testing::uniform;

/// ±1 values, about half of each.
xq::tensor signs(const shape_t& shape, unsigned seed) {
  xq::tensor t = uniform(shape, -1.0f, 1.0f, seed);
  for (float& v : t) v = v < 0.0f ? -1.0f : 1.0f;
  return t;
}

struct geometry_case {
  const char* name;
  shape_t x;
  std::size_t k, stride, dilation, filters;
  xq::padding padding;
};

const std::vector<geometry_case> cases = {
    {"3x3 same, 64 channels (the BNN's layer)", {2, 7, 7, 64}, 3, 1, 1, 16, xq::padding::same},
    {"3x3 same, 70 channels (two words a pixel)", {1, 5, 6, 70}, 3, 1, 1, 9, xq::padding::same},
    {"3x3 valid stride 2", {2, 9, 8, 5}, 3, 2, 1, 7, xq::padding::valid},
    {"5x5 same dilation 2", {1, 9, 10, 3}, 5, 1, 2, 4, xq::padding::same},
    {"1x1", {3, 4, 4, 130}, 1, 1, 1, 6, xq::padding::valid},
};

xq::conv2d_geometry geometry_of(const geometry_case& c) {
  xq::conv2d_geometry g;
  g.strides = {c.stride, c.stride};
  g.dilation = {c.dilation, c.dilation};
  g.padding = c.padding;
  return g;
}

/// Larq's binarized convolution written out: x padded with +1 where the window is same, then
/// a valid float convolution.
xq::var padded_float_conv(const xq::var& x, const xq::var& kernel, const geometry_case& c) {
  const xq::window2d w = xq::resolve_window("ref", x.shape(), c.k, c.k, geometry_of(c));
  const std::size_t bottom = (w.out_h - 1) * w.stride_h + (c.k - 1) * w.dilation_h + 1 - w.in_h - w.pad_top;
  const std::size_t right = (w.out_w - 1) * w.stride_w + (c.k - 1) * w.dilation_w + 1 - w.in_w - w.pad_left;
  const xq::var padded = c.padding == xq::padding::same
                             ? xq::ops::pad2d(x, w.pad_top, bottom, w.pad_left, right, 1.0f)
                             : x;
  xq::conv2d_geometry valid = geometry_of(c);
  valid.padding = xq::padding::valid;
  return xq::ops::conv2d(padded, kernel, nullptr, valid, "ref");
}

}  // namespace

TEST_CASE("XNOR-popcount sums equal the float convolution's, and only ±1 values are taken", "[xnor_forward]") {
  unsigned seed = 40;
  for (const auto& c : cases) {
    INFO(c.name);
    seed += 3;
    const xq::tensor x = signs(c.x, seed), kernel = signs({c.k, c.k, c.x[3], c.filters}, seed + 1);
    const xq::window2d w = xq::resolve_window("xnor", c.x, c.k, c.k, geometry_of(c));
    const auto sums = xq::detail::xnor_conv2d_sums(x, kernel, w);
    REQUIRE(sums.has_value());
    const xq::tensor want = padded_float_conv(xq::var(x), xq::var(kernel), c).value();
    CHECK(golden::bit_difference(*sums, want) == "");

    xq::tensor almost = x;
    almost.data()[almost.size() - 1] = 0.5f;  // the last value of the last row
    CHECK_FALSE(xq::detail::xnor_conv2d_sums(almost, kernel, w).has_value());
    xq::tensor zero_kernel = kernel;
    zero_kernel.data()[kernel.size() / 2] = 0.0f;
    CHECK_FALSE(xq::detail::xnor_conv2d_sums(x, zero_kernel, w).has_value());
    xq::tensor negative_zero = x;
    negative_zero.data()[0] = -0.0f;  // not -1: Larq's sign would make it +1, the conv reads 0
    CHECK_FALSE(xq::detail::xnor_conv2d_sums(negative_zero, kernel, w).has_value());
  }
}

TEST_CASE("pack_exact_signs: bit 1 for -1, zero bits past the row", "[xnor_forward]") {
  const std::vector<float> row = {1, -1, -1, 1, -1};
  std::vector<float> rows;
  for (int r = 0; r < 3; ++r) rows.insert(rows.end(), row.begin(), row.end());
  std::vector<std::uint64_t> bits(3, ~std::uint64_t(0));
  REQUIRE(xq::detail::pack_exact_signs(rows.data(), 3, 5, bits.data()));
  for (const std::uint64_t b : bits) CHECK(b == 0b10110u);
  std::vector<float> long_row(100, 1.0f);
  long_row[3] = long_row[64] = long_row[99] = -1.0f;
  std::vector<std::uint64_t> two(2);
  REQUIRE(xq::detail::pack_exact_signs(long_row.data(), 1, 100, two.data()));
  CHECK(two[0] == (std::uint64_t(1) << 3));
  CHECK(two[1] == ((std::uint64_t(1) << 0) | (std::uint64_t(1) << 35)));
  long_row[70] = 2.0f;
  CHECK_FALSE(xq::detail::pack_exact_signs(long_row.data(), 1, 100, two.data()));
}

TEST_CASE("a binarized quant_conv2d trains as Larq's padded float convolution, bit for bit", "[xnor_forward]") {
  unsigned seed = 700;
  for (const auto& c : cases) {
    for (const bool bias : {false, true}) {
      INFO(c.name << (bias ? ", bias" : ""));
      seed += 5;
      auto layer = xq::quant_conv2d(c.filters, c.k, xq::approx_sign(), xq::ste_sign())
                       .strides(c.stride)
                       .dilation(c.dilation)
                       .padding(c.padding)
                       .pad_values(1.0f)
                       .use_bias(bias);
      xq::build(layer, c.x);
      layer.kernel()->value = uniform(layer.kernel()->value.shape(), -1.0f, 1.0f, seed);
      if (bias) layer.bias()->value = uniform({c.filters}, -1.0f, 1.0f, seed + 1);
      const xq::tensor x_value = uniform(c.x, -1.5f, 1.5f, seed + 2);
      auto run = [&](bool reference) {
        layer.kernel()->grad = xt::zeros_like(layer.kernel()->value);
        if (bias) layer.bias()->grad = xt::zeros_like(layer.bias()->value);
        xq::var x(x_value, true);
        xq::tape t;
        xq::var y;
        if (reference) {
          const xq::var k = layer.kernel_quantizer(xq::var(layer.kernel()));
          y = padded_float_conv(layer.input_quantizer(x), k, c);
          if (bias) y = xq::ops::broadcast_add(y, xq::var(layer.bias()));
        } else {
          y = layer(x);
        }
        t.backward(y, uniform(y.shape(), -1.0f, 1.0f, seed + 3));
        return std::vector<xq::tensor>{y.value(), x.grad(), layer.kernel()->grad,
                                       bias ? layer.bias()->grad : xq::tensor(xt::zeros<float>({1}))};
      };
      const auto got = run(false), want = run(true);
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("y, dx, dkernel, dbias: " << i);
        REQUIRE(got[i].shape() == want[i].shape());
        // The sums and the bias add once each way; the gradients are the float convolution's,
        // the +1 border's kernel term summed in double (padding_value_term.hpp): equal
        // within rounding, exact for the output.
        if (i == 0) CHECK(golden::bit_difference(got[i], want[i]) == "");
        else CHECK(xt::allclose(got[i], want[i], 1e-5, 1e-5));
      }
    }
  }
}

TEST_CASE("a binarized quant_dense trains as the float product of its signs, bit for bit", "[xnor_forward]") {
  unsigned seed = 900;
  for (const std::size_t in : {std::size_t(5), std::size_t(64), std::size_t(200)})
    for (const bool bias : {false, true}) {
      INFO(in << " inputs" << (bias ? ", bias" : ""));
      seed += 7;
      auto layer = xq::quant_dense(11, xq::approx_sign(), xq::ste_sign()).use_bias(bias);
      const shape_t x_shape = {3, 2, in};  // a rank-3 input: rows are all but the last axis
      xq::build(layer, x_shape);
      layer.kernel()->value = uniform({in, 11}, -1.0f, 1.0f, seed);
      if (bias) layer.bias()->value = uniform({11}, -1.0f, 1.0f, seed + 1);
      const xq::tensor x_value = uniform(x_shape, -1.5f, 1.5f, seed + 2);
      const auto sums = xq::detail::xnor_dense_sums(signs(x_shape, seed), signs({in, 11}, seed + 1));
      REQUIRE(sums.has_value());
      CHECK(sums->shape() == shape_t{3, 2, 11});
      auto run = [&](bool reference) {
        layer.kernel()->grad = xt::zeros_like(layer.kernel()->value);
        if (bias) layer.bias()->grad = xt::zeros_like(layer.bias()->value);
        xq::var x(x_value, true);
        xq::tape t;
        xq::var y;
        if (reference) {
          const xq::var b = bias ? xq::var(layer.bias()) : xq::var();
          y = xq::ops::matmul_bias(layer.input_quantizer(x), layer.kernel_quantizer(xq::var(layer.kernel())),
                                   bias ? &b : nullptr, "ref");
        } else {
          y = layer(x);
        }
        t.backward(y, uniform(y.shape(), -1.0f, 1.0f, seed + 3));
        return std::vector<xq::tensor>{y.value(), x.grad(), layer.kernel()->grad,
                                       bias ? layer.bias()->grad : xq::tensor(xt::zeros<float>({1}))};
      };
      const auto got = run(false), want = run(true);
      // The output: the same sums (+ the bias, added once here, into the GEMM's
      // accumulator there: equal where the bias is absent, within rounding otherwise);
      // the gradients: the same GEMMs on the same operands.
      if (!bias) CHECK(golden::bit_difference(got[0], want[0]) == "");
      else CHECK(xt::allclose(got[0], want[0], 1e-6, 1e-6));
      for (std::size_t i = 1; i < got.size(); ++i) CHECK(golden::bit_difference(got[i], want[i]) == "");
    }
  xq::tensor halves = signs({2, 8}, 3);
  halves(1, 7) = 0.5f;
  CHECK_FALSE(xq::detail::xnor_dense_sums(halves, signs({8, 4}, 4)).has_value());
}
