// Convolution backends (kernels/conv_backend.hpp): oneDNN's primitives agree with the
// im2col + GEMM oracle within float rounding on every geometry conv2d accepts (forward,
// input gradient, kernel and bias gradients); the choice follows the setting and
// deterministic mode; a geometry oneDNN cannot take falls back to the oracle.
//
// The bound per element: both backends add the same products in different orders, so
// each is within gamma_n = n u / (1 - n u) of the exact sum times the sum of the terms'
// magnitudes (Higham, Accuracy and Stability of Numerical Algorithms, 3.1). The
// magnitudes come from the same op run on |x|, |w| and |dy| by the oracle.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include <xquant/core/tape.hpp>
#include <xquant/kernels/conv_backend.hpp>
#include <xquant/kernels/threads.hpp>
#include <xquant/layers/conv2d.hpp>

namespace {

using xq::kernels::conv_backend;

xq::tensor random_tensor(const xq::tensor::shape_type& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  xq::tensor t = xq::tensor::from_shape(shape);
  for (auto& v : t) v = d(rng);
  return t;
}

xq::tensor abs_of(const xq::tensor& t) {
  xq::tensor a = t;
  for (auto& v : a) v = std::fabs(v);
  return a;
}

struct geometry_case {
  std::string name;
  std::size_t n, h, w, c, f, kh, kw;
  xq::conv2d_geometry geometry;
  bool bias;
};

xq::conv2d_geometry geometry_of(xq::size2 strides, xq::size2 dilation, xq::padding p) {
  xq::conv2d_geometry g;
  g.strides = strides;
  g.dilation = dilation;
  g.padding = p;
  return g;
}

/// y, dx, dw, db of one conv2d call with the given tensors and output gradient.
struct conv_results {
  xq::tensor y, dx, dw, db;
};

conv_results run(const geometry_case& gc, const xq::tensor& x, const xq::tensor& w, const xq::tensor& b,
                 const xq::tensor& dy) {
  xq::tape tape;
  xq::var xv(x, true), wv(w, true), bv(b, true);
  xq::var y = xq::ops::conv2d(xv, wv, gc.bias ? &bv : nullptr, gc.geometry, "conv");
  tape.backward(y, dy);
  return {y.value(), xv.grad(), wv.grad(), gc.bias ? bv.grad() : xq::tensor()};
}

/// Every element of `got` within 2 gamma_n * magnitude of `want` (both are within gamma_n
/// of the exact value).
void check_close(const char* what, const xq::tensor& got, const xq::tensor& want, const xq::tensor& magnitude,
                 std::size_t terms) {
  INFO(what);
  REQUIRE(got.shape() == want.shape());
  const double u = std::ldexp(1.0, -24), nu = double(terms) * u, gamma = nu / (1.0 - nu);
  std::size_t outside = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = 2.0 * gamma * double(magnitude.data()[i]) + 1e-30;
    if (std::fabs(double(got.data()[i]) - double(want.data()[i])) > bound) ++outside;
  }
  CHECK(outside == 0);
}

std::vector<geometry_case> cases() {
  using xq::padding;
  return {
      {"3x3 same, one input channel, bias", 4, 9, 9, 1, 8, 3, 3, geometry_of({1, 1}, {1, 1}, padding::same), true},
      {"3x3 same, stride 2, odd sizes", 3, 10, 13, 5, 7, 3, 3, geometry_of({2, 2}, {1, 1}, padding::same), false},
      {"3x3 valid, dilation 2, bias", 2, 11, 12, 4, 6, 3, 3, geometry_of({1, 1}, {2, 2}, padding::valid), true},
      {"5x5 valid", 2, 8, 9, 3, 4, 5, 5, geometry_of({1, 1}, {1, 1}, padding::valid), false},
      {"1x3 same, strides (1, 2), bias", 2, 7, 10, 6, 5, 1, 3, geometry_of({1, 2}, {1, 1}, padding::same), true},
      {"3x3 valid, stride 2, every row read", 2, 9, 9, 3, 4, 3, 3, geometry_of({2, 2}, {1, 1}, padding::valid),
       true},
      {"the CNN's second conv (14x14x32 -> 64)", 8, 14, 14, 32, 64, 3, 3,
       geometry_of({1, 1}, {1, 1}, padding::same), false},
  };
}

}  // namespace

TEST_CASE("conv backends: oneDNN agrees with the im2col + GEMM oracle within float rounding",
          "[kernels][conv2d][onednn]") {
  if (!xq::kernels::onednn_available()) {
    WARN("built without oneDNN (libdnnl-dev): only the oracle exists, nothing to compare");
    CHECK_THROWS_AS(xq::kernels::set_conv_backend(conv_backend::onednn), xq::argument_error);
    CHECK(xq::kernels::current_conv_backend() == conv_backend::automatic);
    return;
  }
  unsigned seed = 1;
  for (const geometry_case& gc : cases()) {
    INFO(gc.name);
    const xq::tensor x = random_tensor({gc.n, gc.h, gc.w, gc.c}, seed++);
    const xq::tensor w = random_tensor({gc.kh, gc.kw, gc.c, gc.f}, seed++);
    const xq::tensor b = random_tensor({gc.f}, seed++);
    const xq::window2d g = xq::resolve_window("conv", x.shape(), gc.kh, gc.kw, gc.geometry);
    const xq::tensor dy = random_tensor({gc.n, g.out_h, g.out_w, gc.f}, seed++);

    conv_results oracle, magnitude, onednn;
    {
      const xq::kernels::conv_backend_scope scope(conv_backend::im2col_gemm);
      CHECK_FALSE(xq::kernels::use_onednn(g));
      oracle = run(gc, x, w, b, dy);
      magnitude = run(gc, abs_of(x), abs_of(w), abs_of(b), abs_of(dy));
    }
    {
      const xq::kernels::conv_backend_scope scope(conv_backend::onednn);
      REQUIRE(xq::kernels::use_onednn(g));
      INFO("oneDNN's implementation: " << xq::kernels::onednn::forward_implementation(g, gc.f, gc.bias));
      onednn = run(gc, x, w, b, dy);
    }
    check_close("y", onednn.y, oracle.y, magnitude.y, g.patch_size() + 1);
    check_close("dx", onednn.dx, oracle.dx, magnitude.dx, gc.kh * gc.kw * gc.f);
    check_close("dw", onednn.dw, oracle.dw, magnitude.dw, g.out_pixels());
    if (gc.bias) check_close("db", onednn.db, oracle.db, magnitude.db, g.out_pixels());
  }
}

TEST_CASE("conv backends: the choice follows the setting, deterministic mode and the geometry",
          "[kernels][conv2d][onednn]") {
  const xq::tensor x = random_tensor({2, 10, 10, 3}, 40);
  const xq::window2d same =
      xq::resolve_window("conv", x.shape(), 3, 3, geometry_of({1, 1}, {1, 1}, xq::padding::same));
  // A strided valid window that never reads the last row and column: oneDNN would need a
  // negative bottom / right padding, so the oracle computes it.
  const xq::window2d skips =
      xq::resolve_window("conv", x.shape(), 3, 3, geometry_of({2, 2}, {1, 1}, xq::padding::valid));
  REQUIRE(skips.out_h == 4);

  CHECK(xq::kernels::current_conv_backend() == conv_backend::automatic);
  CHECK(xq::kernels::use_onednn(same) == xq::kernels::onednn_available());
  CHECK_FALSE(xq::kernels::use_onednn(skips));
  {
    const xq::deterministic_mode on;
    CHECK_FALSE(xq::kernels::use_onednn(same));  // automatic keeps the oracle's fixed blocks
  }
  {
    const xq::kernels::conv_backend_scope oracle(conv_backend::im2col_gemm);
    CHECK_FALSE(xq::kernels::use_onednn(same));
  }
  CHECK(xq::kernels::current_conv_backend() == conv_backend::automatic);

  if (!xq::kernels::onednn_available()) return;
  // The fallback computes the same bits as the oracle: it is the oracle.
  const xq::tensor w = random_tensor({3, 3, 3, 4}, 41), b = random_tensor({4}, 42);
  const geometry_case gc{"skips", 2, 10, 10, 3, 4, 3, 3, geometry_of({2, 2}, {1, 1}, xq::padding::valid), true};
  const xq::tensor dy = random_tensor({2, 4, 4, 4}, 43);
  conv_results oracle, chosen;
  {
    const xq::kernels::conv_backend_scope scope(conv_backend::im2col_gemm);
    oracle = run(gc, x, w, b, dy);
  }
  {
    const xq::kernels::conv_backend_scope scope(conv_backend::onednn);
    chosen = run(gc, x, w, b, dy);
  }
  CHECK(bool(chosen.y == oracle.y));
  CHECK(bool(chosen.dx == oracle.dx));
  CHECK(bool(chosen.dw == oracle.dw));
}
