// A user-sized program, run by bench/busy_core.py beside a busy core (issue 34, finding 9):
// the README's nested net (conv blocks written as composites) on 28x28 images, with every
// entry point a user calls, each timed on its own and printed as one line
// `phase seconds=<s>` (then `total seconds=<s>`):
//
//   fit        3 epochs of Adam, batch 32, on 2,048 images (the float model)
//   evaluate   the 2,048 images, batch 64
//   predict    the 2,048 images, batch 64
//   calibrate  its twin (NVIDIA's scheme) on 1,024 images
//   engine     the twin lowered to the integer engine, run on the 2,048 images 3 times
//
// Nothing is set about threads: what a user gets by default (OMP_NUM_THREADS=1 or 2 from the
// environment picks the count, as busy_core.py does).
#include <chrono>
#include <cstdio>
#include <random>

#include <xquant/deploy/lower.hpp>
#include <xquant/quantizers/calibrate.hpp>
#include <xtensor/xview.hpp>
#include <xquant/xquant.hpp>

namespace {

template <class Conv = xq::conv2d, class Norm = xq::batch_norm>
struct block {
  Conv conv;
  Norm norm;
  XQ_CHILDREN(conv, norm)
  explicit block(std::size_t filters = 8) : conv(xq::conv2d(filters, 3).padding(xq::padding::same)) {}
  xq::var operator()(const xq::var& x) { return xq::ops::relu(norm(conv(x))); }
};

using net = xq::sequential<block<>, xq::max_pool2d, block<>, xq::max_pool2d, xq::flatten, xq::dense, xq::dense>;

xq::dataset images(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  xq::tensor x = xq::tensor::from_shape({n, 28, 28, 1}), y = xq::tensor::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t label = i % 10;
    for (std::size_t p = 0; p < 28 * 28; ++p) x.data()[i * 28 * 28 + p] = u(rng) * 0.5f + (p % 10 == label ? 0.5f : 0.0f);
    y(i) = float(label);
  }
  return xq::dataset{x, y};
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const xq::dataset data = images(2048, 1);
  xq::set_seed(3);
  net model(block<>(8), xq::max_pool2d(2), block<>(16), xq::max_pool2d(2), xq::flatten(), xq::dense(32), xq::dense(10));
  xq::build(model, {1, 28, 28, 1});

  auto t = clock::now();
  xq::adam opt(xq::trainable_parameters(model), {1e-3f});
  xq::fit_options fo;
  fo.epochs = 3;
  fo.batch_size = 32;
  fo.verbose = false;
  xq::fit(model, opt, xq::sparse_softmax_cross_entropy, data, fo);
  std::printf("fit seconds=%.3f\n", since(t));

  t = clock::now();
  const xq::evaluation e = xq::evaluate(model, xq::sparse_softmax_cross_entropy, data, 64);
  std::printf("evaluate seconds=%.3f\n", since(t));

  t = clock::now();
  const xq::tensor out = xq::predict(model, data.inputs, 64);
  std::printf("predict seconds=%.3f\n", since(t));

  xq::quantize_options qo;
  qo.fold_batch_norm = true;
  auto qat = xq::quantize_model(model, qo, {1, 28, 28, 1});
  t = clock::now();
  xq::calibration_options co;
  co.method = xq::calibration_method::max;
  co.batch_size = 128;
  xq::calibrate(qat, xt::eval(xt::view(data.inputs, xt::range(0, 1024))), co);
  std::printf("calibrate seconds=%.3f\n", since(t));

  const xq::deploy::integer_model engine = xq::deploy::lower(qat, {28, 28, 1});
  t = clock::now();
  double checksum = 0;
  for (int r = 0; r < 3; ++r) checksum += double(engine.run(data.inputs)(0, 0));
  std::printf("engine seconds=%.3f\n", since(t));

  std::printf("total seconds=%.3f (accuracy %.3f, output %.4f, engine %.4f)\n", since(start), e.metric.value_or(0),
              double(out(0, 0)), checksum);
  return 0;
}
