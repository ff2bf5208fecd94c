#pragma once
/// \file integer_model.hpp
/// The integer engine, as a user includes it: `xq::deploy::integer_model` (a lowered model
/// and the runtime that runs it) and every op of the engine. The engine lives in
/// deploy/engine/, one header per op family:
///
///   engine_tensor.hpp      what flows between ops (integer, accumulator, bits, real)
///   lowered_op.hpp         the op base: run, its rule (infer), encode; run_options
///   quantize_ops.hpp       quantize (onto a quantization grid), dequantize
///   integer_linear_op.hpp  integer conv2d / depthwise / dense, int32 sums, requantization
///   binary_ops.hpp         sign, binary conv2d / dense (XNOR-popcount)
///   real_linear_op.hpp     float conv2d / dense (xquant's own kernels)
///   pooling_ops.hpp        max pooling, integer average pooling
///   elementwise_ops.hpp    relu, clamp, batch norm, integer add / multiply / rescale
///   layout_ops.hpp         reshape, concatenate, the layout functions' moves
///   gather_op.hpp          embedding lookups
///   float_function_ops.hpp xquant's float functions (real_function_op, function_op)
///   constant_op.hpp        constants
///   integer_model.hpp      the model, its check and its runs
///   integer_model_file.hpp saving and loading (op_codec.hpp, op_registry.hpp)
/// and the kernels: integer_gemm.hpp, binary_gemm.hpp, requantize.hpp, engine_kernels.hpp.

#include "engine/binary_ops.hpp"
#include "engine/constant_op.hpp"
#include "engine/correlation_op.hpp"
#include "engine/elementwise_ops.hpp"
#include "engine/float_function_ops.hpp"
#include "engine/gather_op.hpp"
#include "engine/integer_linear_op.hpp"
#include "engine/integer_model.hpp"
#include "engine/layout_ops.hpp"
#include "engine/low_bit_ops.hpp"
#include "engine/pooling_ops.hpp"
#include "engine/quantize_ops.hpp"
#include "engine/real_linear_op.hpp"
