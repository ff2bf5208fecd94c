#pragma once
#include "../layers/dense.hpp"
