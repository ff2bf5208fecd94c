// multi_head_attention: Keras MultiHeadAttention's outputs and gradients (golden vectors
// from tools/gen_golden_attention.py: self- and cross-attention, a separate key, value_dim
// and output width, a mask with a fully masked row, the causal mask, no biases), numerical
// gradient checks, dropout on the probabilities, ops::transpose, errors, and the twin.
#include <catch2/catch.hpp>

#include <string>

#include <xquant/layers/attention.hpp>
#include <xquant/layers/transpose.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../golden.hpp"
#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {

/// A Keras kernel or bias as the dense layer holds it: the query, key and value kernels
/// (d, heads, k) as (d, heads * k), the output kernel (heads, v, d_out) as
/// (heads * v, d_out), a bias as one axis.
xq::tensor flattened(xq::tensor t, const std::string& label, bool kernel) {
  if (!kernel) {
    t.reshape({t.size()});
  } else if (label == "output") {
    const std::size_t last = t.shape()[t.dimension() - 1];
    t.reshape({t.size() / last, last});
  } else {
    const std::size_t first = t.shape()[0];
    t.reshape({first, t.size() / first});
  }
  return t;
}

template <class Dense>
void load(Dense& d, const golden::json& c, const std::string& label, bool bias) {
  d.kernel()->value = flattened(golden::tensor(c.at(label + "_kernel")), label, true);
  if (bias) d.bias()->value = flattened(golden::tensor(c.at(label + "_bias")), label, false);
}

template <class Dense>
void check_grads(const Dense& d, const golden::json& c, const std::string& label, bool bias, const std::string& name) {
  golden::check_close_scaled(d.kernel()->grad, flattened(golden::tensor(c.at("d" + label + "_kernel")), label, true),
                             name + ": d" + label + " kernel", 2e-6f);
  if (bias)
    golden::check_close_scaled(d.bias()->grad, flattened(golden::tensor(c.at("d" + label + "_bias")), label, false),
                               name + ": d" + label + " bias", 2e-6f);
}

/// Self-attention in a model: what quantize_model and summarize walk.
template <class Attention = xq::multi_head_attention<>, class Head = xq::dense>
struct self_attention_net {
  Attention attention{2, 4};
  Head head{xq::dense(3)};
  XQ_CHILDREN(attention, head)
  xq::var operator()(const xq::var& x) { return head(attention(x, x)); }
};

}  // namespace

TEST_CASE("multi_head_attention matches Keras MultiHeadAttention (golden vectors)", "[layers][attention][golden]") {
  const auto doc = golden::load("layers_attention");
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string name = c.at("name");
    const bool bias = c.at("use_bias"), self = c.at("self_attention");
    auto mha = xq::multi_head_attention(c.at("heads"), c.at("key_dim"));
    mha.use_bias(bias).value_dim(c.at("value_dim")).output_dim(c.at("output_dim")).causal(c.at("causal"));
    xq::var q(golden::tensor(c.at("query")), true);
    xq::var v = self ? q : xq::var(golden::tensor(c.at("value")), true);
    xq::var k = c.contains("key") ? xq::var(golden::tensor(c.at("key")), true) : v;
    const xq::var mask = c.contains("mask") ? xq::var(golden::tensor(c.at("mask"))) : xq::var();
    {
      const xq::no_grad off;
      (void)mha(q, v, k);  // builds the projections
    }
    load(mha.query, c, "query", bias);
    load(mha.key, c, "key", bias);
    load(mha.value, c, "value", bias);
    load(mha.attention_output, c, "output", bias);
    xq::tape t;
    const xq::var y = mask.defined() ? mha(q, v, k, mask) : mha(q, v, k);
    golden::check_close_scaled(y.value(), golden::tensor(c.at("y")), name + ": y", 2e-6f);
    t.backward(y, golden::tensor(c.at("dy")));
    golden::check_close_scaled(q.grad(), golden::tensor(c.at("dquery")), name + ": dquery", 2e-6f);
    if (!self) golden::check_close_scaled(v.grad(), golden::tensor(c.at("dvalue")), name + ": dvalue", 2e-6f);
    if (c.contains("key")) golden::check_close_scaled(k.grad(), golden::tensor(c.at("dkey")), name + ": dkey", 2e-6f);
    check_grads(mha.query, c, "query", bias, name);
    check_grads(mha.key, c, "key", bias, name);
    check_grads(mha.value, c, "value", bias, name);
    check_grads(mha.attention_output, c, "output", bias, name);
    ++checked;
  }
  CHECK(checked == 5);
}

TEST_CASE("multi_head_attention: gradients with a mask and the causal mask, dropout, errors",
          "[layers][attention][gradient]") {
  xq::set_seed(3);
  auto mha = xq::multi_head_attention(2, 3);
  mha.causal(true);
  xq::var q(uniform({2, 4, 5}, -1, 1, 51), true), v(uniform({2, 4, 5}, -1, 1, 52), true);
  xq::tensor m = uniform({2, 4, 4}, 0, 1, 53);
  for (auto& e : m) e = e > 0.3f ? 1.0f : 0.0f;
  const xq::var mask(m);
  (void)mha(q, v, v, mask);
  check_gradients([&] { return mha(q, v, v, mask); },
                  {q.state(), v.state(), mha.query.kernel(), mha.key.kernel(), mha.value.kernel(),
                   mha.attention_output.kernel(), mha.query.bias()},
                  {}, "multi_head_attention");

  // The causal mask: changing the last position changes no earlier output.
  xq::tensor later = q.value();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t f = 0; f < 5; ++f) later(b, 3, f) += 1.0f;
  const xq::no_grad off;
  const xq::tensor a = mha(q, q).value(), b = mha(xq::var(later), xq::var(later)).value();
  bool earlier_same = true, last_differs = false;
  for (std::size_t n = 0; n < 2; ++n)
    for (std::size_t t = 0; t < 4; ++t)
      for (std::size_t f = 0; f < 5; ++f) {
        if (t < 3) earlier_same = earlier_same && a(n, t, f) == b(n, t, f);
        else last_differs = last_differs || a(n, t, f) != b(n, t, f);
      }
  CHECK(earlier_same);
  CHECK(last_differs);

  // Dropout on the probabilities: in training only.
  auto dropped = xq::multi_head_attention(2, 3);
  dropped.dropout(0.5f);
  const xq::var x(uniform({2, 6, 4}, -1, 1, 54));
  (void)dropped(x, x);
  const xq::tensor inference = dropped(x, x).value();
  auto plain = dropped;
  plain.attention_dropout = xq::dropout(0.0f);
  const bool same_in_inference = inference == plain(x, x).value();
  CHECK(same_in_inference);
  xq::tensor training;
  {
    const xq::training_mode on(true);
    training = dropped(x, x).value();
  }
  const bool differs_in_training = !(training == inference);
  CHECK(differs_in_training);

  // Errors name the layer and what was given.
  std::string msg = "no error";
  try {
    (void)mha(q, v, v, xq::var(uniform({2, 3, 4})));
  } catch (const std::exception& e) {
    msg = e.what();
  }
  CHECK_THAT(msg, Catch::Contains("attention_scores") && Catch::Contains("(2, 4, 4) or (4, 4)") &&
                      Catch::Contains("(2, 3, 4)"));
  CHECK_THROWS_WITH(xq::ops::transpose(q, {0, 0, 1}), Catch::Contains("a permutation of the 3 axes"));
}

TEST_CASE("ops::transpose permutes axes and its gradient permutes back", "[layers][attention][gradient]") {
  xq::var x(uniform({2, 3, 4}, -1, 1, 61), true);
  const xq::var y = xq::ops::transpose(x, {2, 0, 1});
  REQUIRE(y.shape() == xq::tensor::shape_type{4, 2, 3});
  CHECK(y.value()(3, 1, 2) == x.value()(1, 2, 3));
  check_gradients([&] { return xq::ops::transpose(x, {1, 2, 0}); }, {x.state()}, {}, "transpose");
}

TEST_CASE("multi_head_attention's twin quantizes its four projections and keeps its heads",
          "[layers][attention][quantize]") {
  xq::set_seed(4);
  self_attention_net<> net;
  net.attention.causal(true);
  xq::build(net, {1, 5, 6});
  const auto s = xq::summarize(net, {1, 5, 6});
  REQUIRE(s.layers.size() == 2);
  // MACs per sample: the four projections (3 of 6 -> 8 and 8 -> 6, at 5 positions), and
  // the two products of 2 heads: q kᵀ (5 x 5 scores of 4 features) and p v (the same).
  CHECK(s.layers[0].mac_count() == 5u * (3u * 6u * 8u + 8u * 6u) + 2u * (2u * 5u * 5u * 4u));
  auto q = xq::quantize_model(net, xq::quantize_options{}, {1, 5, 6});
  CHECK(q.attention.scores.float_layer().num_heads() == 2);
  CHECK(q.attention.scores.float_layer().causal());
  CHECK(q.attention.query.input_quantizer().enabled());
  CHECK(q.attention.query.weight_quantizer().enabled());
  CHECK(q.attention.attention_output.weight_quantizer().enabled());
  const xq::var x(uniform({2, 5, 6}, -1, 1, 62));
  const xq::no_grad off;
  CHECK(q(x).shape() == net(x).shape());
}
