#pragma once
/// \file lsq_quantizer.ipp
/// lsq_quantizer's code (quantizers/lsq_quantizer.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../numerics/torch_learnable_fake_quant.hpp"
#include "../lsq_quantizer.hpp"

namespace xq {

XQ_DECL lsq_quantizer::lsq_quantizer(int num_bits, lsq_scheme scheme, bool use_grad_scaling)
    : quantizer_layer<lsq_quantizer>("lsq_quantizer"),
      num_bits_(num_bits),
      scheme_(scheme),
      use_grad_scaling_(use_grad_scaling) {
  if (num_bits < 2 || num_bits > 16)
    throw argument_error("xq::lsq_quantizer", "num_bits in [2, 16]", detail::concat(num_bits));
  if (scheme != lsq_scheme::symmetric && scheme != lsq_scheme::affine)
    throw argument_error("xq::lsq_quantizer", "scheme symmetric or affine",
                         detail::concat("lsq_scheme(", static_cast<int>(scheme), ")"));
  const std::int64_t levels = std::int64_t(1) << num_bits;
  quant_min_ = scheme == lsq_scheme::symmetric ? -levels / 2 : 0;
  quant_max_ = scheme == lsq_scheme::symmetric ? levels / 2 - 1 : levels - 1;
  scale_ = make_parameter("scale", xt::zeros<float>({std::size_t(1)}));
  if (scheme == lsq_scheme::affine) zero_point_ = make_parameter("zero_point", xt::zeros<float>({std::size_t(1)}));
  name_parameters();
}

XQ_DECL lsq_quantizer& lsq_quantizer::set_scale(float scale, float zero_point) {
  if (!(scale > 0.0f) || !std::isfinite(scale))
    throw argument_error(path(), "a finite scale > 0", detail::concat(scale));
  if (!std::isfinite(zero_point) || (zero_point_ == nullptr && zero_point != 0.0f))
    throw argument_error(path(), zero_point_ ? "a finite zero_point" : "zero_point 0 (symmetric scheme)",
                         detail::concat(zero_point));
  scale_->value.data()[0] = scale;
  if (zero_point_) zero_point_->value.data()[0] = zero_point;
  return *this;
}

XQ_DECL std::optional<quantization_grid> lsq_quantizer::grid_of(const tensor& x) const {
  (void)x;
  if (!enabled() || !fake_quant_enabled() || !initialized()) return std::nullopt;
  const float s = std::max(scale_->value.data()[0], std::numeric_limits<float>::epsilon());  // the call's clamp
  const float zp = zero_point_ ? zero_point_->value.data()[0] : 0.0f;
  quantization_grid g;
  g.num_bits = num_bits_;
  g.qmin = std::int32_t(quant_min_);
  g.qmax = std::int32_t(quant_max_);
  g.scale = {s};
  g.zero_point = {std::int32_t(torch::detail::forward_zero_point(zp, quant_min_, quant_max_))};
  g.rounding.op = rounding_operator::lsq;
  g.rounding.float_zero_point = {zp};
  return g;
}

XQ_DECL std::vector<parameter_ptr> lsq_quantizer::parameters() const { return {scale_, zero_point_}; }

XQ_DECL void lsq_quantizer::for_each_parameter_slot(const std::function<void(parameter_ptr&)>& f) {
  f(scale_);
  f(zero_point_);
}

XQ_DECL void lsq_quantizer::observe(const tensor& x) {
  if (!initialized()) initialize_from(x);
}

XQ_DECL var lsq_quantizer::quantize(const var& x) {
  if (!initialized()) return x;  // nothing to quantize with yet: pass through
  float& s_value = scale_->value.data()[0];
  s_value = std::max(s_value, std::numeric_limits<float>::epsilon());  // _LearnableFakeQuantize's clamp
  const float s = s_value;
  const float zp = zero_point_ ? zero_point_->value.data()[0] : 0.0f;
  const float gf = use_grad_scaling_ ? torch::lsq_grad_factor(x.size(), quant_max_) : 1.0f;
  tensor y = torch::fake_quantize_learnable_per_tensor_affine(x.value(), s, zp, quant_min_, quant_max_, gf);
  const var scale_var(scale_);
  const bool record = zero_point_ ? needs_grad(x, scale_var, var(zero_point_)) : needs_grad(x, scale_var);
  return emit_with(x, std::move(y), record,
                   [x, scale = scale_, zero_point = zero_point_, s, zp, qmin = quant_min_, qmax = quant_max_,
                    gf](const tensor& dy) {
                     auto g = torch::fake_quantize_learnable_per_tensor_affine_backward(dy, x.value(), s, zp, qmin,
                                                                                        qmax, gf);
                     add_grad(var(scale), tensor{g.dscale});
                     if (zero_point) add_grad(var(zero_point), tensor{g.dzero_point});
                     return std::move(g.dx);
                   });
}

XQ_DECL void lsq_quantizer::initialize_from(const tensor& x) {
  const float* xs = x.data();
  const std::size_t n = x.size();
  double sum = 0.0;
  float lowest = std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < n; ++i) {
    sum += std::fabs(xs[i]);
    lowest = std::min(lowest, xs[i]);
  }
  if (!std::isfinite(sum))
    throw argument_error(path(), "finite values to initialise the scale from", "NaN or infinity in the input");
  if (n == 0 || sum == 0.0) return;
  const double mean = sum / static_cast<double>(n);
  const float s = static_cast<float>(2.0 * mean / std::sqrt(static_cast<double>(quant_max_)));
  if (!(s > 0.0f)) return;  // underflow: stay uninitialised
  scale_->value.data()[0] = s;
  if (zero_point_) {
    const float zp = std::nearbyint(static_cast<float>(quant_min_) - lowest / s);
    zero_point_->value.data()[0] =
        std::min(std::max(zp, static_cast<float>(quant_min_)), static_cast<float>(quant_max_));
  }
}

}  // namespace xq
