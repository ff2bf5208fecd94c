#pragma once
/// \file file_envelope.ipp
/// xquant's file envelope (io/file_envelope.hpp). The CBOR (nlohmann::json) and CRC-32
/// (zlib) machinery is private to the io room's .ipp files.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "../../core/error.hpp"
#include "../detail/cbor_codec.hpp"
#include "../file_envelope.hpp"

namespace xq::io {

XQ_DECL std::string envelope_magic(const file_format& f) {
  // a4: a map of 4 entries; 66 "format": text of 6 bytes; then the name as CBOR text.
  const std::vector<std::uint8_t> name = nlohmann::ordered_json::to_cbor(nlohmann::ordered_json(f.name));
  return std::string("\xa4\x66" "format", 8) + std::string(name.begin(), name.end());
}

XQ_DECL std::uint32_t crc32(const std::uint8_t* data, std::size_t n) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  while (n > 0) {  // zlib takes at most a uInt at a time
    const uInt chunk = static_cast<uInt>(std::min<std::size_t>(n, std::size_t(1) << 30));
    crc = ::crc32(crc, data, chunk);
    data += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

XQ_DECL std::string hex_bytes(const std::uint8_t* data, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += digits[data[i] >> 4];
    s += digits[data[i] & 15];
  }
  return s;
}

XQ_DECL std::vector<std::uint8_t> wrap_envelope(const file_format& f, std::vector<std::uint8_t> payload) {
  const std::uint32_t crc = crc32(payload.data(), payload.size());
  nlohmann::ordered_json file = nlohmann::ordered_json::object();
  file["format"] = f.name;
  file["version"] = f.version;
  file["crc32"] = crc;
  file["payload"] = nlohmann::ordered_json::binary(std::move(payload));
  return nlohmann::ordered_json::to_cbor(file);
}

namespace detail {

inline std::string versions_read(const file_format& f) {
  using xq::detail::concat;
  if (f.oldest == f.version) return concat("version ", f.version);
  if (f.oldest + 1 == f.version) return concat("versions ", f.oldest, " and ", f.version);
  return concat("versions ", f.oldest, " to ", f.version);
}

}  // namespace detail

XQ_DECL std::vector<std::uint8_t> open_envelope(const file_format& f, const std::uint8_t* data, std::size_t size,
                                                const std::string& source, unsigned& file_version) {
  using json = nlohmann::json;
  using xq::detail::concat;
  const std::string magic = envelope_magic(f);
  const std::string expected = concat("an xquant ", f.what, " starts with ",
                                      hex_bytes(reinterpret_cast<const std::uint8_t*>(magic.data()), magic.size()),
                                      " (a CBOR map whose first entry is \"format\": \"", f.name, "\")");
  if (size == 0) throw io_error(source, concat("not an xquant ", f.what, ": the file is empty"));
  const std::size_t head = std::min(size, magic.size());
  json file;
  std::string error;
  if (std::memcmp(data, magic.data(), head) != 0) {
    // A map with our format elsewhere than first (an older file of it) is named by its
    // version; anything else is foreign.
    const bool ours = f.any_key_order && detail::parse_bounded_cbor(data, size, file, error) && file.is_object() &&
                      file.contains("format") && file["format"] == f.name;
    if (!ours)
      throw io_error(source, concat("not an xquant ", f.what, ": it starts with ", hex_bytes(data, head), "; ", expected));
  } else {
    if (size <= magic.size())
      throw io_error(source, concat("truncated: the file ends after ", size, " bytes, inside its header"));
    if (!detail::parse_bounded_cbor(data, size, file, error))
      throw io_error(source, concat("truncated or corrupted (", size, " bytes): ", error));
  }
  // The magic fixed the map's size (4) and its first entry; the others must be there.
  const auto version = file.find("version");
  if (version == file.end() || !version->is_number_unsigned())
    throw io_error(source, "corrupted: no unsigned \"version\" entry");
  const std::uint64_t v = version->get<std::uint64_t>();
  if (v < f.oldest || v > f.version)
    throw io_error(source, concat("unsupported ", f.what, " format version ", v, " (this xquant reads ", detail::versions_read(f),
                                  ")", v < f.oldest && f.older[0] ? concat(": ", f.older) : std::string()));
  file_version = static_cast<unsigned>(v);
  const auto crc = file.find("crc32");
  if (crc == file.end() || !crc->is_number_unsigned() || crc->get<std::uint64_t>() > 0xffffffffu)
    throw io_error(source, "corrupted: no \"crc32\" entry of 32 bits");
  const auto payload = file.find("payload");
  if (payload == file.end() || !payload->is_binary()) throw io_error(source, "corrupted: no \"payload\" byte string");
  std::vector<std::uint8_t> bytes = std::move(static_cast<std::vector<std::uint8_t>&>(payload->get_binary()));
  const std::uint32_t actual = crc32(bytes.data(), bytes.size());
  if (actual != crc->get<std::uint64_t>())
    throw io_error(source, concat("corrupted: the payload's CRC-32 is ", actual, ", the file says ", crc->get<std::uint64_t>()));
  return bytes;
}

}  // namespace xq::io
