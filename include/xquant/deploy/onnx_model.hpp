#pragma once
/// \file onnx_model.hpp
/// The ONNX file layer (`xq::onnx`: a model in memory, its protobuf writer and reader),
/// which lives in deploy/onnx/ with the exporter; this header keeps the include path
/// `<xquant/deploy/onnx_model.hpp>` working.

#include "onnx/onnx_model.hpp"
