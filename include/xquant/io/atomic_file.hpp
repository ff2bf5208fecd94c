#pragma once
/// \file atomic_file.hpp
/// Writing a file so that a failed write never destroys the previous one, and reading
/// a whole file; both throw xq::io_error naming the file.
///
///     xq::io::write_file_atomically("model.xqc", [&](std::FILE* f) {
///       return std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
///     });
///     std::vector<std::uint8_t> back = xq::io::read_file_bytes("model.xqc");
///
/// The write goes to "<path>.tmp.<random>" in the same directory (a rename is atomic only
/// within one file system), which is flushed to disk (fsync) and then renamed over `path`.
/// A reader sees the old file or the new one, never half of one; after a crash at any
/// point the old file is still there (at worst next to a stale temporary).

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>  // fsync
#define XQ_ATOMIC_FILE_HAVE_FSYNC 1
#endif

namespace xq::io {

namespace detail {

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
/// An open C stream, closed when it goes out of scope.
using unique_file = std::unique_ptr<std::FILE, file_closer>;

/// strerror's text for `err`, "unknown error" for 0.
XQ_DECL std::string errno_text(int err);

}  // namespace detail

/// Writes `path` through `write(std::FILE*)`, which returns false when a write failed
/// (errno says why). The data go to a new temporary file next to `path`, flushed to
/// disk, then renamed over `path`. On any failure, an exception from `write` included,
/// the temporary is removed and `path` is left as it was; failures of the file system
/// are io_errors naming `path`, the temporary and the reason; an exception from `write`
/// is rethrown as it is.
template <class Writer, std::enable_if_t<std::is_invocable_r_v<bool, Writer&, std::FILE*>, int> = 0>
void write_file_atomically(const std::string& path, Writer&& write) {
  using xq::detail::concat;
  // A temporary name in the same directory (so the rename stays on one file system).
  std::uint64_t seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  try {
    std::random_device rd;
    seed ^= (std::uint64_t(rd()) << 32) ^ rd();
  } catch (...) {  // no entropy source: the clock alone will do
  }
  std::mt19937_64 gen(seed);
  std::string tmp;
  detail::unique_file f;
  int err = 0;
  for (int attempt = 0; attempt < 16 && !f; ++attempt) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(gen()));
    tmp = path + ".tmp." + suffix;
    errno = 0;
    f.reset(std::fopen(tmp.c_str(), "wbx"));  // "x": never reuse an existing file
    err = errno;
    if (!f && err != EEXIST) break;
  }
  if (!f) throw io_error(path, concat("cannot create the temporary file ", tmp, ": ", detail::errno_text(err)));

  auto fail = [&](const std::string& what, int e) {
    f.reset();
    std::remove(tmp.c_str());
    throw io_error(path, concat(what, " ", tmp, ": ", detail::errno_text(e)));
  };
  errno = 0;
  bool written = false;
  try {
    written = write(f.get());
  } catch (...) {
    f.reset();
    std::remove(tmp.c_str());
    throw;
  }
  if (!written || std::fflush(f.get()) != 0) fail("cannot write", errno);
#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC
  if (::fsync(::fileno(f.get())) != 0) fail("cannot flush to disk", errno);
#endif
  std::FILE* raw = f.release();
  if (std::fclose(raw) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    throw io_error(path, concat("cannot close ", tmp, ": ", detail::errno_text(err)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    throw io_error(path, concat("cannot rename ", tmp, " to it: ", detail::errno_text(err)));
  }
}

/// Writes `bytes` to `path` atomically (see the overload above).
XQ_DECL void write_file_atomically(const std::string& path, const std::vector<std::uint8_t>& bytes);

/// The whole content of `path`. Throws io_error naming it when it cannot be opened or
/// read, or is a directory.
XQ_DECL std::vector<std::uint8_t> read_file_bytes(const std::string& path);

}  // namespace xq::io

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/atomic_file.ipp"
#endif
