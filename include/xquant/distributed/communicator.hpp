#pragma once
/// \file communicator.hpp
/// The ranks of an MPI job, as data-parallel training uses them (data_parallel.hpp):
/// `xq::dist::environment` starts and ends MPI for a program, `xq::dist::communicator`
/// sums, takes the minimum or maximum of, and broadcasts float and double buffers across the
/// ranks, blocking or (a sum of floats) in the background while the caller goes on, and
/// broadcasts bytes (a checkpoint).
///
/// Optional: this room needs MPI's headers and library (CMake: the xquant::mpi target,
/// made when find_package(MPI) finds it; Debian: libopenmpi-dev). The rest of xquant never
/// includes it, and the umbrella <xquant/xquant.hpp> does not either.
///
/// A rank that fails must not leave the others waiting in a collective forever: an
/// environment destroyed while an exception unwinds prints the error and calls MPI_Abort,
/// which ends every rank of the job with a non-zero status (a process that dies of a
/// signal ends the job too: mpirun sees it exit without MPI_Finalize).
///
/// \code
///   int main(int argc, char** argv) {
///     xq::dist::environment mpi(argc, argv);
///     xq::dist::communicator world;
///     std::vector<float> g = ...;
///     world.allreduce(g.data(), g.size(), xq::dist::reduction::sum);
///   }
/// \endcode

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "../core/error.hpp"

namespace xq::dist {

/// How allreduce combines the ranks' values, element by element.
enum class reduction { sum, min, max };

/// MPI for one program (RAII): MPI_Init on construction unless already initialized,
/// MPI_Finalize on destruction, MPI_Abort instead when destroyed by an exception.
class environment {
 public:
  environment(int& argc, char**& argv) : exceptions_(std::uncaught_exceptions()) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      MPI_Init(&argc, &argv);
      owner_ = true;
    }
  }
  ~environment() {
    if (std::uncaught_exceptions() > exceptions_) {
      // Another rank may wait in a collective: end the whole job instead of hanging it.
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      std::fprintf(stderr, "xquant: rank %d failed (an exception is propagating): aborting the MPI job\n", rank);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (owner_) MPI_Finalize();
  }
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;

  /// Ends every rank of the job with `status` after printing `why` (a caught error that
  /// must not leave the other ranks waiting).
  [[noreturn]] static void abort(const std::string& why, int status = 1) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "xquant: rank %d failed: %s: aborting the MPI job\n", rank, why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
    std::terminate();  // MPI_Abort does not return
  }

 private:
  int exceptions_;
  bool owner_ = false;
};

namespace detail {
template <class T>
MPI_Datatype mpi_type();
template <>
inline MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
inline MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <>
inline MPI_Datatype mpi_type<unsigned char>() { return MPI_UNSIGNED_CHAR; }
inline MPI_Op mpi_op(reduction r) { return r == reduction::sum ? MPI_SUM : r == reduction::min ? MPI_MIN : MPI_MAX; }
/// MPI counts are ints: a longer buffer goes in chunks of at most INT_MAX.
template <class F>
void in_chunks(std::size_t n, F&& f) {
  for (std::size_t done = 0; done < n;) {
    const int count = int(std::min<std::size_t>(n - done, INT_MAX));
    f(done, count);
    done += std::size_t(count);
  }
}
/// An MPI error as an xq::error naming the call and the rank.
inline void check_mpi(int status, const char* call, int rank) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw error(std::string("xq::dist: ") + call + " failed on rank " + std::to_string(rank) + ": " +
              std::string(text, std::size_t(length)));
}
}  // namespace detail

/// A collective started with `communicator::start_allreduce` and not yet known to be done:
/// its buffer must stay untouched (and alive) until `wait` returns. Destroying one that is
/// still running waits for it.
class pending_allreduce {
 public:
  pending_allreduce() = default;
  pending_allreduce(pending_allreduce&& o) noexcept : requests_(std::move(o.requests_)), rank_(o.rank_) {
    o.requests_.clear();
  }
  pending_allreduce& operator=(pending_allreduce&& o) noexcept {
    if (this != &o) {
      finish_quietly();
      requests_ = std::move(o.requests_);
      rank_ = o.rank_;
      o.requests_.clear();
    }
    return *this;
  }
  ~pending_allreduce() { finish_quietly(); }

  /// Lets MPI move it along (MPI progresses a collective only inside MPI calls); true once done.
  bool test() {
    if (requests_.empty()) return true;
    int done = 0;
    detail::check_mpi(MPI_Testall(int(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall",
                      rank_);
    if (done) requests_.clear();
    return done != 0;
  }
  /// Until the result is in the buffer.
  void wait() {
    if (requests_.empty()) return;
    detail::check_mpi(MPI_Waitall(int(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall", rank_);
    requests_.clear();
  }

 private:
  friend class communicator;
  void finish_quietly() noexcept {
    if (!requests_.empty()) MPI_Waitall(int(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
  }
  std::vector<MPI_Request> requests_;
  int rank_ = 0;
};

/// A group of ranks (MPI_COMM_WORLD by default): its size, this process's rank, and the
/// collectives on float and double buffers that data parallelism needs. Buffers of any
/// length: MPI counts are ints, so a longer buffer goes in chunks.
class communicator {
 public:
  explicit communicator(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
      throw argument_error("xq::dist::communicator", "MPI initialized (an xq::dist::environment in main)",
                           "MPI not initialized");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  MPI_Comm handle() const noexcept { return comm_; }

  /// data[i] = the sum, minimum or maximum of every rank's data[i], on every rank.
  template <class T>
  void allreduce(T* data, std::size_t n, reduction r) const {
    detail::in_chunks(n, [&](std::size_t at, int count) {
      check(MPI_Allreduce(MPI_IN_PLACE, data + at, count, detail::mpi_type<T>(), detail::mpi_op(r), comm_),
            "MPI_Allreduce");
    });
  }

  /// The same allreduce, started: it runs while the caller goes on (MPI_Iallreduce), and
  /// is done when the returned handle's wait() returns.
  pending_allreduce start_allreduce(float* data, std::size_t n, reduction r) const {
    pending_allreduce p;
    p.rank_ = rank_;
    detail::in_chunks(n, [&](std::size_t at, int count) {
      p.requests_.emplace_back();
      check(MPI_Iallreduce(MPI_IN_PLACE, data + at, count, MPI_FLOAT, detail::mpi_op(r), comm_, &p.requests_.back()),
            "MPI_Iallreduce");
    });
    return p;
  }

  /// data = rank `root`'s data, on every rank.
  template <class T>
  void broadcast(T* data, std::size_t n, int root = 0) const {
    detail::in_chunks(n, [&](std::size_t at, int count) {
      check(MPI_Bcast(data + at, count, detail::mpi_type<T>(), root, comm_), "MPI_Bcast");
    });
  }

  /// Waits for every rank.
  void barrier() const { check(MPI_Barrier(comm_), "MPI_Barrier"); }

  /// The ranks of the same `color`, as a communicator of their own, ranked by `key` (then
  /// by rank here): MPI_Comm_split, freed when the last copy is destroyed.
  communicator split(int color, int key = 0) const {
    MPI_Comm part = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color, key, &part), "MPI_Comm_split");
    communicator c(part);
    c.owned_ = std::shared_ptr<void>(nullptr, [part](void*) mutable {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Comm_free(&part);
    });
    return c;
  }

 private:
  void check(int status, const char* call) const { detail::check_mpi(status, call, rank_); }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::shared_ptr<void> owned_;  // frees a communicator this one made by split
};

}  // namespace xq::dist
