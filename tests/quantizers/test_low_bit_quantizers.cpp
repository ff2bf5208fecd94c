// The low-bit formats as quantizers (quantizers/mx_quantizer.hpp, nvfp4_quantizer.hpp,
// fp8_quantizer.hpp, intx_quantizer.hpp, low_bit_presets.hpp): the quantizer's output and
// gradient are the peer's (the golden files' own cases, run through the quantizer on the
// tape), state in parameters, the three switches, clones, checkpoints, the summary's bits,
// and the presets named after the peers' configs.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/mode.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/io/checkpoint.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/quantizers/low_bit_presets.hpp>
#include <xquant/quantizers/no_quantizer.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/wrappers/quant_dense.hpp>

#include "../numerics/low_bit_inputs.hpp"
#include "quantizer_run.hpp"

namespace lb = xq::low_bit;
namespace li = low_bit_inputs;

namespace {

bool same_bits(const xq::tensor& a, const xq::tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (golden::to_bits(a.data()[i]) != golden::to_bits(b.data()[i])) return false;
  return true;
}

xq::tensor golden_input(const golden::json& file, const std::string& name) {
  if (name == "random") {
    const auto& r = file.at("random");
    return li::random_rows(r.at("seed").get<std::uint32_t>(), r.at("rows"), r.at("cols"));
  }
  return golden::tensor(file.at("inputs").at(name));
}

const golden::json& find_case(const golden::json& file, const std::string& variant, const std::string& input,
                              const std::string& attrs = "") {
  for (const auto& c : file.at("cases"))
    if (c.at("variant") == variant && c.at("input") == input && (attrs.empty() || c.at("attrs").dump() == attrs))
      return c;
  FAIL("no case " << variant << " " << input << " " << attrs);
  return file;
}

/// The quantizer on the tape in training mode: output and input gradient against the file.
template <class Q>
void check_against_golden(Q& q, const golden::json& file, const golden::json& c) {
  INFO(q.describe() << " on " << c.at("input").get<std::string>());
  const xq::tensor x = golden_input(file, c.at("input"));
  const xq::tensor dy = li::random_unit(file.at("random").at("dy_seed").get<std::uint32_t>(), x.shape());
  const xq::training_mode training;
  const qtest::quantizer_result r = qtest::run_quantizer(q, x, dy);
  const std::string y_key = "y_fnv1a64_nan_canonical", dx_key = "dx_fnv1a64_nan_canonical";
  REQUIRE(c.contains(y_key));
  CHECK(li::fnv1a64_hex_nan_canonical(r.y.data(), r.y.size()) == c.at(y_key).get<std::string>());
  if (c.contains(dx_key)) CHECK(li::fnv1a64_hex_nan_canonical(r.dx.data(), r.dx.size()) == c.at(dx_key).get<std::string>());
  else CHECK(li::fnv1a64_hex(r.dx.data(), r.dx.size()) == li::fnv1a64_hex(dy.data(), dy.size()));
  CHECK(q.built());
}

}  // namespace

TEST_CASE("low-bit quantizers compute the peers' outputs and gradients", "[low_bit][quantizers][golden]") {
  {
    const golden::json f = golden::load("low_bit_int");
    lb::intx_spec s;
    s.bits = 4;
    s.group_size = 32;
    xq::intx_quantizer q(s);
    check_against_golden(q, f, find_case(f, "torchao_intx_symmetric", "random", R"({"bits":4,"group_size":32})"));
    lb::intx_spec t;
    t.scheme = lb::intx_scheme::intx_per_token;
    t.bits = 8;
    xq::intx_quantizer a(t);
    check_against_golden(a, f, find_case(f, "torchao_per_token_asymmetric", "random", R"({"bits":8})"));
    xq::intx_quantizer w = xq::presets::torchao_int4_weight_only(128, -1);
    check_against_golden(w, f, find_case(f, "torchao_int4_weight_only", "random", R"({"group_size":128})"));
  }
  {
    const golden::json f = golden::load("low_bit_fp8");
    lb::fp8_spec s;
    s.granularity = lb::fp8_granularity::per_row;
    xq::fp8_quantizer q(s);
    check_against_golden(q, f, find_case(f, "torchao_per_row_e4m3fn", "random"));
    s.variant = lb::fp8_variant::transformer_engine;
    s.granularity = lb::fp8_granularity::per_tensor;
    xq::fp8_quantizer te(s);
    check_against_golden(te, f, find_case(f, "transformer_engine_per_tensor_e4m3fn", "random"));
  }
  {
    const golden::json f = golden::load("low_bit_nvfp4");
    for (const char* v : {"torchao", "modelopt_qtensor", "modelopt_triton"}) {
      lb::nvfp4_spec s;
      s.variant = std::string(v) == "torchao"            ? lb::nvfp4_variant::torchao
                  : std::string(v) == "modelopt_qtensor" ? lb::nvfp4_variant::modelopt_qtensor
                                                         : lb::nvfp4_variant::modelopt_triton;
      xq::nvfp4_quantizer q(s);
      check_against_golden(q, f, find_case(f, v, "random"));
    }
  }
}

TEST_CASE("a low-bit quantizer keeps its scales in parameters and follows its switches", "[low_bit][quantizers]") {
  const xq::tensor x = li::random_rows(11, 4, 64);
  lb::mx_spec spec;
  xq::mx_quantizer q(spec);
  q.set_path("block/q");
  CHECK(q.parameters().empty());  // not called yet
  CHECK(q.bits_per_value() == 4.25);
  std::vector<float> want_scales;
  const xq::tensor want = lb::mx_quantize_dequantize<xq::scalar_policy>(x, spec, "t", &want_scales);
  const xq::tensor y = q(xq::var(x)).value();
  CHECK(li::fnv1a64_hex(y.data(), y.size()) == li::fnv1a64_hex(want.data(), want.size()));
  REQUIRE(q.parameters().size() == 1);
  const xq::parameter_ptr scale = q.parameters()[0];
  CHECK(scale->name() == "block/q/scale");
  CHECK(!scale->trainable());
  CHECK(scale->value.shape() == xq::tensor::shape_type{4, 2});
  CHECK(std::vector<float>(scale->value.begin(), scale->value.end()) == want_scales);
  CHECK(q.bits_per_value() == 4.25);

  // Observer off: the kept scales, not the input's own.
  const xq::tensor x2 = li::random_rows(12, 4, 64);
  q.enable_observer(false);
  const xq::tensor frozen = q(xq::var(x2)).value();
  const xq::tensor with_kept = lb::mx_apply<xq::scalar_policy>(x2, spec, want_scales);
  CHECK(li::fnv1a64_hex(frozen.data(), frozen.size()) == li::fnv1a64_hex(with_kept.data(), with_kept.size()));
  CHECK(std::vector<float>(scale->value.begin(), scale->value.end()) == want_scales);  // unchanged
  CHECK_THROWS_WITH(q(xq::var(li::random_rows(12, 2, 64))),
                    Catch::Contains("a scale per block: 4 for this tensor") && Catch::Contains("8 scales"));
  // Fake quant off: the input passes; a training call with the observer on keeps its scales.
  q.enable_observer(true);
  q.enable_fake_quant(false);
  {
    const xq::training_mode training;
    CHECK(same_bits(q(xq::var(x2)).value(), x2));
  }
  std::vector<float> scales2;
  lb::mx_quantize_dequantize<xq::scalar_policy>(x2, spec, "t", &scales2);
  CHECK(std::vector<float>(scale->value.begin(), scale->value.end()) == scales2);
  // Off: no parameters.
  q.enable(false);
  CHECK(q.parameters().empty());
  CHECK(same_bits(q(xq::var(x)).value(), x));
  // A kept state is needed before the observer is turned off.
  xq::nvfp4_quantizer fresh;
  fresh.enable_observer(false);
  CHECK_THROWS_WITH(fresh(xq::var(x)), Catch::Contains("a kept state") && Catch::Contains("nvfp4_quantizer"));
}

TEST_CASE("low-bit quantizers describe themselves and check their specs", "[low_bit][quantizers]") {
  CHECK(xq::mx_quantizer().describe() == "mx_quantizer(mxfp4 torchao_rceil block 32 axis -1)");
  CHECK(xq::mx_quantizer().kind() == "mx_quantizer");
  CHECK(xq::nvfp4_quantizer().describe() == "nvfp4_quantizer(nvfp4 torchao axis -1)");
  CHECK(xq::fp8_quantizer().describe() == "fp8_quantizer(fp8_e4m3fn torchao per_row axis -1)");
  CHECK(xq::intx_quantizer().describe() == "intx_quantizer(int4 intx_symmetric group 32 axis -1)");
  CHECK(xq::mx_quantizer().precision() == 4);
  CHECK(xq::nvfp4_quantizer().precision() == 4);
  CHECK(xq::fp8_quantizer().precision() == 8);
  lb::mx_spec bad;
  bad.variant = lb::mx_variant::modelopt_mxfp4;
  bad.element.type = lb::element_type::e4m3fn;
  CHECK_THROWS_WITH(xq::mx_quantizer(bad), Catch::Contains("FP4 E2M1 elements for modelopt_mxfp4"));
  lb::intx_spec b2;
  b2.bits = 9;
  CHECK_THROWS_WITH(xq::intx_quantizer(b2), Catch::Contains("bits in [2, 8]"));
  lb::fp8_spec f;
  f.element = lb::element_type::e2m1;
  CHECK_THROWS_WITH(xq::fp8_quantizer(f), Catch::Contains("an FP8 element"));
  lb::nvfp4_spec n;
  n.tiles_16x16 = true;
  CHECK_THROWS_WITH(xq::nvfp4_quantizer(n), Catch::Contains("16x16 tiles with the transformer_engine variant"));
}

TEST_CASE("low-bit quantizers clone, save and load with the model, and the summary counts their scales",
          "[low_bit][quantizers][checkpoint][summary]") {
  using layer_t = xq::quant_dense<xq::mx_quantizer, xq::mx_quantizer>;
  const auto cfg = xq::presets::modelopt_mxfp4_default_cfg();  // MXFP4 weights along `in` (axis 0)
  auto model = xq::sequential(layer_t(16, cfg.activation, cfg.weight).name("fc"));
  xq::build(model, {2, 64});
  const xq::tensor x = li::random_rows(21, 3, 64);
  {
    const xq::training_mode training;
    model(xq::var(x));
  }
  auto& fc = std::get<0>(model.children());
  REQUIRE(fc.kernel_quantizer.built());
  CHECK(fc.kernel_quantizer.parameters()[0]->value.shape() == xq::tensor::shape_type{2, 16});  // 64 / 32 blocks
  CHECK(fc.input_quantizer.parameters()[0]->value.shape() == xq::tensor::shape_type{3, 2});

  // The summary: the kernel at 4 bits, its E8M0 scales at 8: 4.25 bits per kernel value.
  const xq::model_summary s = xq::summarize(model, {1, 64});
  REQUIRE(s.layers.size() == 1);
  const auto& row = s.layers[0];
  CHECK(row.weight_count(4) == 64 * 16);
  CHECK(row.weight_count(8) == 2 * 16 + 1 * 2);  // kernel scales, and the input's (one sample: 1 x 2)
  std::uint64_t kernel_and_scales = 0;
  for (const auto& w : row.weights)
    if (w.name == "fc/kernel" || w.name == "fc/kernel_quantizer/scale") kernel_and_scales += w.memory_bits();
  CHECK(double(kernel_and_scales) / double(64 * 16) == 4.25);
  CHECK(fc.kernel_quantizer.bits_per_value() == 4.25);

  // A clone has state of its own, equal to the original's.
  auto copy = xq::clone_model(model);
  auto& fc2 = std::get<0>(copy.children());
  CHECK(fc2.kernel_quantizer.parameters()[0] != fc.kernel_quantizer.parameters()[0]);
  CHECK(same_bits(fc2.kernel_quantizer.parameters()[0]->value, fc.kernel_quantizer.parameters()[0]->value));

  // Saved and loaded: the state comes back, with the saved shape (the input's batch differs).
  {
    const xq::training_mode training;
    model(xq::var(li::random_rows(22, 5, 64)));  // 5 rows: the input state is now 5 x 2
  }
  const std::string path = "test_low_bit_quantizers.xqc";
  xq::save_checkpoint(path, model);
  auto other = xq::sequential(layer_t(16, cfg.activation, cfg.weight).name("fc"));
  xq::build(other, {1, 64});
  xq::load_checkpoint(path, other);
  auto& fc3 = std::get<0>(other.children());
  CHECK(same_bits(fc3.input_quantizer.parameters()[0]->value, fc.input_quantizer.parameters()[0]->value));
  CHECK(same_bits(fc3.kernel_quantizer.parameters()[0]->value, fc.kernel_quantizer.parameters()[0]->value));
  CHECK(xq::save_checkpoint_bytes(other) == xq::save_checkpoint_bytes(model));
  std::remove(path.c_str());
}

TEST_CASE("presets are named after the peers' configs", "[low_bit][quantizers][presets]") {
  const auto a8w4 = xq::presets::torchao_int8_dynamic_activation_intx_weight(4, 32);
  CHECK(a8w4.activation.describe() == "intx_quantizer(int8 intx_per_token axis -1)");
  CHECK(a8w4.weight.describe() == "intx_quantizer(int4 intx_symmetric group 32 axis 0)");
  CHECK(xq::presets::torchao_int8_dynamic_activation_intx_weight().weight.precision() == 8);  // the config's default
  CHECK(xq::presets::torchao_int4_weight_only().describe() == "intx_quantizer(int4 int4_weight_only group 128 axis 0)");
  CHECK(xq::presets::torchao_float8_dynamic_activation_float8_weight().weight.describe() ==
        "fp8_quantizer(fp8_e4m3fn torchao per_tensor axis 0)");
  CHECK(xq::presets::torchao_nvfp4_dynamic_activation_nvfp4_weight().activation.describe() ==
        "nvfp4_quantizer(nvfp4 torchao axis -1)");
  CHECK(xq::presets::torchao_nvfp4_dynamic_activation_nvfp4_weight(false).weight.describe() ==
        "nvfp4_quantizer(nvfp4 torchao_one_level axis 0)");
  CHECK(xq::presets::torchao_mx_dynamic_activation_mx_weight().weight.describe() ==
        "mx_quantizer(mxfp8_e4m3 torchao_rceil block 32 axis 0)");
  CHECK(xq::presets::modelopt_nvfp4_default_cfg().weight.describe() == "nvfp4_quantizer(nvfp4 modelopt_qtensor axis 0)");
  CHECK(xq::presets::modelopt_nvfp4_default_cfg().weight.bits_per_value() == 4.5);  // ModelOpt's effective_bits
  CHECK(xq::presets::modelopt_mxfp4_default_cfg().activation.describe() ==
        "mx_quantizer(mxfp4 modelopt_mxfp4 block 32 axis -1)");
  CHECK(xq::presets::modelopt_mxfp8_default_cfg().weight.describe() ==
        "mx_quantizer(mxfp8_e4m3 modelopt_mxfp8 block 32 axis 0)");
  CHECK(xq::presets::transformer_engine_nvfp4_block_scaling().weight.describe() ==
        "nvfp4_quantizer(nvfp4 transformer_engine 16x16 axis 0)");
  CHECK(xq::presets::transformer_engine_float8_current_scaling().activation.describe() ==
        "fp8_quantizer(fp8_e4m3fn transformer_engine per_tensor axis -1)");
}

namespace {

/// One weight quantizer of each kind in a dense layer: train-call, save and load, clone, and
/// the summary's bits against the quantizer's bits_per_value.
template <class Q>
void round_trip(Q weight_quantizer, double want_bits) {
  using layer_t = xq::quant_dense<xq::no_quantizer, Q>;
  INFO(weight_quantizer.describe());
  auto model = xq::sequential(layer_t(32, {}, weight_quantizer).name("fc"));
  xq::build(model, {2, 64});
  {
    const xq::training_mode training;
    model(xq::var(li::random_rows(31, 4, 64)));
  }
  auto& fc = std::get<0>(model.children());
  REQUIRE(fc.kernel_quantizer.built());
  CHECK(fc.kernel_quantizer.bits_per_value() == Approx(want_bits).epsilon(1e-3));
  const xq::model_summary s = xq::summarize(model, {1, 64});
  std::uint64_t kernel_bits = 0;
  for (const auto& w : s.layers[0].weights)
    if (w.name != "fc/bias") kernel_bits += w.memory_bits();  // the kernel and the quantizer's state
  CHECK(double(kernel_bits) / double(64 * 32) == Approx(fc.kernel_quantizer.bits_per_value()));
  auto copy = xq::clone_model(model);
  const auto a = fc.kernel_quantizer.parameters(), b = std::get<0>(copy.children()).kernel_quantizer.parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i] != b[i]);
    CHECK(same_bits(a[i]->value, b[i]->value));
  }
  auto other = xq::sequential(layer_t(32, {}, weight_quantizer).name("fc"));
  xq::build(other, {1, 64});
  const auto bytes = xq::save_checkpoint_bytes(model);
  const std::string path = "test_low_bit_round_trip.xqc";
  xq::save_checkpoint(path, model);
  xq::load_checkpoint(path, other);
  std::remove(path.c_str());
  CHECK(xq::save_checkpoint_bytes(other) == bytes);
  // the loaded state is used with the observer off
  auto& fo = std::get<0>(other.children());
  fo.kernel_quantizer.enable_observer(false);
  fc.kernel_quantizer.enable_observer(false);
  const xq::tensor x = li::random_rows(32, 3, 64);
  CHECK(same_bits(other(xq::var(x)).value(), model(xq::var(x)).value()));
}

}  // namespace

TEST_CASE("every low-bit quantizer saves, loads, clones and shows its bits", "[low_bit][quantizers][checkpoint]") {
  lb::mx_spec mx;
  mx.axis = 0;  // blocks along the kernel's input axis
  round_trip(xq::mx_quantizer(mx), 4.0 + 8.0 / 32.0);
  lb::nvfp4_spec nv;
  nv.axis = 0;
  round_trip(xq::nvfp4_quantizer(nv), 4.0 + 8.0 / 16.0 + 32.0 / (64 * 32));
  lb::fp8_spec f8;
  f8.axis = 0;
  round_trip(xq::fp8_quantizer(f8), 8.0 + 32.0 / 64.0);  // an amax per output channel of 64 values
  round_trip(xq::presets::torchao_int8_dynamic_activation_intx_weight(4, 32).weight, 4.0 + 32.0 / 32.0);
  round_trip(xq::presets::torchao_int4_weight_only(32), 4.0 + 64.0 / 32.0);
}

TEST_CASE("int4 weight-only groups along a middle axis: the gradient is the last axis's, transposed",
          "[low_bit][quantizers][gradient]") {
  // A dense kernel (in, out) quantized along `in` (axis 0, inner = out): each group's
  // gradient must use its own group's state, as the same groups along the last axis of the
  // transposed kernel do.
  const std::size_t in = 64, out = 5;
  xq::tensor w = xq::tensor::from_shape({in, out}), wt = xq::tensor::from_shape({out, in});
  xq::tensor dy = xq::tensor::from_shape({in, out}), dyt = xq::tensor::from_shape({out, in});
  for (std::size_t r = 0; r < in; ++r)
    for (std::size_t c = 0; c < out; ++c) {
      const float v = std::sin(0.7f * float(r * out + c)) * (1.0f + float(c)), g = std::cos(0.3f * float(r + 5 * c));
      w.data()[r * out + c] = wt.data()[c * in + r] = v;
      dy.data()[r * out + c] = dyt.data()[c * in + r] = g;
    }
  xq::low_bit::intx_spec middle, last;
  middle.scheme = last.scheme = xq::low_bit::intx_scheme::int4_weight_only;
  middle.group_size = last.group_size = 32;
  middle.axis = 0;
  last.axis = -1;
  xq::intx_quantizer qm(middle), ql(last);
  xq::var a(w, true), b(wt, true);
  {
    xq::tape t;
    t.backward(qm(a), dy);
  }
  {
    xq::tape t;
    t.backward(ql(b), dyt);
  }
  for (std::size_t r = 0; r < in; ++r)
    for (std::size_t c = 0; c < out; ++c) {
      INFO(r << ", " << c);
      REQUIRE(std::isfinite(a.grad().data()[r * out + c]));
      CHECK(a.grad().data()[r * out + c] == b.grad().data()[c * in + r]);
    }
}
