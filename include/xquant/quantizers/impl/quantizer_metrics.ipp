#pragma once
/// \file quantizer_metrics.ipp
/// The thread's metrics scope (quantizers/quantizer_metrics.hpp).

#include "../quantizer_metrics.hpp"

namespace xq {

namespace detail {

XQ_DECL metrics_scope_state& this_thread_metrics_scope() {
  thread_local metrics_scope_state s;
  return s;
}

}  // namespace detail

XQ_DECL quantizer_metric metrics_scope::current() noexcept {
  const auto& s = detail::this_thread_metrics_scope();
  return s.active ? s.metrics : quantizer_metric::none;
}

}  // namespace xq
