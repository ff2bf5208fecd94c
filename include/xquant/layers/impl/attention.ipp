#pragma once
/// \file attention.ipp
/// The attention ops' and attention_scores' code (layers/attention.hpp).

#include <cmath>
#include <cstdint>

#include "../../core/error.hpp"
#include "../../core/layer_call.hpp"
#include "../activation.hpp"
#include "../attention.hpp"
#include "../broadcasting.hpp"
#include "../matmul.hpp"
#include "../reshape.hpp"
#include "../transpose.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(attention_scores)

XQ_DECL attention_scores::attention_scores(std::size_t num_heads, bool causal)
    : layer<attention_scores>("attention_scores"), num_heads_(num_heads), causal_(causal) {
  if (num_heads == 0) throw argument_error("attention_scores", "num_heads of at least 1", "0");
}

XQ_DECL var attention_scores::call(const std::vector<var>& inputs) const {
  if (inputs.size() != 2 && inputs.size() != 3)
    throw argument_error(path(), "queries and keys, and optionally a mask (2 or 3 inputs)",
                         detail::concat(inputs.size(), " inputs"));
  return ops::attention_probabilities(inputs[0], inputs[1], num_heads_, inputs.size() == 3 ? inputs[2] : var(),
                                      causal_, path());
}

namespace detail {

/// (B, T, H*F) -> (B, H, T, F).
inline var split_heads(const var& x, std::size_t heads, const std::string& path) {
  const auto& s = x.shape();
  return ops::transpose(detail::reshape_to(x, {s[0], s[1], heads, s[2] / heads}), {0, 2, 1, 3}, path);
}

/// Which scores survive, (B or 1, 1, Tq, Tk) of 1 and 0: the mask's nonzero entries, and
/// with `causal` those with key index <= query index.
inline tensor attention_keep(const std::string& path, const var& mask, bool causal, std::size_t batch, std::size_t tq,
                             std::size_t tk) {
  std::size_t mb = 1;
  if (mask.defined()) {
    const auto& m = mask.shape();
    const bool full = m.size() == 3 && m[0] == batch && m[1] == tq && m[2] == tk;
    const bool shared = m.size() == 2 && m[0] == tq && m[1] == tk;
    if (!full && !shared)
      throw shape_error(path, concat("an attention mask of shape (", batch, ", ", tq, ", ", tk, ") or (", tq, ", ", tk, ")"),
                        shape_string(m));
    mb = full ? batch : 1;
  }
  tensor keep = tensor::from_shape({mb, 1, tq, tk});
  for (std::size_t b = 0; b < mb; ++b)
    for (std::size_t i = 0; i < tq; ++i)
      for (std::size_t j = 0; j < tk; ++j) {
        const std::size_t at = (b * tq + i) * tk + j;
        const bool masked_in = !mask.defined() || mask.value().data()[at] != 0.0f;
        keep.data()[at] = masked_in && (!causal || j <= i) ? 1.0f : 0.0f;
      }
  return keep;
}

}  // namespace detail

namespace ops {

XQ_DECL var attention_probabilities(const var& q, const var& k, std::size_t heads, const var& mask, bool causal,
                                    const std::string& path) {
  if (q.dimension() != 3 || k.dimension() != 3 || q.shape()[0] != k.shape()[0] || q.shape()[2] != k.shape()[2] ||
      heads == 0 || q.shape()[2] % heads != 0)
    throw shape_error(path,
                      detail::concat("projected queries (B, Tq, F) and keys (B, Tk, F) with F a multiple of the ",
                                     heads, " heads"),
                      detail::concat(detail::shape_string(q.shape()), " and ", detail::shape_string(k.shape())));
  const std::size_t batch = q.shape()[0], tq = q.shape()[1], tk = k.shape()[1], key_dim = q.shape()[2] / heads;
  // Keras scales the projected query (a float32 constant of 1 / sqrt(key_dim)), then multiplies.
  tensor scale = tensor::from_shape({});
  scale() = static_cast<float>(1.0 / std::sqrt(static_cast<double>(key_dim)));
  const var qh = broadcast_multiply(detail::split_heads(q, heads, path), var(std::move(scale)), path);
  var s = matmul(qh, detail::split_heads(k, heads, path), false, true, path);  // (B, H, Tq, Tk)
  if (!mask.defined() && !causal) return softmax(s, path);
  // Keras: masked scores become -1e9 (s * keep + (1 - keep) * -1e9 gives exactly those
  // values), so their probabilities are 0, and a row with every key masked is uniform.
  const var keep(detail::attention_keep(path, mask, causal, batch, tq, tk));
  tensor fill_values = keep.value();
  for (float& f : fill_values) f = (1.0f - f) * -1e9f;
  s = broadcast_add(broadcast_multiply(s, keep, path), var(std::move(fill_values)), path);
  return softmax(s, path);
}

XQ_DECL var attend(const var& p, const var& v, const std::string& path) {
  if (p.dimension() != 4 || v.dimension() != 3 || p.shape()[0] != v.shape()[0] || p.shape()[3] != v.shape()[1] ||
      v.shape()[2] % p.shape()[1] != 0)
    throw shape_error(path, "probabilities (B, H, Tq, Tk) and values (B, Tk, H*V)",
                      detail::concat(detail::shape_string(p.shape()), " and ", detail::shape_string(v.shape())));
  const std::size_t batch = p.shape()[0], heads = p.shape()[1], tq = p.shape()[2];
  var y;
  {
    const detail::function_body_scope one_node;  // a trace sees attend, not its matmul and transposes
    const var context = matmul(p, detail::split_heads(v, heads, path), false, false, path);  // (B, H, Tq, V)
    y = detail::reshape_to(transpose(context, {0, 2, 1, 3}, path), {batch, tq, v.shape()[2]});
  }
  return detail::traced_function("attend", layer_role::other, {p, v}, std::move(y));
}

}  // namespace ops
}  // namespace xq
