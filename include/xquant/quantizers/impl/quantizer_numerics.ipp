#pragma once
/// \file quantizer_numerics.ipp
/// quantizer_numerics' shared helpers (quantizers/quantizer_numerics.hpp).

#include <algorithm>
#include <functional>
#include <utility>

#include "../../core/fp_environment.hpp"
#include "../../kernels/policy.hpp"
#include "../../kernels/scalar.hpp"
#include "../../kernels/simd.hpp"
#include "../quantizer_numerics.hpp"

namespace xq {

XQ_DECL std::function<tensor(const tensor&)> quantizer_numerics::masked_gradient(mask_tensor mask, bool flush) {
  return [mask = std::move(mask), flush](const tensor& dy) {
    tensor dx = tensor::from_shape(dy.shape());
    if (flush) {
      const flush_denormals_scope as_in_tensorflow;
      kernels::apply_mask(default_policy{}, mask.data(), dy.data(), dx.data(), dx.size());
    } else {
      kernels::apply_mask(default_policy{}, mask.data(), dy.data(), dx.data(), dx.size());
    }
    return dx;
  };
}

XQ_DECL tensor quantizer_numerics::as_tensor(const vector& v) {
  tensor t = tensor::from_shape({v.size()});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

}  // namespace xq
