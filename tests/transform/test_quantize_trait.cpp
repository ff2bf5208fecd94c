// The quantize trait at the type level: the registry, detection, composites rebuilt
// with their children's twins (three levels deep and inside a sequential).

#include <type_traits>

#include <catch2/catch.hpp>

#include "../gradient_check.hpp"
#include "models.hpp"

namespace {

struct plain_type {};  // not a layer: no twin, no children
struct leaf_without_twin {
  xq::var operator()(const xq::var& x) { return x; }
};

using xq::quantize_t;

// The registry.
static_assert(std::is_same_v<quantize_t<xq::conv2d>, xq::weight_quantized<xq::conv2d>>);
static_assert(std::is_same_v<quantize_t<xq::dense>, xq::weight_quantized<xq::dense>>);
static_assert(std::is_same_v<quantize_t<xq::depthwise_conv2d>, xq::weight_quantized<xq::depthwise_conv2d>>);
static_assert(xq::kernel_channel_axis_v<xq::depthwise_conv2d> == 2 && xq::kernel_channel_axis_v<xq::conv2d> == -1);
static_assert(std::is_same_v<quantize_t<xq::batch_norm>, xq::quantized_batch_norm>);
static_assert(std::is_same_v<quantize_t<xq::max_pool2d>, xq::input_quantized<xq::max_pool2d>>);
static_assert(std::is_same_v<quantize_t<xq::average_pool2d>, xq::input_quantized<xq::average_pool2d>>);
static_assert(std::is_same_v<quantize_t<xq::add>, xq::each_input_quantized<xq::add>>);
static_assert(std::is_same_v<quantize_t<xq::concatenate>, xq::each_input_quantized<xq::concatenate>>);
// A twin quantizes to itself.
static_assert(std::is_same_v<quantize_t<quantize_t<xq::conv2d>>, quantize_t<xq::conv2d>>);

// Detection is SFINAE-friendly: no twin means false, not a hard error.
static_assert(xq::is_quantizable_v<xq::conv2d>);
static_assert(!xq::is_quantizable_v<plain_type>);
static_assert(!xq::is_quantizable_v<leaf_without_twin>);
static_assert(xq::is_quantize_wrapper_v<xq::weight_quantized<xq::conv2d>>);
static_assert(!xq::is_quantize_wrapper_v<xq::conv2d>);

// The seed's composite: its twin is the same template over the quantized children.
using block = qtest::conv_bn<>;
static_assert(std::is_same_v<quantize_t<block>,
                             qtest::conv_bn<xq::weight_quantized<xq::conv2d>, xq::quantized_batch_norm>>);
static_assert(std::is_same_v<decltype(std::declval<quantize_t<block>&>().conv), xq::weight_quantized<xq::conv2d>>);

// Three levels: net<stage<conv_bn<conv2d, batch_norm>>, pool, dense>.
using deep = qtest::net<>;
using deep_twin = quantize_t<deep>;
static_assert(std::is_same_v<decltype(deep_twin::body), quantize_t<qtest::stage<>>>);
static_assert(std::is_same_v<decltype(deep_twin::body.first), quantize_t<block>>);
static_assert(std::is_same_v<decltype(deep_twin::body.first.conv), xq::weight_quantized<xq::conv2d>>);
static_assert(std::is_same_v<decltype(deep_twin::pool), xq::input_quantized<xq::global_average_pool2d>>);
static_assert(std::is_same_v<decltype(deep_twin::head), xq::weight_quantized<xq::dense>>);

// Inside a sequential.
using seq = xq::sequential<block, xq::flatten, xq::dense>;
static_assert(std::is_same_v<quantize_t<seq>, xq::sequential<quantize_t<block>, xq::input_quantized<xq::flatten>,
                                                            xq::weight_quantized<xq::dense>>>);

}  // namespace

TEST_CASE("the twin of a composite shares the float layer's parameters and paths", "[quantize][trait]") {
  qtest::net<> model;
  xq::build(model, {2, 6, 6, 3});
  auto twin = xq::quantize_layer(model);
  xq::set_paths(twin);
  CHECK(twin.body.first.conv.float_layer().kernel().get() == model.body.first.conv.kernel().get());
  CHECK(twin.body.second.norm.float_layer().moving_mean().get() == model.body.second.norm.moving_mean().get());
  CHECK(twin.head.float_layer().kernel().get() == model.head.kernel().get());
  CHECK(twin.body.first.conv.path() == "body/first/conv");
  CHECK(twin.body.first.conv.float_layer().kernel()->name() == "body/first/conv/kernel");
  CHECK(twin.body.first.conv.weight_quantizer().path() == "body/first/conv/kernel_quantizer");
  // The same parameter list, in the same order.
  const auto a = xq::parameters(model), b = xq::parameters(twin);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].get() == b[i].get());
  // Unconfigured twins compute what the float model computes.
  const xq::tensor x = xq::testing::uniform({2, 6, 6, 3});
  const xq::no_grad off;
  CHECK(xt::allclose(model(xq::var(x)).value(), twin(xq::var(x)).value(), 0.0, 0.0));
}

TEST_CASE("a sequential's twin keeps its layer names", "[quantize][trait]") {
  seq model(block(4), xq::flatten(), xq::dense(2).name("logits"));
  xq::build(model, {1, 5, 5, 2});
  auto twin = xq::quantize_layer(model);
  CHECK(twin.child_names() == model.child_names());
  CHECK(twin.get<2>().path() == "logits");
  CHECK(twin.get<0>().conv.path() == "conv_bn/conv");
}

namespace {

/// An aggregate composite (no constructor of its own) over a child block whose default
/// constructor is `explicit` (qtest::conv_bn): the common way to write a Keras-style
/// model. Its twin must be built without copy-list-initializing that child, which Clang
/// rejects (issue 34, finding 10; the `clang_syntax` test compiles this file with clang++).
template <class Block = qtest::conv_bn<>, class Pool = xq::global_average_pool2d, class Head = xq::dense>
struct aggregate_net {
  Block block;
  Pool pool;
  Head head{xq::dense(2)};
  XQ_CHILDREN(block, pool, head)
  xq::var operator()(const xq::var& x) { return head(pool(block(x))); }
};

}  // namespace

TEST_CASE("an aggregate composite over a child with an explicit default constructor has a twin",
          "[quantize][trait][clang]") {
  aggregate_net<> model;
  xq::build(model, {2, 6, 6, 3});
  auto twin = xq::quantize_layer(model);
  static_assert(std::is_same_v<decltype(twin.block), quantize_t<qtest::conv_bn<>>>);
  xq::set_paths(twin);
  CHECK(twin.block.conv.float_layer().kernel().get() == model.block.conv.kernel().get());
  CHECK(twin.head.float_layer().kernel().get() == model.head.kernel().get());
  CHECK(twin.block.conv.path() == "block/conv");
  auto q = xq::quantize_model(model, xq::quantize_options{}, {2, 6, 6, 3});
  CHECK(q.block.conv.weight_quantizer().enabled());
  const xq::tensor x = xq::testing::uniform({2, 6, 6, 3});
  const xq::no_grad off;
  CHECK(xt::allclose(model(xq::var(x)).value(), twin(xq::var(x)).value(), 0.0, 0.0));
  CHECK(q(xq::var(x)).shape() == xq::tensor::shape_type{2, 2});
}
