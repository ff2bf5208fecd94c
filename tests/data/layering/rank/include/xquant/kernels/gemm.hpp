#pragma once
#include <vector>
#include "../core/tensor.hpp"
// #include "../train/fit.hpp"      a comment: not checked
/* #include "../io/missing.hpp"     neither is a block comment */
#include "../layers/dense.hpp"
static const char* pattern = "/* not a comment";
#include "../core/shape.hpp"
