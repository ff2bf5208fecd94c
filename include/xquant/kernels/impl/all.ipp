#pragma once
/// \file all.ipp
/// The kernels room's compiled code, for <xquant/src.hpp>: every .ipp of kernels/impl/.

#include "binary_gemm.ipp"
#include "gemm.ipp"
#include "idle_cores.ipp"
#include "im2col.ipp"
#include "padding.ipp"
#include "../conv_backend.hpp"
#if XQ_HAVE_ONEDNN
#include "onednn_conv.ipp"
#endif
