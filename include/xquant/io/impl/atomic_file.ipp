#pragma once
/// \file atomic_file.ipp
/// Writing a file atomically and reading a whole file (io/atomic_file.hpp).

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "../atomic_file.hpp"

#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#endif

namespace xq::io {

namespace detail {

XQ_DECL std::string errno_text(int err) { return err ? std::strerror(err) : "unknown error"; }

/// The directory part of `path` with its trailing '/', "" for a bare name: what the name of
/// a file next to `path` starts with.
XQ_DECL std::string atomic_dir_prefix(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

/// True when `name` is `stem` ("<file name>.tmp.") followed by exactly 16 lowercase hex
/// digits: the only names the clean-up of stale temporaries may remove.
XQ_DECL bool is_atomic_temporary_name(const char* name, const std::string& stem) {
  const std::size_t n = std::strlen(name);
  if (n != stem.size() + 16 || stem.compare(0, stem.size(), name, stem.size()) != 0) return false;
  for (std::size_t i = stem.size(); i < n; ++i)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
  return true;
}

/// What messages add when the file written is not `path` itself but where a link points.
XQ_DECL std::string atomic_link_note(const std::string& path, const std::string& target) {
  return target == path ? std::string() : xq::detail::concat(" (next to ", target, ", where the symbolic link points)");
}

#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC

/// `path` with the symbolic links of its last component followed to the name they finally
/// lead to (which need not exist: a dangling link). Links among the directories need no
/// resolving: the temporary's name goes through the same ones as the target's.
XQ_DECL std::string resolve_final_symlinks(const std::string& path) {
  using xq::detail::concat;
  std::string p = path;
  for (int links = 0;; ++links) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    // 40: Linux's limit (MAXSYMLINKS), reached only by a loop in practice.
    if (links == 40) throw io_error(path, concat("cannot write through it: more than 40 symbolic links in a row (", p,
                                                 " is the 41st; a loop?)"));
    // st_size is the length of the link's text (0 on some file systems: then it grows).
    std::string to(static_cast<std::size_t>(st.st_size) + 1, '\0');
    for (;;) {
      const ssize_t n = ::readlink(p.c_str(), &to[0], to.size());
      if (n < 0) {
        const int err = errno;
        throw io_error(path, concat("cannot read the symbolic link ", p, ": ", errno_text(err)));
      }
      if (static_cast<std::size_t>(n) < to.size()) {
        to.resize(static_cast<std::size_t>(n));
        break;
      }
      to.resize(2 * to.size() + 64);
    }
    // A relative link is relative to the directory that holds it.
    p = !to.empty() && to[0] == '/' ? to : atomic_dir_prefix(p) + to;
  }
}

/// Locks the temporary just created as `fd` under the name `tmp`. False when the clean-up
/// of another save took it for stale between its creation and the lock (it holds the lock
/// and removes it, or has removed it already): the caller then makes another.
XQ_DECL bool lock_new_temporary(int fd, const std::string& tmp) {
  int rc;
  do rc = ::flock(fd, LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  if (rc != 0 && errno == EWOULDBLOCK) return false;
  // Any other failure: a file system without locks, on which no clean-up can lock (and so
  // remove) it either; the save goes on without.
  struct stat mine, named;
  return ::fstat(fd, &mine) == 0 && ::lstat(tmp.c_str(), &named) == 0 && mine.st_dev == named.st_dev &&
         mine.st_ino == named.st_ino;
}

/// Removes the stale temporaries of `target`: "<target>.tmp.<16 lowercase hex digits>",
/// regular files that no one holds a lock on (see the file comment). Never throws: a save
/// that succeeded does not fail for its clean-up.
XQ_DECL void remove_stale_temporaries(const std::string& target) noexcept {
  try {
    const std::string prefix = atomic_dir_prefix(target);
    const std::string stem = target.substr(prefix.size()) + ".tmp.";
    std::vector<std::string> names;
    {
      struct dir_closer {
        void operator()(DIR* d) const { ::closedir(d); }
      };
      std::unique_ptr<DIR, dir_closer> dir(::opendir(prefix.empty() ? "." : prefix.c_str()));
      if (!dir) return;
      while (const dirent* e = ::readdir(dir.get()))
        if (is_atomic_temporary_name(e->d_name, stem)) names.push_back(prefix + e->d_name);
    }
    for (const std::string& name : names) {
      struct stat named, locked;
      if (::lstat(name.c_str(), &named) != 0 || !S_ISREG(named.st_mode)) continue;  // never a link's target
      const int fd = ::open(name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) continue;
      // Removed while this holds the lock, so its writer cannot be starting on it (it
      // checks after locking that its name still names it), and only if the name still
      // names the file locked: another clean-up may have removed it and a new save reused
      // the name meanwhile.
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &locked) == 0 && ::lstat(name.c_str(), &named) == 0 &&
          locked.st_dev == named.st_dev && locked.st_ino == named.st_ino)
        ::unlink(name.c_str());
      ::close(fd);  // drops the lock
    }
  } catch (...) {  // out of memory for the names: nothing removed, the save stands
  }
}

#endif  // XQ_ATOMIC_FILE_HAVE_FSYNC

XQ_DECL atomic_write::atomic_write(const std::string& path) : path_(path) {
  using xq::detail::concat;
#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC
  target_ = resolve_final_symlinks(path);
  // Before this save writes anything too, not only after a successful one: on a full disk
  // a killed save's temporary holds the space this one needs, and with the clean-up only
  // after a rename no save could ever succeed again to remove it.
  remove_stale_temporaries(target_);
#else
  target_ = path;
#endif
  // A temporary name in the target's directory (so the rename stays on one file system).
  std::uint64_t seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  try {
    std::random_device rd;
    seed ^= (std::uint64_t(rd()) << 32) ^ rd();
  } catch (...) {  // no entropy source: the clock alone will do
  }
  std::mt19937_64 gen(seed);
  int err = 0;
  for (int attempt = 0; attempt < 16 && !file_; ++attempt) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(gen()));
    tmp_ = target_ + ".tmp." + suffix;
#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC
    int fd;
    do fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // O_EXCL: never reuse a file
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      err = errno;
      if (err == EEXIST) continue;
      break;
    }
    if (!lock_new_temporary(fd, tmp_)) {
      ::close(fd);
      err = EEXIST;
      continue;
    }
    lock_fd_ = fd;
    created_ = true;
    // The stream gets a descriptor of its own, so that closing it (checked, before the
    // rename) leaves the lock held through the rename.
    const int stream_fd = ::dup(fd);
    if (stream_fd >= 0) file_.reset(::fdopen(stream_fd, "wb"));
    if (!file_) {
      err = errno;
      if (stream_fd >= 0) ::close(stream_fd);
      discard();
      throw io_error(path_, concat("cannot open a stream on the temporary file ", tmp_, ": ", errno_text(err)));
    }
#else
    errno = 0;
    file_.reset(std::fopen(tmp_.c_str(), "wbx"));  // "x": never reuse an existing file
    err = errno;
    if (file_) created_ = true;
    else if (err != EEXIST) break;
#endif
  }
  if (!file_)
    throw io_error(path_, concat("cannot create the temporary file ", tmp_, atomic_link_note(path_, target_), ": ",
                                 errno_text(err)));
#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC
  // The permission bits of the file replaced, set before any data are written: a 0600
  // file's new content is never readable by others, not even in the temporary.
  struct stat old, now;
  if (::stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode) && ::fstat(lock_fd_, &now) == 0 &&
      (now.st_mode & 07777) != (old.st_mode & 07777) && ::fchmod(lock_fd_, old.st_mode & 07777) != 0) {
    err = errno;
    discard();
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(old.st_mode & 07777));
    throw io_error(path_, concat("cannot give the temporary file ", tmp_, " the permissions ", mode,
                                 " of the file it replaces: ", errno_text(err)));
  }
#endif
}

XQ_DECL atomic_write::~atomic_write() { discard(); }

XQ_DECL void atomic_write::discard() noexcept {
  file_.reset();
  // Removed while still locked, so no clean-up can take it meanwhile.
  if (created_ && !renamed_) std::remove(tmp_.c_str());
  created_ = false;
#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
#endif
}

XQ_DECL void atomic_write::fail(const char* what, int err) {
  discard();
  throw io_error(path_, xq::detail::concat(what, " ", tmp_, ": ", errno_text(err)));
}

XQ_DECL void atomic_write::fail_write(int err) { fail("cannot write", err); }

XQ_DECL void atomic_write::commit() {
  using xq::detail::concat;
  if (std::fflush(file_.get()) != 0) fail("cannot write", errno);
#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC
  if (::fsync(lock_fd_) != 0) fail("cannot flush to disk", errno);
#endif
  if (std::fclose(file_.release()) != 0) fail("cannot close", errno);
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    discard();
    throw io_error(path_, concat("cannot rename ", tmp_, " to ",
                                 target_ == path_ ? std::string("it") : concat(target_, ", where the symbolic link points"),
                                 ": ", errno_text(err)));
  }
  renamed_ = true;
  discard();  // drops the lock: the temporary's name is gone
#ifdef XQ_ATOMIC_FILE_HAVE_FSYNC
  // The rename is an entry in the directory: durable only once the directory is synced.
  std::string dir = atomic_dir_prefix(target_);
  if (dir.empty()) dir = ".";
  else if (dir.size() > 1) dir.pop_back();  // "a/b/" -> "a/b", "/" stays
#ifdef O_DIRECTORY
  const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
#else
  const int flags = O_RDONLY | O_CLOEXEC;
#endif
  int fd;
  do fd = ::open(dir.c_str(), flags);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    throw io_error(path_, concat("the new content is in place, but its directory ", dir,
                                 " cannot be opened to flush the rename to disk, so it may not survive a power failure: ",
                                 errno_text(err)));
  }
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  // EINVAL, ENOTSUP: a file system that cannot sync a directory (see the file comment).
  if (err != 0 && err != EINVAL && err != ENOTSUP && err != EOPNOTSUPP)
    throw io_error(path_, concat("the new content is in place, but flushing its directory ", dir,
                                 " to disk failed, so it may not survive a power failure: ", errno_text(err)));
  remove_stale_temporaries(target_);
#endif
}

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
