#pragma once
/// \file all.ipp
/// The deploy room's compiled code, for <xquant/src.hpp>: every .ipp of deploy/impl/.

#include "../engine/impl/all.ipp"
#include "export_onnx.ipp"
#include "../graph/impl/all.ipp"
#include "layer_info.ipp"
#include "lower.ipp"
#include "model_access.ipp"
#include "onnx_model.ipp"
#include "parity.ipp"
#include "trace_walk.ipp"
