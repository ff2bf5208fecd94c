#pragma once
/// \file all.ipp
/// The deploy room's compiled code, for <xquant/src.hpp>: every .ipp of deploy/impl/.

#include "../engine/impl/all.ipp"
#include "export_onnx.ipp"
#include "../graph/impl/all.ipp"
#include "../onnx/impl/all.ipp"
#include "lower.ipp"
#include "parity.ipp"
#include "parity_log.ipp"
