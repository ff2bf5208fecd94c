#pragma once
// A fake include/xquant for tests/CMakeLists.txt's layering.self_test_rank: one violation,
// kernels/gemm.hpp including layers/dense.hpp. Everything else is allowed.
#define XQ_FAKE 1
