#pragma once
/// \file communicator.hpp
/// The ranks of an MPI job, as data-parallel training uses them (data_parallel.hpp):
/// `xq::dist::environment` starts and ends MPI for a program, `xq::dist::communicator`
/// sums, takes the minimum or maximum of, and broadcasts float buffers across the ranks.
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
#include <string>

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

/// A group of ranks (MPI_COMM_WORLD by default): its size, this process's rank, and the
/// collectives on float buffers that data parallelism needs. Buffers of any length: MPI
/// counts are ints, so a longer buffer goes in chunks.
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
  void allreduce(float* data, std::size_t n, reduction r) const {
    const MPI_Op op = r == reduction::sum ? MPI_SUM : r == reduction::min ? MPI_MIN : MPI_MAX;
    for (std::size_t done = 0; done < n;) {
      const int count = int(std::min<std::size_t>(n - done, INT_MAX));
      check(MPI_Allreduce(MPI_IN_PLACE, data + done, count, MPI_FLOAT, op, comm_), "MPI_Allreduce");
      done += std::size_t(count);
    }
  }

  /// data = rank `root`'s data, on every rank.
  void broadcast(float* data, std::size_t n, int root = 0) const {
    for (std::size_t done = 0; done < n;) {
      const int count = int(std::min<std::size_t>(n - done, INT_MAX));
      check(MPI_Bcast(data + done, count, MPI_FLOAT, root, comm_), "MPI_Bcast");
      done += std::size_t(count);
    }
  }

  /// Waits for every rank.
  void barrier() const { check(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  void check(int status, const char* call) const {
    if (status == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(status, text, &length);
    throw error(std::string("xq::dist: ") + call + " failed on rank " + std::to_string(rank_) + ": " +
                std::string(text, std::size_t(length)));
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace xq::dist
