#pragma once
/// \file engine_kernels.hpp
/// The integer engine's kernels: deploy/engine/engine_kernels.hpp.

#include "engine/engine_kernels.hpp"
