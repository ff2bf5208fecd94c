// The tfmot and PyTorch presets: their placement (outputs, not inputs; nothing between a
// layer and the batch norm or activation that fuses with it) and their numerics.

#include <catch2/catch.hpp>

#include "../gradient_check.hpp"
#include "models.hpp"

namespace {

using xq::testing::uniform;
const xq::tensor::shape_type shape{2, 6, 6, 3};

template <class Model>
Model built(Model m) {
  xq::set_seed(12);
  xq::build(m, shape);
  return m;
}

/// conv -> bn -> relu -> add(x) -> max pool, then a dense head.
template <class Block = qtest::residual<>, class Flat = xq::flatten, class Head = xq::dense>
struct residual_net {
  Block block;
  Flat flat;
  Head head{xq::dense(4)};
  XQ_CHILDREN(block, flat, head)
  xq::var operator()(const xq::var& x) { return head(flat(block(x))); }
};

}  // namespace

TEST_CASE("tfmot's scheme: weights, outputs, and nothing before a fused consumer", "[quantize][schemes]") {
  const auto model = built(residual_net<>());
  xq::quantize_options o;
  o.scheme = xq::schemes::tfmot();
  auto q = xq::quantize_model(model, o, shape);
  const auto& b = q.block;
  // Weights: per channel for conv (last axis), per tensor for dense; TF FakeQuant, last value.
  CHECK(b.conv.weight_quantizer().enabled());
  CHECK(b.conv.weight_quantizer().config().per_channel);
  CHECK(b.conv.weight_quantizer().config().numerics == xq::quant_numerics::tf_fake_quant);
  CHECK(b.conv.weight_quantizer().config().tracking == xq::range_tracking::last_value);
  CHECK_FALSE(q.head.weight_quantizer().config().per_channel);
  // No input QDQ anywhere; outputs of relu and add; not of the conv (a batch norm follows),
  // nor of the batch norm (not in tfmot's registry), nor of max pooling.
  CHECK_FALSE(b.conv.input_quantizer().enabled());
  CHECK_FALSE(b.conv.output_quantizer().enabled());
  CHECK_FALSE(b.norm.output_quantizer().enabled());
  CHECK(b.act.output_quantizer().enabled());
  CHECK(b.skip.output_quantizer().enabled());
  CHECK_FALSE(b.pool.output_quantizer().enabled());
  CHECK(q.head.output_quantizer().enabled());  // a linear dense: its output is quantized
  const auto& a = b.act.output_quantizer().site().config();
  CHECK(a.numerics == xq::quant_numerics::tf_fake_quant);
  CHECK(a.tracking == xq::range_tracking::moving_average);
  CHECK_FALSE(a.symmetric);
  CHECK(a.ema_decay == 0.999);

  // The moving average starts at ±6 and moves by 0.001 of the distance per batch.
  const xq::tensor x = uniform(shape, -1, 1, 3);
  const xq::training_mode training(true);
  const xq::no_grad off;
  q(xq::var(x));
  const auto& relu_range = b.act.output_quantizer().site();
  CHECK(relu_range.max()(0) < 6.0f);
  CHECK(relu_range.max()(0) > 5.99f);
  CHECK(relu_range.min()(0) == Approx(-6.0f + 0.006f).epsilon(1e-6));  // the batch min is 0 after relu
}

TEST_CASE("tfmot's output quantizer computes TF FakeQuant on the layer's output", "[quantize][schemes]") {
  xq::dense d(3);
  xq::build(d, {4, 5});
  xq::quantize_options o;
  o.scheme = xq::schemes::tfmot();
  o.scheme.skip_output_before_fused_consumer = false;
  auto q = xq::quantize_model(d, o);
  const xq::tensor x = uniform({4, 5}, -2, 2, 5);
  const xq::no_grad off;
  const xq::training_mode inference(false);  // stored ranges: kernel ±6 (never trained), output ±6
  const xq::tensor k = xq::tf::fake_quant_with_min_max_vars(d.kernel()->value, -6.0f, 6.0f, 8, true);
  const xq::tensor y = xq::ops::matmul_bias(xq::var(x), xq::var(k), nullptr).value();
  const xq::tensor expected = xq::tf::fake_quant_with_min_max_vars(y, -6.0f, 6.0f, 8, false);
  CHECK(xt::allclose(q(xq::var(x)).value(), expected, 0.0, 0.0));
}

TEST_CASE("PyTorch's scheme: observers, qint8 per-channel weights, quint8 outputs", "[quantize][schemes]") {
  const auto model = built(residual_net<>());
  xq::quantize_options o;
  o.scheme = xq::schemes::pytorch();
  auto q = xq::quantize_model(model, o, shape);
  const auto& w = q.block.conv.weight_quantizer().config();
  CHECK(w.numerics == xq::quant_numerics::torch_fake_quant);
  CHECK(w.per_channel);
  CHECK(w.symmetric);
  CHECK(w.tracking == xq::range_tracking::moving_average);
  CHECK(w.averaging_constant == 0.01);
  const auto& a = q.block.act.output_quantizer().site().config();
  CHECK_FALSE(a.symmetric);
  CHECK(a.reduce_range);
  CHECK_FALSE(q.block.conv.output_quantizer().enabled());  // fused with bn -> relu

  // The observer copies the first batch's range, then averages with c = 0.01.
  const xq::training_mode training(true);
  const xq::no_grad off;
  const xq::tensor x1 = uniform(shape, -1, 1, 3), x2 = uniform(shape, -2, 2, 4);
  q(xq::var(x1));
  const float first = q.block.skip.output_quantizer().site().max()(0);
  q(xq::var(x2));
  xq::tensor seen = q.block.skip.output_quantizer().site().max();
  // After the second batch: first + 0.01 * (batch max - first), in float.
  CHECK(seen(0) != first);
  CHECK(std::abs(seen(0) - first) < 0.02f * std::abs(first) + 0.05f);
}
