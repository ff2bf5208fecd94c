#pragma once
/// \file crc32c.hpp
/// CRC-32C (Castagnoli: the reflected polynomial 0x82F63B78, initial and final value all
/// ones), as TFRecord frames its records with, and TFRecord's masked form of it. (The
/// checkpoint envelope's CRC-32 is zlib's polynomial: another checksum.)

#include <array>
#include <cstddef>
#include <cstdint>

namespace xq::detail {

/// The byte-at-a-time table of the reflected polynomial.
constexpr std::array<std::uint32_t, 256> crc32c_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

/// CRC-32C of `n` bytes ("123456789" gives 0xE3069283).
inline std::uint32_t crc32c(const void* data, std::size_t n) noexcept {
  static constexpr std::array<std::uint32_t, 256> table = crc32c_table();
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

/// TFRecord's masked CRC: rotated right by 15 bits plus a constant, so that the CRC of
/// bytes that hold CRCs is not trivially related to theirs.
constexpr std::uint32_t mask_crc32c(std::uint32_t crc) noexcept {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

}  // namespace xq::detail
