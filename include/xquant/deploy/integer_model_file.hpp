#pragma once
/// \file integer_model_file.hpp
/// Saving and loading a lowered integer model (deploy/engine/integer_model_file.hpp), with
/// every op of the engine (integer_model.hpp).

#include "engine/integer_model_file.hpp"
#include "engine/op_registry.hpp"
#include "integer_model.hpp"
