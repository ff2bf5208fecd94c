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

namespace {

/// Adam steps on the mean squared error to `target`: the losses, first and last.
template <class Model>
std::pair<float, float> train_steps(Model& model, const xq::tensor& x, const xq::tensor& target, int steps) {
  xq::adam opt(xq::trainable_parameters(model), {1e-2f});
  const xq::training_mode training(true);
  float first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    xq::tape tape;
    const xq::var loss = xq::mean_squared_error(model(xq::var(x)), target);
    tape.backward(loss);
    opt.step();
    opt.zero_grad();
    (s == 0 ? first : last) = loss.value()(0);
  }
  return {first, last};
}

}  // namespace

// Issue 34, finding 11: the unlisted-weighted default was per channel (axis 2, a transposed
// conv's filters), which TF's FakeQuant cannot do (its per-channel ranges are on the last
// axis), so quantize_model refused every model with a conv2d_transpose under tfmot.
TEST_CASE("tfmot's scheme quantizes and trains a model with a conv2d_transpose, its kernel per tensor",
          "[quantize][schemes]") {
  const xq::tensor::shape_type in{2, 6, 6, 3};
  auto model = xq::sequential<xq::conv2d, xq::relu, xq::conv2d_transpose>(
      xq::conv2d(4, 3).strides(2).padding(xq::padding::same), xq::relu(),
      xq::conv2d_transpose(2, 3).strides(2).padding(xq::padding::same).name("up"));
  xq::set_seed(5);
  xq::build(model, in);
  const xq::tensor x = uniform(in, -1, 1, 6), target = uniform({2, 6, 6, 2}, -1, 1, 7);

  // Not in tfmot's registry: wrapped, off unless a spec names it (as in NVIDIA's scheme).
  xq::quantize_options o;
  o.scheme = xq::schemes::tfmot();
  auto q = xq::quantize_model(model, o, in);
  CHECK_FALSE(q.get<2>().weight_quantizer().enabled());
  CHECK(q.get<0>().weight_quantizer().config().per_channel);  // conv2d: listed, last axis
  const auto [first, last] = train_steps(q, x, target, 5);
  CHECK(std::isfinite(last));
  CHECK(last < first);

  // Named by a spec: tfmot's default outside Conv2D and DepthwiseConv2D, per tensor.
  o.spec.add("up");
  auto named = xq::quantize_model(model, o, in);
  const auto& up = named.get<2>();
  REQUIRE(up.weight_quantizer().enabled());
  CHECK_FALSE(up.weight_quantizer().config().per_channel);
  CHECK(up.weight_quantizer().config().numerics == xq::quant_numerics::tf_fake_quant);
  CHECK(up.output_quantizer().enabled());  // the model's last layer: its output too
  const xq::tensor kernel_before = up.float_layer().kernel()->value;
  const auto [first_q, last_q] = train_steps(named, x, target, 5);
  CHECK(std::isfinite(last_q));
  CHECK(last_q < first_q);
  CHECK_FALSE(xt::allclose(up.float_layer().kernel()->value, kernel_before, 0.0, 0.0));
  CHECK(xt::amax(up.weight_quantizer().max())() > 0.0f);  // one range, tracked in training
  CHECK(up.weight_quantizer().max().size() == 1);
}
