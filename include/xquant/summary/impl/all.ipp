#pragma once
/// \file all.ipp
/// The summary room's compiled code, for <xquant/src.hpp>: every .ipp of summary/impl/.

#include "layer_profile.ipp"
#include "model_summary.ipp"
#include "print_summary.ipp"
#include "readable_numbers.ipp"
#include "scatter_plot.ipp"
#include "summarize.ipp"
