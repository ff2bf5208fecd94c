// The integer engine on low-bit models (issue 36): every format the schemes put on a conv
// and dense net lowers, runs with the simulation's values at every quantized tensor and at
// the output (SQNR infinite), saves its kernels packed (4.25 bits per MXFP4 weight, 4.5 per
// NVFP4, 5 per int4 weight with float32 group scales) and loads back to the same bits; a
// corrupt kernel in a file is refused whole.

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <xquant/deploy/integer_model_file.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/transform/low_bit_schemes.hpp>
#include <xquant/xquant.hpp>

#include "engine_checks.hpp"

namespace {

/// A first conv on 3 channels (the MX and NVFP4 blocks do not fit it: int8), a second on
/// 32, a pooled dense head on 32 features, a last dense of 16.
template <class Conv = xq::conv2d, class Pool = xq::global_average_pool2d, class Dense = xq::dense>
struct low_bit_net {
  Conv first{xq::conv2d(32, 3).padding(xq::padding::same)};
  Conv second{xq::conv2d(32, 3).padding(xq::padding::same)};
  Pool pool;
  Dense hidden{xq::dense(32)};
  Dense head{xq::dense(16)};
  XQ_CHILDREN(first, second, pool, hidden, head)
  xq::var operator()(const xq::var& x) {
    return head(xq::ops::relu(hidden(pool(xq::ops::relu(second(xq::ops::relu(first(x))))))));
  }
};

xq::tensor wavy(const xq::tensor::shape_type& shape, float phase) {
  xq::tensor x = xq::tensor::from_shape(shape);
  for (std::size_t i = 0; i < x.size(); ++i)
    x.data()[i] = std::sin(0.37f * float(i) + phase) * (1.0f + 0.5f * std::cos(0.011f * float(i)));
  return x;
}

/// The net quantized with `scheme`, one training step taken (W4A8's int8 inputs get ranges).
xq::quantize_t<low_bit_net<>> trained(const xq::quantization_scheme& scheme) {
  low_bit_net<> model;
  xq::set_seed(7);
  const xq::tensor::shape_type shape{4, 8, 8, 3};
  xq::build(model, shape);
  xq::quantize_options o;
  o.scheme = scheme;
  auto q = xq::quantize_model(model, o, shape);
  const xq::training_mode train;
  q(xq::var(wavy(shape, 0.1f)));
  return q;
}

const xq::deploy::low_bit_linear_op* low_bit_op(const xq::deploy::integer_model& m, const std::string& path) {
  for (const auto& op : m.ops)
    if (op->path == path)
      if (const auto* l = dynamic_cast<const xq::deploy::low_bit_linear_op*>(op.get())) return l;
  return nullptr;
}

}  // namespace

TEST_CASE("the engine computes what the simulation computes for every low-bit format", "[deploy][low_bit][engine]") {
  struct expectation {
    const char* name;
    xq::quantization_scheme scheme;
    double second_bits;  // bits per weight of the second conv's kernel (3x3x32x32)
    bool exact;          // every value the simulation's (see 8da4w below)
  };
  const std::vector<expectation> cases = {
      {"w4a8", xq::schemes::w4a8(32), 4.0 + 32.0 / 32.0, true},
      // The first conv's 3 channels hold no group of 32: it stays int8, an exact int32 sum
      // leaving in float (its next quantizer's scales follow each tensor: no grid to land
      // on), where the simulation rounds a float sum. The per-token scales after it move by
      // an ulp: the codes stay, the values differ in their last bits (SQNR > 120 dB).
      {"8da4w", xq::schemes::torchao_8da4w(32), 4.0 + 32.0 / 32.0, false},
      {"intx weight-only", xq::schemes::torchao_intx_weight_only(4, 32), 5.0, true},
      // (q - 8) · scale + a float offset per group: 4 bits, a float32 scale and offset per 32.
      {"int4 weight-only", xq::schemes::torchao_int4_weight_only(32), 6.0, true},
      {"mxfp4", xq::schemes::mx(), 4.25, true},
      {"mxfp4 weight-only", xq::schemes::mx_weight_only(), 4.25, true},
      {"mxfp8", xq::schemes::mx(xq::low_bit::element_type::e4m3fn, xq::low_bit::element_type::e4m3fn), 8.25, true},
      {"nvfp4", xq::schemes::nvfp4(), 4.5 + 32.0 / (9 * 32 * 32), true},
      {"nvfp4 weight-only", xq::schemes::nvfp4_weight_only(), 4.5 + 32.0 / (9 * 32 * 32), true},
      {"fp8 per row", xq::schemes::torchao_float8_dynamic(), 8.0 + 32.0 / 32.0, true},
  };
  const xq::tensor images = wavy({6, 8, 8, 3}, 0.7f);
  xq::deploy::lower_options simulated;
  simulated.low_bit = xq::deploy::low_bit_product::simulated;
  for (const auto& c : cases) {
    INFO(c.name);
    auto q = trained(c.scheme);
    const xq::deploy::integer_model engine = xq::deploy::lower(q, {8, 8, 3}, simulated);
    const auto* second = low_bit_op(engine, "second");
    REQUIRE(second);
    CHECK(second->weights.bits_per_value() == Approx(c.second_bits));
    REQUIRE(low_bit_op(engine, "hidden"));
    const xq::deploy::parity_report report = xq::deploy::parity(q, engine, images);
    INFO(report.table());
    for (const auto& row : report.rows) {
      INFO(row.label);
      CHECK(row.within_one_step == row.elements);
      CHECK(row.sqnr_db() > 120.0);
      if (c.exact) CHECK(row.identical == row.elements);
      if (c.exact) CHECK(std::isinf(row.sqnr_db()));
    }
    CHECK(report.same_top1 == report.samples);
    CHECK(report.output_sqnr_db() > 120.0);
    if (c.exact) CHECK(report.output_identical == report.output_elements);
    if (c.exact) CHECK(std::isinf(report.output_sqnr_db()));

    // Saved packed, loaded to the same model and bits.
    const std::vector<std::uint8_t> bytes = xq::deploy::encode_integer_model(engine);
    const xq::deploy::integer_model back = xq::deploy::decode_integer_model(bytes.data(), bytes.size(), "low_bit.xqi");
    CHECK(back.summary() == engine.summary());
    const bool same = back.run(images) == engine.run(images);
    CHECK(same);
    CHECK(back.weight_bytes() == engine.weight_bytes());

    // The integer product (the default) on the dense layers where the input's codes fit it:
    // the same codes, the blocks' exact int32 sums added in float in the kernel's order.
    const xq::deploy::integer_model fast = xq::deploy::lower(q, {8, 8, 3});
    const auto* hidden = low_bit_op(fast, "hidden");
    REQUIRE(hidden);
    const bool integer = hidden->product_mode != xq::deploy::low_bit_linear_op::product_kind::simulated;
    const std::string name = c.name;
    CHECK(integer == (name == "w4a8" || name == "8da4w" || name == "mxfp4" || name == "nvfp4"));
    const xq::deploy::parity_report fr = xq::deploy::parity(q, fast, images);
    INFO(fr.table());
    CHECK(fr.same_top1 == fr.samples);
    CHECK(fr.output_sqnr_db() > 100.0);  // float rounding of the block sums: about 2^-24 of each term
    CHECK(deploy_test::fast_kernels_match_reference(fast, images));  // on every instruction set here
    const std::vector<std::uint8_t> fast_bytes = xq::deploy::encode_integer_model(fast);
    const auto fast_back = xq::deploy::decode_integer_model(fast_bytes.data(), fast_bytes.size(), "fast.xqi");
    const bool fast_same = fast_back.run(images) == fast.run(images);
    CHECK(fast_same);
  }
}

TEST_CASE("a low-bit kernel in a file is checked whole", "[deploy][low_bit][engine][io]") {
  auto q = trained(xq::schemes::mx());
  const xq::deploy::integer_model engine = xq::deploy::lower(q, {8, 8, 3});
  std::vector<std::uint8_t> bytes = xq::deploy::encode_integer_model(engine);
  // The file holds the kernels' codes once, packed: far fewer bytes than float kernels.
  const auto* second = low_bit_op(engine, "second");
  REQUIRE(second);
  CHECK(second->weights.codes.size() == 9 * 32 * 32 / 2);
  CHECK(second->weights.stored_bytes() == 9 * 32 * 32 / 2 + 9 * 32);
  CHECK(xq::deploy::decode_integer_model(bytes.data(), bytes.size(), "ok.xqi").summary() == engine.summary());
  // Every single-byte change is either refused whole (io_error) or loads a model that runs.
  std::size_t refused = 0, loaded = 0;
  const xq::tensor images = wavy({2, 8, 8, 3}, 0.2f);
  for (std::size_t at = 0; at < bytes.size(); at += 97) {
    std::vector<std::uint8_t> bad = bytes;
    bad[at] ^= 0x5A;
    try {
      const auto m = xq::deploy::decode_integer_model(bad.data(), bad.size(), "bad.xqi");
      (void)m.run(images);
      ++loaded;
    } catch (const xq::io_error&) {
      ++refused;
    }
  }
  CHECK(refused > 0);
  CHECK(refused + loaded > 10);
}
