#pragma once
/// \file quantizer_metrics.hpp
/// Which metrics a quantizer keeps (`quantizer_metric` flags) and `metrics_scope`,
/// Larq's `larq.context.metrics_scope`: the quant layers built inside it give their
/// kernel quantizer the scope's metrics, unless that quantizer chose its own.
///
/// \code
///   {
///     xq::metrics_scope scope(xq::quantizer_metric::flip_ratio);
///     auto conv = xq::quant_conv2d(64, 3, xq::ste_sign(), xq::ste_sign());  // kernel: flip ratio on
///   }
/// \endcode

#include <cstdint>

#include "../config.hpp"

namespace xq {

/// Metrics a quantizer can keep (combine with `|`).
enum class quantizer_metric : std::uint8_t {
  none = 0,
  flip_ratio = 1,     ///< share of outputs that changed since the previous training call (Larq)
  gradient_flow = 2,  ///< share of non-zero gradients passed back per backward pass
};
constexpr quantizer_metric operator|(quantizer_metric a, quantizer_metric b) noexcept {
  return static_cast<quantizer_metric>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}
constexpr bool has_metric(quantizer_metric set, quantizer_metric m) noexcept {
  return (static_cast<std::uint8_t>(set) & static_cast<std::uint8_t>(m)) != 0;
}

namespace detail {
struct metrics_scope_state {
  quantizer_metric metrics = quantizer_metric::none;
  bool active = false;
};
/// This thread's innermost scope.
XQ_DECL metrics_scope_state& this_thread_metrics_scope();
}  // namespace detail

/// While alive, quant layers constructed on this thread give their kernel quantizer
/// these metrics (when it has none set explicitly). Scopes nest; the innermost wins.
class metrics_scope {
 public:
  explicit metrics_scope(quantizer_metric metrics) : previous_(detail::this_thread_metrics_scope()) {
    detail::this_thread_metrics_scope() = {metrics, true};
  }
  ~metrics_scope() { detail::this_thread_metrics_scope() = previous_; }
  metrics_scope(const metrics_scope&) = delete;
  metrics_scope& operator=(const metrics_scope&) = delete;

  /// The innermost scope's metrics; `none` outside every scope.
  static quantizer_metric current() noexcept;

 private:
  detail::metrics_scope_state previous_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantizer_metrics.ipp"
#endif
