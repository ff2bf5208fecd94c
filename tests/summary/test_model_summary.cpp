// xq::summarize / xq::print_summary against larq.models.summary: Larq's snapshot model
// (golden text printed by Larq 0.14, tools/gen_golden_larq_summary.py), a nested model
// as one row, a float CNN, bit widths other than 1/2/32; then what Larq cannot show:
// nested sequentials, a non-sequential model, a layer called twice, tied weights, the
// op observer itself, Larq's number formats.
#include <catch2/catch.hpp>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <xquant/core/model.hpp>
#include <xquant/core/op_observer.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/conv2d_transpose.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/depthwise_conv2d.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/max_pool2d.hpp>
#include <xquant/wrappers/quant_conv2d.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xquant/wrappers/quant_depthwise_conv2d.hpp>
#include <xquant/wrappers/quant_separable_conv2d.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/layers/tied_dense.hpp>
#include <xquant/quantizers/dorefa.hpp>
#include <xquant/quantizers/lsq_quantizer.hpp>
#include <xquant/quantizers/noop_quantizer.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/quantizers/ste_tern.hpp>
#include <xquant/summary/print_summary.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/transform/quantize_model.hpp>

#ifndef XQ_GOLDEN_DIR
#error "XQ_GOLDEN_DIR must point at tests/data/golden"
#endif

namespace {

using xq::padding;

/// Larq's printed text for a case of tests/data/golden/larq_summary.json.
std::string larq_text(const std::string& name) {
  std::ifstream in(std::string(XQ_GOLDEN_DIR) + "/larq_summary.json");
  REQUIRE(in);
  const auto j = nlohmann::json::parse(in);
  for (const auto& c : j.at("cases"))
    if (c.at("name") == name) return c.at("text").get<std::string>();
  FAIL("no golden case " << name);
  return {};
}

/// The profile model's QuantDepthwiseConv2D: SteTern input and kernel, strides 3, same
/// padding with 1s, no bias.
xq::quant_depthwise_conv2d<xq::ste_tern, xq::ste_tern> ternary_depthwise() {
  auto dw = xq::quant_depthwise_conv2d<xq::ste_tern, xq::ste_tern>(3);
  dw.strides(3).padding(padding::same).pad_values(1.0f).use_bias(false);
  return dw;
}

/// larq/models_test.py's get_profile_model, built in xquant.
auto profile_model() {
  return xq::sequential(
      xq::quant_conv2d<xq::no_quantizer, xq::ste_sign>(32, 3).padding(padding::same),
      xq::max_pool2d(2).name("max_pooling2d"),
      ternary_depthwise(),
      xq::batch_norm(true, false),
      xq::quant_separable_conv2d<xq::ste_sign, xq::ste_sign, xq::ste_sign>(32, 3).padding(padding::same),
      xq::flatten(), xq::dense(10));
}

/// Keras's `trainable=False` on a layer: built first, then its parameters frozen.
template <class Model, class Layer>
void freeze(Model& model, Layer& layer, const xq::tensor::shape_type& input_shape) {
  xq::build(model, input_shape);
  for (const auto& p : layer.parameters())
    if (p) p->set_trainable(false);
}

std::vector<std::ptrdiff_t> shape(std::initializer_list<std::ptrdiff_t> s) { return s; }

}  // namespace

TEST_CASE("summary of Larq's profile model matches its snapshot", "[summary][larq]") {
  auto model = profile_model();
  freeze(model, model.get<6>(), {1, 64, 64, 1});
  const xq::model_summary s = xq::summarize(model, {1, 64, 64, 1});

  CHECK(xq::to_string(s) == larq_text("profile_model"));

  // The figures behind the text (larq/models_test.py's test_layer_profile).
  REQUIRE(s.layers.size() == 7);
  const std::vector<std::string> names = {"quant_conv2d",           "max_pooling2d", "quant_depthwise_conv2d",
                                          "batch_normalization",    "quant_separable_conv2d", "flatten", "dense"};
  const std::vector<std::optional<int>> input_precision = {std::nullopt, std::nullopt, 2, std::nullopt, 1,
                                                           std::nullopt, std::nullopt};
  const std::vector<std::vector<std::ptrdiff_t>> outputs = {shape({-1, 64, 64, 32}), shape({-1, 32, 32, 32}),
                                                            shape({-1, 11, 11, 32}), shape({-1, 11, 11, 32}),
                                                            shape({-1, 11, 11, 32}), shape({-1, 3872}),
                                                            shape({-1, 10})};
  const std::vector<std::size_t> params = {320, 0, 288, 64, 1344, 0, 38730};
  const std::vector<std::uint64_t> memory_bits = {288 + 32 * 32, 0, 2 * 288, 32 * 64, 1312 + 32 * 32, 0,
                                                  32 * 38730};
  const std::vector<std::uint64_t> macs = {288 * 64 * 64, 0, 288 * 11 * 11, 0, 1312 * 11 * 11, 0, 38720};
  for (std::size_t i = 0; i < 7; ++i) {
    INFO("row " << i);
    CHECK(s.layers[i].name == names[i]);
    CHECK(s.layers[i].input_precision == input_precision[i]);
    REQUIRE(s.layers[i].output_shape);
    CHECK(*s.layers[i].output_shape == outputs[i]);
    CHECK(s.layers[i].weight_count() == params[i]);
    CHECK(s.layers[i].memory_bits() == memory_bits[i]);
    CHECK(s.layers[i].mac_count() == macs[i]);
    CHECK(s.layers[i].macs_known);
  }
  CHECK(s.layers[0].macs.at(32) == 1179648);
  CHECK(s.layers[2].macs.at(2) == 34848);
  CHECK(s.layers[4].macs.at(1) == 158752);
  CHECK(s.layers[4].weight_count(1) == 1312);
  CHECK(s.layers[4].weight_count(32) == 32);
  CHECK(s.layers[3].weight_count(std::nullopt, true) == 0);  // beta dropped: moving stats only

  CHECK(s.param_bitwidths() == std::vector<int>{1, 2, 32});
  CHECK(s.mac_precisions() == std::vector<int>{1, 2, 32});
  CHECK(s.weight_count(1) == 1600);
  CHECK(s.weight_count(2) == 288);
  CHECK(s.weight_count(32) == 38858);
  CHECK(s.total_params() == 40746);
  CHECK(s.trainable_params() == 1952);
  CHECK(s.non_trainable_params() == 38794);
  CHECK(s.memory_bits() == 1245632);
  CHECK(s.int8_fp_memory_bits() == 313040);
  CHECK(s.fp32_memory_bits() == 32 * 40746);
  CHECK(s.mac_count() == 1411968);
  CHECK(xq::detail::format_double("%.4f", s.binarized_mac_ratio()) == "0.1124");
  CHECK(xq::detail::format_double("%.4f", s.ternarized_mac_ratio()) == "0.0247");
  CHECK(xq::detail::format_double("%.2f", s.compression_ratio()) == "0.96");
}

TEST_CASE("summary without MACs drops only the MAC rows of the second table", "[summary][larq]") {
  auto model = profile_model();
  freeze(model, model.get<6>(), {1, 64, 64, 1});
  CHECK(xq::to_string(xq::summarize(model, {2, 64, 64, 1}), false) == larq_text("profile_model_no_macs"));
}

namespace {
/// Layers 2..4 of the profile model as one composite (Larq's get_submodel_profile_model,
/// where they are a nested Keras Sequential named "sequential_1").
struct middle_block {
  xq::quant_depthwise_conv2d<xq::ste_tern, xq::ste_tern> dw = ternary_depthwise();
  xq::batch_norm norm{true, false};
  xq::quant_separable_conv2d<xq::ste_sign, xq::ste_sign, xq::ste_sign> sep =
      xq::quant_separable_conv2d<xq::ste_sign, xq::ste_sign, xq::ste_sign>(32, 3).padding(padding::same);
  XQ_CHILDREN(dw, norm, sep)
  std::string name() const { return "sequential_1"; }
  xq::var operator()(const xq::var& x) { return sep(norm(dw(x))); }
};
}  // namespace

TEST_CASE("summary shows a composite element as one row summing its leaves", "[summary][larq]") {
  auto model = xq::sequential(xq::quant_conv2d<xq::no_quantizer, xq::ste_sign>(32, 3).padding(padding::same),
                              xq::max_pool2d(2).name("max_pooling2d"), middle_block(), xq::flatten(), xq::dense(10))
                   .name("sequential_2");
  freeze(model, model.get<4>(), {1, 64, 64, 1});
  const xq::model_summary s = xq::summarize(model, {1, 64, 64, 1});
  CHECK(xq::to_string(s) == larq_text("submodel"));
  REQUIRE(s.layers.size() == 5);
  CHECK(s.layers[2].name == "sequential_1");
  CHECK(s.layers[2].input_precision == 2);  // its first leaf's
  CHECK(s.layers[2].mac_count(2) == 34848);
  CHECK(s.layers[2].mac_count(1) == 158752);
}

TEST_CASE("summary of a float CNN counts 32-bit weights and MACs", "[summary][larq]") {
  auto model = xq::sequential(xq::conv2d(8, 3).padding(padding::same), xq::max_pool2d(2).name("max_pooling2d"),
                              xq::flatten(), xq::dense(4));
  const xq::model_summary s = xq::summarize(model, {1, 10, 10, 3});  // builds the model
  CHECK(xq::to_string(s) == larq_text("float_cnn"));
  REQUIRE(s.layers.size() == 4);
  CHECK(s.layers[0].weight_count(32) == 3 * 3 * 3 * 8 + 8);
  CHECK(s.layers[0].macs.at(32) == 3 * 3 * 3 * 8 * 10 * 10);
  CHECK(s.layers[3].macs.at(32) == 200 * 4);
  CHECK(s.layers[1].macs.empty());
  CHECK(s.mac_precisions() == std::vector<int>{32});
  CHECK(s.binarized_mac_ratio() == 0.0);
  CHECK(model.get<0>().kernel()->name() == "conv2d/kernel");
}

TEST_CASE("summary has a column for every bit width present", "[summary][larq]") {
  // Larq: input DoReFa(k_bit=4), kernel NoOp(precision=8); input NoOp(3), kernel DoReFa(k_bit=5).
  auto model = xq::sequential(
      xq::quant_conv2d<xq::dorefa, xq::noop_quantizer>(16, 3, xq::dorefa(4), xq::noop_quantizer(8))
          .padding(padding::same),
      xq::flatten(),
      xq::quant_dense<xq::noop_quantizer, xq::dorefa>(10, xq::noop_quantizer(3),
                                                      xq::dorefa(5, xq::dorefa_mode::weights)),
      xq::dense(2));
  freeze(model, model.get<3>(), {1, 8, 8, 3});
  const xq::model_summary s = xq::summarize(model, {1, 8, 8, 3});
  CHECK(xq::to_string(s) == larq_text("any_bits"));
  CHECK(s.param_bitwidths() == std::vector<int>{5, 8, 32});
  CHECK(s.mac_precisions() == std::vector<int>{5, 8, 32});
  CHECK(s.layers[0].macs.at(8) == 3 * 3 * 3 * 16 * 8 * 8);  // max(4, 8)
  CHECK(s.layers[2].macs.at(5) == 1024 * 10);                // max(3, 5)
  CHECK(s.layers[2].input_precision == 3);
}

TEST_CASE("summary counts a quantizer's own parameters as 32-bit in its layer's row", "[summary]") {
  // An 8-bit LSQ kernel quantizer: kernel 8-bit, bias and the learned scale 32-bit; a
  // standalone LSQ quantizer is a row with its scale.
  auto model = xq::sequential(xq::lsq_quantizer(4),
                              xq::quant_dense<xq::no_quantizer, xq::lsq_quantizer>(4, {}, xq::lsq_quantizer(8)));
  const xq::model_summary s = xq::summarize(model, {1, 5});
  REQUIRE(s.layers.size() == 2);
  CHECK(s.layers[0].name == "lsq_quantizer");
  CHECK(s.layers[0].weight_count(32) == 1);
  CHECK(s.layers[0].weights[0].name == "lsq_quantizer/scale");
  CHECK(s.layers[1].weight_count(8) == 20);
  CHECK(s.layers[1].weight_count(32) == 4 + 1);
  CHECK(s.layers[1].macs.at(32) == 20);  // max(no input quantizer = 32, 8)
  CHECK(s.param_bitwidths() == std::vector<int>{8, 32});
  CHECK(s.total_params() == xq::count_parameters(model));
}

TEST_CASE("summary expands nested sequentials with paths as names", "[summary]") {
  auto inner = xq::sequential(xq::dense(6), xq::relu(), xq::dense(5)).name("block");
  auto model = xq::sequential(xq::dense(8), inner, xq::dense(2));
  const xq::model_summary s = xq::summarize(model, {3, 4});
  REQUIRE(s.layers.size() == 5);
  CHECK(s.layers[0].name == "dense");
  CHECK(s.layers[1].name == "block/dense");
  CHECK(s.layers[2].name == "block/relu");
  CHECK(s.layers[3].name == "block/dense_1");
  CHECK(s.layers[4].name == "dense_1");
  CHECK(*s.layers[1].output_shape == shape({-1, 6}));
  CHECK(*s.layers[3].output_shape == shape({-1, 5}));
  CHECK(s.layers[3].weight_count() == 6 * 5 + 5);
  CHECK(s.layers[3].macs.at(32) == 30);
  CHECK(s.layers[3].weights[0].name == "block/dense_1/kernel");
  CHECK(s.mac_count() == 4 * 8 + 8 * 6 + 6 * 5 + 5 * 2);
}

namespace {
/// A model that is not a sequential, with a layer called twice and a composite child.
struct twice_model {
  xq::conv2d stem = xq::conv2d(4, 3).padding(padding::same);
  struct head_block {
    xq::dense proj{3};
    xq::relu act;
    XQ_CHILDREN(proj, act)
    xq::var operator()(const xq::var& x) { return act(proj(x)); }
  } head;
  xq::flatten flat;
  XQ_CHILDREN(stem, flat, head)
  // stem is called twice (4 channels in, 4 out, so it can take its own output).
  xq::var operator()(const xq::var& x) { return head(flat(stem(stem(x)))); }
};
}  // namespace

TEST_CASE("summary of a non-sequential model: rows per child, MACs of every call", "[summary]") {
  twice_model model;
  const xq::model_summary s = xq::summarize(model, {1, 5, 5, 4});
  CHECK(s.name == "twice_model");
  REQUIRE(s.layers.size() == 3);
  CHECK(s.layers[0].name == "stem");
  // Both calls' MACs: 2 x (3*3*4*4 weights x 25 pixels).
  CHECK(s.layers[0].macs.at(32) == 2 * 144 * 25);
  CHECK(s.layers[0].weight_count() == 144 + 4);
  REQUIRE(s.layers[0].output_shape);  // as traced: its last call's output
  CHECK(*s.layers[0].output_shape == shape({-1, 5, 5, 4}));
  CHECK(*s.layers[0].input_shape == shape({-1, 5, 5, 4}));
  REQUIRE(s.layers[1].output_shape);  // no weighted op, still traced (was "?")
  CHECK(*s.layers[1].output_shape == shape({-1, 100}));
  CHECK(s.layers[2].name == "head");
  CHECK(s.layers[2].macs.at(32) == 100 * 3);  // the composite's leaf, exactly
  CHECK(s.layers[2].weight_count() == 303);
  REQUIRE(s.layers[2].output_shape);  // a composite: its leaves' calls (was "?")
  CHECK(*s.layers[2].output_shape == shape({-1, 3}));
  CHECK(*s.layers[2].input_shape == shape({-1, 100}));
  const std::string text = xq::to_string(s);
  const std::size_t row = text.find("| flat ");
  REQUIRE(row != std::string::npos);
  CHECK(text.substr(row, text.find('\n', row) - row).find("(-1, 100)") != std::string::npos);
  CHECK(text.find(" ? ") == std::string::npos);
}

namespace {
/// A composite ending in a function (xq::ops::relu, which has no path), with a stride.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm>
struct down_block {
  Conv conv{xq::conv2d(4, 3).strides(2).padding(padding::same)};
  Norm norm;
  XQ_CHILDREN(conv, norm)
  xq::var operator()(const xq::var& x) { return xq::ops::relu(norm(conv(x))); }
};
/// Not a sequential: the block, then a transposed conv that doubles the size back.
template <class Down = down_block<>, class Up = xq::conv2d_transpose>
struct up_model {
  Down down;
  Up up{[] {
    xq::conv2d_transpose t(2, 3);
    t.strides(2).padding(padding::same);
    return t;
  }()};
  XQ_CHILDREN(down, up)
  xq::var operator()(const xq::var& x) { return up(down(x)); }
};
}  // namespace

// Issue 34, finding 14: a conv2d_transpose's row showed its input's size (its op reports
// the input's pixels, over which its MACs count), and a composite child's row "?".
TEST_CASE("summary of a non-sequential model shows the traced shapes of composites and transposed convs",
          "[summary]") {
  up_model<> model;
  const xq::model_summary s = xq::summarize(model, {1, 8, 8, 3});
  REQUIRE(s.layers.size() == 2);
  CHECK(s.layers[0].name == "down");
  REQUIRE(s.layers[0].output_shape);
  CHECK(*s.layers[0].input_shape == shape({-1, 8, 8, 3}));
  CHECK(*s.layers[0].output_shape == shape({-1, 4, 4, 4}));
  CHECK(s.layers[1].name == "up");
  REQUIRE(s.layers[1].output_shape);
  CHECK(*s.layers[1].input_shape == shape({-1, 4, 4, 4}));
  CHECK(*s.layers[1].output_shape == shape({-1, 8, 8, 2}));
  CHECK(s.layers[1].macs.at(32) == 3 * 3 * 2 * 4 * 16);  // its kernel once per input pixel
  const std::string text = xq::to_string(s);
  CHECK(text.find("(-1, 8, 8, 2)") != std::string::npos);
  CHECK(text.find("(-1, 4, 4, 4)") != std::string::npos);
  CHECK(text.find(" ? ") == std::string::npos);
  // The quantized twin, composite rows too.
  xq::quantize_options o;
  o.spec.add("up");
  auto q = xq::quantize_model(model, o, {1, 8, 8, 3});
  const xq::model_summary t = xq::summarize(q, {1, 8, 8, 3});
  REQUIRE(t.layers.size() == 2);
  REQUIRE(t.layers[0].output_shape);
  CHECK(*t.layers[0].output_shape == shape({-1, 4, 4, 4}));
  CHECK(*t.layers[1].output_shape == shape({-1, 8, 8, 2}));
}

TEST_CASE("summary counts a shared weight once, in its first row", "[summary]") {
  xq::dense first(4);
  xq::build(first, {1, 4});
  auto model = xq::sequential(first, xq::tied_dense(first.kernel(), true));
  const xq::model_summary s = xq::summarize(model, {1, 4});
  REQUIRE(s.layers.size() == 2);
  CHECK(s.layers[0].weight_count() == 16 + 4);
  CHECK(s.layers[1].weight_count() == 4);  // its bias only: the matrix is counted above
  CHECK(s.total_params() == xq::count_parameters(model));
}

TEST_CASE("summary shows a standalone quantizer as a row without weights", "[summary]") {
  auto model = xq::sequential(xq::ste_sign(), xq::quant_dense<xq::ste_sign, xq::ste_sign>(3));
  const xq::model_summary s = xq::summarize(model, {1, 4});
  REQUIRE(s.layers.size() == 2);
  CHECK(s.layers[0].name == "ste_sign");
  CHECK_FALSE(s.layers[0].input_precision);
  CHECK(s.layers[0].weights.empty());
  CHECK(s.layers[1].macs.at(1) == 12);
  CHECK(s.binarized_mac_ratio() == 1.0);
}

namespace {
/// A weighted layer with the quant-layer protocol whose op reports nothing (it
/// multiplies by hand): the summary falls back to Larq's rule on its output shape.
class silent_layer : public xq::layer<silent_layer> {
 public:
  silent_layer() : xq::layer<silent_layer>("silent") {}
  xq::var operator()(const xq::var& x) {
    if (!kernel_) {
      kernel_ = xq::make_parameter("kernel", xt::ones<float>({x.shape().back(), std::size_t(2)}));
      name_parameters();
    }
    xq::tensor y = xt::zeros<float>({x.shape()[0], x.shape()[1], std::size_t(2)});
    return xq::var(y);
  }
  std::vector<xq::parameter_ptr> parameters() const { return {kernel_}; }
  std::optional<int> input_precision() const { return 4; }
  std::vector<std::pair<xq::parameter_ptr, int>> weight_precisions() const { return {{kernel_, 6}}; }

 private:
  xq::parameter_ptr kernel_;
};
struct silent_model {
  silent_layer inner;
  XQ_CHILDREN(inner)
  xq::var operator()(const xq::var& x) { return inner(x); }
};
}  // namespace

TEST_CASE("summary uses Larq's rule when a MAC layer's op reports nothing", "[summary]") {
  auto model = xq::sequential(silent_layer());
  const xq::model_summary s = xq::summarize(model, {1, 7, 3});
  REQUIRE(s.layers.size() == 1);
  CHECK(s.layers[0].input_precision == 4);
  CHECK(s.layers[0].weight_count(6) == 6);
  CHECK(s.layers[0].macs.at(6) == 6 * 7);  // count x length of a 3-D output, at max(4, 6)

  silent_model other;  // not a sequential: no output shape, so no count ("?")
  const xq::model_summary t = xq::summarize(other, {1, 7, 3});
  REQUIRE(t.layers.size() == 1);
  CHECK_FALSE(t.layers[0].macs_known);
  CHECK(xq::to_string(t).find("  ?  ") != std::string::npos);
}

TEST_CASE("summarize runs inference without touching state and uninstalls its observer", "[summary]") {
  auto model = xq::sequential(xq::dense(3), xq::batch_norm());
  const xq::model_summary s = xq::summarize(model, {2, 5});
  CHECK_FALSE(xq::ops_observed());
  const auto& norm = model.get<1>();
  CHECK(xt::all(xt::equal(norm.moving_mean()->value, 0.0f)));
  CHECK(xt::all(xt::equal(norm.moving_variance()->value, 1.0f)));
  CHECK(s.layers[1].weight_count() == 6);  // gamma and beta dropped (Larq's rule)
  CHECK(s.layers[1].weights[0].name == "batch_normalization/moving_mean");
  CHECK_FALSE(s.layers[1].weights[0].trainable);
  CHECK(s.layers[0].weight_count(32, true) == 18);

  CHECK_THROWS_AS(xq::summarize(model, {0, 5}), xq::argument_error);
  CHECK_THROWS_AS(xq::summarize(model, xq::tensor::shape_type{}), xq::argument_error);
}

TEST_CASE("op observer hears weighted ops and nests", "[summary][op_observer]") {
  xq::dense d(3);
  xq::depthwise_conv2d dw(3);
  std::vector<xq::op_event> outer, inner;
  {
    xq::observe_ops watch_outer([&](const xq::op_event& e) { outer.push_back(e); });
    (void)d(xq::var(xt::zeros<float>({2, 5, 4})));
    {
      xq::observe_ops watch_inner([&](const xq::op_event& e) { inner.push_back(e); });
      (void)dw(xq::var(xt::zeros<float>({1, 6, 6, 2})));
    }
    CHECK(xq::ops_observed());
  }
  CHECK_FALSE(xq::ops_observed());
  (void)d(xq::var(xt::zeros<float>({2, 5, 4})));  // unobserved
  REQUIRE(outer.size() == 1);
  CHECK(outer[0].path == "dense");
  CHECK(std::string(outer[0].op) == "matmul");
  CHECK(outer[0].output_shape == xq::tensor::shape_type{2, 5, 3});
  CHECK(outer[0].weight_shape == xq::tensor::shape_type{4, 3});
  REQUIRE(inner.size() == 1);
  CHECK(std::string(inner[0].op) == "depthwise_conv2d");
  CHECK(inner[0].output_shape == xq::tensor::shape_type{1, 4, 4, 2});
  CHECK(inner[0].weight_shape == xq::tensor::shape_type{3, 3, 2, 1});
}

TEST_CASE("summary number formats are Larq's", "[summary][format]") {
  CHECK(xq::readable_count(0) == "0");
  CHECK(xq::readable_count(22) == "22");
  CHECK(xq::readable_count(330) == "330");
  CHECK(xq::readable_count(999) == "999");
  CHECK(xq::readable_count(1028) == "1.03 k");
  CHECK(xq::readable_count(1952) == "1.95 k");
  CHECK(xq::readable_count(40746) == "40.7 k");
  CHECK(xq::readable_count(38794) == "38.8 k");
  CHECK(xq::readable_count(999000) == "999 k");
  CHECK(xq::readable_count(999500) == "1 M");  // rounded before the unit is chosen
  CHECK(xq::readable_count(1411968) == "1.41 M");
  CHECK(xq::readable_count(4000018) == "4 M");
  CHECK(xq::readable_count(2.5e12) == "2.5 T");
  CHECK(xq::readable_count(1e16) == "1.00E+16");  // larq's test_number_as_readable_str_large
  CHECK(xq::readable_count(0.5) == "0.5");

  CHECK(xq::readable_memory(0) == "0.00 B");
  CHECK(xq::readable_memory(3760) == "470.00 B");
  CHECK(xq::readable_memory(1245632) == "152.05 KiB");
  CHECK(xq::readable_memory(313040) == "38.21 KiB");
  CHECK(xq::readable_memory(std::uint64_t(32) * 4000018) == "15.26 MiB");
  CHECK(xq::readable_memory(std::uint64_t(8) * 1024 * 1024 * 1024 * 1024) == "1,024.00 GiB");
  CHECK(xq::readable_memory(std::uint64_t(8) * 1024 * 1024 * 1024 * 123456) == "123,456.00 GiB");

  CHECK(xq::detail::python_tuple({-1, 10}) == "(-1, 10)");
  CHECK(xq::detail::python_tuple({-1}) == "(-1,)");
  CHECK(xq::detail::memory_cell(0) == "0");
  CHECK(xq::detail::memory_cell(1312 + 1024) == "0.29");
}

TEST_CASE("summary table hides a title that does not fit", "[summary][format]") {
  // The second table is as wide as its longest label and value (39 characters inside
  // the border): "<name> summary" does not fit, terminaltables leaves it out.
  auto model = xq::dense(1).name("a_model_name_much_longer_than_the_figures");
  const std::string text = xq::to_string(xq::summarize(model, {1, 1}));
  CHECK(text.rfind("+a_model_name_much_longer_than_the_figures stats---", 0) == 0);
  CHECK(text.find("a_model_name_much_longer_than_the_figures summary") == std::string::npos);
  CHECK(text.find("+\n+" + std::string(39, '-') + "+\n| Total params ") != std::string::npos);
}

TEST_CASE("summary of a quantized twin shows its quantized precisions and MACs by precision", "[summary][quantize]") {
  // The float CNN of the case above, quantized with NVIDIA's scheme: 8-bit inputs and
  // per-channel 8-bit kernels for the conv and the dense layer.
  auto model = xq::sequential(xq::conv2d(8, 3), xq::max_pool2d(2), xq::flatten(), xq::dense(10));
  xq::build(model, {1, 28, 28, 1});
  const xq::model_summary f = xq::summarize(model, {1, 28, 28, 1});
  auto twin = xq::quantize_model(model, {}, xq::tensor::shape_type{1, 28, 28, 1});
  {  // one training batch: the per-channel kernel ranges learn their channels
    const xq::training_mode training(true);
    const xq::no_grad off;
    (void)twin(xq::var(xt::ones<float>({1, 28, 28, 1})));
  }
  const xq::model_summary q = xq::summarize(twin, {1, 28, 28, 1});
  REQUIRE(q.layers.size() == f.layers.size());
  const auto& conv = q.layers[0];
  CHECK(conv.input_precision == std::optional<int>(8));
  CHECK(conv.weight_count(8) == 3 * 3 * 8);  // the kernel at its quantizer's 8 bits
  // 32-bit: the bias, the input quantizer's range (min, max) and the kernel quantizer's
  // (a min and a max per output channel): quantizer state is counted like any parameter.
  CHECK(conv.weight_count(32) == 8 + 2 + 2 * 8);
  CHECK(conv.mac_count(8) == f.layers[0].mac_count(32));  // the same MACs, now 8-bit
  CHECK(conv.mac_count(32) == 0);
  CHECK_FALSE(q.layers[1].input_precision);  // the max pool's QDQ is off in NVIDIA's scheme
  const auto& dense = q.layers[3];
  CHECK(dense.input_precision == std::optional<int>(8));
  CHECK(dense.mac_count(8) == 13 * 13 * 8 * 10);
  CHECK(q.mac_count(8) == conv.mac_count(8) + dense.mac_count(8));
  // Printed: an 8-bit column.
  std::ostringstream out;
  xq::print_summary(q, out);
  CHECK_THAT(out.str(), Catch::Contains("8-bit"));
}
