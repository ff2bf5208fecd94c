#pragma once
/// \file numpy_histogram.hpp
/// NumPy's histogram arithmetic on float32 data (numpy 2.4, numpy/lib/_histograms_impl.py,
/// _core/function_base.py, multiarraymodule.c), reproduced bit for bit for the calibrators
/// that run on NumPy (ONNX Runtime's, and NVIDIA's amax searches):
///
///  - `linspace`: `np.linspace(start, stop, num)` of float32 bounds (NEP 50: float32
///    throughout): `arange(num) * ((stop - start) / (num - 1)) + start`, the last value set to
///    `stop`.
///  - `histogram_uniform`: `np.histogram(a, bins, range=(first, last))` for float32 `a`: an
///    empty range widened by 0.5 on each side, values outside it (and NaN) dropped, the bin
///    `intp(((a - first) / (last - first)) * bins)` in float32, then moved by one where it
///    disagrees with the edges (NumPy's own correction).
///  - `histogram_edges`: `np.histogram(a, bins=edges)`: counts of `[e_k, e_k+1)`, the last
///    bin closed, by binary search (`_search_sorted_inclusive`).
///  - `arange`: `np.arange(start, stop, step)` of float32 scalars, which NumPy 2.x returns as
///    **float64**: the length `ceil(float32((stop - start) / step))` in float32, the second
///    value the float32 sum `start + step`, then `start + i * (second - start)` in double
///    (`DOUBLE_fill`). (Computing the edges in float32 put some an ulp off, and a value
///    next to one changed bin: an onnxruntime finding, tests/numerics/test_histogram_calibrators.cpp.)
///  - `pairwise_sum`: `np.sum` of a contiguous float64 array: blocks of up to 128 summed in
///    eight interleaved chains, halves (cut at a multiple of 8) added recursively.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"

namespace xq::numpy {

/// Counts and float32 edges of a histogram (np.histogram's pair).
struct histogram_result {
  std::vector<std::int64_t> counts;
  std::vector<float> edges;
};

/// `np.linspace(start, stop, num)` with float32 start and stop (num >= 1).
XQ_DECL std::vector<float> linspace(float start, float stop, std::int64_t num);

/// `np.histogram(a, bins, range=(first, last))` of n float32 values (argument_error for
/// bins == 0, a non-finite range or first > last).
XQ_DECL histogram_result histogram_uniform(const float* a, std::size_t n, std::int64_t bins, float first,
                                           float last);

/// `np.histogram(a)` with the range of the data itself (n > 0, finite values).
XQ_DECL histogram_result histogram_uniform(const float* a, std::size_t n, std::int64_t bins);

/// `np.histogram(a, bins=edges)` (edges increasing, at least two) of n float32 values.
XQ_DECL std::vector<std::int64_t> histogram_edges(const float* a, std::size_t n, const std::vector<float>& edges);
/// ... with float64 edges (NumPy compares the float32 data with them as doubles).
XQ_DECL std::vector<std::int64_t> histogram_edges(const float* a, std::size_t n, const std::vector<double>& edges);

/// `np.arange(start, stop, step)` of float32 scalars: float64 values, as NumPy 2.x gives them.
XQ_DECL std::vector<double> arange(float start, float stop, float step);

/// `np.sum` of n contiguous doubles (pairwise summation).
XQ_DECL double pairwise_sum(const double* a, std::size_t n);

}  // namespace xq::numpy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/numpy_histogram.ipp"
#endif
