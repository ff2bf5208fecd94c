#pragma once
/// \file requantize.hpp
/// The integer engine's kernels: deploy/engine/requantize.hpp.

#include "engine/requantize.hpp"
