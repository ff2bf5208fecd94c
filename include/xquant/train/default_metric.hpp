#pragma once
/// \file default_metric.hpp
/// The metric `fit` and `evaluate` report when none is given, chosen from the loss as Keras
/// resolves `compile(metrics=["accuracy"])` by its loss: binary cross-entropy reports binary
/// accuracy, sparse categorical cross-entropy sparse categorical accuracy, and a regression
/// loss (mean squared error) no accuracy at all, only the loss. (Before, every loss got sparse
/// categorical accuracy, and a regression's first batch failed with "expected labels of shape".)
///
/// A loss of your own names its metric by specializing the trait (`void`: none):
///
/// \code
///   template <> struct xq::default_metric<my::huber_fn> { using type = void; };
/// \endcode
///
/// A loss type without a specialization (a lambda, say) gets `automatic_metric`: sparse
/// categorical accuracy when the outputs and targets have the shapes of class scores and
/// labels, else an error that says how to choose (`fit_options::metric = nullptr`: none).

#include <type_traits>

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "losses.hpp"
#include "metrics.hpp"

namespace xq {

/// Opt-in trait: `type` is the metric function object `fit` and `evaluate` report by
/// default with the loss `Loss` (a function object type, cv-unqualified), `void` for none.
/// The primary has no `type`: the loss is then unknown and gets `automatic_metric`.
template <class Loss, class = void>
struct default_metric {};

template <>
struct default_metric<sparse_softmax_cross_entropy_fn> {
  using type = sparse_categorical_accuracy_fn;
};
template <>
struct default_metric<binary_cross_entropy_fn> {
  using type = binary_accuracy_fn;  // on probabilities, as the loss called with two arguments takes
};
template <>
struct default_metric<mean_squared_error_fn> {
  using type = void;  // Keras's "accuracy" has no meaning for a regression
};

template <class Loss>
using default_metric_t = typename default_metric<Loss>::type;

/// True when `default_metric<Loss>` names a metric (or `void`).
template <class Loss, class = void>
struct has_default_metric : std::false_type {};
template <class Loss>
struct has_default_metric<Loss, std::void_t<typename default_metric<Loss>::type>> : std::true_type {};
template <class Loss>
inline constexpr bool has_default_metric_v = has_default_metric<Loss>::value;

/// The default metric of a loss with no `default_metric`: sparse categorical accuracy of
/// class scores (..., K) against labels (...) or (..., 1); any other shapes are an
/// argument_error saying how to choose a metric (or none).
struct automatic_metric_fn {
  double operator()(const tensor& outputs, const tensor& targets) const;
};

/// `fit_options::metric`'s and `evaluate`'s default: replaced by the loss's `default_metric`.
inline constexpr automatic_metric_fn automatic_metric{};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/default_metric.ipp"
#endif
