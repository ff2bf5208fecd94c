#pragma once
// `--ranks N` for an example: data-parallel training over N ranks of this machine
// (include/xquant/distributed/, when the build found MPI).
//
//   example --ranks 2 ...           re-runs itself under mpiexec with 2 ranks (each with
//                                   its share of the cores as OpenMP threads, the launcher
//                                   flags this build's tests use); only rank 0 prints
//   mpiexec -n 2 example --ranks 2  the same, started by hand (on a cluster: your launcher)
//
// Built without MPI, --ranks above 1 is refused with the reason.

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <xquant/train/distributed_training.hpp>
#if defined(XQ_EXAMPLE_MPI)
#include <xquant/distributed/data_parallel.hpp>
#endif

namespace examples {

/// Whether an MPI launcher started this process (Open MPI, or a PMI launcher: MPICH, Slurm).
inline bool started_by_mpi_launcher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

/// The ranks an example trains on (see the file comment). Construct it first in main, with
/// the --ranks count: started alone with more than one, it runs the program again under
/// mpiexec and exits with its status.
class ranks {
 public:
  ranks(int requested, int& argc, char**& argv) {
    if (requested < 1) throw std::invalid_argument("--ranks needs a count of at least 1");
#if defined(XQ_EXAMPLE_MPI)
    if (requested > 1 && !started_by_mpi_launcher()) relaunch(requested, argc, argv);
    if (!started_by_mpi_launcher()) return;  // alone: no MPI at all
    environment_.emplace(argc, argv);
    world_.emplace();
    if (world_->size() != requested)
      throw std::invalid_argument("--ranks " + std::to_string(requested) + ", but the launcher started " +
                                  std::to_string(world_->size()) + " ranks");
    if (world_->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
      throw std::runtime_error("could not silence rank " + std::to_string(world_->rank()) + "'s output");
    if (world_->size() > 1) training_.emplace(*world_);
#else
    (void)argc;
    (void)argv;
    if (requested > 1)
      throw std::invalid_argument("--ranks " + std::to_string(requested) +
                                  ": this build has no MPI (install libopenmpi-dev and configure again)");
#endif
  }

  int rank() const noexcept {
#if defined(XQ_EXAMPLE_MPI)
    if (world_) return world_->rank();
#endif
    return 0;
  }
  int size() const noexcept {
#if defined(XQ_EXAMPLE_MPI)
    if (world_) return world_->size();
#endif
    return 1;
  }
  /// For fit_options::distributed: null on one rank.
  xq::distributed_training* training() noexcept {
#if defined(XQ_EXAMPLE_MPI)
    if (training_) return &*training_;
#endif
    return nullptr;
  }

 private:
#if defined(XQ_EXAMPLE_MPI)
  /// mpiexec -n N <flags> <this program> <its arguments>; never returns.
  [[noreturn]] static void relaunch(int n, int argc, char** argv) {
    if (!std::getenv("OMP_NUM_THREADS")) {
      const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      const std::string threads = std::to_string(std::max(1u, cores / unsigned(n)));
      setenv("OMP_NUM_THREADS", threads.c_str(), 1);
    }
    std::vector<std::string> words = {XQ_MPIEXEC, "-n", std::to_string(n)};
    const std::string flags = XQ_MPIRUN_FLAGS;
    for (std::size_t at = 0; at < flags.size();) {
      const std::size_t end = std::min(flags.find(' ', at), flags.size());
      if (end > at) words.push_back(flags.substr(at, end - at));
      at = end + 1;
    }
    char self[4096];
    const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    words.push_back(length > 0 ? std::string(self, std::size_t(length)) : std::string(argv[0]));
    for (int i = 1; i < argc; ++i) words.push_back(argv[i]);
    std::vector<char*> args;
    for (std::string& w : words) args.push_back(w.data());
    args.push_back(nullptr);
    std::fflush(stdout);
    execvp(args[0], args.data());
    throw std::runtime_error(std::string("could not run ") + XQ_MPIEXEC + " for --ranks " + std::to_string(n));
  }

  std::optional<xq::dist::environment> environment_;
  std::optional<xq::dist::communicator> world_;
  std::optional<xq::dist::data_parallel> training_;
#endif
};

}  // namespace examples
