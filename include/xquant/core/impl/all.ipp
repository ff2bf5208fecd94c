#pragma once
/// \file all.ipp
/// The core room's compiled code, for <xquant/src.hpp>: every .ipp of core/impl/.

#include "children.ipp"
#include "clone.ipp"
#include "error.ipp"
#include "graph_trace.ipp"
#include "layer_call.ipp"
#include "layer_ref.ipp"
#include "layer_traits.ipp"
#include "memory.ipp"
#include "model.ipp"
#include "parameter.ipp"
#include "random.ipp"
#include "shape_check.ipp"
#include "tape.ipp"
#include "tensor.ipp"
#include "type_name.ipp"
#include "var.ipp"
#include "variable_state.ipp"
