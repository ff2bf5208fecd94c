#pragma once
/// \file distributed_checkpoint.hpp
/// Checkpoints of data-parallel training: written by rank 0 alone, atomically
/// (io/checkpoint.hpp's save_checkpoint: a temporary file renamed over the target), and
/// read by rank 0 alone and sent to every rank, so no rank but 0 needs the file system.
///
/// Every rank holds the same model after a step (the same parameters, ranges and, with
/// synchronized batch norm, statistics), and a checkpoint stores no rank count: training
/// resumes on any number of ranks. With the same seed and global batch (batch size ×
/// ranks), `fit` draws the same global batches, so a run resumed on 1 rank with batch 64
/// continues the run of 2 ranks with batch 32.
///
/// An error on rank 0 (a full disk, a corrupt file) is raised on every rank, never left for
/// the others to wait on: rank 0 throws its own, the others an io_error saying rank 0 failed.
///
/// `broadcast_training_state` sends rank 0's whole state, optimizer included, the same way.
///
/// \code
///   xq::dist::save_checkpoint("run.xqc", world, qat, opt);   // every rank calls it
///   xq::dist::load_checkpoint("run.xqc", world, qat, opt);   // on any number of ranks
/// \endcode

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../io/atomic_file.hpp"
#include "../io/checkpoint.hpp"
#include "communicator.hpp"

namespace xq::dist {

/// Rank 0 writes the checkpoint of `model` (and `optimizer`) to `path`; every rank returns
/// once it is on disk, or throws if rank 0 could not write it (see the file comment).
template <class Model, class... Optimizer>
void save_checkpoint(const std::string& path, const communicator& c, Model& model, const Optimizer&... optimizer) {
  std::exception_ptr failure;
  float written = 1.0f;
  if (c.rank() == 0) {
    try {
      xq::save_checkpoint(path, model, optimizer...);
    } catch (...) {
      failure = std::current_exception();
      written = 0.0f;
    }
  }
  c.broadcast(&written, 1, 0);
  if (failure) std::rethrow_exception(failure);
  if (written == 0.0f) throw io_error(path, "rank 0 could not write the checkpoint (its error is on rank 0)");
}

/// Every rank restores `model` (and `optimizer`) from the checkpoint rank 0 reads at
/// `path`: all or nothing on each rank, as xq::load_checkpoint (see the file comment).
template <class Model, class... Optimizer>
void load_checkpoint(const std::string& path, const communicator& c, Model& model, Optimizer&... optimizer) {
  std::exception_ptr failure;
  std::vector<std::uint8_t> bytes;
  double size = -1.0;  // -1: rank 0 could not read it
  if (c.rank() == 0) {
    try {
      bytes = io::read_file_bytes(path);
      size = static_cast<double>(bytes.size());
    } catch (...) {
      failure = std::current_exception();
    }
  }
  c.broadcast(&size, 1, 0);
  if (failure) std::rethrow_exception(failure);
  if (size < 0.0) throw io_error(path, "rank 0 could not read the checkpoint (its error is on rank 0)");
  bytes.resize(static_cast<std::size_t>(size));
  c.broadcast(bytes.data(), bytes.size(), 0);
  load_checkpoint_bytes(bytes.data(), bytes.size(), path, model, optimizer...);
}

/// Every rank's model (and optimizer) state made rank 0's: rank 0's checkpoint bytes (every
/// parameter, statistic, range, quantizer switch and the optimizer's moments and step
/// counts), sent to every rank and loaded there. Use it before training when the ranks may
/// differ (fit's data_parallel broadcasts the parameters only).
template <class Model, class... Optimizer>
void broadcast_training_state(const communicator& c, Model& model, Optimizer&... optimizer) {
  std::vector<std::uint8_t> bytes;
  double size = 0;
  if (c.rank() == 0) {
    bytes = save_checkpoint_bytes(model, optimizer...);
    size = static_cast<double>(bytes.size());
  }
  c.broadcast(&size, 1, 0);
  bytes.resize(static_cast<std::size_t>(size));
  c.broadcast(bytes.data(), bytes.size(), 0);
  if (c.rank() != 0) load_checkpoint_bytes(bytes.data(), bytes.size(), "rank 0's state", model, optimizer...);
}

}  // namespace xq::dist
