// FP8 with a scale per tensor or per row (numerics/float8_scaled.hpp) against the peers' own
// functions (tests/data/golden/low_bit_fp8.json, tools/gen_golden_lowbit_fp8.py): torchao's
// Float8FakeQuantizer (forward and autograd) and TransformerEngine's CurrentScalingQuantizerRef,
// E4M3FN and E5M2, under the scalar and the SIMD policy; and what tells them apart.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <xquant/numerics/float8_scaled.hpp>

#include "low_bit_inputs.hpp"

namespace lb = xq::low_bit;
namespace li = low_bit_inputs;

namespace {

lb::fp8_spec spec_of(const std::string& v) {
  lb::fp8_spec s;
  s.variant = v.rfind("torchao", 0) == 0 ? lb::fp8_variant::torchao : lb::fp8_variant::transformer_engine;
  s.granularity = v.find("per_row") != std::string::npos ? lb::fp8_granularity::per_row : lb::fp8_granularity::per_tensor;
  s.element = v.find("e5m2") != std::string::npos ? lb::element_type::e5m2 : lb::element_type::e4m3fn;
  return s;
}

xq::tensor input_of(const golden::json& file, const std::string& name) {
  if (name == "random") {
    const auto& r = file.at("random");
    return li::random_rows(r.at("seed").get<std::uint32_t>(), r.at("rows"), r.at("cols"));
  }
  return golden::tensor(file.at("inputs").at(name));
}

void check_bits(const char* what, const float* got, std::size_t n, const golden::json& c, const std::string& key,
                const xq::tensor& x) {
  if (c.contains(key)) {
    REQUIRE(c.at(key).size() == n);
    std::size_t first = 0;
    const std::size_t bad = li::count_differences(got, c.at(key), &first);
    INFO(what << ": " << bad << " differ; first at " << first << ": x = " << (first < x.size() ? x.data()[first] : 0.0f)
              << " got " << got[first] << " want " << golden::from_bits(c.at(key)[first].get<std::uint32_t>()));
    CHECK(bad == 0);
  } else if (c.contains(key + "_fnv1a64")) {
    INFO(what);
    CHECK(li::fnv1a64_hex(got, n) == c.at(key + "_fnv1a64").get<std::string>());
  } else if (c.contains(key + "_fnv1a64_nan_canonical")) {
    INFO(what);
    CHECK(li::fnv1a64_hex_nan_canonical(got, n) == c.at(key + "_fnv1a64_nan_canonical").get<std::string>());
  }
}

template <class Policy>
std::size_t check_case(const golden::json& file, const golden::json& c) {
  const std::string variant = c.at("variant"), name = c.at("input");
  INFO(variant << " on " << name);
  const lb::fp8_spec s = spec_of(variant);
  const xq::tensor x = input_of(file, name);
  REQUIRE(x.size() == c.at("values").get<std::size_t>());
  lb::fp8_state st;
  const xq::tensor y = lb::fp8_quantize_dequantize<Policy>(x, s, "test", &st);
  check_bits("y", y.data(), y.size(), c, "y", x);
  const std::vector<float> scales = lb::fp8_scales(s, st);
  check_bits("scales", scales.data(), scales.size(), c, "scales", x);
  if (c.contains("dx") || c.contains("dx_fnv1a64") || c.contains("dx_fnv1a64_nan_canonical")) {
    const xq::tensor dy = li::random_unit(file.at("random").at("dy_seed").get<std::uint32_t>(), x.shape());
    const xq::tensor dx = lb::fp8_backward<Policy>(x, dy, s, st);
    check_bits("dx", dx.data(), dx.size(), c, "dx", x);
  }
  const xq::tensor again = lb::fp8_apply<Policy>(x, s, st);
  CHECK(li::fnv1a64_hex(again.data(), again.size()) == li::fnv1a64_hex(y.data(), y.size()));
  return x.size();
}

}  // namespace

TEST_CASE("FP8 per tensor and per row matches torchao and TransformerEngine bit for bit", "[low_bit][fp8][golden]") {
  const golden::json file = golden::load("low_bit_fp8");
  std::map<std::string, std::size_t> values;
  for (const auto& c : file.at("cases")) {
    values[c.at("variant")] += check_case<xq::scalar_policy>(file, c);
    check_case<xq::simd_policy<>>(file, c);
#if XSIMD_WITH_AVX2 && XSIMD_WITH_AVX512F  // the default is AVX-512: AVX2's batches too
    check_case<xq::simd_policy<xsimd::avx2>>(file, c);
#endif
  }
  CHECK(values.size() == 8);
  for (const auto& [variant, n] : values) {
    INFO(variant);
    CHECK(n >= 10000);
  }
}

TEST_CASE("the FP8 goldens tell torchao's division from TransformerEngine's product", "[low_bit][fp8][discrimination]") {
  const golden::json file = golden::load("low_bit_fp8");
  xq::tensor x = li::random_unit(5, {64, 64});  // amax not a power of two times the max
  for (float& v : x) v *= 3.3f;
  for (const char* e : {"e4m3fn", "e5m2"})
    for (const char* g : {"per_tensor", "per_row"}) {
      const std::string ta = std::string("torchao_") + g + "_" + e, te = std::string("transformer_engine_") + g + "_" + e;
      const xq::tensor a = lb::fp8_quantize_dequantize<xq::scalar_policy>(x, spec_of(ta));
      const xq::tensor b = lb::fp8_quantize_dequantize<xq::scalar_policy>(x, spec_of(te));
      std::size_t differ = 0;
      for (std::size_t i = 0; i < x.size(); ++i) differ += golden::to_bits(a.data()[i]) != golden::to_bits(b.data()[i]);
      INFO(ta << " vs " << te << ": " << differ << " of " << x.size() << " differ");
      CHECK(differ > 0);
    }
  // An all-zero tensor: torchao's scale is 0 and 0 / 0 makes the output NaN; TE takes scale 1.
  xq::tensor z = xq::tensor::from_shape({2, 8});
  std::fill(z.begin(), z.end(), 0.0f);
  CHECK(std::isnan(lb::fp8_quantize_dequantize<xq::scalar_policy>(z, spec_of("torchao_per_tensor_e4m3fn"))(0, 0)));
  CHECK(lb::fp8_quantize_dequantize<xq::scalar_policy>(z, spec_of("transformer_engine_per_tensor_e4m3fn"))(0, 0) == 0.0f);
  // torchao's gradient is cast to E4M3 on its way back: dy · s = 0.0104 comes back as 0.009765625 / s.
  xq::tensor x1 = xq::tensor::from_shape({1, 2});
  x1(0, 0) = 448.0f;
  x1(0, 1) = 1.0f;
  xq::tensor dy = xq::tensor::from_shape({1, 2});
  dy(0, 0) = 0.0f;
  dy(0, 1) = 0.0104f;
  lb::fp8_state st;
  lb::fp8_quantize_dequantize<xq::scalar_policy>(x1, spec_of("torchao_per_tensor_e4m3fn"), "t", &st);
  CHECK(lb::fp8_backward<xq::scalar_policy>(x1, dy, spec_of("torchao_per_tensor_e4m3fn"), st)(0, 1) == 0.009765625f);
}
