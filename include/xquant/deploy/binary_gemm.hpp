#pragma once
/// \file binary_gemm.hpp
/// The integer engine's kernels: deploy/engine/binary_gemm.hpp.

#include "engine/binary_gemm.hpp"
