// Low-bit ONNX export checked by onnxruntime (CTest label onnx; issue 36, item 3): a small
// conv + dense net trained briefly, quantized with one of the peers' low-bit schemes and
// trained one more epoch, exported with every quantized tensor exposed
// (export_options::expose_quantized), run by tools/onnx_check.py (ONNX's checker, then
// onnxruntime's reference path ORT_DISABLE_ALL and its optimized path ORT_ENABLE_ALL, or
// ONNX's reference evaluator for the spec form), whose outputs this program reads back and
// compares with the simulation's own tensors:
//
//  1. every low-bit kernel as the file dequantizes it ("q:<kernel quantizer>", the ONNX
//     layout) against the simulation's dequantized kernel: identical, 100%;
//  2. every dynamic quantization point (scales from each tensor: 8da4w's per-token int8,
//     FP8 per row, MX, NVFP4) on the runtime's own input ("q:<label>/input"), through the
//     simulation's quantizer, against the runtime's values ("q:<label>"): identical, 100% —
//     the file's operators compute the format's numerics exactly;
//  3. every quantized tensor against the simulation's own pass on the same images: the
//     runtime's float sums (Conv, MatMul) run in another order than the simulation's, so a
//     dynamic point's row or block scale, which follows its input, moves by an ulp and with it
//     the row's values. The stated bounds: a quantizer of the model's input itself
//     identical; a static int8 point's integers at most 1% moved, by one step at most; a
//     dynamic point's input within 1e-4 of its largest magnitude behind points that matched
//     exactly (float rounding of the same sums), and its values' SQNR against the
//     simulation's at least 40 dB (measured 44.9 to 72 dB; the report prints each);
//  4. the logits: the same top-1 on at least 99% of the images.
//
//   onnx_low_bit_cases --case NAME --out DIR (--python PY --checker tools/onnx_check.py | --skip-reason TEXT)
//
// Cases: w4a8, 8da4w, mxfp4, mxfp4_weight_only, mxfp8, nvfp4, nvfp4_weight_only, fp8,
// int2_weight_only (INT2 at opset 25), int4_weight_only (UINT4 with zero point 8, then an Add
// of each group's float zero point over the kernel reshaped into its groups),
// w4a8_range_learning (the groups' scales learned in the QAT epoch: a static INT4 grid); lm_8da4w,
// lm_int4_weight_only and lm_nvfp4 the same checks on a transformer's layers (deploy_models.hpp's
// tiny_transformer at width 32: attention's projections, the MLP, the keys, dynamic points per
// token on (N, 6, 32) tensors); mxfp4_spec and nvfp4_spec export the spec form
// (FLOAT4E2M1, FLOAT8E8M0 scales) and the runtime form, run both in ONNX's reference
// evaluator and require every exposed output of the one to equal the other's, bit for bit,
// besides checks 1-3 on the spec form. Exit status: 0 passed, 1 failed, 77 skipped.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <xquant/deploy/export_onnx.hpp>
#include <xquant/deploy/graph/build_graph.hpp>
#include <xquant/deploy/graph/quantizer_grids.hpp>
#include <xquant/io/npy.hpp>
#include <xquant/quantizers/model_quantizers.hpp>
#include <xquant/xquant.hpp>

#include "deploy_models.hpp"

namespace {

using namespace deploy_test;

/// A first conv on the image's one channel (no block fits it: the scheme keeps NVIDIA's
/// int8 there), a second on 32 channels (blocked along them), a pooled, flattened dense
/// layer on 576 features and a head on 32.
template <class Conv = xq::conv2d, class Pool = xq::max_pool2d, class Flat = xq::flatten, class Dense = xq::dense>
struct low_bit_net {
  Conv first{xq::conv2d(32, 3).padding(xq::padding::same)};
  Conv second{xq::conv2d(16, 3).padding(xq::padding::same)};
  Pool pool{xq::max_pool2d(2)};
  Flat flat;
  Dense hidden{xq::dense(32)};
  Dense head{xq::dense(4)};
  XQ_CHILDREN(first, second, pool, flat, hidden, head)
  xq::var operator()(const xq::var& x) {
    const xq::var h = pool(xq::ops::relu(second(xq::ops::relu(first(x)))));
    return head(xq::ops::relu(hidden(flat(h))));
  }
};

struct run_args {
  std::string name, dir, python, checker, skip;
};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

/// The checker's file name for output `name` (tools/onnx_check.py --save-outputs).
std::string safe(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return s;
}

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

/// (N, C, H, W) -> (N, H, W, C).
xq::tensor to_nhwc(const xq::tensor& t) {
  if (t.dimension() != 4) return t;
  const std::size_t n = t.shape()[0], c = t.shape()[1], h = t.shape()[2], w = t.shape()[3];
  xq::tensor o = xq::tensor::from_shape({n, h, w, c});
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t k = 0; k < c; ++k)
      for (std::size_t i = 0; i < h; ++i)
        for (std::size_t j = 0; j < w; ++j) o(b, i, j, k) = t(b, k, i, j);
  return o;
}

/// A kernel in the ONNX layout the exporter writes: HWIO -> OIHW for a conv, as is otherwise.
xq::tensor onnx_layout(const xq::tensor& k) {
  if (k.dimension() != 4) return k;
  const std::size_t kh = k.shape()[0], kw = k.shape()[1], c = k.shape()[2], f = k.shape()[3];
  xq::tensor o = xq::tensor::from_shape({f, c, kh, kw});
  for (std::size_t u = 0; u < kh; ++u)
    for (std::size_t v = 0; v < kw; ++v)
      for (std::size_t i = 0; i < c; ++i)
        for (std::size_t j = 0; j < f; ++j) o(j, i, u, v) = k(u, v, i, j);
  return o;
}

/// How many elements differ (a == b as floats, NaN equal to NaN).
std::size_t differing(const xq::tensor& a, const xq::tensor& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  std::size_t d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float x = a.data()[i], y = b.data()[i];
    d += !(x == y) && !(std::isnan(x) && std::isnan(y));
  }
  return d;
}

/// One quantized tensor of the simulation: where the file exposes it and what it holds.
struct exposed {
  std::string name;             ///< the file's output
  std::string quantizer;        ///< the quantizer's path
  const xq::quantizer_base* q = nullptr;
  bool dynamic = false;         ///< values (a format); else the integers of a fixed grid
  bool of_model_input = false;  ///< it quantizes the model's input itself (nothing before it rounds)
  xq::tensor simulated_input;   ///< the simulation's input to it (NHWC)
  xq::tensor simulated;         ///< its values, or integers (NCHW where spatial, as the file)
};

/// The case's outcome, path by path.
struct verdict {
  bool ok = true;
  void fail(const std::string& why) {
    ok = false;
    std::cout << "  FAIL: " << why << "\n";
  }
};

/// The simulation's quantized tensors (a traced pass over `images`) and its kernels.
template <class Model>
std::vector<exposed> simulation_tensors(Model& model, const xq::tensor& images, const xq::deploy::deploy_graph& g,
                                        std::vector<std::pair<std::string, xq::tensor>>& kernels, xq::tensor& logits) {
  std::map<std::string, const xq::quantizer_base*> quantizers;
  xq::detail::for_each_quantizer_ref(
      xq::as_layer_ref(model),
      [](void* f, xq::quantizer_base& q) { (*static_cast<std::map<std::string, const xq::quantizer_base*>*>(f))[q.path()] = &q; },
      &quantizers);
  xq::graph_trace trace;
  {
    const xq::no_grad nothing_recorded;
    const xq::training_mode inference(false);
    logits = model(xq::var(images)).value();
  }
  const xq::graph_trace idle;
  std::unordered_map<std::string, std::vector<const xq::traced_call*>> calls;
  for (const xq::traced_call& c : trace.calls())
    if (!c.function) calls[c.path].push_back(&c);
  std::vector<exposed> out;
  for (const auto& n : g.nodes) {
    if (const auto* l = std::get_if<xq::deploy::op::linear>(&n.op))
      if (l->kernel.quantized && (l->kernel.q.grid.block_size || xq::is_float_element(l->kernel.q.grid.element)))
        kernels.emplace_back("q:" + l->kernel.q.quantizer, onnx_layout(l->kernel.q.dequantized));
    const auto* q = std::get_if<xq::deploy::op::quantize>(&n.op);
    if (!q) continue;
    const auto& traced = calls.at(q->layer).at(q->call);
    exposed e;
    e.name = "q:" + q->label;
    e.quantizer = q->quantizer;
    e.q = quantizers.at(q->quantizer);
    e.dynamic = bool(q->format);
    e.simulated_input = q->output ? traced->output->value : traced->inputs.at(q->input)->value;
    e.of_model_input = e.simulated_input.shape() == images.shape() && differing(e.simulated_input, images) == 0;
    const xq::tensor values = xq::deploy::detail::inference_output(*e.q, e.simulated_input);
    if (e.dynamic) {
      e.simulated = to_nchw(values);
    } else {
      const auto grid = xq::deploy::grid_of(*e.q, e.simulated_input, q->quantizer);
      const auto ints = xq::grid_integers(grid, values, q->quantizer);
      xq::tensor t = xq::tensor::from_shape(values.shape());
      std::copy(ints.begin(), ints.end(), t.begin());
      e.simulated = to_nchw(t);
    }
    out.push_back(std::move(e));
  }
  return out;
}

/// Runs the checker on `file` (onnxruntime's two paths, or the reference evaluator), its
/// outputs saved under `saved`; the exit status.
int run_checker(const run_args& a, const std::string& file, const std::string& input, const std::string& saved,
                const std::vector<std::pair<std::string, std::string>>& expected, bool evaluator) {
  std::string cmd = quoted(a.python) + " " + quoted(a.checker) + " " + quoted(file) + " --input input=" + quoted(input) +
                    " --min-share 0 --save-outputs " + quoted(saved) + " --report " + quoted(saved + "/report.json");
  if (evaluator) cmd += " --evaluator reference";
  for (const auto& e : expected) cmd += " --expected " + quoted(e.first + "=" + e.second);
  std::cout << cmd << "\n" << std::flush;
  return std::system(cmd.c_str());
}

/// Checks 1-4 (the file comment) on what path `path` computed (saved under `saved`).
void judge(const std::string& path, const std::string& saved, const std::vector<exposed>& points,
           const std::vector<std::pair<std::string, xq::tensor>>& kernels, const xq::tensor& logits,
           double max_moved_share, double input_range, double min_sqnr_db, verdict& v) {
  auto got = [&](const std::string& name) { return xq::io::load_npy(saved + "/" + path + "." + safe(name) + ".npy"); };
  std::cout << "[" << path << "]\n";
  for (const auto& [name, k] : kernels) {
    const std::size_t d = differing(got(name), k);
    std::cout << "  kernel " << name << ": " << k.size() - d << " of " << k.size() << " identical\n";
    if (d) v.fail(name + ": the file's kernel is not the simulation's");
  }
  bool upstream_identical = true;
  for (const exposed& e : points) {
    const xq::tensor ours = got(e.name);
    std::size_t d = differing(ours, e.simulated), codes_apart = 0;
    if (e.dynamic) {
      // 2. the runtime's own input through the simulation's quantizer: the runtime's values.
      const xq::tensor input = to_nhwc(got(e.name + "/input"));
      const xq::tensor own = to_nchw(xq::deploy::detail::inference_output(*e.q, input));
      const std::size_t own_d = differing(ours, own);
      std::cout << "  " << e.name << " on the runtime's own input: " << ours.size() - own_d << " of " << ours.size()
                << " identical\n";
      if (own_d) v.fail(e.name + ": the file's operators are not the format's numerics");
    } else {
      for (std::size_t i = 0; i < ours.size(); ++i)
        codes_apart = std::max<std::size_t>(codes_apart, std::size_t(std::fabs(ours.data()[i] - e.simulated.data()[i])));
    }
    const double share = double(d) / double(std::max<std::size_t>(ours.size(), 1));
    std::cout << "  " << e.name << (e.dynamic ? " (values)" : " (integers)") << " against the simulation: "
              << ours.size() - d << " of " << ours.size() << " identical";
    if (d && !e.dynamic) std::cout << ", the others " << codes_apart << " step(s) at most";
    std::cout << "\n";
    if (e.of_model_input && d) v.fail(e.name + ": the model's input, quantized, differs");
    if (e.dynamic) {
      // A dynamic point's scales follow its input: a float sum before it in another order
      // moves a row's or block's scale by an ulp and with it every value of the row, so
      // the bound is on the input (float rounding of the same sums: within `input_range`
      // of the tensor's largest magnitude) and on the values' SQNR against the simulation's.
      const xq::tensor input = got(e.name + "/input"), want = to_nchw(e.simulated_input);
      double largest = 0, diff = 0, signal = 0, noise = 0;
      for (std::size_t i = 0; i < input.size(); ++i) {
        largest = std::max(largest, double(std::fabs(want.data()[i])));
        diff = std::max(diff, double(std::fabs(input.data()[i] - want.data()[i])));
      }
      for (std::size_t i = 0; i < ours.size(); ++i) {
        const double a = e.simulated.data()[i], b = ours.data()[i];
        signal += a * a, noise += (a - b) * (a - b);
      }
      const double sqnr = noise == 0 ? INFINITY : 10.0 * std::log10(signal / noise);
      std::cout << "    its input: the largest difference " << diff / std::max(largest, 1e-30)
                << " of the largest magnitude; values' SQNR against the simulation " << sqnr << " dB\n";
      // Behind points the runtime matched exactly, the input differs by float rounding only;
      // behind one whose values moved, by what those moved values make of it.
      if (upstream_identical && diff > input_range * largest) v.fail(e.name + ": its input differs beyond float rounding");
      if (sqnr < min_sqnr_db) v.fail(e.name + ": the values' SQNR is below the stated bound");
    } else if (share > max_moved_share || codes_apart > 1) {
      v.fail(e.name + ": more moved integers than the stated bound");
    }
    upstream_identical = upstream_identical && d == 0;
  }
  const xq::tensor out = got("output");
  std::size_t same = 0;
  const std::size_t classes = logits.shape().back(), rows = logits.size() / classes;
  double largest = 0, diff = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* a = logits.data() + r * classes;
    const float* b = out.data() + r * classes;
    same += std::max_element(a, a + classes) - a == std::max_element(b, b + classes) - b;
    for (std::size_t c = 0; c < classes; ++c)
      largest = std::max(largest, double(std::fabs(a[c]))), diff = std::max(diff, double(std::fabs(a[c] - b[c])));
  }
  std::cout << "  logits: " << differing(out, logits) << " of " << logits.size() << " differ, the largest by " << diff
            << " (" << diff / std::max(largest, 1e-30) << " of the largest logit); top-1 the same on " << same << " of "
            << rows << "\n";
  if (double(same) < 0.99 * double(rows)) v.fail("top-1 agreement below 99%");
}

/// Exports the trained `qat` (inputs of `sample_shape`, no batch axis) and checks it on
/// `test` (the file comment's checks).
template <class Model>
int check(const run_args& a, Model& qat, const xq::dataset& test, const std::vector<std::size_t>& sample_shape,
          bool spec) {
  std::vector<std::size_t> batch_shape{1};
  batch_shape.insert(batch_shape.end(), sample_shape.begin(), sample_shape.end());
  std::filesystem::create_directories(a.dir);
  const std::string base = a.dir + "/" + a.name;
  xq::deploy::export_options eo;
  eo.expose_quantized = true;
  const xq::deploy::deploy_graph g = xq::deploy::build_graph(qat, xq::input_shapes{batch_shape});
  std::vector<std::pair<std::string, xq::tensor>> kernels;
  xq::tensor logits;
  const std::vector<exposed> points = simulation_tensors(qat, test.inputs, g, kernels, logits);
  xq::deploy::export_onnx(qat, sample_shape, base + ".onnx", eo);
  std::cout << a.name << ": wrote " << base << ".onnx (" << kernels.size() << " low-bit kernels, " << points.size()
            << " quantized tensors)\n";
  if (spec) {
    eo.low_bit_form = xq::deploy::onnx_low_bit_form::spec;
    xq::deploy::export_onnx(qat, sample_shape, base + ".spec.onnx", eo);
    std::cout << a.name << ": wrote " << base << ".spec.onnx (FLOAT4E2M1, FLOAT8E8M0)\n";
  }
  xq::io::save_npy(base + ".input.npy", test.inputs);
  std::vector<std::pair<std::string, std::string>> expected;
  std::vector<std::string> names{"output"};
  xq::io::save_npy(base + ".output.npy", logits);
  expected.emplace_back("output", base + ".output.npy");
  int k = 0;
  auto add = [&](const std::string& name, const xq::tensor& t) {
    const std::string file = base + ".e" + std::to_string(k++) + ".npy";
    xq::io::save_npy(file, t);
    expected.emplace_back(name, file);
    names.push_back(name);
  };
  for (const auto& [name, t] : kernels) add(name, t);
  for (const exposed& e : points) {
    add(e.name, e.simulated);
    if (e.dynamic) add(e.name + "/input", to_nchw(e.simulated_input));
  }
  if (!a.skip.empty()) {
    std::cout << a.name << ": SKIPPED the runtime check: " << a.skip << "\n";
    return 77;
  }
  // Spatial bounds: the share of a tensor's elements that the runtime's float sums may move to
  // a neighbouring code of a later point (measured: see the report's lines; the stated bound).
  const double bound = 0.01, input_range = 1e-4, min_sqnr = 40.0;
  verdict v;
  if (!spec) {
    const std::string saved = base + ".ort";
    if (run_checker(a, base + ".onnx", base + ".input.npy", saved, expected, false) != 0) return 1;
    for (const char* path : {"reference", "optimized"}) judge(path, saved, points, kernels, logits, bound, input_range, min_sqnr, v);
  } else {
    // The spec form in the reference evaluator, checked as above; then the runtime form in
    // the same evaluator: every exposed output the same, bit for bit.
    const std::string saved = base + ".spec", runtime = base + ".runtime";
    if (run_checker(a, base + ".spec.onnx", base + ".input.npy", saved, expected, true) != 0) return 1;
    judge("evaluator", saved, points, kernels, logits, bound, input_range, min_sqnr, v);
    if (run_checker(a, base + ".onnx", base + ".input.npy", runtime, expected, true) != 0) return 1;
    std::size_t total = 0, d = 0;
    for (const std::string& name : names) {
      const xq::tensor x = xq::io::load_npy(saved + "/evaluator." + safe(name) + ".npy");
      const xq::tensor y = xq::io::load_npy(runtime + "/evaluator." + safe(name) + ".npy");
      total += x.size();
      d += differing(x, y);
      if (differing(x, y)) v.fail(name + ": the spec form differs from the runtime form");
    }
    std::cout << "spec form against runtime form (reference evaluator, " << names.size() << " outputs): " << total - d
              << " of " << total << " elements identical\n";
  }
  std::cout << a.name << ": " << (v.ok ? "passed" : "FAILED") << "\n";
  return v.ok ? 0 : 1;
}

int run(const run_args& a) {
  std::string scheme = a.name;
  const bool spec = scheme.size() > 5 && scheme.compare(scheme.size() - 5, 5, "_spec") == 0;
  if (spec) scheme.resize(scheme.size() - 5);
  const bool lm = scheme.compare(0, 3, "lm_") == 0;
  if (lm) scheme.erase(0, 3);
  xq::quantize_options qo;
  if (scheme == "w4a8") qo.scheme = xq::schemes::w4a8(32);
  else if (scheme == "8da4w") qo.scheme = xq::schemes::torchao_8da4w(32);
  else if (scheme == "mxfp4") qo.scheme = xq::schemes::mx();
  else if (scheme == "mxfp4_weight_only") qo.scheme = xq::schemes::mx_weight_only();
  else if (scheme == "mxfp8") qo.scheme = xq::schemes::mx(xq::low_bit::element_type::e4m3fn, xq::low_bit::element_type::e4m3fn);
  else if (scheme == "nvfp4") qo.scheme = xq::schemes::nvfp4();
  else if (scheme == "nvfp4_weight_only") qo.scheme = xq::schemes::nvfp4_weight_only();
  else if (scheme == "fp8") qo.scheme = xq::schemes::torchao_float8_dynamic();
  else if (scheme == "int2_weight_only") qo.scheme = xq::schemes::torchao_intx_weight_only(2, 32);
  else if (scheme == "int4_weight_only") qo.scheme = xq::schemes::torchao_int4_weight_only(32);
  else if (scheme == "w4a8_range_learning") qo.scheme = xq::schemes::with_range_learning(xq::schemes::w4a8(32));
  else {
    std::cerr << "onnx_low_bit_cases: unknown case \"" << a.name << "\"\n";
    return 2;
  }
  if (lm) {
    const xq::dataset tokens = token_data(256, 31), held_out = token_data(128, 32);
    xq::set_seed(29);
    tiny_transformer<> model(true, 32);  // causal, width 32: the dense layers' inputs hold blocks of 32
    xq::build(model, {1, 6});
    train(model, tokens, 3, 3e-3f);
    auto qat = xq::quantize_model(model, qo, {1, 6});
    train(qat, tokens, 1, 5e-4f);
    return check(a, qat, held_out, {6}, spec);
  }
  const xq::dataset data = quadrant_data(256, 11), test = quadrant_data(spec ? 32 : 256, 12);
  xq::set_seed(23);
  low_bit_net<> model;
  xq::build(model, {1, 12, 12, 1});
  train(model, data, 2, 3e-3f);
  auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
  train(qat, data, 1, 5e-4f);
  return check(a, qat, test, {12, 12, 1}, spec);
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
    std::cerr << "usage: onnx_low_bit_cases --case NAME --out DIR (--python PY --checker PATH | --skip-reason TEXT)\n";
    return 2;
  }
  return run(a);
} catch (const std::exception& e) {
  std::cerr << "onnx_low_bit_cases: " << e.what() << "\n";
  return 1;
}
