#pragma once
/// \file embedding.hpp
/// `xq::embedding`: looks up rows of a trainable table (Keras Embedding). The
/// input holds integer ids stored as floats, of any shape; the output has that
/// shape plus (output_dim,). The table, "embeddings" of shape (input_dim,
/// output_dim), starts uniform in ±0.05 as in Keras, and is an ordinary shared
/// parameter, so a projection can reuse it (tied weights).
///
/// \code
///   xq::embedding embed(10000, 64);
///   xq::var h = embed(token_ids);               // (N, T) -> (N, T, 64)
/// \endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/random.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace ops {

/// Rows of `table` (input_dim, output_dim) at `ids`. An id that is not an
/// integer in [0, input_dim) throws `xq::argument_error` naming `path`. The
/// gradient is scatter-added into the table (an id seen twice gets both rows'
/// gradients); ids get none.
inline var embedding_lookup(const var& ids, const var& table, const std::string& path = "embedding") {
  if (table.dimension() != 2)
    throw shape_error(path, "an embedding table of rank 2 (input_dim, output_dim)",
                      detail::shape_string(table.shape()));
  const std::size_t rows = table.shape()[0], dim = table.shape()[1];
  const std::size_t n = ids.size();
  std::vector<std::size_t> index(n);
  const float* idp = ids.value().data();
  for (std::size_t i = 0; i < n; ++i) {
    const float id = idp[i];
    // !(a && b) also rejects NaN.
    if (!(id >= 0.0f && id < static_cast<float>(rows) && std::floor(id) == id))
      throw argument_error(path, detail::concat("integer ids in [0, ", rows, ")"),
                           detail::concat("id ", id, " at flat position ", i, " of an input of shape ",
                                          detail::shape_string(ids.shape())));
    index[i] = static_cast<std::size_t>(id);
  }
  tensor::shape_type y_shape = ids.shape();
  y_shape.push_back(dim);
  tensor y = tensor::from_shape(y_shape);
  const float* tp = table.value().data();
  float* yp = y.data();
  for (std::size_t i = 0; i < n; ++i) std::copy(tp + index[i] * dim, tp + (index[i] + 1) * dim, yp + i * dim);

  return make_result(std::move(y), needs_grad(table),
                     [table, index = std::move(index), dim](const tensor& dy) {
                       tensor dt = xt::zeros<float>(table.shape());
                       float* dtp = dt.data();
                       const float* dyp = dy.data();
                       for (std::size_t i = 0; i < index.size(); ++i) {
                         float* row = dtp + index[i] * dim;
                         const float* g = dyp + i * dim;
                         for (std::size_t j = 0; j < dim; ++j) row[j] += g[j];
                       }
                       add_grad(table, std::move(dt));
                     });
}

}  // namespace ops

/// Embedding layer: ids (any shape) -> vectors of `output_dim`.
class embedding : public layer<embedding> {
 public:
  static constexpr layer_role role = layer_role::linear;
  embedding(std::size_t input_dim = 1, std::size_t output_dim = 1)
      : layer<embedding>("embedding"), input_dim_(input_dim), output_dim_(output_dim) {}

  var call(const var& ids) {
    build();
    return ops::embedding_lookup(ids, embeddings_, path());
  }

  /// The weighted-layer contract (weight_quantized.hpp): the table is the kernel, so a
  /// quantized twin can look ids up in a fake-quantized table.
  const parameter_ptr& kernel() const noexcept { return embeddings_; }
  const parameter_ptr& bias() const noexcept { return no_bias_; }
  void ensure_built(const var&) { build(); }
  /// Looks `ids` up in `table` instead of the layer's own (`bias` must be undefined).
  var call_with(const var& ids, const var& table, const var& bias) const {
    if (bias.defined()) throw argument_error(path(), "no bias (an embedding has none)", "a bias");
    return ops::embedding_lookup(ids, table, path());
  }

  /// Creates the table (the first call does it; call it yourself to tie the
  /// table to another layer before any call). Does nothing once built.
  void build() {
    if (embeddings_) return;
    if (input_dim_ == 0 || output_dim_ == 0)
      throw argument_error(path(), "input_dim and output_dim of at least 1",
                           detail::concat("(", input_dim_, ", ", output_dim_, ")"));
    embeddings_ = make_parameter("embeddings", embedding_uniform({input_dim_, output_dim_}));
    name_parameters();
  }

  std::vector<parameter_ptr> parameters() const { return {embeddings_}; }
  /// The table's slot (core/clone.hpp's protocol; `no_bias_` is always null).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(embeddings_);
  }
  /// The table (input_dim, output_dim); null until built.
  const parameter_ptr& embeddings() const noexcept { return embeddings_; }
  std::size_t input_dim() const noexcept { return input_dim_; }
  std::size_t output_dim() const noexcept { return output_dim_; }

 private:
  std::size_t input_dim_, output_dim_;
  parameter_ptr embeddings_, no_bias_;
};

}  // namespace xq
