#pragma once
/// \file cbor_codec.hpp
/// The CBOR machinery xquant's own files share, private to the io room and to the .ipp
/// files that read and write those files (it includes nlohmann::json; no public header
/// includes it): the bounded parser, and the codecs of the quantizers' state — a fake
/// quantizer's configuration (checkpoints) and a quantization grid with its rounding rule
/// (the integer engine's quantize op).
///
///   - parse_bounded_cbor: one CBOR item spanning the bytes, nesting at most 32 deep (the
///     parser recurses once per level: a few kilobytes of 0x81 would exhaust the stack), no
///     map key twice;
///   - encode_config: a quantizer_config as a map (checkpoint_format.md);
///   - encode_grid / decode_grid: a quantization_grid as a map, numbers of the scales and
///     zero points as little-endian byte strings; decode_grid checks every field and then
///     the grid as a whole (check_grid).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../config.hpp"
#include "../../core/error.hpp"
#include "../../quantizers/quantization_grid.hpp"
#include "../../quantizers/quantizer_config.hpp"

namespace xq::io::detail {

/// Parses one CBOR item that spans all `n` bytes, nesting at most `max_depth` levels and
/// no key twice in a map; false (and `error`) when it does not.
XQ_DECL bool parse_bounded_cbor(const std::uint8_t* data, std::size_t n, nlohmann::json& out, std::string& error,
                                std::size_t max_depth = 32);

/// Reads fields of parsed CBOR with checks; every failure is an io_error naming the file:
/// "malformed <what>: <where>.<key>: <what was wrong>".
class cbor_fields {
 public:
  using json = nlohmann::json;
  cbor_fields(std::string source, std::string what) : source_(std::move(source)), what_(std::move(what)) {}

  [[noreturn]] XQ_DECL void fail(const std::string& where, const std::string& problem) const;
  /// The entry `key` of map `j` (a missing entry or a non-map fails).
  XQ_DECL const json& field(const json& j, const char* key, const std::string& where) const;
  XQ_DECL std::string text(const json& j, const char* key, const std::string& where) const;
  XQ_DECL bool flag(const json& j, const char* key, const std::string& where) const;
  XQ_DECL double number(const json& j, const char* key, const std::string& where) const;
  /// An integer in [lo, hi].
  XQ_DECL std::int64_t integer(const json& j, const char* key, const std::string& where, std::int64_t lo,
                               std::int64_t hi) const;
  XQ_DECL const std::vector<std::uint8_t>& bytes(const json& j, const char* key, const std::string& where) const;
  /// A byte string of little-endian numbers of type T (float, int32).
  template <class T>
  std::vector<T> numbers(const json& j, const char* key, const std::string& where) const {
    const std::vector<std::uint8_t>& b = bytes(j, key, where);
    if (b.size() % sizeof(T))
      fail(where + "." + key, xq::detail::concat(b.size(), " bytes, not a multiple of ", sizeof(T)));
    std::vector<T> v(b.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
  }
  const std::string& source() const noexcept { return source_; }

 private:
  std::string source_, what_;
};

/// A quantizer_config as a map (the checkpoint's quantizer entries).
XQ_DECL nlohmann::ordered_json encode_config(const quantizer_config& c);

/// A quantization grid as a map: element, num_bits, qmin, qmax, per_channel, channel_axis,
/// block_size, scale_type, scale (float32 bytes), zero_point (int32 bytes), tensor_scale
/// (a number or null), dynamic, and the rounding rule as a map.
XQ_DECL nlohmann::ordered_json encode_grid(const quantization_grid& g);

/// The grid of a map encode_grid wrote, checked field by field and then as a whole
/// (check_grid): io_error through `r` naming `where` otherwise. At most `max_scales` scales.
XQ_DECL quantization_grid decode_grid(const nlohmann::json& j, const cbor_fields& r, const std::string& where,
                                      std::size_t max_scales = std::size_t(1) << 24);

}  // namespace xq::io::detail

#if !defined(XQ_SEPARATE_COMPILATION)
#include "../impl/cbor_codec.ipp"
#endif
