// MX block quantization (numerics/mx_block.hpp) against the peers' own functions
// (tests/data/golden/low_bit_mx.json, tools/gen_golden_lowbit_mx.py): torchao's to_mx/to_dtype
// under FLOOR, CEIL, EVEN and RCEIL, microxcaling's _quantize_mx (nearest, even; a padded
// partial block too) and ModelOpt's MXFP4QTensor, for every element they have, under the
// scalar and the SIMD policy; and the discrimination between the variants.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <xquant/numerics/mx_block.hpp>

#include "low_bit_inputs.hpp"

namespace lb = xq::low_bit;

namespace {

namespace li = low_bit_inputs;

lb::mx_spec spec_of(const golden::json& a) {
  lb::mx_spec s;
  const std::string v = a.at("variant");
  const lb::mx_variant all[] = {lb::mx_variant::torchao_floor, lb::mx_variant::torchao_ceil,
                                lb::mx_variant::torchao_even, lb::mx_variant::torchao_rceil,
                                lb::mx_variant::microxcaling_nearest, lb::mx_variant::microxcaling_even,
                                lb::mx_variant::modelopt_mxfp4};
  for (auto m : all)
    if (v == lb::to_string(m)) s.variant = m;
  if (v == "modelopt_mxfp8_qtensor") s.variant = lb::mx_variant::modelopt_mxfp8;
  const std::string e = a.at("element");
  s.element.int8 = e == "int8";
  s.element.type = e == "fp8_e4m3fn" ? lb::element_type::e4m3fn
                   : e == "fp8_e5m2" ? lb::element_type::e5m2
                   : e == "fp6_e3m2" ? lb::element_type::e3m2
                   : e == "fp6_e2m3" ? lb::element_type::e2m3
                                     : lb::element_type::e2m1;
  s.block_size = a.at("block_size");
  s.axis = a.at("axis");
  return s;
}

/// A case's input: the first edge_rows rows (first cols columns) of its element's edges, then
/// the hashed rows.
xq::tensor input_of(const golden::json& j, const golden::json& c) {
  const auto& a = c.at("attrs");
  const xq::tensor edges = golden::tensor(j.at("inputs").at(a.at("element").get<std::string>()));
  const std::size_t cols = a.at("cols"), rows = a.at("random_rows"), edge_rows = a.at("edge_rows");
  std::vector<float> xs;
  for (std::size_t r = 0; r < edge_rows; ++r)
    for (std::size_t k = 0; k < cols; ++k) xs.push_back(edges(r, k));
  li::append_random_rows(xs, a.at("seed").get<std::uint32_t>(), rows, cols);
  xq::tensor x = xq::tensor::from_shape({edge_rows + rows, cols});
  std::copy(xs.begin(), xs.end(), x.begin());
  return x;
}

template <class Policy>
void check_case(const golden::json& j, const golden::json& c) {
  const auto& a = c.at("attrs");
  INFO(c.at("name").get<std::string>());
  const lb::mx_spec s = spec_of(a);
  const xq::tensor x = input_of(j, c);
  REQUIRE(x.size() == c.at("values").get<std::size_t>());
  std::vector<float> scales;
  const xq::tensor y = lb::mx_quantize_dequantize<Policy>(x, s, "test", &scales);
  const std::size_t edge_values = a.at("edge_rows").get<std::size_t>() * a.at("cols").get<std::size_t>();
  if (c.contains("edge_y_fnv1a64_nan_canonical"))
    CHECK(li::fnv1a64_hex_nan_canonical(y.data(), edge_values) ==
          c.at("edge_y_fnv1a64_nan_canonical").get<std::string>());
  CHECK(li::fnv1a64_hex(y.data() + edge_values, y.size() - edge_values) ==
        c.at("random_y_fnv1a64_f32").get<std::string>());
  if (c.contains("scales_fnv1a64_f32"))
    CHECK(li::fnv1a64_hex(scales.data(), scales.size()) == c.at("scales_fnv1a64_f32").get<std::string>());
  // Observation off: the kept scales give the same output.
  const xq::tensor again = lb::mx_apply<Policy>(x, s, scales, "test");
  CHECK(li::fnv1a64_hex(again.data(), again.size()) == li::fnv1a64_hex(y.data(), y.size()));
}

}  // namespace

TEST_CASE("MX block quantization matches torchao, microxcaling and ModelOpt bit for bit", "[low_bit][mx][golden]") {
  const golden::json j = golden::load("low_bit_mx");
  std::size_t values = 0;
  for (const auto& c : j.at("cases")) {
    check_case<xq::scalar_policy>(j, c);
    check_case<xq::simd_policy<>>(j, c);
#if XSIMD_WITH_AVX2 && XSIMD_WITH_AVX512F  // the default is AVX-512: AVX2's batches too
    check_case<xq::simd_policy<xsimd::avx2>>(j, c);
#endif
    values += c.at("values").get<std::size_t>();
  }
  CHECK(j.at("cases").size() == 59);
  CHECK(values > 600000);
}

TEST_CASE("the MX goldens tell every pair of variants apart", "[low_bit][mx][discrimination]") {
  // For each pair the docs say differ, an input where the two give different bits. Each
  // variant matches its own peer's golden file in the test above, so a difference here is a
  // difference between the peers.
  const golden::json j = golden::load("low_bit_mx");
  const lb::mx_variant fp4_variants[] = {lb::mx_variant::torchao_floor, lb::mx_variant::torchao_ceil,
                                         lb::mx_variant::torchao_even, lb::mx_variant::torchao_rceil,
                                         lb::mx_variant::microxcaling_nearest, lb::mx_variant::microxcaling_even,
                                         lb::mx_variant::modelopt_mxfp4};
  // The FP4 inputs of one case (its edge rows: ties, saturation, powers of two), plus its hashed rows.
  const golden::json* fp4 = nullptr;
  for (const auto& c : j.at("cases"))
    if (c.at("name") == "torchao_floor_fp4_e2m1") fp4 = &c;
  REQUIRE(fp4 != nullptr);
  const xq::tensor edges = golden::tensor(j.at("inputs").at("fp4_e2m1"));
  std::vector<float> xs(edges.begin(), edges.begin() + fp4->at("attrs").at("edge_rows").get<std::size_t>() * 64);
  li::append_random_rows(xs, fp4->at("attrs").at("seed").get<std::uint32_t>(), 160, 64);
  xq::tensor x = xq::tensor::from_shape({xs.size() / 64, 64});
  std::copy(xs.begin(), xs.end(), x.begin());
  std::vector<xq::tensor> y;
  for (auto v : fp4_variants) {
    lb::mx_spec s;
    s.variant = v;
    s.element.type = lb::element_type::e2m1;
    y.push_back(lb::mx_quantize_dequantize<xq::scalar_policy>(x, s));
  }
  for (std::size_t a = 0; a < y.size(); ++a)
    for (std::size_t b = a + 1; b < y.size(); ++b) {
      std::size_t differ = 0;
      for (std::size_t i = 0; i < x.size(); ++i)
        differ += golden::to_bits(y[a].data()[i]) != golden::to_bits(y[b].data()[i]) &&
                  !(std::isnan(y[a].data()[i]) && std::isnan(y[b].data()[i]));
      INFO(lb::to_string(fp4_variants[a]) << " vs " << lb::to_string(fp4_variants[b]) << ": " << differ << " differ");
      CHECK(differ > 0);
    }
  // FLOOR's overflow at the top of a block (torchao's reason for RCEIL): amax 7.5 -> 6.
  xq::tensor top = xq::tensor::from_shape({1, 32});
  std::fill(top.begin(), top.end(), 1.0f);
  top(0, 0) = 7.5f;
  lb::mx_spec floor_spec;
  floor_spec.variant = lb::mx_variant::torchao_floor;
  CHECK(lb::mx_quantize_dequantize<xq::scalar_policy>(top, floor_spec)(0, 0) == 6.0f);
  floor_spec.variant = lb::mx_variant::torchao_rceil;
  CHECK(lb::mx_quantize_dequantize<xq::scalar_policy>(top, floor_spec)(0, 0) == 8.0f);
  // ModelOpt's MXFP8 against torchao's RCEIL: a block of exponent -127 is scaled by 2^127, not 1.
  lb::mx_spec r8, m8;
  r8.variant = lb::mx_variant::torchao_rceil;
  m8.variant = lb::mx_variant::modelopt_mxfp8;
  r8.element.type = m8.element.type = lb::element_type::e4m3fn;
  std::fill(top.begin(), top.end(), 1e-40f);
  CHECK(lb::mx_quantize_dequantize<xq::scalar_policy>(top, r8)(0, 0) == 0.0f);
  CHECK(lb::mx_quantize_dequantize<xq::scalar_policy>(top, m8)(0, 0) != 0.0f);
}

TEST_CASE("MX specs are checked", "[low_bit][mx]") {
  lb::mx_spec s;
  xq::tensor x = xq::tensor::from_shape({2, 40});
  std::fill(x.begin(), x.end(), 1.0f);
  CHECK_THROWS_WITH(lb::mx_quantize_dequantize<xq::scalar_policy>(x, s, "block/q"),
                    Catch::Contains("block/q") && Catch::Contains("multiple of the block size 32") &&
                        Catch::Contains("length 40"));
  s.variant = lb::mx_variant::modelopt_mxfp4;
  s.element.type = lb::element_type::e4m3fn;
  CHECK_THROWS_WITH(lb::validate(s, 2, "q"), Catch::Contains("FP4 E2M1 elements for modelopt_mxfp4"));
  s.variant = lb::mx_variant::torchao_floor;
  s.element.int8 = true;
  CHECK_THROWS_WITH(lb::validate(s, 2, "q"), Catch::Contains("INT8 elements with a microxcaling variant"));
  s.element.int8 = false;
  s.axis = 2;
  CHECK_THROWS_WITH(lb::validate(s, 2, "q"), Catch::Contains("a block axis in [-2, 2)"));
  lb::mx_spec fp4;
  CHECK(lb::bits_per_value(fp4) == 4.25);
}
