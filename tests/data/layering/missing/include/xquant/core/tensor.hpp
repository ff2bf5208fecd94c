#pragma once
// A fake include/xquant for tests/CMakeLists.txt's layering.self_test_missing: an include
// of a file that does not exist (a wrong relative path).
#include "../config.hpp"
