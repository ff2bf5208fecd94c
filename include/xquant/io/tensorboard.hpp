#pragma once
/// \file tensorboard.hpp
/// Keras's `TensorBoard` callback for `fit`: training seen as TensorBoard shows it, from
/// event files xquant writes itself (io/summary_writer.hpp).
///
/// \code
///   xq::fit_options options;
///   options.callbacks.push_back(std::make_shared<xq::tensorboard>("runs/qat"));
///   xq::fit(qat, opt, xq::sparse_softmax_cross_entropy, train, options);
///   // tensorboard --logdir runs
/// \endcode
///
/// What it writes, in `<log_dir>/train` and `<log_dir>/validation` (two runs, so that the
/// loss curves overlay, as Keras lays them out):
///  - every `update_freq` steps and at each epoch's last step (step axis: the global step):
///    `batch_loss`, `batch_<metric>`, `batch_learning_rate`, `batch_seconds` and
///    `batch_samples_per_second`; and for every quantizer the step called (its path
///    `<p>`), from its grid on what it was given (`quantizer_base::grid_of`): `scale/<p>`
///    and `zero_point/<p>` (per tensor; per channel or block a histogram of the scales),
///    `range_min/<p>` and `range_max/<p>` (the reals the grid reaches, over every
///    channel; none for binary grids) and `clipped/<p>`, the share of its inputs beyond
///    its channel's or block's reach; and Larq's `batch_flip_ratio/<p>` and
///    `batch_gradient_flow/<p>` (the epoch's figures so far) for quantizers that keep them;
///  - at each epoch's end (step axis: the epoch, 1-based as epoch_record counts it):
///    `epoch_loss`, `epoch_<metric>`, `epoch_learning_rate`, `epoch_seconds`,
///    `epoch_samples_per_second`, Larq's `epoch_flip_ratio/<p>` and
///    `epoch_gradient_flow/<p>` (fit's epoch_record::quantizer_metrics), and in validation/
///    `epoch_loss` and `epoch_<metric>`;
///  - every `histogram_freq` epochs, at the epoch's last step (step axis: the global step): the histogram of every
///    parameter (`weights/<name>`; the kernels, biases, batch-norm statistics and
///    quantizer ranges), and of each quantizer's input and output (`quantizer_input/<p>`,
///    `quantizer_output/<p>`: a kernel quantizer's output shows the weight on its grid, piled
///    against the grid's bounds where it clips), and the text `quantizers`, a table of each
///    quantizer's kind, grid and clipped share.
/// With data-parallel training rank 0 writes (its shard's quantizer figures; the losses are
/// every rank's, as fit's are). The writers stay open across fits: a second `fit` with the
/// same callback continues its files (its steps start again at 1: give each fit its own
/// log_dir, as the QAT example does, to see them as two runs).

#include <cstddef>
#include <memory>
#include <string>

#include "../config.hpp"
#include "../train/fit_callback.hpp"
#include "summary_writer.hpp"

namespace xq {

struct tensorboard_options {
  std::string log_dir = "logs";
  /// Step scalars and quantizer figures every this many steps (and at each epoch's last);
  /// 0: at each epoch's last step only (Keras's update_freq="epoch").
  std::size_t update_freq = 50;
  /// Histograms every this many epochs (Keras's histogram_freq); 0: none.
  std::size_t histogram_freq = 1;
  std::size_t histogram_bins = 30;
  /// Each quantizer's grid, clipped share and histograms; false: losses, rates and weights only.
  bool quantizers = true;
};

/// The callback (see the file comment).
class tensorboard final : public fit_callback {
 public:
  XQ_DECL explicit tensorboard(tensorboard_options options = {});
  explicit tensorboard(std::string log_dir) : tensorboard(options_with(std::move(log_dir))) {}
  XQ_DECL ~tensorboard() override;
  tensorboard(const tensorboard&) = delete;
  tensorboard& operator=(const tensorboard&) = delete;

  XQ_DECL void on_train_begin(const fit_context& context) override;
  XQ_DECL void on_step_begin(std::size_t global_step) override;
  XQ_DECL void on_step_end(const fit_step& step) override;
  XQ_DECL void on_epoch_end(const epoch_record& record) override;
  XQ_DECL void on_train_end(const fit_history& history) override;

  /// `<log_dir>/train` and `<log_dir>/validation`, for a user's own summaries: made by the
  /// first `fit` on rank 0 (validation/ at its first validation), null before and on the
  /// other ranks.
  summary_writer* train_writer() noexcept { return train_.get(); }
  summary_writer* validation_writer() noexcept { return validation_.get(); }
  const tensorboard_options& options() const noexcept { return options_; }

 private:
  static tensorboard_options options_with(std::string log_dir) {
    tensorboard_options o;
    o.log_dir = std::move(log_dir);
    return o;
  }
  struct watch;  // the quantizer calls of a logged step

  tensorboard_options options_;
  fit_context context_;
  std::unique_ptr<summary_writer> train_, validation_;
  std::unique_ptr<watch> watch_;
  bool logged_now_ = false, histograms_now_ = false;
  double last_learning_rate_ = -1;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tensorboard.ipp"
#endif
