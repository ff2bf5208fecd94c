"""The integer hash that makes the inputs of the golden files that store outputs only
(gen_golden_tf_reductions.py, gen_golden_torch_reductions.py); tests/golden.hpp's
`golden::index_hash` (tests/index_hash.hpp) is its C++ twin."""

import numpy as np

M32 = np.uint64(0xFFFFFFFF)


def fmix32(h):
    """murmur3's 32-bit finalizer of each element of an integer array (as uint64)."""
    h = h.astype(np.uint64) & M32
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & M32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & M32
    h ^= h >> np.uint64(16)
    return h


def index_hash(n, seed):
    """fmix32(i + seed * 0x9E3779B9 mod 2^32) for i in [0, n), as uint64."""
    i = np.arange(n, dtype=np.uint64)
    return fmix32((i + np.uint64(seed) * np.uint64(0x9E3779B9)) & M32)
