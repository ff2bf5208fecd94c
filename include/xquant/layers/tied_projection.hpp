#pragma once
/// \file tied_projection.hpp
/// `xq::tied_projection`: x · Eᵀ (+ bias) with the table E of an `embedding`, the
/// "de-embedding" of a language model with tied weights (Press & Wolf 2017). E is the
/// embedding's own parameter (the same `shared_ptr`), viewed transposed: no copy, one
/// weight, and both uses' gradients add into it.
///
/// \code
///   xq::embedding embed(vocab, 64);
///   embed.build();                              // the table must exist to be tied
///   xq::tied_projection logits(embed);          // (..., 64) -> (..., vocab)
/// \endcode
///
/// The table keeps the embedding's name ("embedding/embeddings"): the projection lists
/// only its bias in `parameters()`, and reaches the table through `kernel()`.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "embedding.hpp"

namespace xq {
namespace ops {

/// x (..., D) · wᵀ for w (V, D) [+ b (V,)] -> (..., V); gradients to x, w and b.
XQ_DECL var matmul_transposed(const var& x, const var& w, const var* b, const std::string& path = "matmul_transposed");

}  // namespace ops

/// Projects onto an embedding's rows with the embedding's own table.
class tied_projection : public layer<tied_projection> {
 public:
  XQ_SPECIAL_MEMBERS(tied_projection)
  static constexpr layer_role role = layer_role::linear;
  /// Its matrix belongs to another layer, whose summary row counts it.
  static constexpr bool counts_macs = false;
  tied_projection() : layer<tied_projection>("tied_projection") {}
  /// Ties to `table` (a built embedding's table): shares it, does not copy it.
  explicit tied_projection(const embedding& table, bool use_bias = false)
      : tied_projection(table.embeddings(), use_bias, "a built embedding to tie to (call its build() first)") {}
  /// Ties to any matrix parameter W (V, D), computing x · Wᵀ: an autoencoder's decoder
  /// reusing its encoder's dense kernel (in, out) maps out -> in with
  /// `xq::tied_projection(encoder.kernel())`.
  explicit tied_projection(parameter_ptr matrix, bool use_bias = false)
      : tied_projection(std::move(matrix), use_bias, "a built matrix parameter to tie to") {}

  XQ_DECL var call(const var& x);

  /// The weighted-layer contract (weight_quantized.hpp): the tied table is the kernel.
  const parameter_ptr& kernel() const noexcept { return table_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  XQ_DECL void ensure_built(const var&) const;
  XQ_DECL var call_with(const var& x, const var& table, const var& bias) const;

  /// Its own parameters: the bias only (the table belongs to the embedding).
  std::vector<parameter_ptr> parameters() const { return {bias_}; }

 private:
  XQ_DECL tied_projection(parameter_ptr matrix, bool use_bias, const char* expected);

 public:
  /// The table's slot and the bias's (core/clone.hpp's protocol): a clone rebinds the
  /// table to the clone of the embedding's table, so the tie survives.
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(table_);
    f(bias_);
  }

 private:
  parameter_ptr table_, bias_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tied_projection.ipp"
#endif
