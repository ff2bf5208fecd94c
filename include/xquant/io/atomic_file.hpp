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
/// The write goes to "<path>.tmp.<16 lowercase hex digits>" in the same directory (a
/// rename is atomic only within one file system), which is flushed to disk (fsync) and
/// then renamed over `path`. A reader sees the old file or the new one, never half of one;
/// after a crash at any point the old file is still there (at worst next to a stale
/// temporary, which the next save removes). A save that fails removes its own temporary,
/// whatever failed (the writer, a full disk, the rename). On POSIX systems, moreover:
///
/// - Symbolic links are written through. When `path` is a link (or a chain of links), the
///   file it finally names gets the new content and the link stays a link: the temporary
///   and the rename are in that file's directory. A dangling link is written to where it
///   points, which creates the file there; when that directory does not exist the save
///   fails with "cannot create the temporary file". More than 40 links in a row (a loop)
///   are an io_error.
/// - The new file keeps the permission bits (mode & 07777) of the file it replaces: 0600
///   stays 0600. They are set on the temporary before the writer runs, so the new content
///   is never readable by more users than the old. A new file gets 0666 less the umask.
/// - Durability: after the rename the directory is fsync'ed too, otherwise the rename
///   itself can be lost on power failure although the save returned. When that fails, the
///   save throws an io_error that says the new content is in place but may not be durable.
///   EINVAL and ENOTSUP from that fsync are ignored: they mean the file system cannot sync
///   a directory at all (some FUSE and network file systems), where no save could ever be
///   made durable, and failing every save there would make the files unwritable.
/// - Stale temporaries: a writer holds an exclusive flock() on its temporary from its
///   creation until after the rename, and the kernel drops the lock when the process dies.
///   So a "<target>.tmp.<16 lowercase hex digits>" file that no one holds a lock on is the
///   leftover of a killed save, and every save removes those of its target: before it
///   creates its own temporary (so that on a full disk the space a killed save left is free
///   for this one, and a save that then fails anyway has still removed them) and again
///   after its rename.
///   The temporary of a concurrent save, in this process or another, is locked and left
///   alone, however slowly it is being written: no age threshold can tell that apart. The
///   clean-up never throws; on a file system without flock() it removes nothing. (flock,
///   not fcntl: fcntl locks belong to the process, so the clean-up in one thread would
///   both acquire and, on close, drop the lock of another thread's save.)

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"

#if defined(__unix__) || defined(__APPLE__)
// POSIX: fsync, flock, fchmod, readlink. Without it, a plain temporary + rename.
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

/// One atomic write in progress (write_file_atomically's machinery, outside the template):
/// the temporary next to the target, created, locked and given the target's permissions by
/// the constructor, removed by the destructor unless commit() renamed it over the target.
class atomic_write {
 public:
  /// Throws io_error naming `path` when the temporary cannot be created.
  XQ_DECL explicit atomic_write(const std::string& path);
  XQ_DECL ~atomic_write();
  atomic_write(const atomic_write&) = delete;
  atomic_write& operator=(const atomic_write&) = delete;

  /// The temporary, open for writing.
  std::FILE* file() const { return file_.get(); }
  /// Throws "cannot write <temporary>: <strerror(err)>" (the destructor removes it).
  [[noreturn]] XQ_DECL void fail_write(int err);
  /// Flushes the temporary to disk, renames it over the target, syncs the directory, then
  /// removes the target's stale temporaries. Throws io_error on failure.
  XQ_DECL void commit();

 private:
  [[noreturn]] XQ_DECL void fail(const char* what, int err);
  XQ_DECL void discard() noexcept;

  std::string path_;    // as given: every message names it
  std::string target_;  // path_ with symbolic links resolved: what is replaced
  std::string tmp_;
  unique_file file_;
#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC
  int lock_fd_ = -1;  // the temporary's own descriptor, which holds the flock
#endif
  bool created_ = false, renamed_ = false;
};

}  // namespace detail

/// Writes `path` through `write(std::FILE*)`, which returns false when a write failed
/// (errno says why). The data go to a new temporary file next to `path`, flushed to
/// disk, then renamed over `path` (see the file comment for links, permissions and
/// durability). On any failure, an exception from `write` included, the temporary is
/// removed and `path` is left as it was; failures of the file system are io_errors naming
/// `path`, the temporary and the reason; an exception from `write` is rethrown as it is.
template <class Writer, std::enable_if_t<std::is_invocable_r_v<bool, Writer&, std::FILE*>, int> = 0>
void write_file_atomically(const std::string& path, Writer&& write) {
  detail::atomic_write w(path);
  errno = 0;
  if (!write(w.file())) w.fail_write(errno);
  w.commit();
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
