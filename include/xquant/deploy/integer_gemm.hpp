#pragma once
/// \file integer_gemm.hpp
/// The integer engine's kernels: deploy/engine/integer_gemm.hpp.

#include "engine/integer_gemm.hpp"
