#pragma once
/// \file numerics.hpp
/// The peers' fake-quantization operators and range rules, bit for bit, for calling
/// directly on tensors: TensorFlow's FakeQuantWithMinMaxVars(PerChannel) and
/// QuantizeAndDequantizeV2/V4, tfmot's quantizers, PyTorch's fake_quantize_per_tensor/
/// per_channel_affine, its learnable (LSQ) variant and observers. Not part of
/// <xquant/xquant.hpp>: models reach them through `fake_quantizer` (quantizers/), which in
/// separate-compilation mode runs them from the compiled library, so a program that only
/// builds, quantizes and trains models does not parse these kernels. Each peer's operators
/// also have their own header under numerics/.

#include "numerics/tf_fake_quant.hpp"
#include "numerics/tf_quantize_and_dequantize.hpp"
#include "numerics/tfmot_quantizers.hpp"
#include "numerics/torch_fake_quant.hpp"
#include "numerics/torch_learnable_fake_quant.hpp"
#include "numerics/torch_observers.hpp"
