#pragma once
#include "../kernels/gemm.hpp"
#include "xquant/core/tensor.hpp"
