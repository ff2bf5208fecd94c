// Models with several inputs and outputs (core/model_call.hpp) through build, summarize,
// fit, evaluate, predict, checkpoints, clone and quantize_model: a siamese pair (one
// feature extractor applied to two images) and an (input, mask) model with two heads.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/model.hpp>
#include <xquant/io/checkpoint.hpp>
#include <xquant/layers/broadcasting.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/global_average_pool2d.hpp>
#include <xquant/layers/multiply.hpp>
#include <xquant/quantizers/model_quantizers.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../test_support.hpp"

namespace {

using xq::testing::message_of;
using xq::testing::same_bits;

const xq::input_shapes pair_shapes{{1, 6, 6, 1}, {1, 6, 6, 1}};

/// One feature extractor applied to both images, the difference of their pooled
/// features, a 2-way head: "is the first image the brighter one?".
template <class Conv = xq::conv2d, class Pool = xq::global_average_pool2d, class Sub = xq::subtract,
          class Head = xq::dense>
struct siamese {
  Conv features{xq::conv2d(4, 3)};
  Pool pool;
  Sub difference;
  Head head{xq::dense(2)};
  XQ_CHILDREN(features, pool, difference, head)
  xq::var operator()(const xq::var& a, const xq::var& b) {
    return head(difference(pool(features(a)), pool(features(b))));
  }
};

/// An input and its mask in, a class and a reconstruction out.
template <class Mul = xq::multiply, class Dense = xq::dense>
struct masked_heads {
  Mul masking;
  Dense classify{xq::dense(3)};
  Dense reconstruct{xq::dense(4)};
  XQ_CHILDREN(masking, classify, reconstruct)
  std::pair<xq::var, xq::var> operator()(const xq::var& x, const xq::var& mask) {
    const xq::var h = masking(x, mask);
    return {classify(h), reconstruct(h)};
  }
};

siamese<> built_siamese(unsigned seed = 3) {
  xq::set_seed(seed);
  siamese<> m;
  xq::build(m, pair_shapes);
  return m;
}

/// n pairs of 6x6 images of uniform noise around two brightness levels; label 1 when
/// the first is the brighter.
xq::dataset brightness_pairs(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> level(0.0f, 1.0f), noise(-0.1f, 0.1f);
  xq::tensor a = xq::tensor::from_shape({n, 6, 6, 1}), b = xq::tensor::from_shape({n, 6, 6, 1});
  xq::tensor y = xq::tensor::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    const float la = level(rng), lb = level(rng);
    for (std::size_t p = 0; p < 36; ++p) {
      a.data()[i * 36 + p] = la + noise(rng);
      b.data()[i * 36 + p] = lb + noise(rng);
    }
    y(i) = la > lb ? 1.0f : 0.0f;
  }
  return xq::dataset::of({std::move(a), std::move(b)}, {std::move(y)});
}

/// The model's outputs on the whole dataset at once, in inference mode.
template <class Model>
xq::var_list outputs_at_once(Model& m, const xq::dataset& d) {
  const xq::no_grad off;
  const xq::training_mode inference(false);
  xq::var_list inputs;
  for (std::size_t k = 0; k < d.input_count(); ++k) inputs.emplace_back(d.input(k));
  return xq::call_model(m, inputs);
}

}  // namespace

TEST_CASE("a two-input model builds, summarizes and predicts", "[train][multi_io]") {
  auto m = built_siamese();
  CHECK(xq::count_parameters(m) == 3 * 3 * 1 * 4 + 4 + 4 * 2 + 2);

  const xq::model_summary s = xq::summarize(m, pair_shapes);
  REQUIRE(s.layers.size() == 4);
  CHECK(s.layers[0].name == "features");
  CHECK(s.layers[3].name == "head");
  CHECK(s.layers[3].output_shape == std::vector<std::ptrdiff_t>{-1, 2});

  const xq::dataset d = brightness_pairs(5, 1);
  const std::vector<xq::tensor> out = xq::predict(m, std::vector<xq::tensor>{d.inputs, d.extra_inputs[0]}, 2);
  REQUIRE(out.size() == 1);
  CHECK(same_bits(out[0], outputs_at_once(m, d)[0].value()));

  // The one-tensor predict and a wrong count of inputs say what the model takes.
  const std::string one = message_of([&] { (void)xq::predict(m, d.inputs); });
  CHECK(one.find("a model taking 2 inputs") != std::string::npos);
  CHECK(one.find("given 1 input") != std::string::npos);
  const std::string three =
      message_of([&] { xq::build(m, xq::input_shapes{{1, 6, 6, 1}, {1, 6, 6, 1}, {1, 6, 6, 1}}); });
  CHECK(three.find("xq::build") != std::string::npos);
  CHECK(three.find("3 inputs") != std::string::npos);
}

TEST_CASE("fit and evaluate train a two-input model", "[train][multi_io]") {
  auto m = built_siamese();
  const xq::dataset train = brightness_pairs(512, 2), test = brightness_pairs(200, 3);
  xq::adam_options ao;
  ao.learning_rate = 0.02f;
  xq::adam opt(xq::trainable_parameters(m), ao);
  xq::fit_options fo;
  fo.epochs = 8;
  fo.batch_size = 32;
  fo.verbose = false;
  const auto history = xq::fit(m, opt, xq::sparse_softmax_cross_entropy, train, fo);
  CHECK(history.epochs.back().loss < history.epochs.front().loss);
  const xq::evaluation e = xq::evaluate(m, xq::sparse_softmax_cross_entropy, test, 64);
  CHECK(e.samples == 200);
  CHECK(e.metric.value_or(0) > 0.9);

  // evaluate's batched mean is the loss of the whole set at once.
  const xq::var whole = xq::sparse_softmax_cross_entropy(outputs_at_once(m, test)[0], xq::var(test.targets));
  CHECK(e.loss == Approx(whole.value()()).epsilon(1e-5));

  // The same seed and weights give the same weights again: the pairs' rows stay together.
  auto a = built_siamese(), b = built_siamese();
  xq::adam oa(xq::trainable_parameters(a)), ob(xq::trainable_parameters(b));
  fo.epochs = 1;
  xq::fit(a, oa, xq::sparse_softmax_cross_entropy, train, fo);
  xq::fit(b, ob, xq::sparse_softmax_cross_entropy, train, fo);
  CHECK(same_bits(a.head.kernel()->value, b.head.kernel()->value));

  // Rows that do not match are refused before anything is done.
  xq::dataset bad = train;
  bad.extra_inputs[0] = xq::tensor::from_shape({100, 6, 6, 1});
  const std::string msg = message_of([&] { xq::fit(a, oa, xq::sparse_softmax_cross_entropy, bad, fo); });
  CHECK(msg.find("input 1 of shape (512, ...)") != std::string::npos);
  CHECK(msg.find("(100, 6, 6, 1)") != std::string::npos);
}

TEST_CASE("a model with two outputs: one loss for each, a loss over both, predict", "[train][multi_io]") {
  xq::set_seed(5);
  masked_heads<> m;
  xq::build(m, xq::input_shapes{{1, 4}, {1, 4}});
  std::mt19937 rng(9);
  std::normal_distribution<float> g;
  const std::size_t n = 40;
  xq::tensor x = xq::tensor::from_shape({n, 4}), mask = xq::tensor::from_shape({n, 4});
  xq::tensor label = xq::tensor::from_shape({n}), target = xq::tensor::from_shape({n, 4});
  for (std::size_t i = 0; i < n * 4; ++i) {
    x.data()[i] = g(rng);
    mask.data()[i] = (i % 3) ? 1.0f : 0.0f;
    target.data()[i] = x.data()[i] * mask.data()[i];
  }
  for (std::size_t i = 0; i < n; ++i) label(i) = static_cast<float>(i % 3);
  const xq::dataset d = xq::dataset::of({x, mask}, {label, target});

  const std::vector<xq::tensor> out = xq::predict(m, std::vector<xq::tensor>{x, mask}, 16);
  REQUIRE(out.size() == 2);
  CHECK(out[0].shape() == xq::tensor::shape_type{n, 3});
  CHECK(out[1].shape() == xq::tensor::shape_type{n, 4});
  const xq::var_list direct = outputs_at_once(m, d);
  CHECK(same_bits(out[1], direct[1].value()));

  // A loss over the lists: cross-entropy on the class plus MSE on the reconstruction.
  auto both = [](const xq::var_list& y, const xq::var_list& t) {
    return xq::ops::add(xq::sparse_softmax_cross_entropy(y[0], t[0]), xq::mean_squared_error(y[1], t[1]));
  };
  const double expected = xq::sparse_softmax_cross_entropy(direct[0], xq::var(label)).value()() +
                          xq::mean_squared_error(direct[1], xq::var(target)).value()();
  CHECK(xq::evaluate(m, both, d, 7, {}).loss == Approx(expected).epsilon(1e-5));

  // One two-argument loss applies to every output (Keras), summed.
  xq::dataset regression = xq::dataset::of({x, mask}, {xq::tensor(xt::zeros<float>({n, std::size_t{3}})), target});
  const double mse_sum = xq::mean_squared_error(direct[0], xq::var(regression.targets)).value()() +
                         xq::mean_squared_error(direct[1], xq::var(target)).value()();
  CHECK(xq::evaluate(m, xq::mean_squared_error, regression, 16, {}).loss == Approx(mse_sum).epsilon(1e-5));

  // Training on the sum lowers it; a missing target is named.
  xq::adam opt(xq::trainable_parameters(m));
  xq::fit_options fo;
  fo.epochs = 20;
  fo.batch_size = 8;
  fo.verbose = false;
  fo.metric = {};
  const auto h = xq::fit(m, opt, both, d, fo);
  CHECK(h.epochs.back().loss < h.epochs.front().loss);
  const xq::dataset one_target = xq::dataset::of({x, mask}, {label});
  const std::string msg = message_of([&] { (void)xq::evaluate(m, xq::mean_squared_error, one_target, 16, {}); });
  CHECK(msg.find("one target per model output (2)") != std::string::npos);
}

TEST_CASE("checkpoints and clones of a two-input model", "[train][multi_io][io]") {
  auto m = built_siamese(3);
  const xq::dataset d = brightness_pairs(8, 4);
  const xq::tensor before = outputs_at_once(m, d)[0].value();

  xq::testing::temp_dir dir;
  xq::save_checkpoint(dir / "siamese.xqc", m);
  auto other = built_siamese(11);  // different weights
  CHECK_FALSE(same_bits(outputs_at_once(other, d)[0].value(), before));
  xq::load_checkpoint(dir / "siamese.xqc", other);
  CHECK(same_bits(outputs_at_once(other, d)[0].value(), before));

  auto copy = xq::clone_model(m);
  CHECK(same_bits(outputs_at_once(copy, d)[0].value(), before));
  copy.features.kernel()->value *= 2.0f;  // the clone owns its weights
  CHECK(same_bits(outputs_at_once(m, d)[0].value(), before));
  CHECK_FALSE(same_bits(outputs_at_once(copy, d)[0].value(), before));
}

TEST_CASE("quantize_model traces a two-input model: the shared extractor gets a range per call site",
          "[train][multi_io][quantize]") {
  auto m = built_siamese(3);
  xq::quantize_options o;
  o.per_call_site_ranges = true;  // the trace sees the conv called twice
  auto twin = xq::quantize_model(m, o, pair_shapes);
  const xq::dataset d = brightness_pairs(16, 5);
  const std::vector<xq::tensor> out = xq::predict(twin, std::vector<xq::tensor>{d.inputs, d.extra_inputs[0]});
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape() == xq::tensor::shape_type{16, 2});
  // The float and the fake-quantized outputs are close (8 bits) but not the same.
  const xq::tensor f = outputs_at_once(m, d)[0].value();
  float largest = 0;
  for (std::size_t i = 0; i < f.size(); ++i) largest = std::max(largest, std::abs(f.data()[i] - out[0].data()[i]));
  CHECK(largest < 0.05f);
  std::vector<std::string> conv_inputs;
  xq::for_each_quantizer(twin, [&](const xq::fake_quantizer& q) {
    if (q.enabled() && q.path().find("features/input_quantizer") != std::string::npos) conv_inputs.push_back(q.path());
  });
  INFO(conv_inputs.size());
  CHECK(conv_inputs.size() == 2);  // one per call of the shared conv
}
