#pragma once
/// \file wrapper_settings.ipp
/// wrappers/wrapper_settings.hpp's compiled code: compiled by every translation unit in
/// header-only mode, once in <xquant/src.hpp> in separate mode.

#include "../../core/error.hpp"
#include "../../quantizers/low_bit_format_numerics.hpp"
#include "../wrapper_settings.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(wrapper_settings)

namespace detail {

XQ_DECL void check_single_input_indices(const std::string& path, const std::vector<std::size_t>& indices) {
  for (const std::size_t i : indices)
    if (i != 0)
      throw argument_error(path, "quantization_index entries below the number of inputs (1: a layer of one input)",
                           concat("index ", i));
}

XQ_DECL void fit_formats(quantizer_config& input, quantizer_config& weight, const std::vector<std::size_t>& kernel_shape,
                         int block_axis) {
  if (weight.format && weight.format.axis_from_layer) weight.format = weight.format.with_axis(block_axis);
  if (kernel_shape.empty()) return;
  const long rank = long(kernel_shape.size());
  const long a = block_axis < 0 ? block_axis + rank : block_axis;
  if (a < 0 || a >= rank) return;
  const std::size_t length = kernel_shape[std::size_t(a)];
  if (!format_accepts(weight.format, length) || !format_accepts(input.format, length)) {
    weight.format = low_bit_format{};
    input.format = low_bit_format{};
  }
}

}  // namespace detail

}  // namespace xq
