#pragma once
/// \file all.ipp
/// The ONNX room's compiled code (deploy/onnx/), for <xquant/src.hpp> through
/// deploy/impl/all.ipp: the file layer and the exporter.

#include "export_graph.ipp"
#include "onnx_model.ipp"
#include "onnx_weights.ipp"
#include "onnx_low_bit.ipp"
