#pragma once
/// \file protobuf_wire.hpp
/// The protobuf wire format's writer primitives, shared by the ONNX exporter
/// (deploy/onnx/onnx_model.hpp) and the TensorBoard event writer (io/summary_writer.hpp).
///
/// A message is a sequence of fields, each a tag varint (field number << 3 | wire type)
/// and a value: wire type 0 a varint, 1 eight little-endian bytes, 2 a varint length and
/// that many bytes (strings, bytes, nested messages, packed repeated scalars), 5 four
/// little-endian bytes. A writer is a function template over a sink: a `byte_counter`
/// measures a nested message (its length prefix), a `byte_appender` writes it, so each
/// byte is written once, into a string reserved at the final size.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace xq::detail::protobuf {

struct byte_counter {
  std::size_t size = 0;
  void put(char) { ++size; }
  void put(const char*, std::size_t n) { size += n; }
};

struct byte_appender {
  std::string* out;
  void put(char c) { out->push_back(c); }
  void put(const char* p, std::size_t n) { out->append(p, n); }
};

enum wire : unsigned { varint_wire = 0, fixed64_wire = 1, length_wire = 2, fixed32_wire = 5 };

/// The unsigned integer of T's size: the bytes of a float or an int, little-endian on any host.
template <class T>
using bits_of =
    std::conditional_t<sizeof(T) == 1, std::uint8_t,
                       std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                          std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;

template <class T>
void append_le(std::string& out, T v) {
  using U = bits_of<T>;
  U u;
  std::memcpy(&u, &v, sizeof u);
  for (std::size_t k = 0; k < sizeof(T); ++k) out.push_back(static_cast<char>((u >> (8 * k)) & 0xFF));
}

template <class T>
T load_le(const char* p) {
  using U = bits_of<T>;
  U u = 0;
  for (std::size_t k = 0; k < sizeof(T); ++k)
    u |= static_cast<U>(static_cast<U>(static_cast<unsigned char>(p[k])) << (8 * k));
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

template <class Sink>
void put_varint(Sink& s, std::uint64_t v) {
  while (v >= 0x80) {
    s.put(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  s.put(static_cast<char>(v));
}
template <class Sink>
void put_tag(Sink& s, unsigned field, wire w) {
  put_varint(s, (std::uint64_t(field) << 3) | w);
}
/// int32/int64/enum: two's complement, 10 bytes when negative.
template <class Sink>
void put_int(Sink& s, unsigned field, std::int64_t v) {
  put_tag(s, field, varint_wire);
  put_varint(s, static_cast<std::uint64_t>(v));
}
template <class Sink>
void put_bytes(Sink& s, unsigned field, const char* data, std::size_t size) {
  put_tag(s, field, length_wire);
  put_varint(s, size);
  s.put(data, size);
}
template <class Sink>
void put_bytes(Sink& s, unsigned field, const std::string& b) {
  put_bytes(s, field, b.data(), b.size());
}
template <class Sink>
void put_nonempty(Sink& s, unsigned field, const std::string& b) {
  if (!b.empty()) put_bytes(s, field, b);
}
template <class Sink, class T>
void put_fixed(Sink& s, unsigned field, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "fixed32 or fixed64");
  put_tag(s, field, sizeof(T) == 4 ? fixed32_wire : fixed64_wire);
  char le[sizeof(T)];
  using U = bits_of<T>;
  U u;
  std::memcpy(&u, &v, sizeof u);
  for (std::size_t k = 0; k < sizeof(T); ++k) le[k] = static_cast<char>((u >> (8 * k)) & 0xFF);
  s.put(le, sizeof le);
}
template <class Sink>
void put_float(Sink& s, unsigned field, float f) {
  put_fixed(s, field, f);
}
template <class Sink>
void put_double(Sink& s, unsigned field, double d) {
  put_fixed(s, field, d);
}
/// A repeated double field, packed (proto3's encoding of repeated scalars).
template <class Sink, class Range>
void put_packed_doubles(Sink& s, unsigned field, const Range& values) {
  std::size_t n = 0;
  for (auto it = values.begin(); it != values.end(); ++it) ++n;
  put_tag(s, field, length_wire);
  put_varint(s, n * 8);
  for (const auto& v : values) {
    const double d = static_cast<double>(v);
    std::uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    char le[8];
    for (std::size_t k = 0; k < 8; ++k) le[k] = static_cast<char>((u >> (8 * k)) & 0xFF);
    s.put(le, 8);
  }
}
/// A nested message as field `field`: `body(sink)` writes its fields, once to measure them
/// and once to write them.
template <class Sink, class Body>
void put_message_with(Sink& s, unsigned field, Body&& body) {
  byte_counter c;
  body(c);
  put_tag(s, field, length_wire);
  put_varint(s, c.size);
  body(s);
}

}  // namespace xq::detail::protobuf
