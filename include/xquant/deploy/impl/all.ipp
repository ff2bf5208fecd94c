#pragma once
/// \file all.ipp
/// The deploy room's compiled code, for <xquant/src.hpp>: every .ipp of deploy/impl/.

#include "binary_gemm.ipp"
#include "engine_kernels.ipp"
#include "export_onnx.ipp"
#include "function_op.ipp"
#include "../graph/impl/all.ipp"
#include "../onnx/impl/all.ipp"
#include "integer_gemm.ipp"
#include "integer_model.ipp"
#include "integer_model_file.ipp"
#include "layer_info.ipp"
#include "lower.ipp"
#include "model_access.ipp"
#include "parity.ipp"
#include "requantize.ipp"
#include "trace_walk.ipp"
