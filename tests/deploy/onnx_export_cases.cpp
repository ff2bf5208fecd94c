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
#include <xquant/deploy/lower.hpp>
#include <xquant/io/npy.hpp>
#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/wrappers/quant_conv2d.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xquant/xquant.hpp>

#include "deploy_models.hpp"

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

/// Exports `model`, writes the engine's tensors and runs the checker. `logit_step`: what one
/// quantization step of the logits' input moves a logit by at most.
template <class Model>
int check(Model& model, const run_args& a, const xq::dataset& test, const xq::deploy::export_options& eo,
          double logit_step, double min_top1, const std::string& paths = "reference,optimized",
          bool against_simulation = false, const std::map<std::string, int>& q_steps = {}) {
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
                    " --min-share 0.9999 --paths " + paths + " --report " + quoted(base + ".report.json");
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
      const auto step = q_steps.find(p.label);
      cmd += " --expected " + quoted("q:" + p.label + "=" + file) + " --step " +
             quoted("q:" + p.label + "=" + std::to_string(step == q_steps.end() ? 1 : step->second));
    }
  if (!a.skip.empty()) {
    std::cout << a.name << ": SKIPPED the runtime check: " << a.skip << "\n";
    return 77;
  }
  std::cout << cmd << "\n" << std::flush;
  const int rc = std::system(cmd.c_str());
  return rc == 0 ? 0 : 1;
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
    auto qat = trained_grid_qat(data);
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, test, eo, 16.0 * double(s_in) * w, 0.999, "reference,optimized", false, {{"head input", 2}});
  }
  if (a.name == "transformer") {
    // Attention as Reshape, Transpose, MatMul, the causal mask and Softmax; the position
    // indices an initializer; a tanh GELU; MatMul with a transposed operand.
    // onnxruntime's float attention rounds differently from xquant's in the last bits, so an
    // attention output's integer can be one step away (as any float op's); the layer norm
    // after the residual add divides by a row's deviation over 8 features, which can be
    // small: such a step reaches the MLP's and the keys' inputs as up to 2 (measured: 3
    // and 2 of 12,288 and 24,576 integers 2 steps away, the rest within 1).
    const xq::dataset tokens = token_data(256, 73), held_out = token_data(256, 74);
    auto qat = trained_transformer_qat(tokens);
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, held_out, eo, 2.0 * double(s_in) * w, 0.99, "reference,optimized", false,
                 {{"up input", 2}, {"down input", 2}, {"keys input", 2}});
  }
  if (a.name == "recurrent") {
    // LSTM and GRU (reverse, linear_before_reset 0 and 1) over the projections' outputs,
    // each recurrent kernel as its int8 integers + DequantizeLinear per gate column.
    const xq::dataset tokens = token_data(256, 76), held_out = token_data(256, 77);
    auto qat = trained_recurrent_qat(tokens);
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, held_out, eo, 2.0 * double(s_in) * w, 0.99);
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
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, test, eo, double(s_in) * w, 0.999);
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
    const float s_in = qat.head.input_quantizer().site().grid(1).scale[0];
    const double w = xt::amax(xt::abs(qat.head.float_layer().kernel()->value))();
    return check(qat, a, test, eo, double(s_in) * w, 0.999);
  }
  if (a.name == "tied_embedding" || a.name == "tied_embedding_reverse") {
    const bool lookup_quantized = a.name == "tied_embedding";
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
    train(qat, tokens, 1, 1e-3f);
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
    return check(qat, a, held_out, eo, 8.0 * double(s_in) * w, 0.99);
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
