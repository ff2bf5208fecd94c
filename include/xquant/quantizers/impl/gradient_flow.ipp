#pragma once
/// \file gradient_flow.ipp
/// The gradient-flow metric's update (quantizers/gradient_flow.hpp).

#include <cstddef>

#include "../gradient_flow.hpp"

namespace xq {

XQ_DECL void gradient_flow::update(const tensor& input_grad) {
  const std::size_t n = input_grad.size();
  const float* g = input_grad.data();
  std::size_t nonzero = 0;
#if defined(_OPENMP)
#pragma omp simd reduction(+ : nonzero)
#endif
  for (std::size_t i = 0; i < n; ++i) nonzero += (g[i] != 0.0f);
  sum_ += n ? static_cast<double>(nonzero) / static_cast<double>(n) : 0.0;
  ++count_;
}

}  // namespace xq
