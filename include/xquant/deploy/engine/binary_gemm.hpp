#pragma once
/// \file binary_gemm.hpp
/// The binary engine's product, XNOR-popcount: kernels/binary_gemm.hpp (a kernel, which the
/// binarized layers' training forward runs too), named in the engine's namespace.

#include "../../kernels/binary_gemm.hpp"

namespace xq::deploy {
using kernels::binary_gemm;
using kernels::binary_gemm_isa;
using kernels::binary_gemm_reference;
}  // namespace xq::deploy
