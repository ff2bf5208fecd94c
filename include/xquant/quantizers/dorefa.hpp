#pragma once
/// \file dorefa.hpp
/// `xq::dorefa`: the k-bit quantizer of DoReFa-Net (Larq's `DoReFa`), for
/// activations or weights.
///
/// With n = 2^k_bit - 1 and round = round half to even (TF's tf.round):
///  - mode activations: q(x) = round(clip(x, 0, 1) · n) / n, levels i/n in [0, 1];
///    the gradient is dy where 0 <= x <= 1 (both ends inclusive), else 0;
///  - mode weights: t = tanh(x), u = t / (2 · max|t|) + 1/2 (0 + 1/2 when max|t| = 0,
///    Larq's divide_no_nan), q(x) = 2 · round(u · n) / n - 1, levels in [-1, 1]; the
///    gradient goes straight through the rounding and back through the normalisation
///    and the tanh (max|t| held constant): dx = (2·dy) / (2·max|t|) · (1 - t²).
///
/// Bit for bit as Larq: the same float operations in the same order, with TF's tanh
/// (larq_math.hpp) and denormals flushed. So k_bit = 1 sends 0.5 to 0 (a tie, to even)
/// and k_bit = 2 sends 0.5 to 2/3 (1.5 rounds to 2). One difference: TF's clip of
/// -0.0 gives +0.0 for elements its vector loop handles and -0.0 for the few in its
/// scalar tail; xquant gives +0.0 for all of them.
///
/// \code
///   xq::dorefa act;                                   // k_bit 2, activations
///   xq::dorefa w(4, xq::dorefa_mode::weights);        // or xq::dorefa(4, "weights")
/// \endcode

#include <cstddef>
#include <string_view>

#include "../config.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// What `xq::dorefa` quantizes: activations (hard clip to [0, 1]) or weights (tanh,
/// max-normalised, levels in [-1, 1]).
enum class dorefa_mode { activations, weights };

/// Larq's `DoReFa` quantizer (precision k_bit).
class dorefa : public quantizer_layer<dorefa> {
 public:
  /// `k_bit` in [1, 24] (n = 2^k_bit - 1 must be exact in float32), Larq's default 2.
  explicit dorefa(int k_bit = 2, dorefa_mode mode = dorefa_mode::activations);
  /// Larq's spelling of the mode: "activations" or "weights" (else argument_error).
  dorefa(int k_bit, std::string_view mode) : dorefa(k_bit, parse_mode(mode)) {}

  /// k_bit.
  int precision() const noexcept override { return k_bit_; }
  int k_bit() const noexcept { return k_bit_; }
  dorefa_mode mode() const noexcept { return mode_; }

  /// Activations: [0, n] with step 1/n. Weights: the odd integers of [-n, n] with step
  /// 1/n (2 · level - n), from x's max |tanh| (a dynamic grid: the weight's own).
  XQ_DECL std::optional<quantization_grid> grid_of(const tensor& x) const override;

  XQ_DECL var quantize(const var& x) override;

 private:
  static dorefa_mode parse_mode(std::string_view mode);

  float levels() const noexcept { return static_cast<float>((1L << k_bit_) - 1); }

  var quantize_activations(const var& x);

  var quantize_weights(const var& x);

  // reduce_max(|t|), a NaN anywhere giving NaN. The max of non-NaN values does not
  // depend on the order (and |t| has no -0), so it runs in 16 independent lanes, which
  // vectorize; only when a NaN is seen is the serial loop run, for its exact NaN.
  static float max_abs_propagating_nan(const float* ts, std::size_t size);

  int k_bit_;
  dorefa_mode mode_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/dorefa.ipp"
#endif
