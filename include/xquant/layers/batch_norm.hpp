#pragma once
/// \file batch_norm.hpp
/// `xq::batch_norm`: batch normalization over the last axis (Keras
/// BatchNormalization with axis=-1: channels of NHWC, features of (N, C)).
///
/// Training mode (`xq::is_training()`): normalizes with the batch's mean and
/// biased variance and updates the moving statistics,
///   moving = moving * momentum + batch * (1 - momentum).
/// Under data parallelism (a `sharded_batch` active, core/sharded_batch.hpp) the batch's
/// statistics are the whole batch's, over every rank's shard, in the forward pass and in
/// the backward (SyncBatchNorm): the moving statistics then move identically on every rank.
/// Inference: normalizes with the moving statistics. Both modes have a full
/// backward (training mode differentiates through the batch mean and variance).
///
/// Parameters, as Keras names them: "gamma" (ones) and "beta" (zeros), trainable;
/// "moving_mean" (zeros) and "moving_variance" (ones), non-trainable state.
/// Defaults as Keras: momentum 0.99, epsilon 1e-3, center and scale on.
///
/// \code
///   xq::batch_norm norm;                          // Keras defaults
///   xq::batch_norm slow = xq::batch_norm().momentum(0.9f).epsilon(1e-5f);
///   xq::var y = norm(conv(x));
/// \endcode

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/sharded_batch.hpp"
#include "../core/tape.hpp"
#include "../kernels/branchless.hpp"
#include "../kernels/parallel.hpp"

namespace xq {

namespace detail {

/// Calls `body(block, row_begin, row_end)` for consecutive blocks of `block_rows`
/// rows of a (rows, channels) buffer, on both cores when large. The blocks do not
/// depend on the thread count, so per-block partial sums combined in block order
/// give the same result on any number of threads.
template <class Body>
void for_row_blocks(std::size_t rows, std::size_t channels, std::size_t block_rows, Body&& body) {
  const std::size_t block_elems = block_rows * channels;
  // Chunks start at multiples of the grain, so they hold whole blocks.
  kernels::parallel_for(rows * channels, block_elems, [&](std::size_t b, std::size_t e) {
    for (std::size_t blk = b / block_elems; blk * block_elems < e; ++blk)
      body(blk, blk * block_rows, std::min(rows, (blk + 1) * block_rows));
  });
}

/// Rows per block for a reduction over `channels`: about 16 Ki values a block.
XQ_DECL std::size_t reduction_block_rows(std::size_t channels);

/// Sums `k` per-channel quantities over rows: `body(row_begin, row_end, acc)`
/// adds into acc[q * channels + c] (doubles, zeroed). Returns the k * channels totals.
template <class Body>
std::vector<double> channel_sums(std::size_t rows, std::size_t channels, std::size_t k, Body&& body) {
  const std::size_t block_rows = reduction_block_rows(channels);
  const std::size_t blocks = rows == 0 ? 0 : (rows + block_rows - 1) / block_rows;
  std::vector<double> partial(blocks * k * channels, 0.0);
  for_row_blocks(rows, channels, block_rows, [&](std::size_t blk, std::size_t r0, std::size_t r1) {
    body(r0, r1, partial.data() + blk * k * channels);
  });
  std::vector<double> total(k * channels, 0.0);
  for (std::size_t blk = 0; blk < blocks; ++blk)
    for (std::size_t i = 0; i < k * channels; ++i) total[i] += partial[blk * k * channels + i];
  return total;
}

/// "(N, H, W, 16)"-style description of a rank-`rank` input with `channels` last.
XQ_DECL std::string channels_last_description(std::size_t rank, std::size_t channels);

/// y = (x - mean) * scale + offset, one channel's element: the forward pass and the
/// backward's recomputation of y (for an absorbed relu's mask) share it, so the
/// compiler contracts both the same way and the mask sees y's exact bits.
XQ_ALWAYS_INLINE float batch_norm_affine(float x, float mean, float scale, float offset) {
  return (x - mean) * scale + offset;
}

/// What batch_norm's backward needs from its forward. Also the output's relu_absorber:
/// once a relu is absorbed, the backward masks dy by y > 0, y recomputed from x (no
/// pass of relu's own, and y itself need not be kept).
struct batch_norm_saved final : relu_absorber {
  batch_norm_saved(var x, var gamma, var beta, bool training, std::size_t rows, std::size_t channels,
                   std::vector<float> mean, std::vector<float> inv_std, std::vector<float> scale,
                   std::vector<float> offset, sharded_batch* shards, double batch_rows)
      : x(std::move(x)), gamma(std::move(gamma)), beta(std::move(beta)), training(training), rows(rows),
        channels(channels), mean(std::move(mean)), inv_std(std::move(inv_std)), scale(std::move(scale)),
        offset(std::move(offset)), shards(shards), batch_rows(batch_rows) {}
  void absorb_relu() override { relu_absorbed = true; }

  var x, gamma, beta;  // gamma, beta: undefined when absent
  bool training;
  std::size_t rows, channels;
  std::vector<float> mean, inv_std, scale, offset;  // per channel; scale = gamma * inv_std
  bool relu_absorbed = false;
  /// Training on a shard of the batch (core/sharded_batch.hpp): the other shards, whose
  /// sums the backward adds to its own, and the whole batch's row count. Else null, rows.
  sharded_batch* shards;
  double batch_rows;
};

/// The backward of ops::batch_norm. With xhat = (x - mean) * inv_std:
/// dbeta = sum(dy), dgamma = sum(dy * xhat) over rows; dx = scale * dy in
/// inference (the statistics are constants) and, in training, through the batch
/// mean and variance: dx = scale * (dy - mean(dy) - xhat * mean(dy * xhat)).
/// With a relu absorbed, dy is first multiplied by (y > 0), as relu's backward would.
XQ_DECL void batch_norm_backward(const batch_norm_saved& s, const tensor& dy);

}  // namespace detail

namespace ops {

/// Batch normalization over the last axis of `x` on the tape.
///
/// `gamma`, `beta`: (C,) vars, or undefined vars for none (scale 1, offset 0).
/// `moving_mean`, `moving_variance`: (C,) statistics, read in inference and
/// updated in place in training mode. `path` names the caller in errors.
XQ_DECL var batch_norm(const var& x, const var& gamma, const var& beta, tensor& moving_mean,
                       tensor& moving_variance, bool training, float momentum, float epsilon,
                       const std::string& path = "batch_norm");

}  // namespace ops

/// Batch normalization layer over the last axis (Keras BatchNormalization).
/// Its default name is Keras's, "batch_normalization", so parameter paths match
/// Keras's ("batch_normalization/moving_mean").
class batch_norm : public layer<batch_norm> {
 public:
  XQ_SPECIAL_MEMBERS(batch_norm)
  static constexpr layer_role role = layer_role::norm;
  /// `center`: learn beta; `scale`: learn gamma (Keras's flags, both on by default).
  XQ_DECL explicit batch_norm(bool center = true, bool scale = true);

  XQ_DECL var call(const var& x);

  /// Creates the parameters for `channels` channels (the first call does it).
  XQ_DECL void build(std::size_t channels);

  /// Weight of the old moving statistics per update (Keras: 0.99; PyTorch's
  /// `momentum` is 1 minus this). Chainable.
  XQ_DECL batch_norm& momentum(float m);
  float momentum() const noexcept { return momentum_; }
  /// Added to the variance before the square root (Keras: 1e-3; PyTorch: 1e-5). Chainable.
  XQ_DECL batch_norm& epsilon(float e);
  float epsilon() const noexcept { return epsilon_; }

  XQ_DECL std::vector<parameter_ptr> parameters() const;
  /// Each stored parameter slot, null ones included (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(gamma_);
    f(beta_);
    f(moving_mean_);
    f(moving_variance_);
  }
  /// Scale (C,); null when built with scale = false (or not built yet).
  const parameter_ptr& gamma() const noexcept { return gamma_; }
  /// Offset (C,); null when built with center = false (or not built yet).
  const parameter_ptr& beta() const noexcept { return beta_; }
  const parameter_ptr& moving_mean() const noexcept { return moving_mean_; }
  const parameter_ptr& moving_variance() const noexcept { return moving_variance_; }
  bool center() const noexcept { return center_; }
  bool scale() const noexcept { return scale_; }

  /// The inference transform as y = x * a + b per channel (what folding into a
  /// preceding convolution needs): a = gamma / sqrt(moving_variance + epsilon),
  /// b = beta - moving_mean * a, computed in double. Throws if not built.
  XQ_DECL std::pair<vector, vector> inference_affine() const;

 private:
  bool center_, scale_;
  float momentum_ = 0.99f, epsilon_ = 1e-3f;
  parameter_ptr gamma_, beta_, moving_mean_, moving_variance_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/batch_norm.ipp"
#endif
