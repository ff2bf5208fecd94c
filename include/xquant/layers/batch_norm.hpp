#pragma once
/// \file batch_norm.hpp
/// `xq::batch_norm`: batch normalization over the last axis (Keras
/// BatchNormalization with axis=-1: channels of NHWC, features of (N, C)).
///
/// Training mode (`xq::is_training()`): normalizes with the batch's mean and
/// biased variance and updates the moving statistics,
///   moving = moving * momentum + batch * (1 - momentum).
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
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/mode.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
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
inline std::size_t reduction_block_rows(std::size_t channels) {
  return std::max<std::size_t>(1, (std::size_t(1) << 14) / std::max<std::size_t>(1, channels));
}

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
inline std::string channels_last_description(std::size_t rank, std::size_t channels) {
  static const char* const middle[] = {"", "", "", "L", "H, W", "D, H, W"};
  std::string s = "(N, ";
  if (rank >= 3 && rank <= 5)
    s += std::string(middle[rank]) + ", ";
  else if (rank > 5)
    s += "..., ";
  return s + std::to_string(channels) + ")";
}

/// What batch_norm's backward needs from its forward.
struct batch_norm_saved {
  var x, gamma, beta;  // gamma, beta: undefined when absent
  bool training;
  std::size_t rows, channels;
  std::vector<float> mean, inv_std, scale;  // per channel; scale = gamma * inv_std
};

/// The backward of ops::batch_norm. With xhat = (x - mean) * inv_std:
/// dbeta = sum(dy), dgamma = sum(dy * xhat) over rows; dx = scale * dy in
/// inference (the statistics are constants) and, in training, through the batch
/// mean and variance: dx = scale * (dy - mean(dy) - xhat * mean(dy * xhat)).
inline void batch_norm_backward(const batch_norm_saved& s, const tensor& dy) {
  const std::size_t rows = s.rows, C = s.channels;
  const bool want_x = s.x.requires_grad();
  const bool want_gamma = s.gamma.requires_grad();
  const bool want_beta = s.beta.requires_grad();
  const float* xp = s.x.value().data();
  const float* dyp = dy.data();
  const float *mp = s.mean.data(), *ip = s.inv_std.data(), *sp = s.scale.data();

  std::vector<double> sums;  // sum(dy), then sum(dy * xhat)
  if (want_gamma || want_beta || (s.training && want_x))
    sums = channel_sums(rows, C, 2, [&](std::size_t r0, std::size_t r1, double* acc) {
      double* s_dy = acc;
      double* s_dyx = acc + C;
      for (std::size_t r = r0; r < r1; ++r) {
        const float* xr = xp + r * C;
        const float* dyr = dyp + r * C;
#if defined(_OPENMP)
#pragma omp simd
#endif
        for (std::size_t c = 0; c < C; ++c) {
          const float xhat = (xr[c] - mp[c]) * ip[c];
          s_dy[c] += dyr[c];
          s_dyx[c] += static_cast<double>(dyr[c]) * xhat;
        }
      }
    });

  if (want_x) {
    tensor dx = tensor::from_shape(s.x.shape());
    float* dxp = dx.data();
    if (s.training) {
      const double n = static_cast<double>(rows);
      std::vector<float> mean_dy(C), mean_dyx(C);
      for (std::size_t c = 0; c < C; ++c) {
        mean_dy[c] = static_cast<float>(sums[c] / n);
        mean_dyx[c] = static_cast<float>(sums[C + c] / n);
      }
      const float *a = mean_dy.data(), *b = mean_dyx.data();
      for_row_blocks(rows, C, reduction_block_rows(C), [&](std::size_t, std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          const float* xr = xp + r * C;
          const float* dyr = dyp + r * C;
          float* dxr = dxp + r * C;
#if defined(_OPENMP)
#pragma omp simd
#endif
          for (std::size_t c = 0; c < C; ++c) {
            const float xhat = (xr[c] - mp[c]) * ip[c];
            dxr[c] = sp[c] * (dyr[c] - a[c] - xhat * b[c]);
          }
        }
      });
    } else {
      for_row_blocks(rows, C, reduction_block_rows(C), [&](std::size_t, std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          const float* dyr = dyp + r * C;
          float* dxr = dxp + r * C;
#if defined(_OPENMP)
#pragma omp simd
#endif
          for (std::size_t c = 0; c < C; ++c) dxr[c] = sp[c] * dyr[c];
        }
      });
    }
    add_grad(s.x, std::move(dx));
  }
  if (want_gamma) {
    tensor dg = tensor::from_shape({C});
    for (std::size_t c = 0; c < C; ++c) dg.data()[c] = static_cast<float>(sums[C + c]);
    add_grad(s.gamma, std::move(dg));
  }
  if (want_beta) {
    tensor db = tensor::from_shape({C});
    for (std::size_t c = 0; c < C; ++c) db.data()[c] = static_cast<float>(sums[c]);
    add_grad(s.beta, std::move(db));
  }
}

}  // namespace detail

namespace ops {

/// Batch normalization over the last axis of `x` on the tape.
///
/// `gamma`, `beta`: (C,) vars, or undefined vars for none (scale 1, offset 0).
/// `moving_mean`, `moving_variance`: (C,) statistics, read in inference and
/// updated in place in training mode. `path` names the caller in errors.
inline var batch_norm(const var& x, const var& gamma, const var& beta, tensor& moving_mean,
                      tensor& moving_variance, bool training, float momentum, float epsilon,
                      const std::string& path = "batch_norm") {
  if (x.dimension() < 2)
    throw shape_error(path, "input of rank 2 or more with channels last, (N, C) or (N, H, W, C)",
                      detail::shape_string(x.shape()));
  const std::size_t channels = x.shape().back();
  auto require_channels = [&](const tensor& t, const char* what) {
    if (t.dimension() != 1 || t.shape()[0] != channels)
      throw shape_error(path, detail::concat(what, " of shape (", channels, ",)"),
                        detail::shape_string(t.shape()));
  };
  if (gamma.defined()) require_channels(gamma.value(), "gamma");
  if (beta.defined()) require_channels(beta.value(), "beta");
  require_channels(moving_mean, "moving_mean");
  require_channels(moving_variance, "moving_variance");

  const std::size_t rows = channels == 0 ? 0 : x.size() / channels;
  const float* xp = x.value().data();
  const std::size_t C = channels;

  // The mean and inverse standard deviation used per channel.
  std::vector<float> mean(C), inv_std(C);
  if (training) {
    // One pass over the rows, in double, each channel shifted by its first value
    // (sums of squares of x - shift: no cancellation when |mean| >> std).
    std::vector<double> shift(C);
    for (std::size_t c = 0; c < C; ++c) shift[c] = rows ? xp[c] : 0.0;
    const double* sh = shift.data();
    const std::vector<double> sums =
        detail::channel_sums(rows, C, 2, [&](std::size_t r0, std::size_t r1, double* acc) {
          double* s1 = acc;
          double* s2 = acc + C;
          for (std::size_t r = r0; r < r1; ++r) {
            const float* row = xp + r * C;
#if defined(_OPENMP)
#pragma omp simd
#endif
            for (std::size_t c = 0; c < C; ++c) {
              const double d = static_cast<double>(row[c]) - sh[c];
              s1[c] += d;
              s2[c] += d * d;
            }
          }
        });
    const double n = static_cast<double>(rows);
    // The moving variance takes the UNBIASED batch variance (n / (n - 1) times
    // the biased one; factor 1 for a single row), as TF's fused batch norm and
    // PyTorch do; Keras 3's unfused path would use the biased one.
    const double unbias = rows > 1 ? n / (n - 1.0) : 1.0;
    const float keep = momentum, take = 1.0f - momentum;
    for (std::size_t c = 0; c < C; ++c) {
      if (rows == 0) {
        mean[c] = 0.0f;
        inv_std[c] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(epsilon)));
        continue;
      }
      const double s1 = sums[c], s2 = sums[C + c];
      const double m = sh[c] + s1 / n;
      const double var = std::max(0.0, s2 - s1 * s1 / n) / n;  // biased: what normalizes
      mean[c] = static_cast<float>(m);
      inv_std[c] = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(epsilon)));
      float& mm = moving_mean.data()[c];
      float& mv = moving_variance.data()[c];
      mm = mm * keep + static_cast<float>(m) * take;
      mv = mv * keep + static_cast<float>(var * unbias) * take;
    }
  } else {
    for (std::size_t c = 0; c < C; ++c) {
      mean[c] = moving_mean.data()[c];
      inv_std[c] = static_cast<float>(
          1.0 / std::sqrt(static_cast<double>(moving_variance.data()[c]) + static_cast<double>(epsilon)));
    }
  }

  // y = (x - mean) * (gamma * inv_std) + beta.
  std::vector<float> scale(C), offset(C, 0.0f);
  for (std::size_t c = 0; c < C; ++c) {
    scale[c] = (gamma.defined() ? gamma.value().data()[c] : 1.0f) * inv_std[c];
    if (beta.defined()) offset[c] = beta.value().data()[c];
  }
  tensor y = tensor::from_shape(x.shape());
  {
    float* yp = y.data();
    const float *mp = mean.data(), *sp = scale.data(), *op = offset.data();
    detail::for_row_blocks(rows, C, detail::reduction_block_rows(C),
                           [&](std::size_t, std::size_t r0, std::size_t r1) {
                             for (std::size_t r = r0; r < r1; ++r) {
                               const float* xr = xp + r * C;
                               float* yr = yp + r * C;
#if defined(_OPENMP)
#pragma omp simd
#endif
                               for (std::size_t c = 0; c < C; ++c) yr[c] = (xr[c] - mp[c]) * sp[c] + op[c];
                             }
                           });
  }

  const bool record = needs_grad(x, gamma, beta);  // an undefined var needs none
  detail::batch_norm_saved saved{
      x, gamma, beta, training, rows, C, std::move(mean), std::move(inv_std), std::move(scale)};
  return make_result(std::move(y), record, [saved = std::move(saved)](const tensor& dy) {
    detail::batch_norm_backward(saved, dy);
  });
}

}  // namespace ops

/// Batch normalization layer over the last axis (Keras BatchNormalization).
/// Its default name is Keras's, "batch_normalization", so parameter paths match
/// Keras's ("batch_normalization/moving_mean").
class batch_norm : public layer<batch_norm> {
 public:
  static constexpr layer_role role = layer_role::norm;
  /// `center`: learn beta; `scale`: learn gamma (Keras's flags, both on by default).
  explicit batch_norm(bool center = true, bool scale = true)
      : layer<batch_norm>("batch_normalization"), center_(center), scale_(scale) {}

  var call(const var& x) {
    if (x.dimension() < 2)
      throw shape_error(path(), "input of rank 2 or more with channels last, (N, C) or (N, H, W, C)",
                        detail::shape_string(x.shape()));
    if (!moving_mean_) build(x.shape().back());
    const std::size_t channels = moving_mean_->value.size();
    if (x.shape().back() != channels)
      throw shape_error(path(),
                        "input of shape " + detail::channels_last_description(x.dimension(), channels),
                        detail::shape_string(x.shape()));
    return ops::batch_norm(x, gamma_ ? var(gamma_) : var(), beta_ ? var(beta_) : var(), moving_mean_->value,
                           moving_variance_->value, is_training(), momentum_, epsilon_, path());
  }

  /// Creates the parameters for `channels` channels (the first call does it).
  void build(std::size_t channels) {
    if (channels == 0) throw shape_error(path(), "input with at least 1 channel", "an empty last axis");
    if (scale_) gamma_ = make_parameter("gamma", xt::ones<float>({channels}));
    if (center_) beta_ = make_parameter("beta", xt::zeros<float>({channels}));
    moving_mean_ = make_parameter("moving_mean", xt::zeros<float>({channels}), false);
    moving_variance_ = make_parameter("moving_variance", xt::ones<float>({channels}), false);
    name_parameters();
  }

  /// Weight of the old moving statistics per update (Keras: 0.99; PyTorch's
  /// `momentum` is 1 minus this). Chainable.
  batch_norm& momentum(float m) {
    if (!(m >= 0.0f && m <= 1.0f)) throw argument_error(path(), "a momentum in [0, 1]", detail::concat(m));
    momentum_ = m;
    return *this;
  }
  float momentum() const noexcept { return momentum_; }
  /// Added to the variance before the square root (Keras: 1e-3; PyTorch: 1e-5). Chainable.
  batch_norm& epsilon(float e) {
    if (!(e >= 0.0f)) throw argument_error(path(), "an epsilon >= 0", detail::concat(e));
    epsilon_ = e;
    return *this;
  }
  float epsilon() const noexcept { return epsilon_; }

  std::vector<parameter_ptr> parameters() const { return {gamma_, beta_, moving_mean_, moving_variance_}; }
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
  std::pair<vector, vector> inference_affine() const {
    if (!moving_mean_) throw argument_error(path(), "a built batch_norm", "one never called nor built");
    const std::size_t C = moving_mean_->value.size();
    vector a = vector::from_shape({C}), b = vector::from_shape({C});
    for (std::size_t c = 0; c < C; ++c) {
      const double g = gamma_ ? gamma_->value.data()[c] : 1.0;
      const double be = beta_ ? beta_->value.data()[c] : 0.0;
      const double s = g / std::sqrt(static_cast<double>(moving_variance_->value.data()[c]) + epsilon_);
      a(c) = static_cast<float>(s);
      b(c) = static_cast<float>(be - static_cast<double>(moving_mean_->value.data()[c]) * s);
    }
    return {std::move(a), std::move(b)};
  }

 private:
  bool center_, scale_;
  float momentum_ = 0.99f, epsilon_ = 1e-3f;
  parameter_ptr gamma_, beta_, moving_mean_, moving_variance_;
};

}  // namespace xq
