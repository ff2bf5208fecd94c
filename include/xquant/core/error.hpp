#pragma once
/// \file error.hpp
/// The exceptions xquant throws. Every message names where the problem is (an
/// operator or a layer path), what was expected and what was given.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "../config.hpp"

namespace xq {

/// Base of every xquant exception.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A value, shape or option that the operation cannot accept.
class argument_error : public error {
 public:
  /// `where`: operator or layer path; `expected`/`given`: what was wrong.
  argument_error(const std::string& where, const std::string& expected, const std::string& given);

  const std::string& where() const noexcept { return where_; }
  const std::string& expected() const noexcept { return expected_; }
  const std::string& given() const noexcept { return given_; }

 private:
  std::string where_, expected_, given_;
};

/// A tensor whose rank or shape does not fit the layer it was given to.
class shape_error : public argument_error {
 public:
  using argument_error::argument_error;
};

/// A file that cannot be read or written, or whose content is not what it claims.
class io_error : public error {
 public:
  /// `file`: the path; `what_was_wrong`: e.g. "truncated: expected 47040016 bytes, given 1024".
  io_error(const std::string& file, const std::string& what_was_wrong);
  const std::string& file() const noexcept { return file_; }

 private:
  std::string file_;
};

namespace detail {

/// Streams any printable values into one string (for error messages).
template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  out.precision(9);  // enough to round-trip a float
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

}  // namespace detail
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/error.ipp"
#endif
