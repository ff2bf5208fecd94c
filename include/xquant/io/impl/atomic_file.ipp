#pragma once
/// \file atomic_file.ipp
/// Writing a file atomically and reading a whole file (io/atomic_file.hpp).

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "../atomic_file.hpp"

namespace xq::io {

namespace detail {

XQ_DECL std::string errno_text(int err) { return err ? std::strerror(err) : "unknown error"; }

}  // namespace detail

XQ_DECL void write_file_atomically(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  write_file_atomically(path, [&](std::FILE* f) {
    return bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  });
}

XQ_DECL std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  using xq::detail::concat;
  errno = 0;
  detail::unique_file f(std::fopen(path.c_str(), "rb"));
  if (!f) throw io_error(path, "cannot open: " + detail::errno_text(errno));
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw io_error(path, "cannot read: is a directory");
  std::vector<std::uint8_t> bytes;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec) bytes.reserve(static_cast<std::size_t>(size));
  std::uint8_t buffer[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(buffer, 1, sizeof buffer, f.get());
    bytes.insert(bytes.end(), buffer, buffer + got);
    if (got < sizeof buffer) {
      if (std::ferror(f.get())) throw io_error(path, "read error: " + detail::errno_text(errno));
      break;
    }
  }
  return bytes;
}

}  // namespace xq::io
