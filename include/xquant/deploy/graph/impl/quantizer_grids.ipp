#pragma once
/// \file quantizer_grids.ipp
/// What deployment reads of a quantizer (deploy/graph/quantizer_grids.hpp): the one
/// quantizer base's answers, never a concrete quantizer type.

#include <optional>

#include "../../../core/error.hpp"
#include "../../../core/mode.hpp"
#include "../../../core/tape.hpp"
#include "../quantizer_grids.hpp"

namespace xq::deploy {

XQ_DECL quantization_grid grid_of(const quantizer_base& q, const tensor& x, const std::string& where) {
  std::optional<quantization_grid> g = q.grid_of(x);
  if (!g)
    throw argument_error(where, "a quantizer whose output is on a grid (quantizer_base::grid_of)",
                         q.describe() + ", which has none");
  return *std::move(g);
}

XQ_DECL bool has_seen_data(const quantizer_base& q) { return q.has_seen_data(); }

XQ_DECL bool is_binary(const quantization_grid& g) noexcept { return g.element == grid_element::binary; }

namespace detail {
XQ_DECL tensor inference_output(const quantizer_base& q, const tensor& x) {
  const no_grad nothing_recorded;
  const training_mode inference(false);
  return const_cast<quantizer_base&>(q)(var(x)).value();
}
}  // namespace detail

}  // namespace xq::deploy
