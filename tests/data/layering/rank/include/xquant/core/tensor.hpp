#pragma once
#include "../config.hpp"
#include "shape.hpp"
