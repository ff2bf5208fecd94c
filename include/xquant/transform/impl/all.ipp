#pragma once
/// \file all.ipp
/// The transform room's compiled code, for <xquant/src.hpp>: every .ipp of transform/impl/.

#include "qdq_cases.ipp"
#include "low_bit_schemes.ipp"
#include "lora.ipp"
#include "quantization_scheme.ipp"
#include "quantization_spec.ipp"
#include "quantize_model.ipp"
#include "registry.ipp"
#include "compiled_twins.ipp"
