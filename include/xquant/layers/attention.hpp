#pragma once
/// \file attention.hpp
/// `xq::multi_head_attention`: Keras MultiHeadAttention. The query, key and value are
/// projected by dense layers into `num_heads` heads of `key_dim` (values: `value_dim`)
/// features, each head attends with scaled dot products, softmax over the keys (masked
/// where asked) and dropout on the probabilities, and the heads' results, side by side,
/// go through the output dense layer.
///
/// \code
///   auto mha = xq::multi_head_attention(4, 16).causal(true).dropout(0.1f);
///   xq::var y = mha(x, x);                        // self-attention, (B, T, d) -> (B, T, d)
///   xq::var z = mha(queries, memory, keys, mask);  // mask (B, Tq, Tk): 1 attends, 0 does not
/// \endcode
///
/// Keras's numerics: scores scaled by 1 / sqrt(key_dim); masked scores set to -1e9 before
/// the softmax, so a row with every key masked attends to all keys evenly, as Keras's
/// MultiHeadAttention computes without dropout (through ops.dot_product_attention; with
/// dropout Keras takes its Softmax layer instead, which zeroes such a row: xquant keeps
/// one behaviour). The causal mask lets query i see keys 0..i.
///
/// The projections are `xq::dense` children (Keras's EinsumDense kernels (d, heads, k)
/// flattened to (d, heads * k), the same numbers; initialized as Dense kernels of that
/// shape, where Keras's Glorot fans count the 3-D shape), so NVIDIA's scheme quantizes their
/// inputs and kernels in the twin; the two products of activations (scores and the
/// probabilities times the values) stay float unless a spec names the `scores` child,
/// whose twin (each_input_quantized) can quantize the projected queries and keys. The number
/// of heads and the causal flag live in that child, an `xq::attention_scores` layer, so
/// that the quantized twin keeps them.

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "../core/children.hpp"
#include "../core/layer.hpp"
#include "../core/var.hpp"
#include "dense.hpp"
#include "dropout.hpp"

namespace xq {

namespace ops {

/// Attention probabilities (B, H, Tq, Tk) of projected queries q (B, Tq, H*K) and keys k
/// (B, Tk, H*K) in `heads` heads: softmax(q kᵀ / sqrt(K)) over the keys, with `mask`
/// (undefined, or (B, Tq, Tk) / (Tq, Tk): nonzero attends) and the causal mask applied as
/// Keras applies them (the file comment). The mask gets no gradient.
XQ_DECL var attention_probabilities(const var& q, const var& k, std::size_t heads, const var& mask, bool causal,
                                    const std::string& path = "attention_scores");

/// The heads' weighted values side by side: probabilities p (B, H, Tq, Tk) times values
/// v (B, Tk, H*V), as (B, Tq, H*V).
XQ_DECL var attend(const var& p, const var& v, const std::string& path = "attention");

}  // namespace ops

/// The attention probabilities of `num_heads` heads (ops::attention_probabilities) as a
/// layer: it holds the head count and the causal flag of a multi_head_attention.
class attention_scores : public layer<attention_scores> {
 public:
  XQ_SPECIAL_MEMBERS(attention_scores)
  static constexpr layer_role role = layer_role::other;
  /// No weights, but the two products of activations are MACs the summary counts.
  static constexpr bool counts_macs = true;
  XQ_DECL explicit attention_scores(std::size_t num_heads = 1, bool causal = false);

  /// Queries and keys, projected (B, T, heads * key_dim), and optionally the mask as the
  /// op takes it: {q, k} or {q, k, mask} (a list, as merges take theirs, so that the twin,
  /// each_input_quantized<attention_scores>, can quantize them by index).
  XQ_DECL var call(const std::vector<var>& inputs) const;
  var call(const var& q, const var& k) const { return call(std::vector<var>{q, k}); }

  std::vector<parameter_ptr> parameters() const { return {}; }
  std::size_t num_heads() const noexcept { return num_heads_; }
  bool causal() const noexcept { return causal_; }
  attention_scores& causal(bool on) {
    causal_ = on;
    return *this;
  }

 private:
  std::size_t num_heads_;
  bool causal_;
};

/// Keras MultiHeadAttention (see the file comment). A class template over its children's
/// types (the library's rule for composites); `xq::multi_head_attention<>` names the
/// float type.
template <class Dense = xq::dense, class Scores = attention_scores, class Dropout = xq::dropout>
class multi_head_attention {
 public:
  Dense query, key, value;
  Scores scores;
  Dropout attention_dropout;
  Dense attention_output;
  XQ_CHILDREN(query, key, value, scores, attention_dropout, attention_output)

  multi_head_attention() = default;
  /// `num_heads` heads of `key_dim` features for queries and keys (and values, unless
  /// `value_dim` says otherwise); biases on (Keras's default).
  multi_head_attention(std::size_t num_heads, std::size_t key_dim)
      : query(xq::dense(num_heads * key_dim)),
        key(xq::dense(num_heads * key_dim)),
        value(xq::dense(num_heads * key_dim)),
        scores(attention_scores(num_heads)),
        attention_dropout(xq::dropout(0.0f)) {}

  /// Features per head of the values (default: key_dim); before the first call.
  multi_head_attention& value_dim(std::size_t v) {
    value = xq::dense(scores.num_heads() * v, use_bias_);
    return *this;
  }
  /// Width of the output (default: the query's); before the first call.
  multi_head_attention& output_dim(std::size_t d) {
    attention_output = xq::dense(d, use_bias_);
    output_dim_ = d;
    return *this;
  }
  /// Biases in the four projections (default true); before the first call.
  multi_head_attention& use_bias(bool on) {
    use_bias_ = on;
    query = xq::dense(query.units(), on);
    key = xq::dense(key.units(), on);
    value = xq::dense(value.units(), on);
    attention_output = xq::dense(attention_output.units(), on);
    return *this;
  }
  /// Dropout on the attention probabilities in training mode (default 0).
  multi_head_attention& dropout(float rate) {
    attention_dropout = xq::dropout(rate);
    return *this;
  }
  /// Query i attends to keys 0..i only (Keras's use_causal_mask).
  multi_head_attention& causal(bool on) {
    scores.causal(on);
    return *this;
  }

  /// Self- or cross-attention: keys are the values.
  var operator()(const var& q, const var& v) { return attend(q, v, v, var()); }
  var operator()(const var& q, const var& v, const var& k) { return attend(q, v, k, var()); }
  /// With an attention mask (B, Tq, Tk) or (Tq, Tk): nonzero attends.
  var operator()(const var& q, const var& v, const var& k, const var& mask) { return attend(q, v, k, mask); }

 private:
  var attend(const var& q, const var& v, const var& k, const var& mask) {
    if constexpr (std::is_same_v<Dense, xq::dense>)  // the output's width: the query's unless set
      if (output_dim_ == 0 && !attention_output.kernel()) attention_output = xq::dense(q.shape().back(), use_bias_);
    std::vector<var> scored{query(q), key(k)};
    if (mask.defined()) scored.push_back(mask);
    const var p = attention_dropout(scores(scored));
    return attention_output(ops::attend(p, value(v), scores.path()));
  }

  std::size_t output_dim_ = 0;  ///< 0: the query's width
  bool use_bias_ = true;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/attention.ipp"
#endif
