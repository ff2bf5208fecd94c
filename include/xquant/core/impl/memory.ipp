#pragma once
/// \file memory.ipp
/// keep_freed_memory's code (core/memory.hpp).

#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "../memory.hpp"

namespace xq {

XQ_DECL bool keep_freed_memory() {
#if defined(__GLIBC__)
  static const bool accepted = [] {
    const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024) == 1;
    const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024) == 1;
    return mmap_ok && trim_ok;
  }();
  return accepted;
#else
  return false;
#endif
}

}  // namespace xq
