#pragma once
/// \file all.ipp
/// The numerics room's compiled code, for <xquant/src.hpp>: every .ipp of numerics/impl/.

#include "float8_scaled.ipp"
#include "larq_math.ipp"
#include "low_bit_float.ipp"
#include "mx_block.ipp"
#include "nvfp4_block.ipp"
#include "numpy_histogram.ipp"
#include "nvidia_calibrators.ipp"
#include "ort_percentile_calibrator.ipp"
#include "range_statistics.ipp"
#include "tf_cpu_reductions.ipp"
#include "tf_fake_quant.ipp"
#include "tf_quantize_and_dequantize.ipp"
#include "tfmot_quantizers.ipp"
#include "torch_cpu_kernels.ipp"
#include "torch_fake_quant.ipp"
#include "torch_histogram_observer.ipp"
#include "torch_learnable_fake_quant.ipp"
#include "torch_observers.ipp"
#include "torchao_affine.ipp"
