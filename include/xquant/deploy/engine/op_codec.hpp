#pragma once
/// \file op_codec.hpp
/// How an engine op saves and loads itself (integer_model_file.hpp): `op_writer` takes its
/// fields by name, `op_reader` gives them back checked. Each op writes its own fields in
/// `lowered_op::encode` and reads them in its decoder (op_registry.hpp); the file writes
/// the kind, path, inputs and output around them. The file's encoding (CBOR, through
/// nlohmann::json) stays behind these two interfaces, in integer_model_file.ipp.
///
/// Arrays of numbers travel as byte strings of little-endian values (`numbers`), a
/// quantization grid with io/'s grid codec (the one checkpoints' quantizer codec sits
/// beside), a window as a map. A reader refuses what does not fit: a missing field, another
/// type, an integer out of its range, a byte count that is not the count asked for — each an
/// io_error naming the file, the op and the field.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/tensor.hpp"
#include "../../quantizers/quantization_grid.hpp"
#include "window_geometry.hpp"

namespace xq::deploy {

/// Whether numbers in memory are little-endian, as the file's byte strings are.
inline bool host_is_little_endian() noexcept {
  const std::uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

class op_writer {
 public:
  virtual ~op_writer() = default;
  virtual void flag(const char* key, bool v) = 0;
  virtual void integer(const char* key, std::int64_t v) = 0;
  virtual void number(const char* key, double v) = 0;
  virtual void text(const char* key, const std::string& v) = 0;
  /// A list of sizes.
  virtual void sizes(const char* key, const std::vector<std::size_t>& v) = 0;
  /// A list of (signed) integers.
  virtual void integers(const char* key, const std::vector<std::int64_t>& v) = 0;
  /// A byte string.
  virtual void bytes(const char* key, const std::uint8_t* data, std::size_t n) = 0;
  /// A quantization grid (io/'s grid codec).
  virtual void grid(const char* key, const quantization_grid& g) = 0;
  /// A map under `key`, its fields written by `fill`.
  virtual void map(const char* key, const std::function<void(op_writer&)>& fill) = 0;
  /// A list of `count` maps under `key`, map i written by fill(i, writer).
  virtual void maps(const char* key, std::size_t count, const std::function<void(std::size_t, op_writer&)>& fill) = 0;

  void size(const char* key, std::size_t v) { integer(key, static_cast<std::int64_t>(v)); }
  /// Numbers as a byte string of little-endian values.
  template <class T>
  void numbers(const char* key, const std::vector<T>& v) {
    static_assert(std::is_arithmetic_v<T>, "xquant: numbers() writes arithmetic values");
    check_endianness();
    bytes(key, reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(T));
  }
  /// A window: {"window", "strides", "dilation", "pads"}.
  XQ_DECL void window(const char* key, const window_geometry& g);
  /// A float tensor: {"shape", "data"} (float32).
  XQ_DECL void tensor_value(const char* key, const tensor& t);

 private:
  XQ_DECL static void check_endianness();
};

class op_reader {
 public:
  virtual ~op_reader() = default;
  /// "ops[3]", "ops[3].window": where in the file, for messages.
  virtual const std::string& where() const noexcept = 0;
  /// Throws io_error naming the file: "malformed integer model: <where>: <what>".
  [[noreturn]] virtual void fail(const std::string& what) const = 0;
  virtual bool has(const char* key) const = 0;
  virtual bool flag(const char* key) const = 0;
  /// An integer in [lo, hi].
  virtual std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi) const = 0;
  /// Any number (it may be infinite or NaN: the op checks what it accepts).
  virtual double number(const char* key) const = 0;
  virtual std::string text(const char* key) const = 0;
  /// A list of at most `max_count` sizes, each at most `hi`.
  virtual std::vector<std::size_t> sizes(const char* key, std::size_t max_count, std::uint64_t hi) const = 0;
  /// A list of at most `max_count` integers.
  virtual std::vector<std::int64_t> integers(const char* key, std::size_t max_count) const = 0;
  /// A byte string.
  virtual const std::vector<std::uint8_t>& bytes(const char* key) const = 0;
  /// A quantization grid, checked (check_grid).
  virtual quantization_grid grid(const char* key) const = 0;
  /// The map under `key`.
  virtual std::unique_ptr<op_reader> map(const char* key) const = 0;
  /// The maps of the list under `key`, at most `max_count`.
  virtual std::vector<std::unique_ptr<op_reader>> maps(const char* key, std::size_t max_count) const = 0;

  std::size_t size(const char* key, std::size_t hi) const { return static_cast<std::size_t>(integer(key, 0, std::int64_t(hi))); }
  /// A byte string of little-endian numbers, any count.
  template <class T>
  std::vector<T> numbers(const char* key) const {
    static_assert(std::is_arithmetic_v<T>, "xquant: numbers() reads arithmetic values");
    const std::vector<std::uint8_t>& b = bytes(key);
    if (b.size() % sizeof(T)) fail(std::string(key) + ": " + std::to_string(b.size()) + " bytes, not a multiple of " + std::to_string(sizeof(T)));
    if (!host_is_little_endian()) fail("reading needs a little-endian host (the file is little-endian)");
    std::vector<T> v(b.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
  }
  /// Exactly `n` of them.
  template <class T>
  std::vector<T> numbers(const char* key, std::size_t n) const {
    std::vector<T> v = numbers<T>(key);
    if (v.size() != n) fail(std::string(key) + ": expected " + std::to_string(n) + " values, given " + std::to_string(v.size()));
    return v;
  }
  /// A window, checked (check_window).
  XQ_DECL window_geometry window(const char* key) const;
  /// A float tensor {"shape", "data"}: at most `max_elements` elements (a zero-size
  /// dimension counted as 1 for the bound, as io/addressable_shape.hpp explains), the data
  /// exactly that many floats.
  XQ_DECL tensor tensor_value(const char* key, std::uint64_t max_elements) const;
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/op_codec.ipp"
#endif
