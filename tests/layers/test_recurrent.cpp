// lstm and gru: Keras LSTM's and GRU's outputs and gradients (golden vectors from
// tools/gen_golden_recurrent.py: the last output and whole sequences, go_backwards, no bias,
// one step, GRU with reset_after false), numerical gradient checks, Keras's initializers
// (orthogonal recurrent kernel, unit_forget_bias), errors, summary MACs, clone, and the
// twins (NVIDIA's scheme quantizes the projection's input and kernel and the recurrent
// kernel).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <xquant/core/clone.hpp>
#include <xquant/core/model.hpp>
#include <xquant/layers/gru.hpp>
#include <xquant/layers/lstm.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../golden.hpp"
#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {

/// Rows [first, first + count) of a (2, n) Keras GRU bias, as one axis.
xq::tensor bias_row(const xq::tensor& b, std::size_t row) {
  const std::size_t n = b.shape()[1];
  xq::tensor out = xq::tensor::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) out(i) = b(row, i);
  return out;
}

/// Runs one golden case through `layer` (built by the caller's first call), with Keras's
/// weights put where xquant keeps them by `place`, and checks y and every gradient.
template <class Layer, class Place, class Gather>
void check_case(Layer& layer, const golden::json& c, Place&& place, Gather&& gather_dbias) {
  const std::string name = c.at("name");
  xq::var x(golden::tensor(c.at("x")), true);
  {
    const xq::no_grad off;
    (void)layer(x);  // builds the weights
  }
  layer.projection.kernel()->value = golden::tensor(c.at("kernel"));
  layer.recurrence.kernel()->value = golden::tensor(c.at("recurrent_kernel"));
  if (c.at("use_bias")) place(golden::tensor(c.at("bias")));
  xq::tape t;
  const xq::var y = layer(x);
  golden::check_close_scaled(y.value(), golden::tensor(c.at("y")), name + ": y", 2e-6f);
  t.backward(y, golden::tensor(c.at("dy")));
  golden::check_close_scaled(x.grad(), golden::tensor(c.at("dx")), name + ": dx", 2e-6f);
  golden::check_close_scaled(layer.projection.kernel()->grad, golden::tensor(c.at("dkernel")), name + ": dkernel",
                             2e-6f);
  golden::check_close_scaled(layer.recurrence.kernel()->grad, golden::tensor(c.at("drecurrent_kernel")),
                             name + ": drecurrent_kernel", 2e-6f);
  if (c.at("use_bias")) golden::check_close_scaled(gather_dbias(), golden::tensor(c.at("dbias")), name + ": dbias", 2e-6f);
}

/// A sequence classifier: an LSTM or GRU over (B, T, F), then a dense head.
template <class Recurrent, class Head = xq::dense>
struct sequence_net {
  Recurrent rnn;
  Head head;
  XQ_CHILDREN(rnn, head)
  sequence_net() = default;
  sequence_net(Recurrent r, Head h) : rnn(std::move(r)), head(std::move(h)) {}
  xq::var operator()(const xq::var& x) { return head(rnn(x)); }
};

}  // namespace

TEST_CASE("lstm and gru match Keras LSTM and GRU (golden vectors)", "[layers][recurrent][golden]") {
  const auto doc = golden::load("layers_recurrent");
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    const std::size_t units = c.at("units");
    const bool sequences = c.at("return_sequences"), backwards = c.at("go_backwards"), bias = c.at("use_bias");
    if (c.at("kind") == "lstm") {
      auto layer = xq::lstm<>(units);
      layer.return_sequences(sequences).go_backwards(backwards).use_bias(bias);
      check_case(
          layer, c, [&](const xq::tensor& b) { layer.recurrence.bias()->value = b; },
          [&] { return layer.recurrence.bias()->grad; });
    } else {
      const bool after = c.at("reset_after");
      auto layer = xq::gru<>(units);
      layer.return_sequences(sequences).go_backwards(backwards).use_bias(bias).reset_after(after);
      check_case(
          layer, c,
          [&](const xq::tensor& b) {
            if (after) {  // Keras's (2, 3 units): the input's bias, then the recurrent one
              layer.projection.bias()->value = bias_row(b, 0);
              layer.recurrence.bias()->value = bias_row(b, 1);
            } else {
              layer.projection.bias()->value = b;
            }
          },
          [&] {
            if (!after) return layer.projection.bias()->grad;
            const std::size_t n = 3 * units;
            xq::tensor both = xq::tensor::from_shape({2, n});
            for (std::size_t i = 0; i < n; ++i) {
              both(0, i) = layer.projection.bias()->grad(i);
              both(1, i) = layer.recurrence.bias()->grad(i);
            }
            return both;
          });
    }
    ++checked;
  }
  CHECK(checked == 11);
}

TEST_CASE("lstm and gru: gradient checks", "[layers][recurrent][gradient]") {
  xq::set_seed(5);
  xq::var x(uniform({2, 4, 3}, -1, 1, 41), true);
  auto l = xq::lstm<>(3);
  l.return_sequences(true);
  {
    const xq::no_grad off;
    (void)l(x);
  }
  check_gradients([&] { return l(x); },
                  {x.state(), l.projection.kernel(), l.recurrence.kernel(), l.recurrence.bias()}, {}, "lstm");
  auto g = xq::gru<>(3);
  g.go_backwards(true);
  {
    const xq::no_grad off;
    (void)g(x);
  }
  check_gradients([&] { return g(x); },
                  {x.state(), g.projection.kernel(), g.projection.bias(), g.recurrence.kernel(), g.recurrence.bias()},
                  {}, "gru");
  auto g2 = xq::gru<>(2);
  g2.reset_after(false).return_sequences(true);
  {
    const xq::no_grad off;
    (void)g2(x);
  }
  check_gradients([&] { return g2(x); }, {x.state(), g2.projection.kernel(), g2.recurrence.kernel()}, {},
                  "gru reset_after false");
}

TEST_CASE("lstm and gru: Keras's initializers, shapes and errors", "[layers][recurrent][errors]") {
  xq::set_seed(9);
  // Orthogonal: QᵀQ = I for a tall matrix, Q Qᵀ = I for a wide one (a recurrent kernel).
  for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{6, 3}, {3, 12}}) {
    const xq::tensor q = xq::orthogonal(rows, cols);
    const std::size_t k = std::min(rows, cols);
    double worst = 0;
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = 0; b < k; ++b) {
        double dot = 0;
        for (std::size_t i = 0; i < std::max(rows, cols); ++i)
          dot += rows >= cols ? double(q(i, a)) * q(i, b) : double(q(a, i)) * q(b, i);
        worst = std::max(worst, std::abs(dot - (a == b ? 1.0 : 0.0)));
      }
    CHECK(worst < 1e-5);
  }
  auto l = xq::lstm<>(4);
  const xq::var x(uniform({3, 5, 2}, -1, 1, 43));
  CHECK(l(x).shape() == xq::tensor::shape_type{3, 4});
  CHECK(l.recurrence.kernel()->value.shape() == xq::tensor::shape_type{4, 16});
  CHECK(l.projection.kernel()->value.shape() == xq::tensor::shape_type{2, 16});
  CHECK_FALSE(l.projection.bias());
  const xq::tensor& b = l.recurrence.bias()->value;  // unit_forget_bias: 0, 1, 0, 0 per gate
  CHECK((b(0) == 0.0f && b(4) == 1.0f && b(7) == 1.0f && b(8) == 0.0f && b(15) == 0.0f));
  auto g = xq::gru<>(4);
  g.return_sequences(true);
  CHECK(g(x).shape() == xq::tensor::shape_type{3, 5, 4});
  CHECK(g.recurrence.bias()->value.shape() == xq::tensor::shape_type{12});

  CHECK_THROWS_AS(xq::lstm<>(0), xq::argument_error);
  CHECK_THROWS_AS(xq::gru<>(0), xq::argument_error);
  const xq::var u(uniform({2, 8})), xw(uniform({2, 3, 8})), none;
  CHECK(xq::ops::lstm_recurrence(xw, u, none, {}).shape() == xq::tensor::shape_type{2, 2});
  CHECK_THROWS_WITH(xq::ops::lstm_recurrence(xq::var(uniform({2, 3, 6})), u, none, {}),
                    "lstm: expected projected inputs of shape (B, T, 8), given (2, 3, 6)");
  CHECK_THROWS_WITH(xq::ops::gru_recurrence(xw, u, none, true, {}),
                    "gru: expected a recurrent kernel of shape (units, 3 * units), given (2, 8)");
  CHECK_THROWS_WITH(xq::ops::lstm_recurrence(xw, u, xq::var(uniform({4})), {}),
                    "lstm: expected a bias of shape (8,), given (4,)");
  CHECK_THROWS_AS(xq::ops::lstm_recurrence(xq::var(uniform({2, 8})), u, none, {}), xq::shape_error);
  const xq::var u3(uniform({2, 6})), xw3(uniform({2, 3, 6}));
  CHECK_THROWS_WITH(xq::ops::gru_recurrence(xw3, u3, xq::var(uniform({6})), false, {}),
                    "gru: expected no recurrent bias (reset_after is false: the input's bias is the only one), given (6,)");
}

TEST_CASE("lstm and gru in a model: summary MACs, clone, and twins that quantize the recurrent kernel",
          "[layers][recurrent][quantize]") {
  xq::set_seed(12);
  sequence_net<xq::lstm<>> net(xq::lstm<>(4), xq::dense(2));
  xq::build(net, {1, 6, 3});
  const auto s = xq::summarize(net, {1, 6, 3});
  REQUIRE(s.layers.size() == 2);
  // Per sequence: the projection 6 steps x 3 x 16, the recurrence 6 steps x 4 x 16.
  CHECK(s.layers[0].mac_count() == 6u * 3u * 16u + 6u * 4u * 16u);

  auto copy = xq::clone_model(net);
  CHECK(copy.rnn.recurrence.kernel() != net.rnn.recurrence.kernel());
  const xq::var x(uniform({3, 6, 3}, -1, 1, 44));
  const xq::no_grad off;
  const xq::tensor a = net(x).value(), b = copy(x).value();
  bool same = a == b;
  CHECK(same);

  auto q = xq::quantize_model(net, xq::quantize_options{}, {1, 6, 3});
  {
    const xq::training_mode train(true);  // the input quantizer's range from this batch (last value)
    (void)q(x);
  }
  CHECK(q.rnn.projection.input_quantizer().enabled());
  CHECK(q.rnn.projection.weight_quantizer().enabled());
  CHECK(q.rnn.recurrence.weight_quantizer().enabled());
  CHECK_FALSE(q.rnn.recurrence.input_quantizer().enabled());
  CHECK(q.rnn.recurrence.float_layer().units() == 4u);
  const xq::tensor yq = q(x).value();
  REQUIRE(yq.shape() == a.shape());
  float worst = 0, largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(yq.data()[i] - a.data()[i]));
    largest = std::max(largest, std::abs(a.data()[i]));
  }
  INFO("largest difference " << worst << " of outputs up to " << largest);
  CHECK(worst > 0.0f);              // int8 weights and inputs...
  CHECK(worst < 0.1f * largest);    // ...close to float

  sequence_net<xq::gru<>> gnet(xq::gru<>(4), xq::dense(2));
  xq::build(gnet, {1, 6, 3});
  auto gq = xq::quantize_model(gnet, xq::quantize_options{}, {1, 6, 3});
  CHECK(gq.rnn.recurrence.weight_quantizer().enabled());
  CHECK(gq.rnn.recurrence.float_layer().reset_after());
  CHECK(gq(x).shape() == xq::tensor::shape_type{3, 2});
}
