#pragma once
/// \file src.hpp
/// The compiled part of xquant in separate-compilation mode (config.hpp): compile this
/// header in exactly one translation unit of a program whose every translation unit
/// defines XQ_SEPARATE_COMPILATION (CMake: link `xquant::compiled`, which does both).
///
/// \code
///   // xquant_lib.cpp, compiled with -DXQ_SEPARATE_COMPILATION like the rest:
///   #include <xquant/src.hpp>
/// \endcode

#if !defined(XQ_SEPARATE_COMPILATION)
#error "xquant: <xquant/src.hpp> is the library of separate-compilation mode: define XQ_SEPARATE_COMPILATION in every translation unit (or link xquant::compiled), or do not compile this header (header-only mode needs nothing)"
#endif

#include "xquant.hpp"
#include "io/checkpoint.hpp"
#include "deploy/onnx_model.hpp"

#include "core/impl/all.ipp"
#include "kernels/impl/all.ipp"
#include "numerics/impl/all.ipp"
#include "layers/impl/all.ipp"
#include "quantizers/impl/all.ipp"
#include "wrappers/impl/all.ipp"
#include "transform/impl/all.ipp"
#include "summary/impl/all.ipp"
#include "train/impl/all.ipp"
#include "io/impl/all.ipp"
#include "deploy/impl/all.ipp"
