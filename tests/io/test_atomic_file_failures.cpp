// Issue 34, item 7: xq::io::write_file_atomically when a save fails or is killed. A save
// killed by SIGXFSZ (a file-size limit, as a full disk) leaves its temporary behind; the
// clean-up ran only after a successful rename, so on a full disk every later save failed
// and the temporary stayed for good. Now every save removes the stale temporaries of its
// target before it writes, and a failed save removes its own temporary on every path.
// The file-size limit (RLIMIT_FSIZE) is set in forked children only.
#include <catch2/catch.hpp>

#include <xquant/io/atomic_file.hpp>

#include "../test_support.hpp"

#if defined(__unix__) || defined(__APPLE__)

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using xq::testing::temp_dir;

std::vector<std::string> temporaries_of(const fs::path& dir, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(name + ".tmp.", 0) == 0) out.push_back(f);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void save(const std::string& path, const std::string& text) {
  xq::io::write_file_atomically(path, std::vector<std::uint8_t>(text.begin(), text.end()));
}

// Runs `body` in a forked child whose files may not grow beyond `limit` bytes, with SIGXFSZ
// ignored (writes then fail with EFBIG) or not (the child is killed). Returns waitpid's status.
template <class Body>
int in_child_with_file_limit(rlim_t limit, bool ignore_sigxfsz, Body&& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const struct rlimit r{limit, limit};
    if (::setrlimit(RLIMIT_FSIZE, &r) != 0) ::_exit(90);
    std::signal(SIGXFSZ, ignore_sigxfsz ? SIG_IGN : SIG_DFL);
    int code = 91;
    try {
      code = body();
    } catch (...) {
      code = 92;
    }
    ::_exit(code);
  }
  REQUIRE(pid > 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

// In the child: 0 when the save of `text` throws an io_error saying it cannot write.
int failing_save(const std::string& path, const std::string& text) {
  try {
    save(path, text);
    return 10;  // it succeeded
  } catch (const xq::io_error& e) {
    return std::string(e.what()).find("cannot write") != std::string::npos ? 0 : 11;
  }
}

}  // namespace

TEST_CASE("atomic_file: the temporary of a save killed by SIGXFSZ is removed by the next save, even one that fails",
          "[io][atomic_file][issue34]") {
  temp_dir dir;
  const std::string path = dir / "model.xqc";
  save(path, "old");
  const std::string big(1 << 20, 'x');

  // A save killed by the file-size limit: its temporary stays (nothing runs in a killed process).
  const int killed = in_child_with_file_limit(4096, false, [&] {
    save(path, big);
    return 0;
  });
  REQUIRE(WIFSIGNALED(killed));
  CHECK(WTERMSIG(killed) == SIGXFSZ);
  REQUIRE(temporaries_of(dir.path, "model.xqc").size() == 1);
  CHECK(read_text(path) == "old");

  // The next save fails too (the limit again, SIGXFSZ ignored: EFBIG, as a full disk's
  // ENOSPC): it has still removed the stale temporary, and its own.
  const int failed = in_child_with_file_limit(4096, true, [&] { return failing_save(path, big); });
  REQUIRE(WIFEXITED(failed));
  CHECK(WEXITSTATUS(failed) == 0);
  CHECK(temporaries_of(dir.path, "model.xqc").empty());
  CHECK(read_text(path) == "old");

  // And a save that can write succeeds, leaving no temporary.
  save(path, "new");
  CHECK(read_text(path) == "new");
  CHECK(temporaries_of(dir.path, "model.xqc").empty());
}

TEST_CASE("atomic_file: a failed save removes its own temporary, whatever failed", "[io][atomic_file][issue34]") {
  temp_dir dir;
  const std::string path = dir / "model.xqc";
  save(path, "old");
  SECTION("a write past the file-size limit (EFBIG)") {
    const int status = in_child_with_file_limit(4096, true, [&] { return failing_save(path, std::string(1 << 20, 'y')); });
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  SECTION("a small write that fails only when flushed before the rename") {
    const int status = in_child_with_file_limit(16, true, [&] { return failing_save(path, std::string(100, 'y')); });
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  SECTION("the writer says it failed") {
    CHECK_THROWS_AS(xq::io::write_file_atomically(path, [](std::FILE*) { return false; }), xq::io_error);
  }
  SECTION("the writer throws") {
    CHECK_THROWS_AS(xq::io::write_file_atomically(path,
                                                  [](std::FILE* f) -> bool {
                                                    std::fputs("partial", f);
                                                    throw std::runtime_error("writer failed");
                                                  }),
                    std::runtime_error);
  }
  CHECK(temporaries_of(dir.path, "model.xqc").empty());
  CHECK(read_text(path) == "old");
}

#endif  // POSIX
