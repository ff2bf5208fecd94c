// Quantizer metrics on the Larq family: Larq's FlipRatio (sequence, reset, training
// calls only, int8 truncation) and xquant's gradient flow; metrics of copies.

#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <string>

#include <xquant/core/mode.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/dorefa.hpp>
#include <xquant/quantizers/flip_ratio.hpp>
#include <xquant/quantizers/lsq_quantizer.hpp>
#include <xquant/quantizers/magnitude_aware_sign.hpp>
#include <xquant/quantizers/noop_quantizer.hpp>
#include <xquant/quantizers/quantizer_metrics.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/quantizers/ste_tern.hpp>
#include <xquant/quantizers/swish_sign.hpp>

using xq::quantizer_metric;
using xq::tensor;
using xq::var;

namespace {

/// One training call of q on x, with a backward pass of ones.
template <class Q>
void train_call(Q& q, const tensor& x) {
  xq::training_mode training;
  xq::tape t;
  var xv(x, true);
  var y = q(xv);
  t.backward(y, xt::ones<float>(x.shape()));
}

struct figures {
  float total, count, result;
};
figures of(const xq::flip_ratio& m) { return {m.total(), m.count(), static_cast<float>(m.result())}; }

}  // namespace

TEST_CASE("flip ratio: Larq's example sequence through a quantizer", "[larq][metrics]") {
  // A no-op quantizer passes the values unchanged, so its flip ratio sees Larq's sequence.
  xq::noop_quantizer q(8);
  q.metrics(quantizer_metric::flip_ratio);
  const std::vector<std::pair<tensor, figures>> steps = {
      {tensor{1, 1}, {0.0f, 1.0f, 0.0f}}, {tensor{2, 2}, {1.0f, 2.0f, 1.0f}}, {tensor{1, 2}, {1.5f, 3.0f, 0.75f}}};
  xq::training_mode training;
  for (const auto& [x, want] : steps) {
    (void)q(var(x));
    const figures got = of(*q.flip_ratio_metric());
    CHECK(got.total == want.total);
    CHECK(got.count == want.count);
    CHECK(got.result == want.result);
  }
}

TEST_CASE("flip ratio: a reset zeroes the average and keeps the previous values", "[larq][metrics]") {
  xq::ste_sign q;
  q.metrics(quantizer_metric::flip_ratio);
  train_call(q, tensor{1, -1, 1, -1});
  train_call(q, tensor{-1, -1, 1, 1});  // 2 of 4 flip
  CHECK(q.flip_ratio_metric()->result() == 0.5);
  q.reset_metrics();
  CHECK(q.flip_ratio_metric()->count() == 0.0f);
  CHECK(q.flip_ratio_metric()->total() == 0.0f);
  CHECK(q.flip_ratio_metric()->result() == 0.0);
  // The previous values survive the reset: the tensor size is still fixed...
  xq::training_mode training;
  CHECK_THROWS_AS(q(var(tensor{1, 1})), xq::shape_error);
  // ...and the first update after it counts 0 (Larq multiplies by sign(count)).
  (void)q(var(tensor{1, 1, 1, 1}));
  CHECK(q.flip_ratio_metric()->count() == 1.0f);
  CHECK(q.flip_ratio_metric()->total() == 0.0f);
  (void)q(var(tensor{-1, 1, 1, 1}));  // 1 of 4 flips against the update after the reset
  CHECK(q.flip_ratio_metric()->result() == 0.25);
}

TEST_CASE("flip ratio: fed on training calls only", "[larq][metrics]") {
  xq::ste_tern q;
  q.metrics(quantizer_metric::flip_ratio);
  (void)q(var(tensor{0.5f, -0.5f, 0.0f}));  // inference: not counted
  CHECK(q.flip_ratio_metric()->count() == 0.0f);
  train_call(q, tensor{0.5f, -0.5f, 0.0f});
  train_call(q, tensor{0.5f, 0.5f, 0.0f});
  (void)q(var(tensor{-0.5f, -0.5f, -0.5f}));  // inference again
  CHECK(q.flip_ratio_metric()->count() == 2.0f);
  CHECK(q.flip_ratio_metric()->result() == Approx(1.0 / 3.0));
}

TEST_CASE("flip ratio: outputs are truncated to int8, as in Larq", "[larq][metrics]") {
  // Scales below 1: a · sign(x) truncates to 0 whatever the sign, so flips are not seen.
  xq::magnitude_aware_sign q;
  q.metrics(quantizer_metric::flip_ratio);
  train_call(q, tensor{{0.5f, -0.25f}, {-0.5f, 0.25f}});
  train_call(q, tensor{{-0.5f, 0.25f}, {0.5f, -0.25f}});  // every sign flips
  CHECK(q.flip_ratio_metric()->result() == 0.0);
  // DoReFa levels 0, 1/3, 2/3 all truncate to 0; only 1 is seen.
  xq::dorefa d(2);
  d.metrics(quantizer_metric::flip_ratio);
  train_call(d, tensor{0.0f, 0.4f, 0.6f, 1.0f});  // 0, 1/3, 2/3, 1
  train_call(d, tensor{0.7f, 0.0f, 0.3f, 0.0f});
  CHECK(d.flip_ratio_metric()->result() == 0.25);
}

TEST_CASE("gradient flow: the share of non-zero input gradients", "[metrics]") {
  xq::ste_sign q;  // clip 1
  q.metrics(quantizer_metric::gradient_flow);
  CHECK(q.flip_ratio_metric() == nullptr);
  train_call(q, tensor{0.5f, -1.0f, 1.5f, -3.0f});  // half outside the clip range
  CHECK(q.gradient_flow_metric()->result() == 0.5);
  train_call(q, tensor{0.5f, -1.0f, 0.0f, 0.25f});  // all inside: the mean of 0.5 and 1
  CHECK(q.gradient_flow_metric()->result() == 0.75);
  CHECK(q.gradient_flow_metric()->count() == 2);

  // approx_sign's gradient is 0 at |x| = 1 itself; swish_sign's is never 0 nearby.
  xq::approx_sign a;
  a.metrics(quantizer_metric::gradient_flow);
  train_call(a, tensor{1.0f, 0.5f, -1.0f, 0.0f});
  CHECK(a.gradient_flow_metric()->result() == 0.5);
  xq::swish_sign s;
  s.metrics(quantizer_metric::gradient_flow);
  train_call(s, tensor{1.0f, 0.5f, -1.0f, 0.0f});
  CHECK(s.gradient_flow_metric()->result() == 1.0);

  // dorefa activations: no gradient outside [0, 1]; lsq: none outside its range.
  xq::dorefa d(2);
  d.metrics(quantizer_metric::gradient_flow);
  train_call(d, tensor{-0.5f, 0.5f, 1.5f, 1.0f});
  CHECK(d.gradient_flow_metric()->result() == 0.5);
  xq::lsq_quantizer l(4);
  l.set_scale(0.1f).metrics(quantizer_metric::gradient_flow);
  train_call(l, tensor{0.0f, 0.3f, -0.5f, 5.0f});  // range [-0.8, 0.7]
  CHECK(l.gradient_flow_metric()->result() == 0.75);

  q.reset_metrics();
  CHECK(q.gradient_flow_metric()->count() == 0);
  CHECK(q.gradient_flow_metric()->result() == 0.0);
}

TEST_CASE("quantizer metrics: names follow the path, copies keep their own figures", "[larq][metrics]") {
  xq::ste_tern q;
  q.metrics(quantizer_metric::flip_ratio | quantizer_metric::gradient_flow);
  q.set_path("block/conv/kernel_quantizer");
  train_call(q, tensor{0.5f, -0.5f, 0.0f, 0.5f});
  train_call(q, tensor{-0.5f, -0.5f, 0.0f, 2.0f});  // 1 of 4 flips; 3 of 4 gradients pass

  std::map<std::string, double> seen;
  q.for_each_metric([&](const std::string& name, double value) { seen[name] = value; });
  REQUIRE(seen.size() == 2);
  CHECK(seen["flip_ratio/block/conv/kernel_quantizer"] == 0.25);
  CHECK(seen["gradient_flow/block/conv/kernel_quantizer"] == 0.875);

  xq::ste_tern copy = q;  // an independent copy of the figures, at their current values
  CHECK(copy.flip_ratio_metric() != q.flip_ratio_metric());
  CHECK(copy.flip_ratio_metric()->result() == 0.25);
  CHECK(copy.metrics() == q.metrics());
  train_call(copy, tensor{0.5f, 0.5f, 0.5f, 0.5f});  // 2 of 4 flip
  CHECK(copy.flip_ratio_metric()->count() == 3.0f);
  CHECK(q.flip_ratio_metric()->count() == 2.0f);
  CHECK(q.flip_ratio_metric()->result() == 0.25);
  CHECK(q.gradient_flow_metric()->count() == 2);

  xq::ste_tern assigned;
  assigned = q;
  q.reset_metrics();
  CHECK(assigned.flip_ratio_metric()->count() == 2.0f);
  CHECK(assigned.gradient_flow_metric()->count() == 2);

  // The options survive the copy too.
  const xq::dorefa d(4, xq::dorefa_mode::weights);
  const xq::dorefa dc = d;
  CHECK(dc.k_bit() == 4);
  CHECK(dc.mode() == xq::dorefa_mode::weights);
}

TEST_CASE("quantizer metrics: a metrics scope gives its metrics to quantizers that chose none", "[larq][metrics]") {
  xq::swish_sign chosen;
  chosen.metrics(quantizer_metric::none);
  xq::dorefa unchosen;
  {
    xq::metrics_scope scope(quantizer_metric::flip_ratio);
    chosen.adopt_scope_metrics();
    unchosen.adopt_scope_metrics();
  }
  CHECK(chosen.metrics() == quantizer_metric::none);
  CHECK(unchosen.metrics() == quantizer_metric::flip_ratio);
  CHECK_FALSE(unchosen.metrics_chosen());
}
