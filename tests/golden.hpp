#pragma once
// Reads the golden vectors that tools/gen_golden.py produced with the peers
// themselves (TF, tfmot, PyTorch). Every float is stored as its uint32 bit
// pattern, so comparisons are bit for bit, NaN and -0.0 included.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xio.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>
#include <xquant/core/tensor.hpp>
#include <xquant/numerics/torch_fake_quant.hpp>

#ifndef XQ_GOLDEN_DIR
#error "XQ_GOLDEN_DIR must point at tests/data/golden"
#endif

namespace golden {

using json = nlohmann::json;

inline json load(const std::string& family) {
  const std::string path = std::string(XQ_GOLDEN_DIR) + "/" + family + ".json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden file " + path);
  return json::parse(in);
}

inline float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline std::uint32_t to_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline std::vector<std::size_t> shape_of(const json& t) {
  return t.at("shape").get<std::vector<std::size_t>>();
}

inline xq::tensor tensor(const json& t) {
  const auto shape = shape_of(t);
  xq::tensor out = xt::empty<float>(shape);
  const auto& bits = t.at("f32");
  if (bits.size() != out.size()) throw std::runtime_error("golden tensor: size mismatch");
  for (std::size_t i = 0; i < out.size(); ++i) out.data()[i] = from_bits(bits[i].get<std::uint32_t>());
  return out;
}

inline xq::vector vector(const json& t) {
  const xq::tensor a = tensor(t);
  xq::vector v = xq::vector::from_shape({a.size()});
  std::copy(a.begin(), a.end(), v.begin());
  return v;
}

inline float scalar(const json& t) { return tensor(t).data()[0]; }

inline xq::torch::index_vector ints(const json& t) {
  const auto& v = t.at("i64");
  xq::torch::index_vector out = xq::torch::index_vector::from_shape({v.size()});
  for (std::size_t i = 0; i < v.size(); ++i) out(i) = v[i].get<std::int64_t>();
  return out;
}

/// Empty when a and b are bit-identical; otherwise where and how they differ.
template <class A, class B>
std::string bit_difference(const A& got, const B& want) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  std::size_t count = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (to_bits(got.data()[i]) != to_bits(want.data()[i]) && !(std::isnan(got.data()[i]) && std::isnan(want.data()[i]))) {
      if (count++ == 0) first = i;
    }
  if (count == 0) return {};
  std::ostringstream s;
  s.precision(9);
  s << count << " of " << got.size() << " differ; first at " << first << ": got "
    << got.data()[first] << " want " << want.data()[first];
  return s.str();
}

/// Sums over many elements: the peers add in float in their own tree order,
/// xquant in double (lane_sums.hpp), so they agree to rounding.
inline bool close_sum(float got, float want, float magnitude) {
  const float tol = 1e-6f * std::max(1.0f, magnitude);
  return std::fabs(got - want) <= tol;
}

/// Checks `got` within `tolerance` times the largest magnitude of `want` (at least 1), in
/// one assertion that reports how many elements differ and the first: layers whose sums
/// run in another order than the peer's, or whose erf/tanh are another library's.
inline void check_close_scaled(const xq::tensor& got, const xq::tensor& want, const std::string& what,
                               float tolerance = 1e-5f) {
  INFO(what);
  REQUIRE(got.shape() == want.shape());
  float scale = 1.0f;
  for (float v : want) scale = std::max(scale, std::fabs(v));
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got.data()[i] - want.data()[i]) <= tolerance * scale) && bad++ == 0) first = i;
  INFO(bad << " of " << got.size() << " differ; first at " << first << ": got " << got.data()[first] << " want "
            << want.data()[first]);
  CHECK(bad == 0);
}

inline float abs_sum(const xq::tensor& t) {
  float s = 0;
  for (float v : t) s += std::fabs(v);
  return s;
}

}  // namespace golden
