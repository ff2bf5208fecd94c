#pragma once
/// \file npy.ipp
/// The .npy reader and writer (io/npy.hpp). The header parser and the dtype conversions
/// are private to it: they live here only.

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <xtensor/xmanipulation.hpp>

#include "../addressable_shape.hpp"
#include "../atomic_file.hpp"
#include "../npy.hpp"

namespace xq::io {

namespace detail {

using xq::detail::concat;

struct npy_file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using npy_file = std::unique_ptr<std::FILE, npy_file_closer>;

XQ_DECL bool npy_host_is_little_endian() {
  const std::uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

XQ_DECL std::string npy_errno_text(int err) { return err ? std::strerror(err) : "unknown error"; }

XQ_DECL std::string npy_shape_string(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The element types load_npy converts from.
struct npy_dtype {
  char kind = 'f';         // 'f' float, 'i' signed, 'u' unsigned, 'b' bool
  std::size_t size = 4;    // bytes
  bool swap = false;       // stored in the other byte order than the host's
};

struct npy_header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::size_t> shape;
};

// Parses the header dict, a Python literal of exactly the three keys numpy writes.
class npy_header_parser {
 public:
  npy_header_parser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  npy_header parse() {
    npy_header h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::size_t key_at = pos_;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (have_descr) fail("duplicate key 'descr'", key_at);
        if (peek() == '[')
          fail("a structured dtype (a list as 'descr'); only plain numeric arrays can be loaded", pos_);
        h.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_order) fail("duplicate key 'fortran_order'", key_at);
        h.fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        if (have_shape) fail("duplicate key 'shape'", key_at);
        h.shape = shape_tuple();
        have_shape = true;
      } else {
        fail(concat("unexpected key '", key, "' (a .npy header has 'descr', 'fortran_order' and 'shape')"),
             key_at);
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}'", pos_);
    }
    ++pos_;  // '}'
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\0' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
    if (pos_ != text_.size()) fail("unexpected text after the closing '}'", pos_);
    if (!have_descr) fail("no 'descr' key", pos_);
    if (!have_order) fail("no 'fortran_order' key", pos_);
    if (!have_shape) fail("no 'shape' key", pos_);
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what, std::size_t at) const {
    std::string shown;
    std::string text = text_;
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();  // numpy's padding
    for (char c : text.substr(0, 160)) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u < 0x7f) {
        shown += c;
      } else {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", u);
        shown += hex;
      }
    }
    if (text.size() > 160) shown += "...";
    throw io_error(path_, concat("bad .npy header: ", what, " (at character ", at, " of \"", shown, "\")"));
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n')) ++pos_;
  }

  void expect(char c) {
    skip_space();
    if (peek() != c) fail(concat("expected '", c, "'"), pos_);
    ++pos_;
  }

  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string", pos_);
    const std::size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail("escapes in strings are not supported", pos_);
      ++pos_;
    }
    if (pos_ >= text_.size()) fail("unterminated string", start - 1);
    return text_.substr(start, pos_++ - start);
  }

  bool boolean() {
    skip_space();
    if (text_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (text_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail("expected True or False for 'fortran_order'", pos_);
  }

  std::vector<std::size_t> shape_tuple() {
    std::vector<std::size_t> shape;
    expect('(');
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      const std::size_t start = pos_;
      std::uint64_t v = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        const unsigned digit = static_cast<unsigned>(text_[pos_] - '0');
        if (v > (std::numeric_limits<std::size_t>::max() - digit) / 10) fail("dimension too large", start);
        v = v * 10 + digit;
        ++pos_;
      }
      if (pos_ == start) fail("expected a non-negative integer dimension", start);
      if (peek() == 'L') ++pos_;  // Python 2's long literals, as old numpy wrote them
      shape.push_back(static_cast<std::size_t>(v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') fail("expected ',' or ')' in 'shape'", pos_);
    }
    ++pos_;  // ')'
    return shape;
  }

  const std::string& path_;
  const std::string& text_;
  std::size_t pos_ = 0;
};

XQ_DECL npy_dtype npy_parse_descr(const std::string& path, const std::string& descr) {
  auto unsupported = [&]() {
    return io_error(path, concat("unsupported dtype '", descr,
                                 "': load_npy reads float32 ('<f4'), and converts float64 ('<f8'), "
                                 "integers ('|i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8') "
                                 "and booleans ('|b1') to float32 (either byte order)"));
  };
  if (descr.size() < 3) throw unsupported();
  const char order = descr[0];
  npy_dtype t;
  t.kind = descr[1];
  const std::string digits = descr.substr(2);
  if (digits == "1") t.size = 1;
  else if (digits == "2") t.size = 2;
  else if (digits == "4") t.size = 4;
  else if (digits == "8") t.size = 8;
  else throw unsupported();
  const bool known = (t.kind == 'f' && (t.size == 4 || t.size == 8)) || t.kind == 'i' || t.kind == 'u' ||
                     (t.kind == 'b' && t.size == 1);
  if (!known) throw unsupported();
  const bool little = npy_host_is_little_endian();
  if (order == '<') t.swap = !little && t.size > 1;
  else if (order == '>') t.swap = little && t.size > 1;
  else if (order == '|' || order == '=') t.swap = false;
  else throw unsupported();
  if (order == '|' && t.size > 1) throw unsupported();
  return t;
}

// Converts `n` values of type `t` at `src` (file byte order) to float at `dst`.
XQ_DECL void npy_convert(const npy_dtype& t, unsigned char* src, std::size_t n, float* dst) {
  if (t.swap)
    for (std::size_t i = 0; i < n; ++i) std::reverse(src + i * t.size, src + (i + 1) * t.size);
  auto each = [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, src + i * sizeof(T), sizeof(T));
      dst[i] = static_cast<float>(v);
    }
  };
  switch (t.kind) {
    case 'f':
      if (t.size == 4) std::memcpy(dst, src, n * 4);  // bit for bit: NaN payloads, -0, denormals
      else each(double{});
      break;
    case 'i':
      if (t.size == 1) each(std::int8_t{});
      else if (t.size == 2) each(std::int16_t{});
      else if (t.size == 4) each(std::int32_t{});
      else each(std::int64_t{});
      break;
    case 'u':
      if (t.size == 1) each(std::uint8_t{});
      else if (t.size == 2) each(std::uint16_t{});
      else if (t.size == 4) each(std::uint32_t{});
      else each(std::uint64_t{});
      break;
    default:  // 'b'
      for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] ? 1.f : 0.f;
  }
}

}  // namespace detail

XQ_DECL tensor load_npy(const std::string& path) {
  using detail::concat;
  errno = 0;
  detail::npy_file f(std::fopen(path.c_str(), "rb"));
  if (!f) throw io_error(path, "cannot open: " + detail::npy_errno_text(errno));
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw io_error(path, "cannot read: is a directory");
  const std::uintmax_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw io_error(path, "cannot read its size: " + ec.message());

  auto read_exact = [&](void* dst, std::size_t n) {
    const std::size_t got = std::fread(dst, 1, n, f.get());
    if (got != n && std::ferror(f.get())) throw io_error(path, "read error: " + detail::npy_errno_text(errno));
    return got;
  };

  unsigned char prefix[12];
  std::size_t got = read_exact(prefix, 8);
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (got < 6 || std::memcmp(prefix, magic, 6) != 0) {
    std::string bytes;
    for (std::size_t i = 0; i < std::min<std::size_t>(got, 6); ++i) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%02x", prefix[i]);
      bytes += (i ? " " : "") + std::string(hex);
    }
    throw io_error(path, concat("not a .npy file: it starts with ", got ? "bytes " + bytes : "nothing (empty file)",
                                ", a .npy file starts with 93 4e 55 4d 50 59 (\"\\x93NUMPY\")"));
  }
  if (got < 8) throw io_error(path, concat("truncated: the file ends inside the 8-byte magic and version"));
  const unsigned major = prefix[6], minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    throw io_error(path, concat("unsupported .npy format version ", major, ".", minor, " (known: 1.0, 2.0, 3.0)"));
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  got = read_exact(prefix + 8, len_bytes);
  if (got < len_bytes)
    throw io_error(path, concat("truncated: the file ends inside the header length field (",
                                8 + got, " of ", 8 + len_bytes, " bytes)"));
  std::uint64_t header_len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) header_len |= std::uint64_t(prefix[8 + i]) << (8 * i);
  const std::uint64_t data_offset = 8 + len_bytes + header_len;
  if (file_size < data_offset)
    throw io_error(path, concat("truncated: the header is ", header_len, " bytes long, the file has ",
                                file_size - (8 + len_bytes), " bytes after the header length field"));

  std::string text(static_cast<std::size_t>(header_len), '\0');
  if (read_exact(text.data(), text.size()) != text.size())
    throw io_error(path, concat("truncated: could not read the ", header_len, "-byte header"));
  const detail::npy_header h = detail::npy_header_parser(path, text).parse();
  const detail::npy_dtype t = detail::npy_parse_descr(path, h.descr);

  const std::optional<std::uint64_t> elements = detail::addressable_element_count(h.shape);
  if (!elements)
    throw io_error(path, concat("bad .npy header: shape ", detail::npy_shape_string(h.shape), " is too large"));
  const std::uint64_t count = *elements;
  const std::uint64_t nbytes = count * t.size;
  const std::string what = concat("shape ", detail::npy_shape_string(h.shape), " '", h.descr, "'");
  if (file_size - data_offset < nbytes)
    throw io_error(path, concat("truncated: expected ", nbytes, " bytes of data for ", what, ", got ",
                                file_size - data_offset));
  if (file_size - data_offset > nbytes)
    throw io_error(path, concat("trailing garbage: ", file_size - data_offset - nbytes, " bytes after the ",
                                nbytes, " bytes of data for ", what));

  // Fortran order: the bytes are the C-order array of the reversed shape.
  std::vector<std::size_t> stored_shape = h.shape;
  if (h.fortran_order) std::reverse(stored_shape.begin(), stored_shape.end());
  tensor out = tensor::from_shape(stored_shape);
  float* dst = out.data();
  const bool direct = t.kind == 'f' && t.size == 4 && !t.swap;
  std::vector<unsigned char> buffer(direct ? 0 : std::size_t(1) << 20);
  std::uint64_t done = 0;
  while (done < count) {
    const std::size_t n = direct ? static_cast<std::size_t>(count)
                                 : static_cast<std::size_t>(std::min<std::uint64_t>(count - done, buffer.size() / t.size));
    unsigned char* src = direct ? reinterpret_cast<unsigned char*>(dst) : buffer.data();
    got = read_exact(src, n * t.size);
    if (got != n * t.size)
      throw io_error(path, concat("truncated: expected ", nbytes, " bytes of data for ", what, ", got ",
                                  done * t.size + got, " (the file shrank while being read)"));
    if (!direct) detail::npy_convert(t, src, n, dst + done);
    done += n;
  }
  if (h.fortran_order && out.dimension() > 1) {
    tensor c_order = xt::transpose(out);
    return c_order;
  }
  return out;
}

XQ_DECL void save_npy(const std::string& path, const tensor& t) {
  using detail::concat;
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  std::string header = concat("{'descr': '", detail::npy_host_is_little_endian() ? '<' : '>',
                              "f4', 'fortran_order': False, 'shape': ", detail::npy_shape_string(shape), ", }");
  // numpy pads with spaces and ends with '\n' so that the data start 64-byte aligned.
  std::size_t prefix_len = 10;
  if (((header.size() + 1 + prefix_len + 63) / 64) * 64 - prefix_len > 65535) prefix_len = 12;
  const std::size_t total = ((prefix_len + header.size() + 1 + 63) / 64) * 64;
  header.append(total - prefix_len - header.size() - 1, ' ');
  header += '\n';
  std::string prefix("\x93NUMPY", 6);
  prefix += static_cast<char>(prefix_len == 10 ? 1 : 2);
  prefix += '\0';
  const std::uint64_t hl = header.size();
  for (std::size_t i = 0; i < prefix_len - 8; ++i) prefix += static_cast<char>((hl >> (8 * i)) & 0xff);

  const std::size_t nbytes = t.size() * sizeof(float);
  write_file_atomically(path, [&](std::FILE* f) {
    return std::fwrite(prefix.data(), 1, prefix.size(), f) == prefix.size() &&
           std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
           (!nbytes || std::fwrite(t.data(), 1, nbytes, f) == nbytes);
  });
}

}  // namespace xq::io
