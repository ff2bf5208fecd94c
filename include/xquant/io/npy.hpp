#pragma once
/// \file npy.hpp
/// NumPy `.npy` files: load any numeric array as a float32 tensor, save a tensor as
/// float32. The format is numpy's (numpy/lib/format.py): the magic "\x93NUMPY", a version
/// (1.0, 2.0 or 3.0), a little-endian header length, a Python dict literal
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, then the raw values.
///
///     xq::io::save_npy("kernel.npy", w);            // '<f4', C order, version 1.0
///     xq::tensor w2 = xq::io::load_npy("kernel.npy");
///
/// xquant parses the file itself rather than use xt::load_npy: that one accepts any header
/// text it can regex, does not check the data size against the file, and says "io error"
/// without the file's name. Here every problem is an xq::io_error that names the file and
/// says what was wrong with the numbers; nothing half-loaded is returned.

#include <string>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"

namespace xq::io {

/// Loads a .npy file as a float32 tensor of the stored shape. float32 data are copied bit
/// for bit; float64, integer and boolean data are converted (rounded to nearest float).
/// A Fortran-order array is transposed into xquant's row-major layout, so the result has
/// the same shape and values as `numpy.load(path)`. Throws xq::io_error naming `path` for
/// a missing or unreadable file, a wrong magic or version, a bad header, an unsupported
/// dtype, or a data size that differs from what the header says.
XQ_DECL tensor load_npy(const std::string& path);

/// Saves `t` as a .npy file: float32 in the host's byte order ('<f4' on x86/ARM), C order,
/// format version 1.0 (2.0 when the header needs more than 64 KiB). It writes
/// "<path>.tmp.<random>", flushes it to disk, then renames it over `path`, so a failed save
/// leaves any previous file intact. Throws xq::io_error naming `path`.
XQ_DECL void save_npy(const std::string& path, const tensor& t);

}  // namespace xq::io

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/npy.ipp"
#endif
