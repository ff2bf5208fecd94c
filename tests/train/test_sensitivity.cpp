// Per-layer sensitivity (train/sensitivity.hpp): each score against its closed form on a
// linear model with a quadratic loss, Spearman's rho on rankings whose value is known, and
// the model left as it was.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include <xquant/layers/dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/quantizers/model_quantizers.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/transform/low_bit_schemes.hpp>
#include <xquant/train/sensitivity.hpp>

#include "../gradient_check.hpp"

namespace {

using xq::testing::uniform;

/// Rows n of a batch are a_n e_(n mod I): the columns of each batch are orthogonal, so the
/// Hessian of the mean squared error in the kernel is diagonal and every Rademacher vector
/// gives its trace exactly.
xq::tensor orthogonal_rows(std::size_t n, std::size_t in, unsigned seed) {
  xq::tensor x = xt::zeros<float>({n, in});
  const xq::tensor a = uniform({n}, 0.5f, 2.0f, seed);
  for (std::size_t r = 0; r < n; ++r) x(r, r % in) = a(r);
  return x;
}

double mse(const xq::tensor& y, const xq::tensor& t) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += (double(y.data()[i]) - t.data()[i]) * (double(y.data()[i]) - t.data()[i]);
  return s / double(y.size());
}

xq::tensor product(const xq::tensor& x, const xq::tensor& w) {
  xq::tensor y = xt::zeros<float>({x.shape()[0], w.shape()[1]});
  for (std::size_t n = 0; n < x.shape()[0]; ++n)
    for (std::size_t j = 0; j < w.shape()[1]; ++j) {
      double s = 0;
      for (std::size_t i = 0; i < w.shape()[0]; ++i) s += double(x(n, i)) * double(w(i, j));
      y(n, j) = float(s);
    }
  return y;
}

}  // namespace

TEST_CASE("spearman_rho: identical, reversed and tied rankings", "[sensitivity]") {
  CHECK(xq::spearman_rho({1, 2, 3, 4}, {10, 20, 35, 400}) == Approx(1.0));
  CHECK(xq::spearman_rho({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1.0));
  CHECK(xq::spearman_rho({1, 1, 2}, {1, 2, 3}) == Approx(1.5 / std::sqrt(3.0)));
  CHECK(std::isnan(xq::spearman_rho({1, 1, 1}, {1, 2, 3})));
  CHECK(std::isnan(xq::spearman_rho({1}, {2})));
  CHECK_THROWS_AS(xq::spearman_rho({1, 2}, {1}), xq::argument_error);
}

TEST_CASE("each sensitivity score equals its closed form on a linear layer with a quadratic loss",
          "[sensitivity]") {
  // y = x W (32 inputs, 3 outputs, no bias), L = mean (y - t)^2 over each batch of 32.
  constexpr std::size_t in = 32, out = 3, rows = 32;
  auto model = xq::sequential(xq::dense(out, false));
  xq::build(model, {1, in});
  auto& layer = model.get<0>();
  layer.kernel()->value = uniform({in, out}, -1.0f, 1.0f, 5);
  const xq::tensor w = layer.kernel()->value;

  xq::tensor x = xt::concatenate(xt::xtuple(orthogonal_rows(rows, in, 1), orthogonal_rows(rows, in, 2)));
  const xq::dataset scores{x, uniform({2 * rows, out}, -1.0f, 1.0f, 3)};
  const xq::dataset validation{uniform({40, in}, -1.0f, 1.0f, 4), uniform({40, out}, -1.0f, 1.0f, 6)};

  xq::sensitivity_options o;
  o.batch_size = rows;
  o.score_batches = 2;
  o.hutchinson_samples = 3;
  // int4 weight groups of 32 along the reduction axis (torchao's weight-only recipe): the
  // layer's input is not quantized, so y_q = x Q(W).
  const std::vector<xq::sensitivity_candidate> formats = {{"int4", xq::schemes::torchao_intx_weight_only(4, 32)}};
  layer.kernel()->accumulate_grad(xq::tensor(xt::ones<float>({in, out})));  // a gradient the call must keep
  const auto report = xq::layer_sensitivities(model, xq::mean_squared_error, scores, validation, formats, {1, in}, o);
  REQUIRE(report.rows.size() == 1);
  const auto& r = report.rows[0];
  CHECK(r.layer == layer.path());
  CHECK(r.weights == in * out);
  // int4 codes and a float32 scale per group of 32: 5 bits a value.
  CHECK(r.bits_per_weight == Approx(5.0));

  // The kernel as the format quantizes it.
  xq::quantize_options q;
  q.scheme = formats[0].scheme;
  auto twin = xq::quantize_model(model, q, {1, in});
  xq::tensor qw;
  xq::for_each_quantizer(twin, [&](xq::quantizer_base& quantizer) {
    if (quantizer.path() == layer.path() + "/kernel_quantizer") {
      const xq::no_grad nothing;
      const xq::training_mode inference(false);
      qw = quantizer(xq::var(w)).value();
    }
  });
  REQUIRE(qw.size() == w.size());
  CHECK_FALSE(xt::all(xt::equal(qw, w)));

  double trace = 0, gradient = 0, signal = 0, noise = 0, perturbation = 0;
  for (std::size_t b = 0; b < 2; ++b) {
    const xq::tensor xb = xt::view(scores.inputs, xt::range(b * rows, (b + 1) * rows), xt::all());
    const xq::tensor tb = xt::view(scores.targets, xt::range(b * rows, (b + 1) * rows), xt::all());
    // Hessian of mean (xW - t)^2 over rows x out values: 2 / (rows * out) X^T X per output.
    for (const float v : xb) trace += 2.0 / double(rows) * double(v) * double(v);
    const xq::tensor y = product(xb, w), yq = product(xb, qw);
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double g = 2.0 * (double(y.data()[i]) - tb.data()[i]) / double(rows * out);
      const double e = double(yq.data()[i]) - double(y.data()[i]);
      gradient += (g * e) * (g * e);
      signal += double(y.data()[i]) * double(y.data()[i]);
      noise += e * e;
    }
  }
  for (std::size_t i = 0; i < w.size(); ++i)
    perturbation += (double(qw.data()[i]) - w.data()[i]) * (double(qw.data()[i]) - w.data()[i]);
  const double measured = mse(product(validation.inputs, qw), validation.targets) -
                          mse(product(validation.inputs, w), validation.targets);

  CHECK(r.hessian_trace == Approx(trace).epsilon(1e-3));
  CHECK(r.hessian_score == Approx(trace / double(in * out) * perturbation).epsilon(1e-3));
  CHECK(r.gradient_score == Approx(gradient).epsilon(1e-4));
  CHECK(r.sqnr_db == Approx(10.0 * std::log10(signal / noise)).epsilon(1e-4));
  CHECK(r.measured == Approx(measured).epsilon(1e-3).margin(1e-7));
  CHECK(report.float_loss == Approx(mse(product(validation.inputs, w), validation.targets)).epsilon(1e-5));

  // The weights and the gradient the model had are back.
  CHECK(xt::all(xt::equal(layer.kernel()->value, w)));
  CHECK(xt::all(xt::equal(layer.kernel()->grad, xt::ones<float>({in, out}))));
  CHECK(report.table().find(layer.path()) != std::string::npos);
}

TEST_CASE("a report per layer and format, its correlations per format, and bad calls refused", "[sensitivity]") {
  auto model = xq::sequential(xq::dense(32, false), xq::dense(4, false));
  xq::build(model, {1, 32});
  const xq::dataset data{uniform({64, 32}, -1.0f, 1.0f, 10), uniform({64, 4}, -1.0f, 1.0f, 11)};
  xq::sensitivity_options o;
  o.batch_size = 32;
  o.hutchinson_samples = 4;
  const std::vector<xq::sensitivity_candidate> formats = {{"int4", xq::schemes::torchao_intx_weight_only(4, 32)},
                                                          {"int2", xq::schemes::torchao_intx_weight_only(2, 32)}};
  const auto report = xq::layer_sensitivities(model, xq::mean_squared_error, data, data, formats, {1, 32}, o);
  INFO(report.table());
  REQUIRE(report.rows.size() == 4);  // every layer whose kernel the first format quantizes, per format
  for (const auto& r : report.rows) {
    CHECK(r.hessian_trace > 0);
    CHECK(r.gradient_score > 0);
    CHECK(r.hessian_score > 0);
    CHECK(std::isfinite(r.sqnr_db));
  }
  // Fewer bits, more damage, on every estimated score, layer by layer. (Not on the measured
  // loss: this untrained model's targets are noise, and rounding may well lower its loss.)
  for (std::size_t l = 0; l < 2; ++l) {
    CHECK(std::isfinite(report.rows[2 + l].measured));
    CHECK(report.rows[2 + l].gradient_score > report.rows[l].gradient_score);
    CHECK(report.rows[2 + l].hessian_score > report.rows[l].hessian_score);
    CHECK(report.rows[2 + l].sqnr_db < report.rows[l].sqnr_db);
  }
  const auto rho = report.rank_correlations();
  REQUIRE(rho.size() == 3);
  CHECK(rho[0].candidate == "int4");
  CHECK(rho[1].layers == 2);
  CHECK(rho[2].candidate == "all");
  CHECK(rho[2].layers == 4);
  CHECK(report.correlation_table().find("int2") != std::string::npos);

  CHECK_THROWS_AS(xq::layer_sensitivities(model, xq::mean_squared_error, data, data, {}, {1, 32}, o),
                  xq::argument_error);
  o.layers = {"no_such_layer"};
  CHECK_THROWS_WITH(xq::layer_sensitivities(model, xq::mean_squared_error, data, data, formats, {1, 32}, o),
                    Catch::Contains("no_such_layer"));
}
