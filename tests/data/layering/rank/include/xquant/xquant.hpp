#pragma once
#include "summary/summarize.hpp"
#include "train/fit.hpp"
#include "kernels/gemm.hpp"
