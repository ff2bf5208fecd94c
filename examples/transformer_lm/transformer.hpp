#pragma once
// A small decoder-only transformer language model (GPT-2's layout), written as a Keras
// user writes one: a block is a composite of layers, the model a composite of blocks.
// Each composite is a class template over its children's types, so
// `xq::quantize_t<transformer_lm<>>` is the same network over quantized children.
//
//   ids (B, T) -> token embedding + learned position embedding
//              -> decoder block x 2:  x + attention(norm(x)),  then  x + mlp(norm(x))
//              -> final layer norm -> logits (B, T, vocab) = h · Eᵀ + b
//
// The output projection is the token embedding's own table, transposed
// (xq::tied_projection): one weight, used twice (Press & Wolf 2017), as in GPT-2.
// Attention is causal (position t sees 0..t), so every position of a window is a
// next-character prediction, and the loss averages all of them.

#include <cstddef>

#include <xquant/core/tensor.hpp>
#include <xquant/layers/add.hpp>
#include <xquant/layers/attention.hpp>
#include <xquant/layers/broadcasting.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/embedding.hpp>
#include <xquant/layers/gelu.hpp>
#include <xquant/layers/layer_norm.hpp>
#include <xquant/layers/tied_projection.hpp>

namespace lm {

/// The sizes of the model.
struct shape {
  std::size_t vocab = 0;
  std::size_t context = 64;  ///< T: characters per window
  std::size_t width = 64;    ///< d_model
  std::size_t heads = 4;     ///< key_dim = width / heads
  std::size_t mlp = 256;     ///< the feed-forward layer's width (4 d)
};

/// Pre-norm decoder block: x + attention(norm1(x)), then + down(gelu(up(norm2(.)))).
/// GPT-2's layout; the layer norms use PyTorch's epsilon 1e-5, as GPT-2 does.
template <class Norm = xq::layer_norm, class Attention = xq::multi_head_attention<>, class Add = xq::add,
          class Up = xq::dense, class Act = xq::gelu, class Down = xq::dense>
struct decoder_block {
  Norm norm1;
  Attention attention;
  Add attention_residual;
  Norm norm2;
  Up up;
  Act act;
  Down down;
  Add mlp_residual;
  XQ_CHILDREN(norm1, attention, attention_residual, norm2, up, act, down, mlp_residual)

  decoder_block() = default;
  explicit decoder_block(const shape& s)
      : norm1(xq::layer_norm().epsilon(1e-5f)),
        attention(xq::multi_head_attention<>(s.heads, s.width / s.heads).causal(true)),
        norm2(xq::layer_norm().epsilon(1e-5f)),
        up(s.mlp),
        act(true),  // GPT-2's tanh form
        down(s.width) {}

  xq::var operator()(const xq::var& x) {
    const xq::var h = norm1(x);
    const xq::var a = attention_residual(x, attention(h, h));
    return mlp_residual(a, down(act(up(norm2(a)))));
  }
};

/// The language model: ids (B, T) -> logits (B, T, vocab).
template <class Embed = xq::embedding, class Positions = xq::embedding, class Block = decoder_block<>,
          class Norm = xq::layer_norm, class Project = xq::tied_projection>
struct transformer_lm {
  Embed embed;
  Positions positions;
  Block block_1, block_2;
  Norm final_norm;
  Project project;
  XQ_CHILDREN(embed, positions, block_1, block_2, final_norm, project)

  transformer_lm() = default;
  explicit transformer_lm(const shape& s)
      : embed(s.vocab, s.width),
        positions(s.context, s.width),
        block_1(s),
        block_2(s),
        final_norm(xq::layer_norm().epsilon(1e-5f)) {
    embed.build();
    project = xq::tied_projection(embed, true);  // logits = h · Eᵀ + b, E the embedding's table
  }

  xq::var operator()(const xq::var& ids) {
    // Position t's vector, added to every window's t-th character: (B, T, d) + (T, d).
    const std::size_t t = ids.shape()[1];
    xq::tensor where = xq::tensor::from_shape({t});
    for (std::size_t i = 0; i < t; ++i) where(i) = static_cast<float>(i);
    const xq::var h = embed(ids) + positions(xq::var(where));
    return project(final_norm(block_2(block_1(h))));
  }
};

}  // namespace lm
