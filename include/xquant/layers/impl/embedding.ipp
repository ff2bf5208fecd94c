#pragma once
/// \file embedding.ipp
/// embedding's code (layers/embedding.hpp).

#include <algorithm>
#include <cmath>

#include "../embedding.hpp"
#include "../../core/random.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(embedding)

namespace ops {

XQ_DECL var embedding_lookup(const var& ids, const var& table, const std::string& path) {
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

XQ_DECL var embedding::call(const var& ids) {
  build();
  return ops::embedding_lookup(ids, embeddings_, path());
}

XQ_DECL void embedding::ensure_built(const var&) { build(); }

XQ_DECL var embedding::call_with(const var& ids, const var& table, const var& bias) const {
  if (bias.defined()) throw argument_error(path(), "no bias (an embedding has none)", "a bias");
  return ops::embedding_lookup(ids, table, path());
}

XQ_DECL void embedding::build() {
  if (embeddings_) return;
  if (input_dim_ == 0 || output_dim_ == 0)
    throw argument_error(path(), "input_dim and output_dim of at least 1",
                         detail::concat("(", input_dim_, ", ", output_dim_, ")"));
  embeddings_ = make_parameter("embeddings", embedding_uniform({input_dim_, output_dim_}));
  name_parameters();
}

}  // namespace xq
