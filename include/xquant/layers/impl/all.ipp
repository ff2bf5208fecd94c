#pragma once
/// \file all.ipp
/// The layers room's compiled code, for <xquant/src.hpp>: every .ipp of layers/impl/.

#include "conv2d.ipp"
