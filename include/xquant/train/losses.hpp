#pragma once
/// \file losses.hpp
/// Losses: a prediction and targets in, a scalar `xq::var` (shape `()`) out,
/// recorded on the tape, averaged over the batch (Keras's default
/// "sum over batch size" reduction). Each is a function object, so it can be
/// called directly or handed to `xq::fit`:
///
/// \code
///   xq::var loss = xq::sparse_softmax_cross_entropy(model(x), labels);
///   xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, options);
/// \endcode
///
/// Targets are data: no gradient flows into labels. (Binary cross-entropy and
/// mean squared error do pass a gradient to targets that require one.)
/// Sums over the batch are taken in double.

#include <cstddef>
#include <string>
#include <utility>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tape.hpp"
#include "../core/var.hpp"
#include "../core/tensor.hpp"

namespace xq {

namespace detail {

/// A 0-d tensor holding `v`.
XQ_DECL tensor scalar_tensor(double v);

/// Targets of a loss must have the prediction's shape.
XQ_DECL void require_loss_shapes(const char* loss, const var& pred, const var& targets);

}  // namespace detail

/// Softmax + cross-entropy against integer class ids, fused (TF's
/// sparse_softmax_cross_entropy_with_logits, Keras's
/// SparseCategoricalCrossentropy(from_logits=True)); see `sparse_softmax_cross_entropy`.
struct sparse_softmax_cross_entropy_fn {
  /// `logits` (N, K); `labels` (N,) or (N, 1), floats holding class ids in [0, K). A
  /// sequence model's logits (B, T, K) take labels (B, T): every position is a row, as in
  /// Keras. Loss = mean over rows of logsumexp(row) - row[label]; the max is subtracted
  /// before exp, so huge logits do not overflow. Gradient: (softmax - onehot) / N.
  var operator()(const var& logits, const var& labels) const;
  var operator()(const var& logits, const tensor& labels) const { return (*this)(logits, var(labels)); }
};

/// Mean softmax cross-entropy of logits (N, K) against class ids (N,).
inline constexpr sparse_softmax_cross_entropy_fn sparse_softmax_cross_entropy{};

/// Binary cross-entropy with Keras's semantics; see `binary_cross_entropy`.
struct binary_cross_entropy_fn {
  static constexpr float eps = 1e-7f;      ///< keras.backend.epsilon()
  static constexpr float hi = 1.0f - eps;  ///< 1 - epsilon in float, as Keras computes it

  /// Mean over all elements. Probabilities (`from_logits` false) are clipped to
  /// [1e-7, 1 - 1e-7] first, as Keras does (no gradient outside the clip range,
  /// as TF's clip_by_value); logits use the stable
  /// max(x, 0) - x * z + log(1 + exp(-|x|)) form (TF's sigmoid_cross_entropy_with_logits).
  var operator()(const var& pred, const var& targets, bool from_logits = false) const;
  var operator()(const var& pred, const tensor& targets, bool from_logits = false) const {
    return (*this)(pred, var(targets), from_logits);
  }
};

/// Mean binary cross-entropy of probabilities (or logits) against 0/1 targets of the same shape.
inline constexpr binary_cross_entropy_fn binary_cross_entropy{};

/// Mean squared error; see `mean_squared_error`.
struct mean_squared_error_fn {
  /// mean((pred - targets)^2) over all elements; gradient 2 (pred - targets) / size.
  var operator()(const var& pred, const var& targets) const;
  var operator()(const var& pred, const tensor& targets) const { return (*this)(pred, var(targets)); }
};

/// Mean squared error between predictions and targets of the same shape.
inline constexpr mean_squared_error_fn mean_squared_error{};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/losses.ipp"
#endif
