#pragma once
// The inputs and hashes the low-bit golden files share (tools/lowbit_golden.py is the Python
// twin): hashed rows that are not stored, FNV-1a 64 of float32 bits, codes as hex digits.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <xquant/core/tensor.hpp>

#include "../golden.hpp"
#include "../index_hash.hpp"

namespace low_bit_inputs {

/// FNV-1a 64 of the little-endian bits of n floats, as 16 hex digits.
inline std::string fnv1a64_hex(const float* p, std::size_t n) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n * 4; ++i) h = (h ^ b[i]) * 0x100000001B3ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}
inline std::string fnv1a64_hex(const std::vector<float>& v) { return fnv1a64_hex(v.data(), v.size()); }

/// fnv1a64_hex with every NaN as 0x7fc00000 (lowbit_golden.fnv1a64_nan_canonical).
inline std::string fnv1a64_hex_nan_canonical(const float* p, std::size_t n) {
  std::vector<float> v(p, p + n);
  for (float& f : v)
    if (std::isnan(f)) f = golden::from_bits(0x7FC00000u);
  return fnv1a64_hex(v.data(), v.size());
}

/// lowbit_golden.random_rows: uniform in (-1, 1), a power-of-two scale per row (2^-20..2^20),
/// one value in 97 times 37.
inline void append_random_rows(std::vector<float>& x, std::uint32_t seed, std::size_t rows, std::size_t cols) {
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint32_t first = golden::index_hash(r * cols, seed + 7);
    const float row_scale = std::ldexp(1.0f, int(first % 41) - 20);
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      const float u = float((double(golden::index_hash(i, seed)) / 4294967296.0) * 2.0 - 1.0);
      float v = u * row_scale;
      if (golden::index_hash(i, seed + 7) % 97 == 0) v = v * 37.0f;
      x.push_back(v);
    }
  }
}

inline xq::tensor random_rows(std::uint32_t seed, std::size_t rows, std::size_t cols) {
  std::vector<float> v;
  append_random_rows(v, seed, rows, cols);
  xq::tensor t = xq::tensor::from_shape({rows, cols});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

/// lowbit_golden.random_unit: n floats in (-1, 1).
inline xq::tensor random_unit(std::uint32_t seed, const xq::tensor::shape_type& shape) {
  xq::tensor t = xq::tensor::from_shape(shape);
  for (std::size_t i = 0; i < t.size(); ++i)
    t.data()[i] = float((double(golden::index_hash(i, seed)) / 4294967296.0) * 2.0 - 1.0);
  return t;
}

/// Codes as the files store them: one hex digit per code.
inline std::string codes_hex(const std::vector<std::uint8_t>& codes) {
  std::string s;
  for (auto c : codes) s += "0123456789abcdef"[c & 15];
  return s;
}

/// Float bits from a file's list, compared as bits (any NaN equals any NaN).
inline std::size_t count_differences(const float* got, const golden::json& want_bits, std::size_t* first = nullptr) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want_bits.size(); ++i) {
    const float w = golden::from_bits(want_bits[i].get<std::uint32_t>()), g = got[i];
    const bool same = std::isnan(w) ? std::isnan(g) : golden::to_bits(g) == golden::to_bits(w);
    if (!same && bad++ == 0 && first) *first = i;
  }
  return bad;
}

}  // namespace low_bit_inputs
