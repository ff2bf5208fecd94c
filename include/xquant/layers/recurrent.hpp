#pragma once
/// \file recurrent.hpp
/// What xquant's recurrent layers (lstm.hpp, gru.hpp) share: Keras's orthogonal
/// initializer for recurrent kernels, and the recurrence's settings.
///
/// A recurrent layer is a composite of two children, so that quantization treats each
/// matrix as the weighted layer it is:
///   - `projection`, an `xq::dense` without activation: x (B, T, F) · kernel (+ input
///     bias) for every time step at once — NVIDIA's scheme quantizes its input and kernel;
///   - `recurrence`, a leaf holding the recurrent kernel (and the recurrent bias): the loop
///     over time on the projected inputs — its twin quantizes the recurrent kernel.
/// The numbers are Keras's (kernel (F, gates·units), recurrent_kernel (units, gates·units),
/// gates side by side in Keras's order), split between the two children.

#include <cstddef>
#include <random>

#include "../config.hpp"
#include "../core/random.hpp"
#include "../core/tensor.hpp"

namespace xq {

/// Keras's Orthogonal initializer (gain 1) for a (rows, cols) matrix: the Q factor of a
/// standard-normal matrix's QR decomposition with R's diagonal made positive (Haar
/// measure), transposed when rows < cols; orthonormal columns, or rows when wider.
XQ_DECL tensor orthogonal(std::size_t rows, std::size_t cols, std::mt19937& rng = random_engine());

/// How a recurrent layer runs over time (Keras's RNN arguments).
struct recurrence_settings {
  bool return_sequences = false;  ///< every step's output (B, T, units), else the last (B, units)
  bool go_backwards = false;      ///< from the last step to the first (outputs in that order)
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/recurrent.ipp"
#endif
