// NVFP4 (numerics/nvfp4_block.hpp) against the peers' own functions
// (tests/data/golden/low_bit_nvfp4.json, tools/gen_golden_lowbit_nvfp4.py): torchao's
// nvfp4_quantize + dequantize (two-level and one-level), TransformerEngine's reference
// NVFP4QuantizerRef (1x16 and 16x16 tiles: codes and block scales), ModelOpt's NVFP4QTensor and
// its Triton static_blockwise_fp4_fake_quant (with its gradient), under the scalar and the SIMD
// policy; and the inputs that tell the variants apart.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <xquant/numerics/nvfp4_block.hpp>

#include "low_bit_inputs.hpp"

namespace lb = xq::low_bit;
namespace li = low_bit_inputs;

namespace {

lb::nvfp4_spec spec_of(const std::string& v) {
  lb::nvfp4_spec s;
  if (v == "torchao") s.variant = lb::nvfp4_variant::torchao;
  else if (v == "torchao_one_level") s.variant = lb::nvfp4_variant::torchao_one_level;
  else if (v == "transformer_engine_1x16") s.variant = lb::nvfp4_variant::transformer_engine;
  else if (v == "transformer_engine_16x16") {
    s.variant = lb::nvfp4_variant::transformer_engine;
    s.tiles_16x16 = true;
  } else if (v == "modelopt_qtensor") s.variant = lb::nvfp4_variant::modelopt_qtensor;
  else if (v == "modelopt_triton") s.variant = lb::nvfp4_variant::modelopt_triton;
  else FAIL("unknown variant " << v);
  return s;
}

xq::tensor input_of(const golden::json& file, const std::string& name) {
  if (name == "random") {
    const auto& r = file.at("random");
    return li::random_rows(r.at("seed").get<std::uint32_t>(), r.at("rows"), r.at("cols"));
  }
  return golden::tensor(file.at("inputs").at(name));
}

template <class Policy>
std::size_t check_case(const golden::json& file, const golden::json& c) {
  const std::string variant = c.at("variant"), name = c.at("input");
  INFO(variant << " on " << name);
  const lb::nvfp4_spec s = spec_of(variant);
  const xq::tensor x = input_of(file, name);
  REQUIRE(x.size() == c.at("values").get<std::size_t>());
  lb::nvfp4_state st;
  std::vector<unsigned char> mask(x.size());
  const xq::tensor y =
      lb::nvfp4_quantize_dequantize<Policy>(x, s, "test", &st, reinterpret_cast<bool*>(mask.data()));
  if (c.contains("codes") || c.contains("codes_fnv1a64")) {
    const std::vector<std::uint8_t> codes = lb::nvfp4_codes(x, s, st);
    if (c.contains("codes")) {
      std::string got = li::codes_hex(codes);
      const std::string want = c.at("codes");
      for (std::size_t i = 0; i < want.size() && i < got.size(); ++i)
        if (want[i] == '.') got[i] = '.';  // a NaN output: the peer's code is its NaN's payload
      std::size_t first = 0;
      while (first < want.size() && got[first] == want[first]) ++first;
      INFO("first code difference at " << first << " x = " << (first < x.size() ? x.data()[first] : 0.0f));
      CHECK(got == want);
    } else {
      std::vector<float> as_float(codes.begin(), codes.end());
      CHECK(li::fnv1a64_hex(as_float) == c.at("codes_fnv1a64").get<std::string>());
    }
  }
  std::vector<float> scales;
  float tensor_scale = 0.0f;
  lb::nvfp4_scales(s, st, scales, tensor_scale);
  if (s.variant == lb::nvfp4_variant::modelopt_triton)
    for (float& b : scales) b *= tensor_scale;  // compute_fp4_scales' output: q * (1 / (448 / sfa))
  if (c.contains("scales")) {
    std::size_t first = 0;
    const std::size_t bad = li::count_differences(scales.data(), c.at("scales"), &first);
    INFO(bad << " block scales differ; first at " << first << ": got " << scales[first] << " want "
              << golden::from_bits(c.at("scales")[first].get<std::uint32_t>()));
    CHECK(scales.size() == c.at("scales").size());
    CHECK(bad == 0);
  } else if (c.contains("scales_fnv1a64")) {
    CHECK(li::fnv1a64_hex(scales) == c.at("scales_fnv1a64").get<std::string>());
  }
  const auto same_float = [](float got, const golden::json& want) {
    const float w = golden::from_bits(want.get<std::uint32_t>());
    return std::isnan(w) ? std::isnan(got) : golden::to_bits(got) == golden::to_bits(w);
  };
  if (c.contains("tensor_scale")) CHECK(same_float(tensor_scale, c.at("tensor_scale")));
  if (c.contains("global_amax")) CHECK(same_float(st.tensor_amax, c.at("global_amax")));
  if (c.contains("y")) {
    std::size_t first = 0;
    const std::size_t bad = li::count_differences(y.data(), c.at("y"), &first);
    INFO(bad << " outputs differ; first at " << first << ": x = " << x.data()[first] << " got " << y.data()[first]
              << " want " << golden::from_bits(c.at("y")[first].get<std::uint32_t>()));
    CHECK(bad == 0);
  } else if (c.contains("y_fnv1a64_nan_canonical")) {
    CHECK(li::fnv1a64_hex_nan_canonical(y.data(), y.size()) == c.at("y_fnv1a64_nan_canonical").get<std::string>());
  }
  if (c.contains("dx_fnv1a64_nan_canonical")) {
    const xq::tensor dy = li::random_unit(file.at("random").at("dy_seed").get<std::uint32_t>(), x.shape());
    const xq::tensor dx = lb::nvfp4_backward<Policy>(dy, s, reinterpret_cast<const bool*>(mask.data()));
    CHECK(li::fnv1a64_hex_nan_canonical(dx.data(), dx.size()) == c.at("dx_fnv1a64_nan_canonical").get<std::string>());
  }
  // Observation off: the kept state gives the same output.
  const xq::tensor again = lb::nvfp4_apply<Policy>(x, s, st, "test");
  CHECK(li::fnv1a64_hex(again.data(), again.size()) == li::fnv1a64_hex(y.data(), y.size()));
  return x.size();
}

}  // namespace

TEST_CASE("NVFP4 matches torchao, TransformerEngine and ModelOpt bit for bit", "[low_bit][nvfp4][golden]") {
  const golden::json file = golden::load("low_bit_nvfp4");
  std::map<std::string, std::size_t> values;
  for (const auto& c : file.at("cases")) {
    values[c.at("variant")] += check_case<xq::scalar_policy>(file, c);
    check_case<xq::simd_policy<>>(file, c);
#if XSIMD_WITH_AVX2 && XSIMD_WITH_AVX512F  // the default is AVX-512: AVX2's batches too
    check_case<xq::simd_policy<xsimd::avx2>>(file, c);
#endif
  }
  CHECK(values.size() == 6);
  for (const auto& [variant, n] : values) {
    INFO(variant);
    CHECK(n >= 10000);
  }
}

TEST_CASE("the NVFP4 goldens tell every pair of variants apart", "[low_bit][nvfp4][discrimination]") {
  // Each variant matches its own peer's vectors above, so an input where two variants give
  // different bits is an input where the peers differ.
  const golden::json file = golden::load("low_bit_nvfp4");
  const char* names[] = {"torchao", "torchao_one_level", "transformer_engine_1x16", "transformer_engine_16x16",
                         "modelopt_qtensor", "modelopt_triton"};
  std::vector<xq::tensor> inputs;
  for (const char* in : {"ties_k0", "ties_k-20", "outlier_1e30", "saturate", "zero_blocks", "tiny"})
    inputs.push_back(input_of(file, in));
  inputs.push_back(input_of(file, "random"));
  std::vector<std::vector<float>> out(std::size(names));
  for (std::size_t v = 0; v < std::size(names); ++v)
    for (const xq::tensor& x : inputs) {
      const xq::tensor y = lb::nvfp4_quantize_dequantize<xq::scalar_policy>(x, spec_of(names[v]));
      out[v].insert(out[v].end(), y.begin(), y.end());
    }
  for (std::size_t a = 0; a < out.size(); ++a)
    for (std::size_t b = a + 1; b < out.size(); ++b) {
      std::size_t differ = 0;
      for (std::size_t i = 0; i < out[a].size(); ++i)
        differ += golden::to_bits(out[a][i]) != golden::to_bits(out[b][i]) &&
                  !(std::isnan(out[a][i]) && std::isnan(out[b][i]));
      INFO(names[a] << " vs " << names[b] << ": " << differ << " of " << out[a].size() << " differ");
      CHECK(differ > 0);
    }
  // Small block scales: torchao clamps at 2^-6, ModelOpt at 2^-9, TransformerEngine not at all.
  xq::tensor x = xq::tensor::from_shape({2, 16});
  std::fill(x.begin(), x.end(), 1e-4f);
  x(0, 0) = 2688.0f;  // the tensor amax: global scale 1
  lb::nvfp4_state st;
  lb::nvfp4_quantize_dequantize<xq::scalar_policy>(x, spec_of("torchao"), "t", &st);
  CHECK(st.block[1] == 0.015625f);
  lb::nvfp4_quantize_dequantize<xq::scalar_policy>(x, spec_of("modelopt_qtensor"), "t", &st);
  CHECK(st.block[1] == 0.001953125f);
  lb::nvfp4_quantize_dequantize<xq::scalar_policy>(x, spec_of("transformer_engine_1x16"), "t", &st);
  CHECK(st.block[1] == 0.0f);
  // A zero scale zeroes the block in ModelOpt's Triton kernel (where NVFP4QTensor takes scale 1).
  std::fill(x.begin(), x.end(), 0.0f);
  x(0, 0) = 1.0f;
  x(1, 3) = -1e-30f;
  const xq::tensor t = lb::nvfp4_quantize_dequantize<xq::scalar_policy>(x, spec_of("modelopt_triton"));
  CHECK(golden::to_bits(t(1, 3)) == 0u);
}

TEST_CASE("NVFP4 specs are checked", "[low_bit][nvfp4]") {
  xq::tensor x = xq::tensor::from_shape({2, 40});
  std::fill(x.begin(), x.end(), 1.0f);
  CHECK_THROWS_WITH(lb::nvfp4_quantize_dequantize<xq::scalar_policy>(x, spec_of("torchao"), "block/q"),
                    Catch::Contains("block/q") && Catch::Contains("multiple of 16") && Catch::Contains("length 40"));
  CHECK_NOTHROW(lb::nvfp4_quantize_dequantize<xq::scalar_policy>(x, spec_of("transformer_engine_1x16")));
  lb::nvfp4_spec s = spec_of("torchao");
  s.tiles_16x16 = true;
  CHECK_THROWS_WITH(lb::nvfp4_quantize_dequantize<xq::scalar_policy>(x, s, "q"), Catch::Contains("16x16 tiles"));
  s = spec_of("transformer_engine_1x16");
  s.axis = 2;
  CHECK_THROWS_WITH(lb::nvfp4_quantize_dequantize<xq::scalar_policy>(x, s, "q"), Catch::Contains("a block axis in [-2, 2)"));
  lb::nvfp4_state st;
  xq::tensor w = xq::tensor::from_shape({2, 32});
  std::fill(w.begin(), w.end(), 1.0f);
  lb::nvfp4_quantize_dequantize<xq::scalar_policy>(w, spec_of("torchao"), "q", &st);
  CHECK_THROWS_WITH(lb::nvfp4_apply<xq::scalar_policy>(x, spec_of("transformer_engine_1x16"), st, "q"),
                    Catch::Contains("a state of 6 block values") && Catch::Contains("4 block values"));
  CHECK(lb::nvfp4_bits_per_value() == 4.5);
}

TEST_CASE("NVFP4 blocks along a middle axis equal the transposed last-axis blocks", "[low_bit][nvfp4]") {
  // A Keras dense kernel (in, out) takes its blocks along `in` (axis 0): the same numbers as
  // the transposed (out, in) weight with blocks along its last axis, as the peers see it.
  const xq::tensor w = li::random_rows(77, 48, 40);  // (in = 48, out = 40)
  xq::tensor wt = xq::tensor::from_shape({40, 48});
  for (std::size_t i = 0; i < 48; ++i)
    for (std::size_t o = 0; o < 40; ++o) wt(o, i) = w(i, o);
  for (const char* v : {"torchao", "transformer_engine_1x16", "transformer_engine_16x16", "modelopt_qtensor",
                        "modelopt_triton"}) {
    INFO(v);
    lb::nvfp4_spec s = spec_of(v), t = spec_of(v);
    s.axis = 0;
    lb::nvfp4_state a, b;
    const xq::tensor ya = lb::nvfp4_quantize_dequantize<xq::simd_policy<>>(w, s, "q", &a);
    const xq::tensor yb = lb::nvfp4_quantize_dequantize<xq::scalar_policy>(wt, t, "q", &b);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < 48; ++i)
      for (std::size_t o = 0; o < 40; ++o) bad += golden::to_bits(ya(i, o)) != golden::to_bits(yb(o, i));
    CHECK(bad == 0);
    // states: (outer 1, 3 blocks, inner 40) against (40 rows, 3 blocks)
    REQUIRE(a.block.size() == b.block.size());
    std::size_t state_bad = 0;
    for (std::size_t blk = 0; blk < 3; ++blk)
      for (std::size_t o = 0; o < 40; ++o)
        state_bad += golden::to_bits(a.block[blk * 40 + o]) != golden::to_bits(b.block[o * 3 + blk]);
    CHECK(state_bad == 0);
  }
}
