#pragma once
/// \file all.ipp
/// The wrappers room's compiled code, for <xquant/src.hpp>: every .ipp of wrappers/impl/.

#include "batch_norm_folding.ipp"
#include "padding_value_term.ipp"
#include "quant_window_layer.ipp"
#include "quantized_batch_norm.ipp"
#include "site_quantizers.ipp"
#include "wrapped_layer.ipp"
#include "low_rank_adapter.ipp"
#include "wrapper_settings.ipp"
#include "xnor_forward.ipp"
