// Batch-norm folding for QAT: the folded model computes what the float model does,
// the folded kernel is what gets fake-quantized, statistics freeze on schedule, and
// gradients are right; also inside nested composites and for a reused block.

#include <catch2/catch.hpp>

#include "../gradient_check.hpp"
#include "models.hpp"

namespace {

using xq::testing::uniform;

/// A scheme that quantizes nothing: folding alone.
xq::quantize_options fold_only() {
  xq::quantize_options o;
  o.scheme.layers.clear();
  o.fold_batch_norm = true;
  return o;
}

double max_abs_difference(const xq::tensor& a, const xq::tensor& b) {
  return xt::amax(xt::abs(a - b))();
}

}  // namespace

TEST_CASE("a folded nested model computes what the unfolded float model does", "[quantize][folding]") {
  xq::set_seed(21);
  qtest::net<> model;
  const xq::tensor::shape_type shape{3, 6, 6, 2};
  xq::build(model, shape);
  qtest::randomize_batch_norms(model, 5);
  auto twin = xq::quantize_model(model, fold_only(), shape);
  REQUIRE(twin.body.first.conv.folded());
  REQUIRE(twin.body.second.conv.folded());
  CHECK(twin.body.first.conv.folded() == twin.body.first.norm.folded());
  CHECK(twin.body.first.conv.folded()->gamma.get() == model.body.first.norm.gamma().get());
  CHECK_FALSE(twin.head.folded());  // dense -> nothing to fold

  const xq::tensor x = uniform(shape, -1, 1, 8);
  const xq::no_grad off;
  {
    const xq::training_mode inference(false);
    CHECK(max_abs_difference(model(xq::var(x)).value(), twin(xq::var(x)).value()) <= 1e-5);
  }
  {  // batch statistics (each call also updates the moving ones, the same way in both)
    const xq::training_mode training(true);
    const xq::tensor a = model(xq::var(x)).value();
    const xq::tensor mean_after_float = model.body.first.norm.moving_mean()->value;
    qtest::randomize_batch_norms(model, 5);  // back to the same statistics for the twin's call
    const xq::tensor b = twin(xq::var(x)).value();
    CHECK(max_abs_difference(a, b) <= 1e-5);
    CHECK(max_abs_difference(model.body.first.norm.moving_mean()->value, mean_after_float) <= 1e-6);
  }
}

TEST_CASE("the folded kernel is what gets fake-quantized, per output channel", "[quantize][folding]") {
  xq::set_seed(4);
  qtest::conv_bn<> block(5);
  const xq::tensor::shape_type shape{2, 5, 5, 3};
  xq::build(block, shape);
  qtest::randomize_batch_norms(block, 11);
  xq::quantize_options o;
  o.fold_batch_norm = true;
  auto twin = xq::quantize_model(block, o, shape);
  REQUIRE(twin.conv.folded());
  const auto& bn = block.norm;
  const xq::tensor variance = bn.moving_variance()->value;  // the call updates it after folding
  const xq::training_mode training(true);
  const xq::no_grad off;
  twin(xq::var(uniform(shape)));
  const auto& k = block.conv.kernel()->value;  // (3, 3, 3, 5)
  const auto& range = twin.conv.weight_quantizer().max();
  REQUIRE(range.size() == 5);
  for (std::size_t f = 0; f < 5; ++f) {
    const float s = bn.gamma()->value(f) / std::sqrt(variance(f) + bn.epsilon());
    float amax = 0;
    for (std::size_t i = 0; i < k.size() / 5; ++i) amax = std::max(amax, std::abs(k.data()[i * 5 + f] * s));
    INFO("channel " << f);
    CHECK(range(f) == Approx(amax).epsilon(1e-6));
  }
}

TEST_CASE("folded batch norms freeze their statistics after the configured step", "[quantize][folding]") {
  xq::set_seed(9);
  qtest::conv_bn<> block(3);
  const xq::tensor::shape_type shape{4, 4, 4, 2};
  xq::build(block, shape);
  xq::quantize_options o = fold_only();
  o.freeze_batch_norm_after = 2;
  auto twin = xq::quantize_model(block, o, shape);
  const xq::training_mode training(true);
  const xq::no_grad off;
  auto mean = [&] { return xq::tensor(block.norm.moving_mean()->value); };
  const xq::tensor m0 = mean();
  twin(xq::var(uniform(shape, -1, 1, 1)));
  const xq::tensor m1 = mean();
  CHECK_FALSE(xt::allclose(m0, m1, 0.0, 0.0));  // call 1: batch statistics, updated
  twin(xq::var(uniform(shape, -1, 1, 2)));       // call 2 reaches the freeze step
  const xq::tensor m2 = mean();
  const xq::tensor x = uniform(shape, -1, 1, 3);
  const xq::tensor y_training = twin(xq::var(x)).value();
  CHECK(xt::allclose(mean(), m2, 0.0, 0.0));  // frozen: no update
  const xq::training_mode inference(false);
  CHECK(max_abs_difference(y_training, twin(xq::var(x)).value()) == 0.0);  // moving statistics used
  CHECK(twin.conv.folded()->training_calls == 3);
}

TEST_CASE("gradients through a folded block and a reused folded block", "[quantize][folding][gradient]") {
  xq::set_seed(2);
  qtest::hourglass<> model;
  const xq::tensor::shape_type shape{2, 5, 5, 4};
  xq::build(model, shape);
  qtest::randomize_batch_norms(model, 3);
  model.block.norm.momentum(1.0f);  // moving statistics constant across the check's calls
  auto twin = xq::quantize_model(model, fold_only(), shape);
  REQUIRE(twin.block.conv.folded());  // the block is called twice; the pairing holds for both calls
  const xq::tensor x = uniform(shape, -1, 1, 4);
  {
    const xq::no_grad off;
    const xq::training_mode inference(false);
    CHECK(max_abs_difference(model(xq::var(x)).value(), twin(xq::var(x)).value()) <= 1e-5);
  }
  const xq::training_mode training(true);
  xq::var in(x, true);
  std::vector<std::shared_ptr<xq::variable_state>> wrt{in.state()};
  for (auto& p : xq::trainable_parameters(twin)) wrt.push_back(p);
  xq::testing::gradient_check_options opt;
  opt.eps = 1e-3f;  // small enough not to step over relu kinks
  xq::testing::check_gradients([&] { return twin(in); }, wrt, opt, "folded hourglass");
}

namespace {
/// depthwise -> bn and dense -> bn, the other two layers that fold.
template <class Depthwise = xq::depthwise_conv2d, class Norm = xq::batch_norm, class Pool = xq::global_average_pool2d,
          class Dense = xq::dense, class Norm2 = xq::batch_norm>
struct depthwise_and_dense {
  Depthwise depthwise{xq::depthwise_conv2d(3, 2).padding(xq::padding::same)};
  Norm norm;
  Pool pool;
  Dense dense{xq::dense(5)};
  Norm2 norm2;
  XQ_CHILDREN(depthwise, norm, pool, dense, norm2)
  xq::var operator()(const xq::var& x) { return norm2(dense(pool(norm(depthwise(x))))); }
};
}  // namespace

TEST_CASE("depthwise_conv2d and dense fold their batch norms too", "[quantize][folding]") {
  xq::set_seed(31);
  depthwise_and_dense<> model;
  const xq::tensor::shape_type shape{3, 5, 5, 3};
  xq::build(model, shape);
  qtest::randomize_batch_norms(model, 17);
  auto twin = xq::quantize_model(model, fold_only(), shape);
  REQUIRE(twin.depthwise.folded());  // 3 channels x multiplier 2 = 6 folded scales
  REQUIRE(twin.dense.folded());
  const xq::tensor x = uniform(shape, -1, 1, 2);
  const xq::no_grad off;
  const xq::training_mode inference(false);
  CHECK(max_abs_difference(model(xq::var(x)).value(), twin(xq::var(x)).value()) <= 1e-5);

  // Quantized: the depthwise kernel (3, 3, 3, 2) is fake-quantized per input channel
  // (NVIDIA's axis 2) after folding its 6 output-channel scales in.
  xq::quantize_options o;
  o.fold_batch_norm = true;
  auto q = xq::quantize_model(model, o, shape);
  const xq::training_mode training(true);
  q(xq::var(x));
  CHECK(q.depthwise.weight_quantizer().max().size() == 3);
}
