#pragma once
/// \file all.ipp
/// The layers room's compiled code, for <xquant/src.hpp>: every .ipp of layers/impl/.

#include "activation.ipp"
#include "add.ipp"
#include "average_pool2d.ipp"
#include "batch_norm.ipp"
#include "concatenate.ipp"
#include "conv2d.ipp"
#include "dense.ipp"
#include "depthwise_conv2d.ipp"
#include "dropout.ipp"
#include "embedding.ipp"
#include "flatten.ipp"
#include "global_average_pool2d.ipp"
#include "global_max_pool2d.ipp"
#include "max_pool2d.ipp"
#include "multiply.ipp"
#include "pad2d.ipp"
#include "reshape.ipp"
#include "tied_dense.ipp"
#include "tied_projection.ipp"
#include "weight_clip.ipp"
