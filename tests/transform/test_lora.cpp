// LoRA adapters in QAT (transform/lora.hpp, wrappers/low_rank_adapter.hpp): the adapter's
// gradient against finite differences, a twin that starts where it was, trains its adapters
// alone (the base untouched), merges without changing a bit of what it computes, clones with
// its own adapters, refuses deployment unmerged and lowers with parity once merged.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/transform/lora.hpp>
#include <xquant/transform/low_bit_schemes.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../gradient_check.hpp"

namespace {

using xq::testing::uniform;

auto small_net() {
  return xq::sequential(xq::conv2d(8, 3).name("conv"), xq::relu(), xq::flatten(), xq::dense(16).name("hidden"),
                        xq::relu(), xq::dense(4).name("logits"));
}

xq::dataset toy_data(std::size_t n, unsigned seed) {
  xq::tensor x = uniform({n, 6, 6, 2}, -1.0f, 1.0f, seed);
  xq::tensor y = xt::zeros<float>({n});
  for (std::size_t i = 0; i < n; ++i) y(i) = float((x(i, 1, 1, 0) > 0 ? 1 : 0) + (x(i, 4, 4, 1) > 0 ? 2 : 0));
  return xq::dataset{std::move(x), std::move(y)};
}

bool same_bits(const xq::tensor& a, const xq::tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

template <class Model>
xq::tensor infer(Model& model, const xq::tensor& x) {
  const xq::no_grad off;
  const xq::training_mode inference(false);
  return model(xq::var(x)).value();
}

}  // namespace

TEST_CASE("add_low_rank: K + scale A.B, its gradient in K, A and B", "[lora]") {
  xq::low_rank_adapter a = xq::make_low_rank_adapter({3, 3, 2, 5}, 2, 6.0f, 3, "conv");
  CHECK(a.scale == 3.0f);
  CHECK(a.down->name() == "conv/lora_a");
  CHECK(a.up->name() == "conv/lora_b");
  a.up->value = uniform({2, 5}, -1.0f, 1.0f, 4);
  const xq::parameter_ptr k = xq::make_parameter("kernel", uniform({3, 3, 2, 5}, -1.0f, 1.0f, 5));
  const xq::tensor merged = xq::merged_kernel(k->value, a, "conv");
  // The closed form, element by element.
  for (std::size_t r = 0; r < 18; ++r)
    for (std::size_t c = 0; c < 5; ++c) {
      double s = 0;
      for (std::size_t j = 0; j < 2; ++j) s += double(a.down->value(r, j)) * double(a.up->value(j, c));
      CHECK(merged.data()[r * 5 + c] == Approx(k->value.data()[r * 5 + c] + 3.0 * s).margin(1e-5));
    }
  xq::testing::check_gradients([&] { return xq::ops::add_low_rank(xq::var(k), a, "conv"); },
                               {xq::testing::state_of(k), xq::testing::state_of(a.down), xq::testing::state_of(a.up)});
  CHECK_THROWS_AS(xq::make_low_rank_adapter({4, 3}, 4, 1.0f, 0, "d"), xq::argument_error);
  CHECK_THROWS_AS(xq::make_low_rank_adapter({4, 3}, 0, 1.0f, 0, "d"), xq::argument_error);
  CHECK_THROWS_AS(xq::make_low_rank_adapter({4}, 1, 1.0f, 0, "d"), xq::shape_error);
}

TEST_CASE("a twin with LoRA adapters trains them alone and merges without changing a bit", "[lora]") {
  auto model = small_net();
  xq::build(model, {1, 6, 6, 2});
  xq::quantize_options q;
  q.scheme = xq::schemes::nvfp4_weight_only();
  auto twin = xq::quantize_model(model, q, {1, 6, 6, 2});
  const xq::dataset data = toy_data(96, 1);
  const xq::tensor before = infer(twin, data.inputs);

  xq::lora_options lo;
  lo.rank = 4;
  CHECK(xq::add_lora_adapters(twin, lo) == 3);
  // B starts at zero: the twin computes what it did.
  CHECK(same_bits(infer(twin, data.inputs), before));
  const auto adapters = xq::lora_parameters(twin);
  REQUIRE(adapters.size() == 6);
  CHECK(adapters[0]->name() == "conv/lora_a");
  CHECK(adapters[5]->name() == "logits/lora_b");
  CHECK(adapters[1]->value.shape() == xq::tensor::shape_type{4, 8});
  // The adapters are the layer's parameters (checkpoints, summaries); the base kernels frozen.
  std::vector<std::string> names;
  for (const auto& p : xq::parameters(twin)) names.push_back(p->name());
  CHECK(std::find(names.begin(), names.end(), "hidden/lora_a") != names.end());
  CHECK_FALSE(model.get<3>().kernel()->trainable());
  CHECK(model.get<3>().bias()->trainable());

  // Train the adapters alone.
  const xq::tensor hidden_kernel = model.get<3>().kernel()->value;
  const double start = xq::evaluate(twin, xq::sparse_softmax_cross_entropy, data).loss;
  xq::adam_options ao;
  ao.learning_rate = 1e-2f;
  xq::adam opt(adapters, ao);
  xq::fit_options fo;
  fo.epochs = 15;
  fo.batch_size = 32;
  fo.verbose = false;
  xq::fit(twin, opt, xq::sparse_softmax_cross_entropy, data, fo);
  const double trained = xq::evaluate(twin, xq::sparse_softmax_cross_entropy, data).loss;
  CHECK(trained < start);
  CHECK(same_bits(model.get<3>().kernel()->value, hidden_kernel));  // the base did not move

  // A clone has adapters of its own.
  auto copy = xq::clone_model(twin);
  const auto copy_adapters = xq::lora_parameters(copy);
  REQUIRE(copy_adapters.size() == 6);
  CHECK(copy_adapters[0] != adapters[0]);
  CHECK(same_bits(copy_adapters[0]->value, adapters[0]->value));

  // Deployment waits for the merge, and says so.
  CHECK_THROWS_WITH(xq::deploy::lower(twin, {6, 6, 2}), Catch::Contains("merge_lora_adapters"));
  const xq::tensor adapted = infer(twin, data.inputs);
  CHECK(xq::merge_lora_adapters(twin) == 3);
  CHECK(xq::lora_parameters(twin).empty());
  CHECK(model.get<3>().kernel()->trainable());
  CHECK_FALSE(same_bits(model.get<3>().kernel()->value, hidden_kernel));
  CHECK(same_bits(infer(twin, data.inputs), adapted));

  // The merged twin lowers, and the engine computes what the simulation does.
  xq::deploy::lower_options simulated;
  simulated.low_bit = xq::deploy::low_bit_product::simulated;
  const auto engine = xq::deploy::lower(twin, {6, 6, 2}, simulated);
  const xq::deploy::parity_report report = xq::deploy::parity(twin, engine, data.inputs);
  INFO(report.table());
  CHECK(report.output_identical == report.output_elements);
}

TEST_CASE("LoRA adapters beside a trainable base, and on listed layers only", "[lora]") {
  auto model = small_net();
  xq::build(model, {1, 6, 6, 2});
  auto twin = xq::quantize_model(model, {}, {1, 6, 6, 2});
  xq::lora_options lo;
  lo.rank = 2;
  lo.freeze_base = false;
  lo.layers = {"hidden"};
  CHECK(xq::add_lora_adapters(twin, lo) == 1);
  CHECK(model.get<3>().kernel()->trainable());
  CHECK(xq::lora_parameters(twin).size() == 2);
  lo.layers = {"nowhere"};
  CHECK_THROWS_WITH(xq::add_lora_adapters(twin, lo), Catch::Contains("nowhere"));
}
