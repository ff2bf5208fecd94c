#pragma once
// The fixed model the checkpoint fuzzer loads into, and the seed generator saves: a
// quantized language model with a tied table (one parameter, two uses), next to a conv
// whose batch norm is folded, with an Adam optimizer. Small, so that each input is cheap.

#include <xquant/io/checkpoint.hpp>

#include "../transform/models.hpp"

namespace fuzz {

template <class LM = qtest::tied_lm<>, class Block = qtest::conv_bn<>>
struct model {
  LM lm;
  Block block;
  XQ_CHILDREN(lm, block)
  model() = default;
  explicit model(int) : lm(5, 3), block(2) {}
};

using twin = xq::quantize_t<model<>>;

inline const xq::tensor& ids() {
  static const xq::tensor t{{0, 4, 2}};
  return t;
}
inline const xq::tensor::shape_type image_shape{1, 4, 4, 1};

inline xq::tensor filled(const xq::tensor::shape_type& shape, float value) {
  xq::tensor t = xq::tensor::from_shape(shape);
  t.fill(value);
  return t;
}

/// The twin, built the same way every time (weights from `seed`).
inline twin make_model(unsigned seed) {
  xq::set_seed(seed);
  model<> m(0);
  xq::build(m.lm, {1, 3});
  xq::build(m.block, image_shape);
  xq::set_paths(m);
  xq::quantize_options o;
  o.spec.add("lm/embed");
  o.fold_batch_norm = true;
  o.freeze_batch_norm_after = 5;
  return xq::quantize_model(m, o, [](auto& t) {
    (void)t.lm(xq::var(ids()));
    (void)t.block(xq::var(filled(image_shape, 0.0f)));
  });
}

/// One training step of both parts, so that ranges, moments and counters move.
template <class Optimizer>
void train_step(twin& m, Optimizer& opt, unsigned seed) {
  const xq::training_mode training(true);
  {
    xq::tape t;
    xq::var loss = xq::mean_squared_error(m.lm(xq::var(ids())), filled({1, 3, 5}, 0.1f * float(seed)));
    t.backward(loss);
  }
  {
    xq::tape t;
    const xq::tensor x = filled(image_shape, float(seed % 3) - 0.5f);
    xq::var loss = xq::mean_squared_error(m.block(xq::var(x)), filled({1, 4, 4, 2}, 0.0f));
    t.backward(loss);
  }
  opt.step();
  opt.zero_grad();
}

}  // namespace fuzz
