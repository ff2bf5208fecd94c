#pragma once
// Test models for the quantize tests, written the way a Keras user writes subclassed
// layers: composites are class templates over their child types (defaults = float).

#include <type_traits>

#include <xquant/numerics.hpp>  // tests compare with the peers' operators
#include <xquant/xquant.hpp>

#include "../gradient_check.hpp"

namespace qtest {

/// The seed's example: a conv and a batch norm, as one layer.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm>
struct conv_bn {
  Conv conv;
  Norm norm;
  XQ_CHILDREN(conv, norm)
  explicit conv_bn(std::size_t filters = 4)
      : conv(xq::conv2d(filters, 3).padding(xq::padding::same)), norm(xq::batch_norm().momentum(0.9f)) {}
  xq::var operator()(const xq::var& x) { return xq::ops::relu(norm(conv(x))); }
};

/// Two blocks in a row (level 2).
template <class Block = conv_bn<>>
struct stage {
  Block first, second;
  XQ_CHILDREN(first, second)
  stage() : first(4), second(4) {}
  xq::var operator()(const xq::var& x) { return second(first(x)); }
};

/// A stage, a pool and a head (level 3).
template <class Stage = stage<>, class Pool = xq::global_average_pool2d, class Head = xq::dense>
struct net {
  Stage body;
  Pool pool;
  Head head{xq::dense(3)};
  XQ_CHILDREN(body, pool, head)
  xq::var operator()(const xq::var& x) { return head(pool(body(x))); }
};

/// PWCNet-style: one feature extractor applied to two images, then merged.
template <class Extractor = conv_bn<>, class Merge = xq::concatenate, class Head = xq::conv2d>
struct flow_net {
  Extractor features{4};
  Merge merge;
  Head head{xq::conv2d(2, 3).padding(xq::padding::same)};
  XQ_CHILDREN(features, merge, head)
  xq::var operator()(const xq::var& a, const xq::var& b) {
    const xq::var fa = features(a);  // in this order (argument order is unspecified)
    const xq::var fb = features(b);
    return head(merge(fa, fb));
  }
};

/// Hourglass: the same block on the way down and on the way up, with a skip add.
template <class Block = conv_bn<>, class Middle = xq::conv2d, class Skip = xq::add>
struct hourglass {
  Block block{4};
  Middle middle{xq::conv2d(4, 1)};
  Skip skip;
  XQ_CHILDREN(block, middle, skip)
  xq::var operator()(const xq::var& x) {
    const xq::var down = block(x);
    return skip(block(middle(down)), down);
  }
};

/// A residual unit: conv -> bn -> relu on one branch, the identity on the other.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm, class Act = xq::relu, class Skip = xq::add,
          class Pool = xq::max_pool2d>
struct residual {
  Conv conv{xq::conv2d(3, 3).padding(xq::padding::same)};
  Norm norm;
  Act act;
  Skip skip;
  Pool pool{xq::max_pool2d(2)};
  XQ_CHILDREN(conv, norm, act, skip, pool)
  xq::var operator()(const xq::var& x) { return pool(skip(act(norm(conv(x))), x)); }
};

/// A tiny language-model core with tied weights: embed ids, mix, project back onto the
/// same table.
template <class Embed = xq::embedding, class Mix = xq::dense, class Project = xq::tied_projection>
struct tied_lm {
  Embed embed;
  Mix mix;
  Project project;
  XQ_CHILDREN(embed, mix, project)
  tied_lm() = default;
  tied_lm(std::size_t vocab, std::size_t width) : embed(vocab, width), mix(width) {  // the float model
    embed.build();                     // the table must exist to be tied
    project = Project(embed, true);
  }
  xq::var operator()(const xq::var& ids) { return project(mix(embed(ids))); }
};

/// Gives every batch norm of `model` non-trivial statistics and affine parameters
/// (deterministic in `seed`: calling it again restores the same values).
template <class Model>
void randomize_batch_norms(Model& model, unsigned seed) {
  xq::for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (std::is_same_v<L, xq::batch_norm>) {
      const auto c = l.moving_mean()->value.shape();
      l.gamma()->value = xq::testing::uniform(c, 0.5f, 2.0f, seed++);
      l.beta()->value = xq::testing::uniform(c, -0.5f, 0.5f, seed++);
      l.moving_mean()->value = xq::testing::uniform(c, -0.3f, 0.3f, seed++);
      l.moving_variance()->value = xq::testing::uniform(c, 0.2f, 3.0f, seed++);
    }
  });
}

}  // namespace qtest
