#pragma once
/// \file torch_fake_quant.ipp
/// The argument checks of PyTorch's fake quantization (numerics/torch_fake_quant.hpp); in
/// separate mode also the operators for the default policy and the scalar reference.

#include <cmath>
#include <string>

#include "../torch_fake_quant.hpp"

namespace xq::torch {

namespace detail {

XQ_DECL void check_quant_range(std::int64_t quant_min, std::int64_t quant_max, const char* where) {
  if (quant_min > quant_max)
    throw argument_error(where, "quant_min <= quant_max",
                         xq::detail::concat("quant_min = ", quant_min, ", quant_max = ", quant_max));
}

XQ_DECL void check_scale(float scale, const char* where, const std::string& which) {
  if (!(scale > 0.0f) || !std::isfinite(scale))
    throw argument_error(where, which + " finite and > 0", xq::detail::concat(which, " = ", scale));
}

XQ_DECL void check_zero_point(double zp, std::int64_t quant_min, std::int64_t quant_max, const char* where,
                              const std::string& which) {
  if (!(zp >= double(quant_min) && zp <= double(quant_max)))
    throw argument_error(where,
                         xq::detail::concat(which, " in [quant_min, quant_max] = [", quant_min, ", ",
                                            quant_max, "]"),
                         xq::detail::concat(which, " = ", zp));
}

}  // namespace detail

#if defined(XQ_SEPARATE_COMPILATION)
template tensor fake_quantize_per_tensor_affine<simd_policy<>>(const tensor&, float, std::int64_t, std::int64_t,
                                                               std::int64_t);
template fake_quant_result fake_quantize_per_tensor_affine_and_mask<simd_policy<>>(const tensor&, float, std::int64_t,
                                                                                   std::int64_t, std::int64_t);
template tensor fake_quantize_per_tensor_affine_gradient<simd_policy<>>(const tensor&, const tensor&, float,
                                                                        std::int64_t, std::int64_t, std::int64_t);
template tensor fake_quantize_per_channel_affine<simd_policy<>>(const tensor&, const vector&, const index_vector&, long,
                                                                std::int64_t, std::int64_t);
template tensor fake_quantize_per_channel_affine<simd_policy<>>(const tensor&, const vector&, const vector&, long,
                                                                std::int64_t, std::int64_t);
template fake_quant_result fake_quantize_per_channel_affine_and_mask<simd_policy<>>(const tensor&, const vector&,
                                                                                    const index_vector&, long,
                                                                                    std::int64_t, std::int64_t);
template tensor fake_quantize_per_channel_affine_gradient<simd_policy<>>(const tensor&, const tensor&, const vector&,
                                                                         const index_vector&, long, std::int64_t,
                                                                         std::int64_t);
template tensor fake_quantize_per_channel_affine_gradient<simd_policy<>>(const tensor&, const tensor&, const vector&,
                                                                         const vector&, long, std::int64_t,
                                                                         std::int64_t);

template tensor fake_quantize_per_tensor_affine<scalar_policy>(const tensor&, float, std::int64_t, std::int64_t,
                                                               std::int64_t);
template fake_quant_result fake_quantize_per_tensor_affine_and_mask<scalar_policy>(const tensor&, float, std::int64_t,
                                                                                   std::int64_t, std::int64_t);
template tensor fake_quantize_per_tensor_affine_gradient<scalar_policy>(const tensor&, const tensor&, float,
                                                                        std::int64_t, std::int64_t, std::int64_t);
template tensor fake_quantize_per_channel_affine<scalar_policy>(const tensor&, const vector&, const index_vector&, long,
                                                                std::int64_t, std::int64_t);
template tensor fake_quantize_per_channel_affine<scalar_policy>(const tensor&, const vector&, const vector&, long,
                                                                std::int64_t, std::int64_t);
template fake_quant_result fake_quantize_per_channel_affine_and_mask<scalar_policy>(const tensor&, const vector&,
                                                                                    const index_vector&, long,
                                                                                    std::int64_t, std::int64_t);
template tensor fake_quantize_per_channel_affine_gradient<scalar_policy>(const tensor&, const tensor&, const vector&,
                                                                         const index_vector&, long, std::int64_t,
                                                                         std::int64_t);
template tensor fake_quantize_per_channel_affine_gradient<scalar_policy>(const tensor&, const tensor&, const vector&,
                                                                         const vector&, long, std::int64_t,
                                                                         std::int64_t);
#endif

}  // namespace xq::torch
