#pragma once
/// \file function_op.hpp
/// The engine's ops for the layers without integer arithmetic of their own:
/// `function_op` and `real_function_op` (deploy/engine/float_function_ops.hpp) and
/// `constant_op` (deploy/engine/constant_op.hpp).

#include "engine/constant_op.hpp"
#include "engine/float_function_ops.hpp"
#include "integer_model.hpp"
