// Writes tests/data/checkpoint/v1_* : a version-1 checkpoint (the format before the
// quantizer redesign stored quantizer ranges in "quantizers" entries instead of
// parameters) of a QAT model with its Adam state, the input it was evaluated on, its
// inference output, and the loss of one more training step. tests/io/test_checkpoint.cpp
// loads the file into a model built by today's code and checks both numbers bit for bit:
// files of format version 1 still load.
//
// Built against xquant at commit 7fad4b1 (the last to write version 1):
//   git worktree add /tmp/v1 7fad4b1
//   g++ -std=c++17 -O2 -ffp-contract=off -I/tmp/v1/include tools/v1_checkpoint_fixture.cpp \
//       -lopenblas -lz -o /tmp/v1_fixture && /tmp/v1_fixture tests/data/checkpoint
// The model below must stay the one of test_checkpoint.cpp's "version 1" test case.

#include <cstdio>
#include <string>

#include <xquant/io.hpp>
#include <xquant/xquant.hpp>

template <class Conv = xq::conv2d, class Norm = xq::batch_norm, class Act = xq::relu>
struct block {
  Conv conv{xq::conv2d(4, 3).padding(xq::padding::same)};
  Norm norm{xq::batch_norm().momentum(0.9f)};
  Act act;
  XQ_CHILDREN(conv, norm, act)
  xq::var operator()(const xq::var& x) { return act(norm(conv(x))); }
};

using net = xq::sequential<block<>, xq::max_pool2d, xq::flatten, xq::dense>;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  xq::set_seed(21);
  net model(block<>(), xq::max_pool2d(2), xq::flatten(), xq::dense(3));
  const xq::tensor::shape_type shape{2, 6, 6, 2};
  xq::build(model, shape);
  xq::quantize_options o;
  o.scheme.input.numerics = o.scheme.weight.numerics = xq::quant_numerics::tf_fake_quant;
  o.scheme.input.tracking = xq::range_tracking::moving_average;
  o.scheme.input.symmetric = o.scheme.input.narrow_range = false;
  o.scheme.weight.per_channel = false;
  o.fold_batch_norm = true;
  o.freeze_batch_norm_after = 3;
  auto qat = xq::quantize_model(model, o, shape);
  xq::adam opt(xq::trainable_parameters(qat), {0.01f});
  const xq::tensor x = xq::random_uniform(shape, 1.0f);
  const xq::tensor target = xq::random_uniform({2, 3}, 1.0f);
  auto step = [&] {
    const xq::training_mode training(true);
    xq::tape t;
    xq::var loss = xq::mean_squared_error(qat(xq::var(x)), target);
    t.backward(loss);
    opt.step();
    opt.zero_grad();
    return loss.value()();
  };
  for (int i = 0; i < 3; ++i) step();
  xq::save_checkpoint(dir + "/v1_qat.xqc", qat, opt);
  xq::io::save_npy(dir + "/v1_input.npy", x);
  xq::io::save_npy(dir + "/v1_target.npy", target);
  {
    const xq::training_mode inference(false);
    const xq::no_grad off;
    xq::io::save_npy(dir + "/v1_output.npy", qat(xq::var(x)).value());
  }
  const float next = step();
  xq::io::save_npy(dir + "/v1_next_loss.npy", xq::tensor{next});
  std::printf("wrote %s/v1_qat.xqc (next loss %.9g)\n", dir.c_str(), next);
  return 0;
}
