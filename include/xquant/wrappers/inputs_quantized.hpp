#pragma once
/// \file inputs_quantized.hpp
/// The former name of `each_input_quantized<L>` (each_input_quantized.hpp), which reads
/// apart from `input_quantized<L>` at a glance. Kept so that code written for the previous
/// release compiles, with a warning that names the new one.

#include "each_input_quantized.hpp"

namespace xq {

template <class Layer>
using inputs_quantized [[deprecated("xquant: inputs_quantized<L> is now each_input_quantized<L> "
                                    "(<xquant/wrappers/each_input_quantized.hpp>)")]] = each_input_quantized<Layer>;

}  // namespace xq
