// torchao's integer QAT numerics (numerics/torchao_affine.hpp) against torchao's own fake
// quantizers and their autograd (tests/data/golden/low_bit_int.json,
// tools/gen_golden_lowbit_int.py): IntxFakeQuantizer symmetric groups (2 to 8 bits, groups of
// 16 to 128), per-token asymmetric (8 and 4 bits), Int4WeightFakeQuantizer (groups of 32 and
// 128), under the scalar and the SIMD policy.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <xquant/numerics/torchao_affine.hpp>

#include "low_bit_inputs.hpp"

namespace lb = xq::low_bit;
namespace li = low_bit_inputs;

namespace {

lb::intx_spec spec_of(const golden::json& c) {
  lb::intx_spec s;
  const std::string v = c.at("variant");
  const auto& a = c.at("attrs");
  if (v == "torchao_intx_symmetric") s.scheme = lb::intx_scheme::intx_symmetric;
  else if (v == "torchao_per_token_asymmetric") s.scheme = lb::intx_scheme::intx_per_token;
  else s.scheme = lb::intx_scheme::int4_weight_only;
  s.bits = a.contains("bits") ? a.at("bits").get<int>() : 4;
  s.group_size = a.contains("group_size") ? a.at("group_size").get<int>() : 0;
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
  const std::string name = c.at("input");
  INFO(c.at("variant").get<std::string>() << " " << c.at("attrs").dump() << " on " << name);
  const lb::intx_spec s = spec_of(c);
  const xq::tensor x = input_of(file, name);
  REQUIRE(x.size() == c.at("values").get<std::size_t>());
  lb::intx_state st;
  std::vector<unsigned char> mask(x.size());
  bool* m = reinterpret_cast<bool*>(mask.data());
  const xq::tensor y = lb::intx_quantize_dequantize<Policy>(x, s, "test", &st, m);
  check_bits("y", y.data(), y.size(), c, "y", x);
  std::vector<float> scale, zp;
  lb::intx_scales(s, st, scale, zp);
  check_bits("scales", scale.data(), scale.size(), c, "scales", x);
  check_bits("zero_points", zp.data(), zp.size(), c, "zero_points", x);
  const xq::tensor dy = li::random_unit(file.at("random").at("dy_seed").get<std::uint32_t>(), x.shape());
  const xq::tensor dx = lb::intx_backward<Policy>(x, dy, s, st, m);
  check_bits("dx", dx.data(), dx.size(), c, "dx", x);
  const xq::tensor again = lb::intx_apply<Policy>(x, s, st);
  CHECK(li::fnv1a64_hex(again.data(), again.size()) == li::fnv1a64_hex(y.data(), y.size()));
  return x.size();
}

}  // namespace

TEST_CASE("torchao's integer groups, tokens and int4 weight-only match bit for bit", "[low_bit][intx][golden]") {
  const golden::json file = golden::load("low_bit_int");
  std::map<std::string, std::size_t> values;
  for (const auto& c : file.at("cases")) {
    values[c.at("variant").get<std::string>() + c.at("attrs").dump()] += check_case<xq::scalar_policy>(file, c);
    check_case<xq::simd_policy<>>(file, c);
#if XSIMD_WITH_AVX2 && XSIMD_WITH_AVX512F  // the default is AVX-512: AVX2's batches too
    check_case<xq::simd_policy<xsimd::avx2>>(file, c);
#endif
  }
  CHECK(values.size() == 14);
  for (const auto& [variant, n] : values) {
    INFO(variant);
    CHECK(n >= 10000);
  }
}

TEST_CASE("the integer goldens tell the schemes apart", "[low_bit][intx][discrimination]") {
  const golden::json file = golden::load("low_bit_int");
  const xq::tensor x = input_of(file, "random");
  lb::intx_spec sym, tok, wo;
  tok.scheme = lb::intx_scheme::intx_per_token;
  tok.bits = 4;
  wo.scheme = lb::intx_scheme::int4_weight_only;
  const xq::tensor a = lb::intx_quantize_dequantize<xq::scalar_policy>(x, sym);
  const xq::tensor b = lb::intx_quantize_dequantize<xq::scalar_policy>(x, tok);
  const xq::tensor c = lb::intx_quantize_dequantize<xq::scalar_policy>(x, wo);
  std::size_t ab = 0, ac = 0, bc = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    ab += a.data()[i] != b.data()[i];
    ac += a.data()[i] != c.data()[i];
    bc += b.data()[i] != c.data()[i];
  }
  CHECK(ab > 0);
  CHECK(ac > 0);
  CHECK(bc > 0);
  // torch 2.15's clamp passes no gradient at its bounds: a value that rounds to qmax gets 0.
  xq::tensor g = xq::tensor::from_shape({1, 32});
  std::fill(g.begin(), g.end(), 0.1f);
  g(0, 0) = 7.5f;  // amax: scale 1
  g(0, 1) = 7.0f;  // rounds to qmax = 7
  g(0, 2) = 6.0f;
  lb::intx_state st;
  std::vector<unsigned char> mask(32);
  lb::intx_quantize_dequantize<xq::scalar_policy>(g, sym, "t", &st, reinterpret_cast<bool*>(mask.data()));
  CHECK(mask[1] == 0);
  CHECK(mask[2] == 1);
}

namespace {

/// One case of tools/gen_golden_lowbit_range_learning.py: the first call (initial scales, y,
/// dx, the scales' gradient), the scales moved by the case's factors, a second call.
template <class Policy>
void check_range_learning(const golden::json& file, const golden::json& c) {
  const std::string name = c.at("input");
  INFO("range learning int" << c.at("bits").get<int>() << " group " << c.at("group_size").get<int>() << " on " << name);
  lb::intx_spec s;
  s.bits = c.at("bits");
  s.group_size = c.at("group_size");
  s.range_learning = true;
  const xq::tensor x = input_of(file, name);
  REQUIRE(x.size() == c.at("values").get<std::size_t>());
  const auto& r = file.at("random");
  lb::intx_state st = lb::intx_learned_state(x, s, "test");
  const std::size_t groups = st.values.size() / 2;
  std::vector<float> scale(groups);
  for (std::size_t g = 0; g < groups; ++g) scale[g] = st.values[2 * g];
  check_bits("scale", scale.data(), groups, c, "scale", x);
  const xq::tensor factor = li::random_unit(r.at("factor_seed").get<std::uint32_t>(), {groups});
  for (const char* step : {"", "_2"}) {
    const std::string k = step;
    const xq::tensor dy = li::random_unit(r.at(k.empty() ? "dy_seed" : "dy2_seed").get<std::uint32_t>(), x.shape());
    std::vector<unsigned char> mask(x.size());
    bool* m = reinterpret_cast<bool*>(mask.data());
    const xq::tensor y = lb::intx_apply<Policy>(x, s, st, "test", m);
    check_bits("y", y.data(), y.size(), c, "y" + k, x);
    const xq::tensor dx = lb::intx_backward<Policy>(x, dy, s, st, m);
    check_bits("dx", dx.data(), dx.size(), c, "dx" + k, x);
    const std::vector<float> ds = lb::intx_learned_scale_gradient(x, dy, s, st, "test");
    check_bits("dscale", ds.data(), ds.size(), c, "dscale" + k, x);
    // The optimizer's move: each scale times its factor in [0.5, 1.5) (the generator's).
    for (std::size_t g = 0; g < groups; ++g) {
      st.values[2 * g] *= 0.5f + (factor.data()[g] + 1.0f) * 0.5f;
      scale[g] = st.values[2 * g];
    }
    if (k.empty()) check_bits("scale_2", scale.data(), groups, c, "scale_2", x);
  }
}

}  // namespace

TEST_CASE("torchao's range learning: initial scales, both calls and the scales' gradient bit for bit",
          "[low_bit][intx][golden]") {
  const golden::json file = golden::load("low_bit_range_learning");
  std::size_t cases = 0;
  for (const auto& c : file.at("cases")) {
    check_range_learning<xq::scalar_policy>(file, c);
    check_range_learning<xq::simd_policy<>>(file, c);
    ++cases;
  }
  CHECK(cases == 12);
  // Only intx_symmetric learns its scales.
  lb::intx_spec token;
  token.scheme = lb::intx_scheme::intx_per_token;
  token.range_learning = true;
  CHECK_THROWS_WITH(lb::intx_learned_state(xq::tensor::from_shape({2, 32}), token, "w"),
                    Catch::Contains("range learning on intx_symmetric"));
}
