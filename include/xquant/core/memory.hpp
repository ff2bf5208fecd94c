#pragma once
/// \file memory.hpp
/// Keeping freed tensor memory for reuse, where the C library would give it back.
///
/// A training step allocates and frees the same large tensors every time (activations,
/// column matrices, gradients). glibc's malloc serves blocks above its mmap threshold
/// (128 KiB, raised dynamically up to 32 MiB) with fresh mmap()s and trims the heap
/// when its free top exceeds the trim threshold, so each step faults its tensors' pages
/// in again and the kernel zeroes them. Measured on the Fashion-MNIST CNN: the first
/// epoch of a process trained at 1,676 images/s, and at 3,091 with the thresholds below
/// (issue 4's note). Frameworks keep such memory in their own caching allocators;
/// xquant asks malloc to keep it. `fit` calls this unless told not to.

#include "../config.hpp"

namespace xq {

/// Large blocks come from the heap (mmap threshold 32 MiB, glibc's maximum) and freed
/// memory stays mapped (trim threshold 1 GiB) for the rest of the process. Returns
/// whether malloc accepted both (false outside glibc, where it does nothing). Idempotent.
XQ_DECL bool keep_freed_memory();

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/memory.ipp"
#endif
