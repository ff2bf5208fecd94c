#pragma once
/// \file distributed_calibration.hpp
/// Post-training calibration over the ranks of a data-parallel job: `xq::dist::calibrate`
/// sets every rank's ranges to those `xq::calibrate` sets in one process on all the samples.
/// Each rank runs the model on its shard of each calibration batch, and every calibrator
/// collects the whole batch (quantizers/calibrate.hpp): the running minimums and maximums
/// over the ranks, the histograms' counts summed (NVIDIA's, PyTorch's HistogramObserver,
/// onnxruntime's percentile), their ranges grown from the whole batch's extremes. The
/// counts are integers, so the histograms, and the ranges computed from them, are the
/// single process's bit for bit.
///
/// \code
///   xq::dist::calibrate(ptq, calibration_images, world);   // every rank, the same images
/// \endcode

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../quantizers/calibrate.hpp"
#include "../train/dataset.hpp"
#include "../train/rank_agreement.hpp"
#include "communicator.hpp"
#include "data_parallel.hpp"
#include "synchronized_batch.hpp"

namespace xq::dist {

namespace detail {
inline std::uint64_t double_bits(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
}  // namespace detail

/// Calibrates `model` on `samples` (N, ...), the same on every rank, in batches of
/// `o.batch_size`, each split over the ranks (see the file comment). argument_error, on
/// every rank, when the last batch has fewer samples than there are ranks (each must hold
/// some of every batch), or when the ranks' models, sample counts or shapes, or options
/// differ (train/rank_agreement.hpp).
template <class Model>
calibration_result calibrate(Model& model, const tensor& samples, const communicator& c,
                             const calibration_options& o = {}) {
  const std::size_t n = samples.dimension() ? samples.shape()[0] : 0;
  const std::size_t ranks = std::size_t(c.size());
  if (ranks > 1) {
    // Every rank the same model, samples and options, or every rank throws: a rank with
    // other samples or batches would leave the others waiting in a collective (issue 34).
    set_paths(model);
    std::uint64_t sample_shape = samples.dimension();
    for (std::size_t i = 1; i < samples.dimension(); ++i) sample_shape = sample_shape * 1000003u + samples.shape()[i];
    data_parallel job(c);
    check_ranks_agree(job, as_layer_ref(model),
                      {{"calibration samples", n},
                       {"a hash of the sample shape", sample_shape},
                       {"batch_size", o.batch_size},
                       {"method", static_cast<std::uint64_t>(o.method)},
                       {"percentile (its bits)", detail::double_bits(o.percentile)}},
                      "xq::dist::calibrate");
  }
  if (ranks == 1 || n == 0) return xq::calibrate(model, samples, o);
  const std::size_t batch = o.batch_size ? o.batch_size : n;
  std::vector<std::size_t> rows;  // this rank's shard of every batch, in order
  for (std::size_t first = 0; first < n; first += batch) {
    const std::size_t count = std::min(batch, n - first);
    if (count < ranks)
      throw argument_error("xq::dist::calibrate",
                           "batches of at least one sample per rank (" + std::to_string(ranks) + ")",
                           "a last batch of " + std::to_string(count) + " of " + std::to_string(n) +
                               " samples in batches of " + std::to_string(batch));
    const auto [begin, end] = shard(count, c.rank(), c.size());
    for (std::size_t i = begin; i < end; ++i) rows.push_back(first + i);
  }
  calibration_options mine = o;
  const auto [begin, end] = shard(batch, c.rank(), c.size());
  mine.batch_size = end - begin;  // this rank's share of a whole batch
  whole_batch_kinds which;
  which.batch_norm = which.dropout = false;  // inference: neither runs
  const synchronized_batch whole_batch(c, which);
  calibration_result r = xq::calibrate(model, gather_rows(samples, rows.data(), rows.size()), mine);
  r.samples = n;
  return r;
}

}  // namespace xq::dist
