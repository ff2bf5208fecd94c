// ONNX export checked by onnxruntime (CTest label onnx): each case trains a small model
// briefly, exports it with xq::deploy::export_onnx, writes its input and what xquant's
// integer engine computes (the logits, and with expose_quantized every quantized
// activation's integers, NCHW as in the file), then runs tools/onnx_check.py: ONNX's
// checker (full_check), then onnxruntime's reference path (DequantizeLinear -> float op ->
// QuantizeLinear) and its optimized integer path, each against the engine.
//
//   onnx_export_cases --case NAME --out DIR (--python PY --checker tools/onnx_check.py | --skip-reason TEXT)
//
// Exit status: the checker's; 77 (CTest's skip) when the ONNX packages are missing.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <xquant/deploy/export_onnx.hpp>
#include <xquant/deploy/graph/build_graph.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/io/npy.hpp>
#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/lsq_quantizer.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/wrappers/quant_conv2d.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xquant/xquant.hpp>

#include "deploy_models.hpp"

// A user's layer, written outside the library: ShuffleNet's channel shuffle, a leaf with its
// own forward and backward, a quantized twin by one specialization of xq::quantize, and a
// deploy form by one describe_deployment in its own namespace (found by argument-dependent
// lookup): a composition of three graph ops, reshape -> transpose -> reshape.
namespace user_layers {

class channel_shuffle : public xq::layer<channel_shuffle> {
 public:
  explicit channel_shuffle(std::size_t groups = 2) : xq::layer<channel_shuffle>("channel_shuffle"), groups_(groups) {}
  std::size_t groups() const noexcept { return groups_; }
  std::vector<xq::parameter_ptr> parameters() const { return {}; }

  /// Channels seen as (groups, n) transposed to (n, groups): output channel k·groups + g is
  /// input channel g·n + k; the gradient goes back through the inverse permutation.
  xq::var call(const xq::var& x) const {
    const std::size_t channels = x.shape().back(), n = channels / groups_, rows = x.size() / channels;
    std::vector<std::size_t> source(channels);
    for (std::size_t g = 0; g < groups_; ++g)
      for (std::size_t k = 0; k < n; ++k) source[k * groups_ + g] = g * n + k;
    xq::tensor y = xq::tensor::from_shape(x.shape());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < channels; ++c) y.data()[r * channels + c] = x.value().data()[r * channels + source[c]];
    return xq::make_result(std::move(y), xq::needs_grad(x), [x, source, rows, channels](const xq::tensor& dy) {
      xq::tensor dx = xq::tensor::from_shape(x.shape());
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < channels; ++c) dx.data()[r * channels + source[c]] = dy.data()[r * channels + c];
      xq::add_grad(x, std::move(dx));
    });
  }

 private:
  std::size_t groups_;
};

/// Its deploy form: (N, ..., C) -> (N, ..., groups, n) -> swap the last two -> (N, ..., C).
xq::deploy::value_id describe_deployment(const channel_shuffle& l, xq::deploy::layer_builder& b) {
  const std::vector<std::size_t> s = b.shape(b.raw_input(0));
  if (s.back() % l.groups() != 0) b.refuse("its channels are not divisible by its groups");
  std::vector<std::size_t> split(s.begin(), s.end() - 1), swapped;
  split.push_back(l.groups());
  split.push_back(s.back() / l.groups());
  swapped = split;
  std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
  std::vector<std::size_t> perm;
  for (std::size_t d = 0; d < split.size(); ++d) perm.push_back(d);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  const auto without_batch = [](const std::vector<std::size_t>& v) { return std::vector<std::size_t>(v.begin() + 1, v.end()); };
  xq::deploy::value_id v = b.add(xq::deploy::op::reshape{without_batch(split)}, {b.input(0)}, split);
  v = b.add(xq::deploy::op::transpose{perm}, {v}, swapped);
  return b.add(xq::deploy::op::reshape{without_batch(s)}, {v}, s);
}

}  // namespace user_layers

template <>
struct xq::quantize<user_layers::channel_shuffle> {
  using type = xq::input_quantized<user_layers::channel_shuffle>;  // NVIDIA's NonWeighted wrapper: its input
};

namespace {

using namespace deploy_test;

/// One conv applied twice (a shared feature extractor), then a depthwise conv.
template <class Conv = xq::conv2d, class Depthwise = xq::depthwise_conv2d, class Flat = xq::flatten,
          class Head = xq::dense>
struct shared_net {
  Conv stem{xq::conv2d(4, 3).padding(xq::padding::same)};
  Conv shared{xq::conv2d(4, 3).padding(xq::padding::same)};
  Depthwise depthwise{xq::depthwise_conv2d(3, 2).padding(xq::padding::valid)};
  Flat flat;
  Head head{xq::dense(4)};
  XQ_CHILDREN(stem, shared, depthwise, flat, head)
  xq::var operator()(const xq::var& x) {
    xq::var h = xq::ops::relu(stem(x));
    h = xq::ops::relu(shared(h));
    h = xq::ops::relu(shared(h));  // the same weights again
    h = xq::ops::relu(depthwise(h));
    return head(flat(h));
  }
};

/// A residual block (NVIDIA's residual QDQ case decides the add's QDQ), average pooling
/// (its input QDQ is NVIDIA's default) and global average pooling.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm, class Add = xq::add, class Pool = xq::average_pool2d,
          class Gap = xq::global_average_pool2d, class Head = xq::dense>
struct residual_net {
  Conv stem{xq::conv2d(6, 3).padding(xq::padding::same)};
  Conv branch{xq::conv2d(6, 3).padding(xq::padding::same).use_bias(false)};
  Norm norm{xq::batch_norm().momentum(0.5f)};
  Add merge;
  Pool pool{xq::average_pool2d(2)};
  Gap gap;
  Head head{xq::dense(4)};
  XQ_CHILDREN(stem, branch, norm, merge, pool, gap, head)
  xq::var operator()(const xq::var& x) {
    const xq::var h = xq::ops::relu(stem(x));
    const xq::var r = xq::ops::relu(merge(h, norm(branch(h))));
    return head(gap(pool(r)));
  }
};

/// Every activation (layers and functions), multiply, concatenations, global max pooling.
template <class Conv = xq::conv2d, class Add = xq::add, class Cat = xq::concatenate, class Mul = xq::multiply,
          class Pool = xq::average_pool2d, class Gap = xq::global_average_pool2d, class Gmp = xq::global_max_pool2d,
          class Relu6 = xq::relu6, class Leaky = xq::leaky_relu, class Swish = xq::swish, class Tanh = xq::tanh,
          class Sigmoid = xq::sigmoid, class Dense = xq::dense, class Softmax = xq::softmax>
struct activation_net {
  Conv stem{xq::conv2d(6, 3).padding(xq::padding::same)};
  Conv branch{xq::conv2d(6, 3).padding(xq::padding::same)};
  Conv side{xq::conv2d(4, 1)};
  Conv gate{xq::conv2d(4, 1)};
  Add residual;
  Pool pool{xq::average_pool2d(2)};
  Mul gated;
  Cat features;
  Cat pooled;
  Gap gap;
  Gmp gmp;
  Relu6 clip;
  Leaky leaky{xq::leaky_relu(0.1f)};
  Swish swish;
  Tanh squash;
  Sigmoid sigmoid;
  Dense hidden{xq::dense(12)};
  Dense head{xq::dense(4)};
  Softmax probabilities;
  XQ_CHILDREN(stem, branch, side, gate, residual, pool, gated, features, pooled, gap, gmp, clip, leaky, swish, squash,
              sigmoid, hidden, head, probabilities)
  xq::var operator()(const xq::var& x) {
    const xq::var h = clip(stem(x));
    const xq::var b = xq::ops::relu6(branch(h));
    const xq::var r = pool(residual(h, b));
    const xq::var m = gated(swish(side(r)), sigmoid(gate(r)));
    const xq::var c = features({m, squash(r), xq::ops::tanh(r)});
    const xq::var e = pooled(gap(c), gmp(xq::ops::swish(c)));
    return probabilities(head(leaky(hidden(xq::ops::sigmoid(e)))));
  }
};

/// ids (N, 6) -> an embedding, a hidden layer, a projection tied to the table.
template <class Embed = xq::embedding, class Flat = xq::flatten, class Hidden = xq::dense,
          class Project = xq::tied_projection>
struct tied_lm {
  Embed embed{xq::embedding(8, 8)};
  Flat flat;
  Hidden hidden{xq::dense(8)};
  Project project;
  XQ_CHILDREN(embed, flat, hidden, project)
  tied_lm() = default;
  explicit tied_lm(bool tie) {
    if (!tie) return;
    embed.build();
    project = Project(embed, true);
  }
  xq::var operator()(const xq::var& ids) { return project(xq::ops::relu(hidden(flat(embed(ids))))); }
};

/// Two images through ONE feature extractor (a conv called twice, per-call-site ranges when
/// quantized) and two heads: whether both show the same quadrant (from the features'
/// difference) and the first image's quadrant. Two inputs, two outputs.
template <class Conv = xq::conv2d, class Pool = xq::max_pool2d, class Flat = xq::flatten, class Sub = xq::subtract,
          class Dense = xq::dense>
struct siamese_net {
  Conv features{xq::conv2d(6, 3).padding(xq::padding::same)};
  Pool pool{xq::max_pool2d(2)};
  Flat flat;
  Sub difference;
  Dense same{xq::dense(2)};
  Dense quadrant{xq::dense(4)};
  XQ_CHILDREN(features, pool, flat, difference, same, quadrant)
  std::vector<xq::var> operator()(const xq::var& a, const xq::var& b) {
    const xq::var fa = flat(pool(xq::ops::relu(features(a))));
    const xq::var fb = flat(pool(xq::ops::relu(features(b))));
    return {same(difference(fa, fb)), quadrant(fa)};
  }
};

/// A cost-volume net in PWC-Net's shape: one extractor for both frames, their correlation
/// (displacements ±2: 25 channels) stacked with the first frame's features, a decoder conv
/// and a head that tells which way the second frame moved.
template <class Conv = xq::conv2d, class Corr = xq::correlation, class Cat = xq::concatenate,
          class Pool = xq::max_pool2d, class Flat = xq::flatten, class Dense = xq::dense>
struct cost_volume_net {
  Conv features{xq::conv2d(6, 3).padding(xq::padding::same)};
  Corr cost{xq::correlation(2)};
  Cat stack;
  Conv decode{xq::conv2d(8, 3).padding(xq::padding::same)};
  Pool pool{xq::max_pool2d(2)};
  Flat flat;
  Dense head{xq::dense(4)};
  XQ_CHILDREN(features, cost, stack, decode, pool, flat, head)
  xq::var operator()(const xq::var& a, const xq::var& b) {
    const xq::var fa = xq::ops::relu(features(a)), fb = xq::ops::relu(features(b));
    return head(flat(pool(xq::ops::relu(decode(stack({cost(fa, fb), fa}))))));
  }
};

/// The correlation alone, on the model's two inputs: its volume is the output.
template <class Corr = xq::correlation>
struct bare_cost {
  Corr cost{xq::correlation(3)};
  XQ_CHILDREN(cost)
  xq::var operator()(const xq::var& a, const xq::var& b) { return cost(a, b); }
};

/// A CNN around the user's channel shuffle (user_layers above).
template <class Conv = xq::conv2d, class Shuffle = user_layers::channel_shuffle, class Pool = xq::max_pool2d,
          class Flat = xq::flatten, class Dense = xq::dense>
struct shuffle_net {
  Conv stem{xq::conv2d(6, 3).padding(xq::padding::same)};
  Shuffle shuffle{user_layers::channel_shuffle(3)};
  Conv mix{xq::conv2d(6, 1)};
  Pool pool{xq::max_pool2d(2)};
  Flat flat;
  Dense head{xq::dense(4)};
  XQ_CHILDREN(stem, shuffle, mix, pool, flat, head)
  xq::var operator()(const xq::var& x) {
    return head(flat(pool(xq::ops::relu(mix(shuffle(xq::ops::relu(stem(x))))))));
  }
};

/// A 12x12 quadrant image (quadrant_data's) of class `label`.
inline void quadrant_image(std::mt19937& rng, std::size_t label, float* out) {
  std::uniform_real_distribution<float> u(0.0f, 0.6f);
  for (std::size_t r = 0; r < 12; ++r)
    for (std::size_t c = 0; c < 12; ++c) out[r * 12 + c] = u(rng) + ((r / 6) * 2 + c / 6 == label ? 0.4f : 0.0f);
}

/// `n` pairs of quadrant images: the targets are "same quadrant" (0/1, half the pairs) and
/// the first image's quadrant.
inline xq::dataset pair_data(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  xq::tensor a = xq::tensor::from_shape({n, 12, 12, 1}), b = xq::tensor::from_shape({n, 12, 12, 1});
  xq::tensor same = xq::tensor::from_shape({n}), quadrant = xq::tensor::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t la = i % 4, lb = (i / 4) % 2 ? la : (la + 1 + (i / 8) % 3) % 4;
    quadrant_image(rng, la, a.data() + i * 144);
    quadrant_image(rng, lb, b.data() + i * 144);
    same(i) = float(la == lb);
    quadrant(i) = float(la);
  }
  return xq::dataset::of({a, b}, {same, quadrant});
}

/// `n` pairs of 12x12 frames, the second the first moved by one pixel (zeros entering):
/// down, up, right or left, the class.
inline xq::dataset shift_data(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  xq::tensor a = xq::tensor::from_shape({n, 12, 12, 1}), b = xq::tensor::from_shape({n, 12, 12, 1});
  xq::tensor label = xq::tensor::from_shape({n});
  static constexpr int dy[] = {1, -1, 0, 0}, dx[] = {0, 0, 1, -1};
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = i % 4;
    for (std::size_t r = 0; r < 12; ++r)
      for (std::size_t c = 0; c < 12; ++c) a(i, r, c, 0) = u(rng) < 0.3f ? 1.0f : 0.0f;
    for (int r = 0; r < 12; ++r)
      for (int c = 0; c < 12; ++c) {
        const int r0 = r - dy[k], c0 = c - dx[k];
        b(i, std::size_t(r), std::size_t(c), 0) = r0 >= 0 && r0 < 12 && c0 >= 0 && c0 < 12 ? a(i, std::size_t(r0), std::size_t(c0), 0) : 0.0f;
      }
    label(i) = float(k);
  }
  return xq::dataset::of({a, b}, {label});
}

struct run_args {
  std::string name, dir, python, checker, skip;
};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

/// (N, H, W, C) -> (N, C, H, W).
xq::tensor to_nchw(const xq::tensor& t) {
  if (t.dimension() != 4) return t;
  const std::size_t n = t.shape()[0], h = t.shape()[1], w = t.shape()[2], c = t.shape()[3];
  xq::tensor o = xq::tensor::from_shape({n, c, h, w});
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < h; ++i)
      for (std::size_t j = 0; j < w; ++j)
        for (std::size_t k = 0; k < c; ++k) o(b, k, i, j) = t(b, i, j, k);
  return o;
}

/// A documented exception to "onnxruntime's integers are the engine's": at most `count`
/// elements of the quantized tensor `label` may differ, each by at most `steps`, on `path`
/// (empty: both onnxruntime paths). Every other exposed integer must be equal.
struct integer_exception {
  std::string label;
  std::size_t count = 0;
  int steps = 1;
  std::string path;
};

/// Exports `model`, writes the engine's tensors and runs the checker. `logit_step`: what one
/// quantization step of the logits' input moves a logit by at most. Every quantized
/// activation onnxruntime exposes is compared with the engine's in integer steps: 0 steps,
/// but for the `exceptions`.
template <class Model>
int check(Model& model, const run_args& a, const xq::dataset& test, const xq::deploy::export_options& eo,
          double logit_step, double min_top1, const std::string& paths = "reference,optimized",
          bool against_simulation = false, const std::vector<integer_exception>& exceptions = {},
          const std::vector<std::pair<std::string, xq::tensor>>& extra = {}) {
  // The engine computes as the file does: an int32 bias, or (NVIDIA's float layout) a float one.
  xq::deploy::lower_options lo;
  if (eo.weight_layout == xq::deploy::onnx_weight_layout::float_qdq) lo.bias = xq::deploy::bias_precision::float32;
  std::filesystem::create_directories(a.dir);
  const std::string base = a.dir + "/" + a.name;
  const std::vector<std::size_t> sample(test.inputs.shape().begin() + 1, test.inputs.shape().end());
  xq::deploy::export_onnx(model, sample, base + ".onnx", eo);
  std::cout << a.name << ": wrote " << base << ".onnx\n";
  xq::io::save_npy(base + ".input.npy", test.inputs);
  std::string cmd = quoted(a.python) + " " + quoted(a.checker) + " " + quoted(base + ".onnx") + " --input input=" +
                    quoted(base + ".input.npy") + " --expected output=" + quoted(base + ".output.npy") +
                    " --step output=" + std::to_string(logit_step) + " --top1 --min-top1 " + std::to_string(min_top1) +
                    " --min-share 0.9999 --paths " + paths + " --report " + quoted(base + ".report.json") +
                    " --exact-integers";
  // The expected output: the integer engine's, or (no engine for this model) the simulation's.
  std::unique_ptr<xq::deploy::integer_model> engine;
  std::vector<xq::deploy::engine_tensor> values;
  if (against_simulation) {
    xq::io::save_npy(base + ".output.npy", xq::predict(model, test.inputs));
  } else {
    engine = std::make_unique<xq::deploy::integer_model>(xq::deploy::lower(model, sample, lo));
    values = engine->run_all(test.inputs);
    xq::io::save_npy(base + ".output.npy", values.at(engine->output_value).to_real());
  }
  if (engine && eo.expose_quantized)
    for (std::size_t k = 0; k < engine->parity_points.size(); ++k) {
      const auto& p = engine->parity_points[k];
      // The logits' own quantizer (tfmot's placement) is the output, checked at logit_step:
      // one step of an earlier activation can move it by more than one of its steps.
      if (p.binary || p.value == engine->output_value) continue;
      const std::string file = base + ".q" + std::to_string(k) + ".npy";
      const auto q = values.at(p.value).integers();
      xq::tensor t = xq::tensor::from_shape(values.at(p.value).shape);
      std::copy(q.begin(), q.end(), t.begin());
      xq::io::save_npy(file, to_nchw(t));
      cmd += " --expected " + quoted("q:" + p.label + "=" + file);
      for (const integer_exception& e : exceptions)
        if (e.label == p.label)
          cmd += " --allow " + quoted((e.path.empty() ? "" : e.path + ":") + "q:" + p.label + "=" +
                                      std::to_string(e.count) + "@" + std::to_string(e.steps));
    }
  for (std::size_t k = 0; k < extra.size(); ++k) {  // more exposed integers, each compared exactly
    const std::string file = base + ".extra" + std::to_string(k) + ".npy";
    xq::io::save_npy(file, extra[k].second);
    cmd += " --expected " + quoted(extra[k].first + "=" + file);
  }
  if (!a.skip.empty()) {
    std::cout << a.name << ": SKIPPED the runtime check: " << a.skip << "\n";
    return 77;
  }
  std::cout << cmd << "\n" << std::flush;
  const int rc = std::system(cmd.c_str());
  return rc == 0 ? 0 : 1;
}

/// Exports a model of any number of inputs (`shapes`, batch first) and outputs and runs the
/// checker against the integer engine: every output (within `steps[k]` of output k; 0:
/// exact; a negative step: the checker's default float rule, 1e-4 of the output's range) and every quantized
/// activation onnxruntime exposes, in integer steps (0, but for the `exceptions`).
template <class Model>
int check_many(Model& model, const run_args& a, const std::vector<xq::tensor>& inputs, const xq::input_shapes& shapes,
               const xq::deploy::export_options& eo, const std::vector<double>& steps, double min_top1,
               const std::vector<integer_exception>& exceptions = {}) {
  std::filesystem::create_directories(a.dir);
  const std::string base = a.dir + "/" + a.name;
  const xq::onnx::model m = xq::deploy::export_onnx(model, shapes, eo);
  xq::onnx::save(m, base + ".onnx");
  std::cout << a.name << ": wrote " << base << ".onnx (" << m.graph.inputs.size() << " inputs, " << m.graph.nodes.size()
            << " nodes)\n";
  std::string cmd = quoted(a.python) + " " + quoted(a.checker) + " " + quoted(base + ".onnx") +
                    " --min-share 0.9999 --paths reference,optimized --report " + quoted(base + ".report.json") +
                    " --exact-integers";
  if (min_top1 > 0) cmd += " --top1 --min-top1 " + std::to_string(min_top1);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const std::string file = base + ".input" + std::to_string(k) + ".npy";
    xq::io::save_npy(file, inputs[k]);
    cmd += " --input " + quoted(m.graph.inputs.at(k).name + "=" + file);
  }
  const xq::deploy::integer_model engine = xq::deploy::lower(model, shapes);
  const std::vector<xq::deploy::engine_tensor> values = engine.run_all(inputs);
  const std::vector<std::size_t> outs = engine.output_values();
  for (std::size_t k = 0; k < outs.size(); ++k) {
    // The model's outputs come first in the file, then the exposed integers.
    const std::string file = base + ".output" + std::to_string(k) + ".npy", name = m.graph.outputs.at(k).name;
    xq::io::save_npy(file, values.at(outs[k]).to_real());
    cmd += " --expected " + quoted(name + "=" + file);
    if (k < steps.size() && steps[k] >= 0) cmd += " --step " + quoted(name + "=" + std::to_string(steps[k]));
  }
  if (eo.expose_quantized)
    for (std::size_t k = 0; k < engine.parity_points.size(); ++k) {
      const auto& p = engine.parity_points[k];
      if (p.binary || std::find(outs.begin(), outs.end(), p.value) != outs.end()) continue;
      const std::string file = base + ".q" + std::to_string(k) + ".npy";
      const auto q = values.at(p.value).integers();
      xq::tensor t = xq::tensor::from_shape(values.at(p.value).shape);
      std::copy(q.begin(), q.end(), t.begin());
      xq::io::save_npy(file, to_nchw(t));
      cmd += " --expected " + quoted("q:" + p.label + "=" + file);
      for (const integer_exception& e : exceptions)
        if (e.label == p.label)
          cmd += " --allow " + quoted((e.path.empty() ? "" : e.path + ":") + "q:" + p.label + "=" +
                                      std::to_string(e.count) + "@" + std::to_string(e.steps));
    }
  if (!a.skip.empty()) {
    std::cout << a.name << ": SKIPPED the runtime check: " << a.skip << "\n";
    return 77;
  }
  std::cout << cmd << "\n" << std::flush;
  const int rc = std::system(cmd.c_str());
  return rc == 0 ? 0 : 1;
}

/// The simulation's integers of every quantized use of a weight tied between layers, from
/// the deploy graph, named as the file exposes them ("q:<kernel quantizer>"); `past` gets
/// how many of them the simulation clipped (entries past the use's range).
template <class Model>
std::vector<std::pair<std::string, xq::tensor>> tied_use_integers(Model& model, const xq::input_shapes& shapes,
                                                                  std::size_t& past) {
  const xq::deploy::deploy_graph g = xq::deploy::build_graph(model, shapes);
  std::vector<std::pair<std::string, xq::tensor>> out;
  past = 0;
  auto add = [&](const xq::deploy::weight_use& u) {
    if (!u.quantized || !u.present() || !g.weights[u.weight].tied()) return;
    const xq::tensor& w = g.weights[u.weight].value;
    xq::tensor t = xq::tensor::from_shape(w.shape());
    std::copy(u.q.integers.begin(), u.q.integers.end(), t.begin());
    const xq::quantization_grid& grid = u.q.grid;
    const std::size_t cols = w.shape()[1];
    for (std::size_t e = 0; e < w.size(); ++e) {
      const int axis = grid.channel_axis < 0 ? grid.channel_axis + 2 : grid.channel_axis;
      const std::size_t c = grid.channels() == 1 ? 0 : axis == 0 ? e / cols : e % cols;
      const double q = std::nearbyint(double(w.data()[e]) / double(grid.scale[c])) + grid.zero_point[c];
      past += q < grid.qmin || q > grid.qmax;
    }
    out.emplace_back("q:" + u.q.quantizer, t);
  };
  for (const auto& n : g.nodes) {
    if (const auto* l = std::get_if<xq::deploy::op::linear>(&n.op)) add(l->kernel);
    if (const auto* t = std::get_if<xq::deploy::op::gather>(&n.op)) add(t->table);
  }
  return out;
}

int run(const run_args& a) {
  const xq::dataset data = quadrant_data(256, 11), test = quadrant_data(256, 12);
  xq::deploy::export_options eo;
  eo.expose_quantized = true;
  if (a.name == "cnn_qat" || a.name == "cnn_qat_float_qdq" || a.name == "cnn_float") {
    auto model = make_small_cnn();
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 3, 3e-3f);
    if (a.name == "cnn_float") {
      eo.expose_quantized = false;
      return check(model, a, test, eo, 1e-4, 1.0);
    }
    xq::quantize_options qo;
    qo.fold_batch_norm = true;
    qo.freeze_batch_norm_after = 8;
    auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
    train(qat, data, 2, 5e-4f);
    // One step of the last dense layer's input moves a logit by s_in * max|w|.
    const float s_in = qat.template get<6>().input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.template get<6>().float_layer().kernel()->value))();
    double step = double(s_in) * w;
    if (a.name == "cnn_qat_float_qdq") {
      // NVIDIA's layout keeps float biases. onnxruntime's reference path adds them in float
      // (as the engine with a float bias does, which this case compares with); its fused
      // integer kernels round them to int32 first, which moves a few of the last layer's
      // inputs by one step each: the logits may then move by a few such steps.
      eo.weight_layout = xq::deploy::onnx_weight_layout::float_qdq;
      step *= 4;
      // The same rounding, counted in integers: the optimized path only (measured 41, 73
      // and 34 one-step moves; the reference path: none).
      return check(qat, a, test, eo, step, 0.999, "reference,optimized", false,
                   {{"block_1/conv input", 90, 1, "optimized"},
                    {"dense input", 150, 1, "optimized"},
                    {"dense_1 input", 72, 1, "optimized"}});
    }
    return check(qat, a, test, eo, step, 0.999);
  }
  if (a.name == "tfmot_placement" || a.name == "pytorch_placement") {
    // Quantizers on layer outputs (the relus', the logits'), none on conv and dense inputs:
    // each output QDQ sits after its layer's node, and onnxruntime rounds where the
    // simulation did.
    auto qat = output_placement_qat(data, a.name == "pytorch_placement");
    // The logits are on their quantizer's grid: one step of it, or one step of the head's
    // input through its kernel.
    const float s_out = qat.template get<9>().output_quantizer().site().grid(1).scale[0];
    const float s_in = qat.template get<8>().output_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.template get<9>().float_layer().kernel()->value))();
    // Top-1 at 0.99, not 0.999: on their own quantizer's coarse grid two logits often tie,
    // and the one-step moves of earlier activations allowed above break a tie either way
    // (2 and 1 of 256 predictions with the weights oneDNN's convolutions trained; 0 with
    // those im2col + OpenBLAS trained), while every logit stays within its allowed step.
    return check(qat, a, test, eo, std::max(double(s_out), double(s_in) * w) + double(s_out), 0.99);
  }
  if (a.name == "cnn_qat_16bit_activations") {
    // Activations on 16-bit grids: QuantizeLinear's int16 is opset 21, which the default
    // (export_options::opset 0) chooses; a fixed opset 13 refuses the grid, naming it.
    auto model = make_small_cnn();
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 3, 3e-3f);
    xq::quantize_options qo;
    qo.scheme.input.num_bits = 16;
    auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
    train(qat, data, 1, 5e-4f);
    const std::vector<std::size_t> sample{12, 12, 1};
    const xq::onnx::model m = xq::deploy::export_onnx(qat, sample, eo);
    std::size_t int16_points = 0;
    for (const auto& t : m.graph.initializers) int16_points += t.type == xq::onnx::data_type::int16;
    std::cout << a.name << ": opset " << m.opset_imports.at(0).version << ", " << int16_points
              << " int16 zero points\n";
    if (m.opset_imports.at(0).version != 21 || int16_points == 0) return 1;
    xq::deploy::export_options fixed = eo;
    fixed.opset = 13;
    try {
      (void)xq::deploy::export_onnx(qat, sample, fixed);
      std::cout << a.name << ": opset 13 took a 16-bit grid\n";
      return 1;
    } catch (const xq::argument_error& e) {
      std::cout << a.name << ": opset 13 refused: " << e.what() << "\n";
      if (std::string(e.what()).find("opset 21") == std::string::npos) return 1;
    }
    // The integer engine keeps activations of at most 9 bits (int16 operands of its
    // VPMADDWD GEMM): onnxruntime runs the file against the simulation instead. A 16-bit
    // step is small enough that one step of an earlier activation (QuantizeLinear divides,
    // the simulation multiplies by the reciprocal) reaches the logits amplified: measured up
    // to 1.5 last-layer steps, so the bound is 8. Reference path only: onnxruntime 1.32's
    // optimized path on int16 QDQ was measured 0.019 off on logits of about 3 (its own
    // transformation, not the file's integers).
    eo.expose_quantized = false;
    const float s_in = qat.template get<6>().input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.template get<6>().float_layer().kernel()->value))();
    return check(qat, a, test, eo, 8.0 * double(s_in) * w, 0.999, "reference", true);
  }
  if (a.name == "shared_depthwise" || a.name == "shared_weights_once") {
    xq::set_seed(5);
    shared_net<> model;
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 2, 3e-3f);
    xq::quantize_options qo;
    qo.per_call_site_ranges = true;
    auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
    train(qat, data, 1, 5e-4f);
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    if (a.name == "shared_weights_once") {
      // The model as written: one kernel, dequantized at each of its two call sites.
      const xq::onnx::model m = xq::deploy::export_onnx(qat, {12, 12, 1}, eo);
      std::size_t kernels = 0, users = 0;
      for (const auto& t : m.graph.initializers) kernels += t.name == "shared/kernel";
      for (const auto& n : m.graph.nodes)
        users += !n.inputs.empty() && n.inputs[0] == "shared/kernel" && n.op_type == "DequantizeLinear";
      std::cout << a.name << ": " << kernels << " initializer shared/kernel, dequantized by " << users << " nodes\n";
      if (kernels != 1 || users != 2) return 1;
      // onnxruntime 1.32's fused path cannot load a kernel shared by two convs: the reference path only.
      return check(qat, a, test, eo, double(s_in) * w, 0.999, "reference");
    }
    eo.share_reused_weights = false;  // copies per call site, which onnxruntime's fusion takes
    return check(qat, a, test, eo, double(s_in) * w, 0.999);
  }
  if (a.name == "separable") {
    // Keras's SeparableConv2D as TFLite and ONNX run it: a depthwise and a pointwise Conv.
    auto qat = trained_separable_qat(data);
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, test, eo, double(s_in) * w, 0.999);
  }
  if (a.name == "grid_layers") {
    // Pad (the zero point's real 0), Slice, Resize (nearest: asymmetric + floor; bilinear:
    // half_pixel), ConvTranspose with output_padding, GELU as Erf, layer normalization as
    // ReduceMean, and Transpose, each where the engine has its function.
    // Up to the first float op the integers are the engine's; after it (onnxruntime's
    // ConvTranspose, Resize and Erf sum and round differently from xquant's in the last
    // bits) an integer can be one step away, as after any float op. The layer norm then
    // scales a one-step move by gamma / sigma, more than one of its output's steps: the
    // head's input can be 2 away (measured: 37 of 98,304), and a logit, the sum of 384 such
    // inputs times the kernel, up to about 7 steps of one input (measured 6.7): 16 allowed.
    // In integers (measured on both paths): the middle conv's output feeds two quantizers
    // of different grids (the nearest branch's and the bilinear one's), so it leaves the
    // integers (no landing grid) and both runtimes rescale it in float — the engine its exact
    // accumulator, onnxruntime its float sum of products — 64, 40 and 16 one-step moves at
    // refine, up and bilinear inputs; then the float ops: 157 at the layer norm's input (1
    // of 2 steps), 244 at the head's (22 of 2 steps, 1 of 3).
    auto qat = trained_grid_qat(data);
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, test, eo, 16.0 * double(s_in) * w, 0.999, "reference,optimized", false,
                 {{"refine input", 132, 1}, {"up input", 84, 1}, {"bilinear input", 36, 1},
                  {"norm input", 318, 2}, {"head input", 492, 3}});
  }
  if (a.name == "transformer") {
    // Attention as Reshape, Transpose, MatMul, the causal mask and Softmax; the position
    // indices an initializer; a tanh GELU; MatMul with a transposed operand.
    // onnxruntime's float attention rounds differently from xquant's in the last bits, so an
    // attention output's integer can be one step away (as any float op's); the layer norm
    // after the residual add divides by a row's deviation over 8 features, which can be
    // small: such a step reaches the MLP's and the keys' inputs as up to 2 (measured: 3
    // and 2 of 12,288 and 24,576 integers 2 steps away, the rest within 1). In integers, on
    // both paths (measured here: 8, 23, 41, 16 and 18 one-step moves at the attention
    // output's, the MLP's, the keys' and the head's inputs; none of 2 steps).
    const xq::dataset tokens = token_data(256, 73), held_out = token_data(256, 74);
    auto qat = trained_transformer_qat(tokens);
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, held_out, eo, 2.0 * double(s_in) * w, 0.99, "reference,optimized", false,
                 {{"attention/attention_output input", 20, 1}, {"up input", 50, 2}, {"down input", 86, 2},
                  {"keys input", 36, 2}, {"head input", 40, 1}});
  }
  if (a.name == "recurrent") {
    // LSTM and GRU (reverse, linear_before_reset 0 and 1) over the projections' outputs,
    // each recurrent kernel as its int8 integers + DequantizeLinear per gate column.
    // onnxruntime's LSTM and GRU loops (their own sigmoid and tanh, their own sums) round
    // in the last bits unlike xquant's recurrence: 8 of 14,336 head inputs one step away
    // (measured, both paths).
    const xq::dataset tokens = token_data(256, 76), held_out = token_data(256, 77);
    auto qat = trained_recurrent_qat(tokens);
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, held_out, eo, 2.0 * double(s_in) * w, 0.99, "reference,optimized", false,
                 {{"head input", 20, 1}});
  }
  if (a.name == "bnn") {
    auto model = make_binary_cnn();
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 2, 1e-2f);
    eo.expose_quantized = false;
    // A sign that flips where the stem's float sums round differently moves a binary
    // accumulator by 2: the logits' batch-norm scale times 2 is one such step.
    const auto& bn = model.template get<10>();
    const double gain = xt::amax(xt::abs(bn.gamma()->value / xt::sqrt(bn.moving_variance()->value + bn.epsilon())))();
    return check(model, a, test, eo, 2.0 * gain, 0.99);
  }
  if (a.name == "residual") {
    xq::set_seed(9);
    residual_net<> model;
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 2, 3e-3f);
    xq::quantize_options qo;
    qo.cases = {xq::qdq_cases::residual_connection()};
    qo.fold_batch_norm = true;
    qo.freeze_batch_norm_after = 8;
    auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
    train(qat, data, 1, 5e-4f);
    // NVIDIA's case: the add input from the conv chain (branch <- norm) stays float, the
    // shortcut gets a QDQ.
    if (qat.merge.input_quantizer(1).enabled() || !qat.merge.input_quantizer(0).enabled()) {
      std::cout << a.name << ": the residual case placed the add's QDQ elsewhere\n";
      return 1;
    }
    // In integers (measured on both paths): the stem's output feeds two quantizers of
    // different grids (the branch conv's input and the add's shortcut), so it leaves the
    // integers (no landing grid) and both runtimes rescale it in float — the engine its
    // exact accumulator, onnxruntime its float sum of products — where 2 of 221,184 land one
    // step away; the batch-norm branch and the add stay float (NVIDIA's case) and their
    // sums round alike: 106 at the pool's input, 35 at the global pool's, 5 at the head's.
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, test, eo, double(s_in) * w, 0.999, "reference,optimized", false,
                 {{"branch input", 8, 1}, {"merge input", 8, 1}, {"pool input", 216, 1}, {"gap input", 74, 1},
                  {"head input", 14, 1}});
  }
  if (a.name == "activations") {
    xq::set_seed(4);
    activation_net<> model;
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 2, 3e-3f);
    xq::quantize_options qo;
    qo.cases = {xq::qdq_cases::residual_connection()};
    qo.spec.add("features").add("gated").add("pooled", {true, true, {1}});
    auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
    train(qat, data, 1, 5e-4f);
    // The output is softmax's: a probability moves by at most a quarter of a logit's move... within a step.
    // In integers (measured on both paths): the stem's and the branch's outputs in float (two
    // grids after each, no landing grid: 2 one-step moves each, as in the residual case),
    // then onnxruntime's Sigmoid, Tanh and swish against xquant's, which round in the last
    // bits: 67 and 13 at the gate's inputs, 75-79 at the concatenation's (2 of them 2
    // steps), 12 at the global pool's, 2 and 3 further on. The counts move with the trained
    // weights (a float sum within a rounding of a boundary): at 5e53bbf 2 at the branch's and
    // the residual's inputs, 11 at the residual's second, 2 at each features input.
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, test, eo, double(s_in) * w, 0.999, "reference,optimized", false,
                 {{"branch input", 8, 1}, {"residual input", 8, 1}, {"residual input 1", 24, 1}, {"pool input", 16, 1},
                  {"gate input", 8, 1}, {"side input", 8, 1}, {"gated input", 138, 1}, {"gated input 1", 30, 1},
                  {"features input", 162, 2}, {"features input 1", 8, 1}, {"features input 2", 8, 1},
                  {"gap input", 28, 1}, {"pooled input 1", 8, 1}, {"head input", 10, 1}});
  }
  if (a.name == "tied_embedding" || a.name == "tied_embedding_reverse" || a.name == "tied_embedding_moved" ||
      a.name == "tied_embedding_reverse_moved") {
    const bool lookup_quantized = a.name == "tied_embedding" || a.name == "tied_embedding_moved";
    // The _moved cases fine-tune at a learning rate that moves table entries past the range
    // their use's kernel quantizer last recorded: the simulation clips them to -127, which
    // each use's QuantizeLinear -> Clip must too (Q alone saturates to -128).
    const bool moved = a.name.size() > 6 && a.name.compare(a.name.size() - 6, 6, "_moved") == 0;
    const xq::dataset tokens = token_data(256, 51), held_out = token_data(256, 52);
    xq::set_seed(6);
    tied_lm<> model(true);
    xq::build(model, {1, 6});
    train(model, tokens, 3, 1e-2f);
    // One table, two uses with their own kernel quantizers: the lookup quantized and the
    // projection not (tied_embedding), or the reverse.
    xq::quantization_spec spec;
    spec.add(lookup_quantized ? "embed" : "project").add("hidden");
    auto qat = xq::quantize_model(model, xq::quantization_mode::partial, spec);
    train(qat, tokens, 1, moved ? 3e-2f : 1e-3f);
    // The simulation's integers of the table's quantized use, compared with onnxruntime's
    // (0 steps): the Clip after its QuantizeLinear at work where entries lie past the range.
    std::size_t past = 0;
    const auto uses = tied_use_integers(qat, xq::input_shapes{{1, 6}}, past);
    std::cout << a.name << ": " << uses.size() << " quantized use of the tied table, " << past << " of its "
              << (uses.empty() ? 0 : uses[0].second.size()) << " entries past the use's range\n";
    if (uses.size() != 1 || (moved && past == 0)) return 1;
    // The file keeps one initializer for the table, used by the Gather and by the Gemm.
    const xq::onnx::model m = xq::deploy::export_onnx(qat, {6}, eo);
    std::size_t tables = 0, readers = 0, floats = 0;
    std::string table;
    for (const auto& t : m.graph.initializers) {
      if (t.name.rfind("tied/", 0) == 0) ++tables, table = t.name;
      floats += t.name.find("kernel") != std::string::npos && t.dims.size() == 2 && t.dims[0] == 8 && t.dims[1] == 8 &&
                t.name.rfind("hidden", 0) != 0;
    }
    // The quantized use reads it through its own QuantizeLinear, the other directly.
    for (const auto& n : m.graph.nodes)
      for (const auto& in : n.inputs) readers += in == table && (n.op_type == "QuantizeLinear" || n.op_type == "Gather" ||
                                                                 n.op_type == "Gemm");
    std::cout << a.name << ": " << tables << " tied table initializer (" << table << ") of " << floats
              << " 8x8 table initializers, read by " << readers << " nodes\n";
    if (tables != 1 || floats != 1 || readers != 2) return 1;
    const float s_in = qat.project.input_quantizer().site().enabled() ? qat.project.input_quantizer().site().grid(1).scale[0]
                                                                       : qat.hidden.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.embed.float_layer().kernel()->value))();
    return check(qat, a, held_out, eo, 8.0 * double(s_in) * w, 0.99, "reference,optimized", false, {}, uses);
  }
  if (a.name == "siamese") {
    // Two inputs and two outputs: one feature extractor called on both images (its input
    // ranges per call site), a subtract layer, two heads; every output and exposed integer
    // against the integer engine.
    const xq::dataset pairs = pair_data(256, 41), held_out = pair_data(256, 42);
    xq::set_seed(8);
    siamese_net<> model;
    const xq::input_shapes shapes{{1, 12, 12, 1}, {1, 12, 12, 1}};
    xq::build(model, shapes);
    train(model, pairs, 3, 3e-3f);
    xq::quantize_options qo;
    qo.per_call_site_ranges = true;
    auto qat = xq::quantize_model(model, qo, shapes);
    train(qat, pairs, 1, 5e-4f);
    eo.input_names = {"first", "second"};
    eo.output_names = {"same", "quadrant"};
    auto step = [](auto& head) {
      return double(head.input_quantizer().site().grid(1).scale[0]) *
             double(xt::amax(xt::abs(head.float_layer().kernel()->value))());
    };
    // The difference of two float conv outputs (the file's a sum of float products, the
    // engine's an exact int32 sum times a float scale, both with the int32 bias) can
    // straddle a rounding boundary of the head's grid: measured 1 of 55,296.
    return check_many(qat, a, {held_out.input(0), held_out.input(1)}, shapes, eo,
                      {step(qat.same), step(qat.quadrant)}, 0.99, {{"same input", 8, 1}});
  }
  if (a.name == "correlation_float") {
    // The correlation in standard operators against xquant's: the volume of two random maps
    // (6x7, 5 channels; displacements ±3, 49 channels, partners outside the image 0),
    // computed in xquant's order of operations: equal to the bit (step 0).
    bare_cost<> model;
    const xq::input_shapes shapes{{1, 6, 7, 5}, {1, 6, 7, 5}};
    xq::build(model, shapes);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    xq::tensor x = xq::tensor::from_shape({64, 6, 7, 5}), y = xq::tensor::from_shape({64, 6, 7, 5});
    for (float& v : x) v = normal(rng);
    for (float& v : y) v = normal(rng);
    eo.expose_quantized = false;
    return check_many(model, a, {x, y}, shapes, eo, {0.0}, 0.0);
  }
  if (a.name == "correlation") {
    // A cost-volume net (request 1's PWC-Net in small), its correlation's two inputs
    // quantized: every output and exposed integer against the integer engine, whose volume
    // is an exact int32 sum requantized onto the next grid where the file's is float
    // products summed in float: the head's input may land a step away where the two sums
    // straddle a rounding boundary.
    const xq::dataset frames = shift_data(256, 61), held_out = shift_data(256, 62);
    xq::set_seed(13);
    cost_volume_net<> model;
    const xq::input_shapes shapes{{1, 12, 12, 1}, {1, 12, 12, 1}};
    xq::build(model, shapes);
    train(model, frames, 3, 3e-3f);
    xq::quantize_options qo;
    qo.spec.add("cost");
    auto qat = xq::quantize_model(model, qo, shapes);
    train(qat, frames, 1, 5e-4f);
    const double step = double(qat.head.input_quantizer().site().grid(1).scale[0]) *
                        double(xt::amax(xt::abs(qat.head.float_layer().kernel()->value))());
    return check_many(qat, a, {held_out.input(0), held_out.input(1)}, shapes, eo, {2.0 * step}, 0.99,
                      {{"head input", 64, 1}});
  }
  if (a.name == "user_layer") {
    // A user's layer (user_layers::channel_shuffle: its own forward and backward, a twin by
    // one xq::quantize specialization, a deploy form by describe_deployment in its
    // namespace) exports as its composition: Reshape -> Transpose -> Reshape, its input
    // QDQ'd; it lowers the same way: against the integer engine, exposed integers exact.
    xq::set_seed(17);
    shuffle_net<> model;
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 2, 3e-3f);
    auto qat = xq::quantize_model(model, xq::quantize_options{}, {1, 12, 12, 1});
    train(qat, data, 1, 5e-4f);
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, test, eo, double(s_in) * w, 0.999);
  }
  if (a.name == "cnn_tfmot") {
    // A CNN of conv -> batch norm -> relu layers with tfmot's scheme (quantizers on layer
    // outputs, asymmetric uint8 activations, FakeQuant's half-up rounding on the nudged
    // range, per-channel kernels) and its batch norms folded into the convolutions: every
    // exposed integer compared with the engine's.
    xq::set_seed(29);
    auto model = xq::sequential(xq::conv2d(6, 3).padding(xq::padding::same).use_bias(false), xq::batch_norm().momentum(0.5f),
                                xq::relu(), xq::max_pool2d(2), xq::conv2d(8, 3).use_bias(false),
                                xq::batch_norm().momentum(0.5f), xq::relu(), xq::flatten(), xq::dense(16), xq::relu(),
                                xq::dense(4));
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 3, 3e-3f);
    xq::quantize_options qo;
    qo.scheme = xq::schemes::tfmot();
    qo.fold_batch_norm = true;
    qo.freeze_batch_norm_after = 8;
    auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
    train(qat, data, 2, 5e-4f);
    // As tfmot_placement: the logits on their own quantizer's grid, one step of it or one
    // step of the head's input through its kernel.
    const float s_out = qat.template get<10>().output_quantizer().site().grid(1).scale[0];
    const float s_in = qat.template get<9>().output_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.template get<10>().float_layer().kernel()->value))();
    // tfmot leaves the model's input float: the first conv sums float products, in
    // onnxruntime's order and in the engine's, and 3 of 221,184 of its relu's integers land
    // one step away (measured, both paths), 3 more after the second conv.
    return check(qat, a, test, eo, std::max(double(s_out), double(s_in) * w) + double(s_out), 0.99,
                 "reference,optimized", false, {{"relu output", 10, 1}, {"relu_1 output", 10, 1}});
  }
  if (a.name == "cnn_lsq") {
    // A CNN of quant layers with LSQ's learned-scale quantizers on inputs and kernels: their
    // grids through the one quantizer base (quantizer_base::grid_of); every exposed integer
    // against the integer engine.
    using lsq_conv = xq::quant_conv2d<xq::lsq_quantizer, xq::lsq_quantizer>;
    using lsq_dense = xq::quant_dense<xq::lsq_quantizer, xq::lsq_quantizer>;
    xq::set_seed(19);
    auto model = xq::sequential(lsq_conv(6, 3, xq::lsq_quantizer(), xq::lsq_quantizer()).padding(xq::padding::same),
                                xq::relu(), xq::max_pool2d(2), xq::flatten(), lsq_dense(4, xq::lsq_quantizer(), xq::lsq_quantizer()));
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 3, 3e-3f);
    auto& head = model.template get<4>();
    const double s_in = head.input_quantizer.scale()->value.data()[0];
    const double w = xt::amax(xt::abs(head.float_layer().kernel()->value))();
    return check(model, a, test, eo, s_in * w, 0.99);
  }
  std::cerr << "onnx_export_cases: unknown case \"" << a.name << "\"\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  run_args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--case") a.name = v;
    else if (k == "--out") a.dir = v;
    else if (k == "--python") a.python = v;
    else if (k == "--checker") a.checker = v;
    else if (k == "--skip-reason") a.skip = v;
  }
  if (a.name.empty() || a.dir.empty() || (a.skip.empty() && (a.python.empty() || a.checker.empty()))) {
    std::cerr << "usage: onnx_export_cases --case NAME --out DIR (--python PY --checker PATH | --skip-reason TEXT)\n";
    return 2;
  }
  return run(a);
} catch (const std::exception& e) {
  std::cerr << "onnx_export_cases: " << e.what() << "\n";
  return 1;
}
