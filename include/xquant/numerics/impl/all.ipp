#pragma once
/// \file all.ipp
/// The numerics room's compiled code, for <xquant/src.hpp>: every .ipp of numerics/impl/.

#include "larq_math.ipp"
#include "range_statistics.ipp"
#include "tf_fake_quant.ipp"
#include "tf_quantize_and_dequantize.ipp"
#include "tfmot_quantizers.ipp"
#include "torch_fake_quant.ipp"
#include "torch_learnable_fake_quant.ipp"
#include "torch_observers.ipp"
