#pragma once
/// \file batch_norm.ipp
/// batch_norm's code (layers/batch_norm.hpp).

#include <cmath>

#include "../batch_norm.hpp"
#include "../../core/mode.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(batch_norm)

namespace detail {

XQ_DECL std::size_t reduction_block_rows(std::size_t channels) {
  return std::max<std::size_t>(1, (std::size_t(1) << 14) / std::max<std::size_t>(1, channels));
}

XQ_DECL std::string channels_last_description(std::size_t rank, std::size_t channels) {
  static const char* const middle[] = {"", "", "", "L", "H, W", "D, H, W"};
  std::string s = "(N, ";
  if (rank >= 3 && rank <= 5)
    s += std::string(middle[rank]) + ", ";
  else if (rank > 5)
    s += "..., ";
  return s + std::to_string(channels) + ")";
}

/// batch_norm_backward, with or without an absorbed relu's mask (compiled apart, so the
/// common case's loops carry no mask).
template <bool Masked>
void batch_norm_backward_with(const batch_norm_saved& s, const tensor& dy) {
  const std::size_t rows = s.rows, C = s.channels;
  const bool want_x = s.x.requires_grad();
  const bool want_gamma = s.gamma.requires_grad();
  const bool want_beta = s.beta.requires_grad();
  const float* xp = s.x.value().data();
  const float* dyp = dy.data();
  const float *mp = s.mean.data(), *ip = s.inv_std.data(), *sp = s.scale.data(), *op = s.offset.data();
  // The gradient reaching the norm: relu's d * (y > 0 ? 1 : 0), selected by bits as
  // relu's backward selects it, when a relu was absorbed.
  const auto incoming = [mp, sp, op](float d, float x, std::size_t c) {
    if constexpr (Masked)
      return d * kernels::branchless_select(batch_norm_affine(x, mp[c], sp[c], op[c]) > 0.0f, 1.0f, 0.0f);
    else
      return d;
  };

  std::vector<double> sums;  // sum(dy), then sum(dy * xhat)
  if (want_gamma || want_beta || (s.training && want_x))
    sums = channel_sums(rows, C, 2, [&](std::size_t r0, std::size_t r1, double* acc) {
      double* s_dy = acc;
      double* s_dyx = acc + C;
      for (std::size_t r = r0; r < r1; ++r) {
        const float* xr = xp + r * C;
        const float* dyr = dyp + r * C;
        XQ_OMP_SIMD
        for (std::size_t c = 0; c < C; ++c) {
          const float d = incoming(dyr[c], xr[c], c);
          const float xhat = (xr[c] - mp[c]) * ip[c];
          s_dy[c] += d;
          s_dyx[c] += static_cast<double>(d) * xhat;
        }
      }
    });

  if (want_x) {
    tensor dx = tensor::from_shape(s.x.shape());
    float* dxp = dx.data();
    if (s.training) {
      // Through the whole batch's mean and variance: under data parallelism the sums over
      // every rank's shard (gamma's and beta's gradients stay this shard's; data
      // parallelism averages those with the other parameters').
      std::vector<double> batch_sums = sums;
      if (s.shards) s.shards->sum(batch_sums.data(), batch_sums.size());
      const double n = s.batch_rows;
      std::vector<float> mean_dy(C), mean_dyx(C);
      for (std::size_t c = 0; c < C; ++c) {
        mean_dy[c] = static_cast<float>(batch_sums[c] / n);
        mean_dyx[c] = static_cast<float>(batch_sums[C + c] / n);
      }
      const float *a = mean_dy.data(), *b = mean_dyx.data();
      for_row_blocks(rows, C, reduction_block_rows(C), [&](std::size_t, std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          const float* xr = xp + r * C;
          const float* dyr = dyp + r * C;
          float* dxr = dxp + r * C;
          XQ_OMP_SIMD
          for (std::size_t c = 0; c < C; ++c) {
            const float xhat = (xr[c] - mp[c]) * ip[c];
            dxr[c] = sp[c] * (incoming(dyr[c], xr[c], c) - a[c] - xhat * b[c]);
          }
        }
      });
    } else {
      for_row_blocks(rows, C, reduction_block_rows(C), [&](std::size_t, std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          const float* xr = xp + r * C;
          const float* dyr = dyp + r * C;
          float* dxr = dxp + r * C;
          XQ_OMP_SIMD
          for (std::size_t c = 0; c < C; ++c) dxr[c] = sp[c] * incoming(dyr[c], xr[c], c);
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

XQ_DECL void batch_norm_backward(const batch_norm_saved& s, const tensor& dy) {
  if (s.relu_absorbed)
    batch_norm_backward_with<true>(s, dy);
  else
    batch_norm_backward_with<false>(s, dy);
}

}  // namespace detail

namespace ops {

XQ_DECL var batch_norm(const var& x, const var& gamma, const var& beta, tensor& moving_mean,
                       tensor& moving_variance, bool training, float momentum, float epsilon,
                       const std::string& path) {
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
  // Training on a shard of a data-parallel batch: the statistics are the whole batch's.
  sharded_batch* const shards = training ? sharded_batch::active(batch_dependence::normalization) : nullptr;
  double batch_rows = static_cast<double>(rows);
  if (training) {
    // One pass over the rows, in double, each channel shifted by its first value
    // (sums of squares of x - shift: no cancellation when |mean| >> std). Over shards,
    // the first rank's first row: the whole batch's first, as one process would take.
    std::vector<double> shift(C);
    for (std::size_t c = 0; c < C; ++c) shift[c] = rows ? xp[c] : 0.0;
    if (shards) shards->from_first(shift.data(), C);
    const double* sh = shift.data();
    std::vector<double> sums =
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
    if (shards) {
      sums.push_back(batch_rows);
      shards->sum(sums.data(), sums.size());
      batch_rows = sums.back();
    }
    const double n = batch_rows;
    // The moving variance takes the UNBIASED batch variance (n / (n - 1) times
    // the biased one; factor 1 for a single row), as TF's fused batch norm and
    // PyTorch do; Keras 3's unfused path would use the biased one.
    const double unbias = n > 1.0 ? n / (n - 1.0) : 1.0;
    const float keep = momentum, take = 1.0f - momentum;
    for (std::size_t c = 0; c < C; ++c) {
      if (n == 0.0) {
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
                               for (std::size_t c = 0; c < C; ++c)
                                 yr[c] = detail::batch_norm_affine(xr[c], mp[c], sp[c], op[c]);
                             }
                           });
  }

  const bool record = needs_grad(x, gamma, beta);  // an undefined var needs none
  if (!record) return var(std::move(y));
  auto saved = std::make_shared<detail::batch_norm_saved>(x, gamma, beta, training, rows, C, std::move(mean),
                                                          std::move(inv_std), std::move(scale), std::move(offset),
                                                          shards, batch_rows);
  var out = make_result(std::move(y), true, [saved](const tensor& dy) { detail::batch_norm_backward(*saved, dy); });
  out.state()->absorbs_relu = saved;  // relu(norm(x)) masks in this backward (ops::relu)
  return out;
}

}  // namespace ops

XQ_DECL var batch_norm::call(const var& x) {
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

XQ_DECL void batch_norm::build(std::size_t channels) {
  if (channels == 0) throw shape_error(path(), "input with at least 1 channel", "an empty last axis");
  if (scale_) gamma_ = make_parameter("gamma", xt::ones<float>({channels}));
  if (center_) beta_ = make_parameter("beta", xt::zeros<float>({channels}));
  moving_mean_ = make_parameter("moving_mean", xt::zeros<float>({channels}), false);
  moving_variance_ = make_parameter("moving_variance", xt::ones<float>({channels}), false);
  name_parameters();
}

XQ_DECL std::pair<vector, vector> batch_norm::inference_affine() const {
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

XQ_DECL batch_norm::batch_norm(bool center, bool scale)
    : layer<batch_norm>("batch_normalization"), center_(center), scale_(scale) {}

XQ_DECL batch_norm& batch_norm::momentum(float m) {
  if (!(m >= 0.0f && m <= 1.0f)) throw argument_error(path(), "a momentum in [0, 1]", detail::concat(m));
  momentum_ = m;
  return *this;
}

XQ_DECL batch_norm& batch_norm::epsilon(float e) {
  if (!(e >= 0.0f)) throw argument_error(path(), "an epsilon >= 0", detail::concat(e));
  epsilon_ = e;
  return *this;
}

XQ_DECL std::vector<parameter_ptr> batch_norm::parameters() const {
  return {gamma_, beta_, moving_mean_, moving_variance_};
}

}  // namespace xq
