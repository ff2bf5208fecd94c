#pragma once
// The integer hash behind the index-made inputs of tools/gen_golden_tf_reductions.py and
// gen_golden_torch_reductions.py, whose golden files store outputs only (tools/index_hash.py
// is its Python twin). Each test maps it to floats as its generator does.

#include <cstddef>
#include <cstdint>

namespace golden {

/// murmur3's 32-bit finalizer of i + seed * 0x9E3779B9 (mod 2^32).
inline std::uint32_t index_hash(std::size_t i, std::uint32_t seed) {
  std::uint32_t h = std::uint32_t(i) + seed * 0x9E3779B9u;
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

}  // namespace golden
