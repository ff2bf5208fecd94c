#pragma once
/// \file all.ipp
/// The deploy graph's compiled code (deploy/graph/), for <xquant/src.hpp> through
/// deploy/impl/all.ipp.

#include "build_graph.ipp"
#include "deploy_graph.ipp"
#include "graph_decisions.ipp"
#include "graph_ops.ipp"
#include "layer_builder.ipp"
#include "layer_forms.ipp"
#include "quantizer_grids.ipp"
