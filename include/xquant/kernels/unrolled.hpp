#pragma once
/// \file unrolled.hpp
/// XQ_DEFINE_UNROLLED defines, in the enclosing namespace, unrolled<Count>(f): f(0), ...,
/// f(Count - 1) unrolled at compile time, each index an std::integral_constant. The kernels'
/// register tiles index their accumulator arrays this way: GCC at -O2 keeps an array indexed
/// in a loop in memory, and spelled-out indices make it registers.
///
/// A macro, not one shared template: each ISA region (isa_region.hpp) defines its own copy,
/// which inherits the region's instruction set. With one copy defined outside the regions,
/// GCC 12 left the integer GEMM tile's accumulators in memory (measured: VPDPBUSD 173 -> 77
/// G multiply-adds/s, VPMADDWD 87 -> 54).

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../config.hpp"

/// After a lambda's parameter list: always inlined. A tile's lambdas read and write its
/// accumulator array; one call left out of line (GCC at -O2 leaves large ones, such as a
/// fused epilogue's) takes the array's address and keeps every accumulator in memory:
/// measured, the VPDPBUSD tile at 78 G multiply-adds/s under -O2 against 171 under -O3.
#if defined(__GNUC__) || defined(__clang__)
#define XQ_INLINE_LAMBDA __attribute__((always_inline))
#else
#define XQ_INLINE_LAMBDA
#endif

#define XQ_DEFINE_UNROLLED                                                  \
  template <class F, std::size_t... I>                                      \
  XQ_ALWAYS_INLINE void unrolled(F&& f, std::index_sequence<I...>) {        \
    (f(std::integral_constant<std::size_t, I>{}), ...);                     \
  }                                                                         \
  template <std::size_t Count, class F>                                     \
  XQ_ALWAYS_INLINE void unrolled(F&& f) {                                   \
    unrolled(f, std::make_index_sequence<Count>{});                         \
  }
