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

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../kernels/gemm.hpp"
#include "../kernels/im2col.hpp"
#include "embedding.hpp"

namespace xq {
namespace ops {

/// x (..., D) · wᵀ for w (V, D) [+ b (V,)] -> (..., V); gradients to x, w and b.
inline var matmul_transposed(const var& x, const var& w, const var* b, const std::string& path = "matmul_transposed") {
  if (w.dimension() != 2)
    throw shape_error(path, "a matrix of rank 2 (V, D)", detail::shape_string(w.shape()));
  const std::size_t v = w.shape()[0], d = w.shape()[1];
  if (x.dimension() < 1 || x.shape().back() != d)
    throw shape_error(path, detail::concat("input of shape (..., ", d, ")"), detail::shape_string(x.shape()));
  if (b) detail::require_shape(path, b->shape(), {detail::exactly(v)}, "bias");
  const std::size_t rows = x.size() / d;
  tensor::shape_type shape = x.shape();
  shape.back() = v;
  tensor y = tensor::from_shape(shape);
  if (b)
    for (std::size_t r = 0; r < rows; ++r) std::copy(b->value().begin(), b->value().end(), y.data() + r * v);
  kernels::gemm(false, true, rows, v, d, 1.0f, x.value().data(), d, w.value().data(), d, b ? 1.0f : 0.0f, y.data(), v);
  const var bias = b ? *b : var();
  const bool record = b ? needs_grad(x, w, *b) : needs_grad(x, w);
  return make_result(std::move(y), record, [x, w, bias, rows, v, d](const tensor& dy) {
    if (x.requires_grad()) {  // dx = dy · w
      tensor dx = tensor::from_shape(x.shape());
      kernels::gemm(false, false, rows, d, v, 1.0f, dy.data(), v, w.value().data(), d, 0.0f, dx.data(), d);
      add_grad(x, std::move(dx));
    }
    if (w.requires_grad()) {  // dw = dyᵀ · x
      tensor dw = tensor::from_shape(w.shape());
      kernels::gemm(true, false, v, d, rows, 1.0f, dy.data(), v, x.value().data(), d, 0.0f, dw.data(), d);
      add_grad(w, std::move(dw));
    }
    if (bias.defined() && bias.requires_grad()) {
      tensor db = xt::zeros<float>({v});
      kernels::add_column_sums(dy.data(), rows, v, db.data());
      add_grad(bias, std::move(db));
    }
  });
}

}  // namespace ops

/// Projects onto an embedding's rows with the embedding's own table.
class tied_projection : public layer<tied_projection> {
 public:
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

  var call(const var& x) {
    ensure_built(x);
    return call_with(x, table_, bias_ ? var(bias_) : var());
  }

  /// The weighted-layer contract (weight_quantized.hpp): the tied table is the kernel.
  const parameter_ptr& kernel() const noexcept { return table_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  void ensure_built(const var&) const {
    if (!table_) throw argument_error(path(), "a table tied at construction", "a default-constructed projection");
  }
  var call_with(const var& x, const var& table, const var& bias) const {
    return ops::matmul_transposed(x, table, bias.defined() ? &bias : nullptr, path());
  }

  /// Its own parameters: the bias only (the table belongs to the embedding).
  std::vector<parameter_ptr> parameters() const { return {bias_}; }

 private:
  tied_projection(parameter_ptr matrix, bool use_bias, const char* expected)
      : layer<tied_projection>("tied_projection"), table_(std::move(matrix)) {
    if (!table_) throw argument_error(path(), expected, "a null parameter (not built yet?)");
    if (table_->value.dimension() != 2)
      throw shape_error(path(), "a matrix of rank 2 to tie to", detail::shape_string(table_->value.shape()));
    if (use_bias) bias_ = make_parameter("bias", xt::zeros<float>({table_->value.shape()[0]}));
    name_parameters();
  }

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
