// Tied weights through quantize_model: one table, two uses, each with its own kernel
// quantizer and spec entry; the sharing survives quantization.

#include <catch2/catch.hpp>

#include "../gradient_check.hpp"
#include "models.hpp"

#include <xtensor/xview.hpp>

namespace {

using xq::testing::uniform;
using lm_type = qtest::tied_lm<>;

lm_type built_lm() {
  xq::set_seed(4);
  lm_type lm(7, 4);
  xq::build(lm, {2, 3});
  return lm;
}

const xq::tensor tokens{{0, 3, 6}, {6, 1, 2}};

}  // namespace

TEST_CASE("the twin of a tied model keeps one table", "[quantize][tied]") {
  const lm_type lm = built_lm();
  auto q = xq::quantize_model(lm);
  static_assert(std::is_same_v<decltype(q.embed), xq::weight_quantized<xq::embedding>>);
  static_assert(std::is_same_v<decltype(q.project), xq::weight_quantized<xq::tied_projection>>);
  const xq::parameter* table = lm.embed.embeddings().get();
  CHECK(q.embed.float_layer().kernel().get() == table);
  CHECK(q.project.float_layer().kernel().get() == table);
  const auto params = xq::parameters(q);
  CHECK(std::count_if(params.begin(), params.end(), [&](const auto& p) { return p.get() == table; }) == 1);
  // NVIDIA's matrix has neither use: both off by default, the dense between them on.
  CHECK_FALSE(q.embed.weight_quantizer().enabled());
  CHECK_FALSE(q.project.weight_quantizer().enabled());
  CHECK(q.mix.weight_quantizer().enabled());
}

TEST_CASE("each use of a tied table is quantized or not on its own", "[quantize][tied]") {
  const lm_type lm = built_lm();
  const xq::tensor& table = lm.embed.embeddings()->value;
  SECTION("the lookup quantized, the projection not") {
    xq::quantization_spec spec;
    spec.add("embed");
    auto q = xq::quantize_model(lm, xq::quantization_mode::full, spec);
    CHECK(q.embed.weight_quantizer().enabled());
    CHECK_FALSE(q.embed.input_quantizer().enabled());  // ids are never quantized
    CHECK_FALSE(q.project.weight_quantizer().enabled());
    CHECK(q.embed.weight_quantizer().config().per_channel);
    CHECK(q.embed.weight_quantizer().config().channel_axis == 0);  // per row
    // The rows looked up are the per-row QDQ of the table.
    const xq::training_mode training(true);
    const xq::no_grad off;
    const xq::tensor rows = q.embed(xq::var(xq::tensor{3})).value();
    xq::tf::qdq_options o;
    o.range_given = o.narrow_range = o.per_axis = true;
    o.axis = 0;
    const xq::tensor amax = xt::amax(xt::abs(table), {1});
    const xq::tensor want = xq::tf::quantize_and_dequantize_v4(table, xq::tensor(-amax), amax, o);
    CHECK(xt::allclose(xt::view(rows, 0), xt::view(want, 3), 0.0, 0.0));
  }
  SECTION("the projection quantized, the lookup not") {
    xq::quantization_spec spec;
    spec.add("project", {false, true});
    auto q = xq::quantize_model(lm, xq::quantization_mode::partial, spec);
    CHECK_FALSE(q.embed.weight_quantizer().enabled());
    CHECK(q.project.weight_quantizer().enabled());
    CHECK_FALSE(q.project.input_quantizer().enabled());
    CHECK_FALSE(q.mix.weight_quantizer().enabled());  // partial: only what the spec names
    const xq::training_mode training(true);
    const xq::no_grad off;
    const xq::tensor lookup = q.embed(xq::var(xq::tensor{3})).value();
    CHECK(xt::allclose(xt::view(lookup, 0), xt::view(table, 3), 0.0, 0.0));  // float rows
  }
}

TEST_CASE("QAT on a tied model: both uses' gradients reach the one table", "[quantize][tied][gradient]") {
  const lm_type lm = built_lm();
  xq::quantize_options fine;  // both uses quantized, on a fine grid for central differences
  fine.spec.add("embed").add("project");
  fine.scheme.input.num_bits = fine.scheme.weight.num_bits = 24;
  auto q = xq::quantize_model(lm, fine);
  const xq::training_mode training(true);
  const auto params = xq::trainable_parameters(q);
  std::vector<std::shared_ptr<xq::variable_state>> wrt(params.begin(), params.end());
  const xq::var x(tokens);
  xq::testing::gradient_check_options opt;
  opt.eps = 1e-3f;
  xq::testing::check_gradients([&] { return q(x); }, wrt, opt, "quantized tied lm");
}
