// Reused layers: a PWCNet-style feature extractor applied to two images and a block
// used twice in an hourglass quantize, train and pass gradient checks; the range of a
// reused layer is shared across call sites by default, per call site on request.

#include <catch2/catch.hpp>

#include "../gradient_check.hpp"
#include "models.hpp"

namespace {

using xq::testing::uniform;
const xq::tensor::shape_type image{2, 6, 6, 3};

qtest::flow_net<> built_flow_net() {
  xq::set_seed(17);
  qtest::flow_net<> net;
  const xq::no_grad off;
  net(xq::var(xt::zeros<float>(image)), xq::var(xt::zeros<float>(image)));
  xq::set_paths(net);
  return net;
}

/// NVIDIA's scheme on a 24-bit grid: the quantization error is small enough for central
/// differences to see the straight-through gradient.
xq::quantize_options fine_grid() {
  xq::quantize_options o;
  o.scheme.input.num_bits = o.scheme.weight.num_bits = 24;
  return o;
}

xq::testing::gradient_check_options small_steps() {
  xq::testing::gradient_check_options opt;
  opt.eps = 1e-3f;  // small enough not to step over relu kinks
  return opt;
}

auto two_images() {
  return [](auto& twin) {
    (void)twin(xq::var(xt::zeros<float>(image)), xq::var(xt::zeros<float>(image)));
  };
}

}  // namespace

TEST_CASE("a shared feature extractor quantizes with one range across its call sites", "[quantize][reuse]") {
  const auto net = built_flow_net();
  auto twin = xq::quantize_model(net, {}, two_images());
  CHECK(twin.features.conv.input_quantizer().call_sites() == 1);
  const xq::tensor a = uniform(image, -1, 1, 1), b = uniform(image, -3, 3, 2);
  const xq::training_mode training(true);
  const xq::no_grad off;
  twin(xq::var(a), xq::var(b));
  // Last value: the range is the one of the last call (image b).
  const float amax_b = xt::amax(xt::abs(b))();
  CHECK(twin.features.conv.input_quantizer().site().max()(0) == amax_b);
}

TEST_CASE("per-call-site ranges give each use of a reused layer its own range", "[quantize][reuse]") {
  const auto net = built_flow_net();
  xq::quantize_options o;
  o.per_call_site_ranges = true;
  auto twin = xq::quantize_model(net, o, two_images());
  auto& sites = twin.features.conv.input_quantizer();
  REQUIRE(sites.call_sites() == 2);
  CHECK(sites.site(0).path() == "features/conv/input_quantizer_0");
  CHECK(twin.head.input_quantizer().call_sites() == 1);  // called once
  const xq::tensor a = uniform(image, -1, 1, 1), b = uniform(image, -3, 3, 2);
  const xq::training_mode training(true);
  const xq::no_grad off;
  for (int pass = 0; pass < 2; ++pass) {  // the numbering restarts every pass
    twin(xq::var(a), xq::var(b));
    CHECK(sites.site(0).max()(0) == xt::amax(xt::abs(a))());
    CHECK(sites.site(1).max()(0) == xt::amax(xt::abs(b))());
  }
}

TEST_CASE("a quantized PWCNet-style model trains and its gradients check", "[quantize][reuse][gradient]") {
  const auto net = built_flow_net();
  auto twin = xq::quantize_model(net, fine_grid(), two_images());
  const xq::training_mode training(true);
  xq::var a(uniform(image, -1, 1, 3), true), b(uniform(image, -1, 1, 4), true);
  std::vector<std::shared_ptr<xq::variable_state>> wrt{a.state(), b.state()};
  auto params = xq::trainable_parameters(twin);
  for (auto& p : params) wrt.push_back(p);
  // The extractor's conv kernel is one parameter, used by both calls.
  CHECK(std::count(params.begin(), params.end(), twin.features.conv.float_layer().kernel()) == 1);
  xq::testing::check_gradients([&] { return twin(a, b); }, wrt, small_steps(), "flow net");

  // A few steps of Adam at 8 bits reduce the loss.
  auto eight = xq::quantize_model(net, {}, two_images());
  const xq::tensor target = uniform({2, 6, 6, 2}, -0.5f, 0.5f, 9);
  xq::adam opt(xq::trainable_parameters(eight), {0.02f});
  const auto& mse = xq::mean_squared_error;
  auto step = [&] {
    xq::tape t;
    xq::var loss = mse(eight(xq::var(a.value()), xq::var(b.value())), target);
    t.backward(loss);
    opt.step();
    opt.zero_grad();
    return loss.value()();
  };
  const float first = step();
  float last = first;
  for (int i = 0; i < 15; ++i) last = step();
  CHECK(last < 0.7f * first);
}

TEST_CASE("a block reused in an hourglass quantizes and its gradients check", "[quantize][reuse][gradient]") {
  xq::set_seed(6);
  qtest::hourglass<> model;
  const xq::tensor::shape_type shape{2, 5, 5, 4};
  xq::build(model, shape);
  auto twin = xq::quantize_model(model, fine_grid(), shape);
  CHECK(twin.block.conv.input_quantizer().enabled());
  const xq::training_mode training(true);
  xq::var x(uniform(shape, -1, 1, 5), true);
  std::vector<std::shared_ptr<xq::variable_state>> wrt{x.state()};
  for (auto& p : xq::trainable_parameters(twin)) wrt.push_back(p);
  xq::testing::check_gradients([&] { return twin(x); }, wrt, small_steps(), "hourglass");

  // A few steps of SGD at 8 bits reduce the loss.
  auto eight = xq::quantize_model(model, {}, shape);
  const xq::tensor target = uniform(shape, -0.5f, 0.5f, 6);
  xq::sgd opt(xq::trainable_parameters(eight), {0.05f});
  auto step = [&] {
    xq::tape t;
    xq::var loss = xq::mean_squared_error(eight(xq::var(x.value())), xq::var(target));
    t.backward(loss);
    opt.step();
    opt.zero_grad();
    return loss.value()();
  };
  const float first = step();
  float last = first;
  for (int i = 0; i < 15; ++i) last = step();
  CHECK(last < 0.8f * first);
}
