// The ONNX writer and tools/onnx_check.py end to end (CTest: onnx.qdq_opset13/21, label onnx).
//
//   onnx_fixture --opset 13|21 --out DIR [--python PY --checker tools/onnx_check.py]
//                [--skip-reason TEXT]
//
// Builds by hand, with xq::onnx, the QDQ layout xquant's exporter writes for a small CNN:
//
//   x (float, N x 2 x 8 x 8) -> QuantizeLinear/DequantizeLinear (int8, per tensor)
//   -> Conv 3x3 pad 1 (weights int8 per channel + DequantizeLinear axis 0, or int4 at
//      opset 21; int32 bias + DequantizeLinear at scale x_scale * w_scale[c])
//   -> Relu -> Q/DQ (int8, zero point -128) -> MaxPool 2x2 -> Flatten (opset 13) or
//      Reshape (opset 21) -> Q/DQ -> Gemm transB (opset 13) or MatMul + Add (opset 21),
//      int8 per-channel weights, int32 bias -> logits (float)
//   -> QuantizeLinear (int8) -> logits_q
//
// writes it, reads it back (parse(serialize(m)) == m, the file's bytes again), writes the
// input and the outputs an independent scalar loop computes as .npy files, and runs
// onnx_check.py: ONNX's checker, then onnxruntime's reference and optimized paths against
// those outputs. All scales are powers of two and every sum stays below 2^24 steps, so
// every product and sum is exact in float: any summation order (ORT's float conv, its
// integer kernels) gives the same bits, and the check can ask for exact logits and at most
// one step on logits_q. Then it checks the checker: a wrong expectation must fail.
//
// Without --python (onnx or onnxruntime missing at configure time) the model is still
// written and read back, then the test reports itself skipped (exit 77) with the reason.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <vector>
#include <xquant/deploy/onnx_model.hpp>
#include <xquant/io/npy.hpp>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/wait.h>
#endif

namespace {

namespace fs = std::filesystem;
using namespace xq::onnx;

constexpr int batch = 4, in_channels = 2, size = 8, out_channels = 4, pooled = 4, classes = 3;
constexpr int features = out_channels * pooled * pooled;  // 64

// ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point), x / scale in float.
int quantize(float x, float scale, int zero_point, int lo, int hi) {
  const float q = std::nearbyint(x / scale) + static_cast<float>(zero_point);
  return static_cast<int>(std::min(std::max(q, static_cast<float>(lo)), static_cast<float>(hi)));
}

struct fixture {
  int opset = 13;
  // Parameters (integers and power-of-two scales).
  float x_scale = 1.0f / 16;
  std::vector<std::int8_t> w;      // [out][in][3][3]
  std::vector<float> w_scale;      // [out]
  std::vector<std::int32_t> bias;  // [out], scale x_scale * w_scale[c]
  float r_scale = 0.25f;
  int r_zero = -128;
  std::vector<std::int8_t> w2;      // opset 13: [classes][features]; 21: [features][classes]
  std::vector<float> w2_scale;      // [classes]
  std::vector<std::int32_t> bias2;  // [classes], scale r_scale * w2_scale[k]
  float out_scale = 0.25f;

  explicit fixture(int opset_version) : opset(opset_version) {
    std::mt19937 gen(20260 + opset);
    const bool int4 = opset >= 21;
    std::uniform_int_distribution<int> wq(int4 ? -8 : -127, int4 ? 7 : 127);
    w.resize(out_channels * in_channels * 9);
    for (auto& v : w) v = static_cast<std::int8_t>(wq(gen));
    w_scale = int4 ? std::vector<float>{1.0f / 2, 1.0f / 4, 1.0f / 8, 1.0f}
                   : std::vector<float>{1.0f / 64, 1.0f / 128, 1.0f / 32, 1.0f / 256};
    std::uniform_int_distribution<int> bq(-2000, 2000);
    for (int c = 0; c < out_channels; ++c) bias.push_back(bq(gen));
    std::uniform_int_distribution<int> w2q(-127, 127);
    w2.resize(classes * features);
    for (auto& v : w2) v = static_cast<std::int8_t>(w2q(gen));
    w2_scale = {1.0f / 1024, 1.0f / 2048, 1.0f / 512};
    for (int k = 0; k < classes; ++k) bias2.push_back(bq(gen) * 8);
  }

  float w2_at(int k, int j) const {  // W2[k][j] as the model stores it
    return static_cast<float>(opset >= 21 ? w2[j * classes + k] : w2[k * features + j]);
  }

  model build() const {
    const bool v21 = opset >= 21;
    graph g;
    g.name = "xquant_qdq_cnn";
    g.inputs.push_back({"x", data_type::float32, {"N", in_channels, size, size}});
    g.add_initializer(tensor_data::float32_scalar("x_scale", x_scale));
    g.add_initializer(tensor_data::int8_scalar("x_zero_point", 0));
    g.add_node("QuantizeLinear", {"x", "x_scale", "x_zero_point"}, {"x_q"});
    g.add_node("DequantizeLinear", {"x_q", "x_scale", "x_zero_point"}, {"x_dq"});

    const std::vector<std::int64_t> w_dims{out_channels, in_channels, 3, 3};
    if (v21) {
      g.add_initializer(tensor_data::int4("conv.w_q", w_dims, w));
      g.add_initializer(
          tensor_data::int4("conv.w_zero_point", {out_channels}, std::vector<std::int8_t>(out_channels, 0)));
    } else {
      g.add_initializer(tensor_data::int8("conv.w_q", w_dims, w));
      g.add_initializer(
          tensor_data::int8("conv.w_zero_point", {out_channels}, std::vector<std::int8_t>(out_channels, 0)));
    }
    g.add_initializer(tensor_data::float32("conv.w_scale", {out_channels}, w_scale));
    g.add_node("DequantizeLinear", {"conv.w_q", "conv.w_scale", "conv.w_zero_point"}, {"conv.w"},
               {int_attribute("axis", 0)});
    std::vector<float> b_scale;
    for (float s : w_scale) b_scale.push_back(x_scale * s);
    g.add_initializer(tensor_data::int32("conv.b_q", {out_channels}, bias));
    g.add_initializer(tensor_data::float32("conv.b_scale", {out_channels}, b_scale));
    g.add_initializer(
        tensor_data::int32("conv.b_zero_point", {out_channels}, std::vector<std::int32_t>(out_channels, 0)));
    g.add_node("DequantizeLinear", {"conv.b_q", "conv.b_scale", "conv.b_zero_point"}, {"conv.b"},
               {int_attribute("axis", 0)});
    g.add_node("Conv", {"x_dq", "conv.w", "conv.b"}, {"conv.y"},
               {ints_attribute("kernel_shape", {3, 3}), ints_attribute("pads", {1, 1, 1, 1}),
                ints_attribute("strides", {1, 1}), ints_attribute("dilations", {1, 1}), int_attribute("group", 1)},
               "conv");
    g.add_node("Relu", {"conv.y"}, {"relu.y"});
    g.add_initializer(tensor_data::float32_scalar("act_scale", r_scale));
    g.add_initializer(tensor_data::int8_scalar("act_zero_point", static_cast<std::int8_t>(r_zero)));
    g.add_node("QuantizeLinear", {"relu.y", "act_scale", "act_zero_point"}, {"relu.q"});
    g.add_node("DequantizeLinear", {"relu.q", "act_scale", "act_zero_point"}, {"relu.dq"});
    g.add_node("MaxPool", {"relu.dq"}, {"pool.y"},
               {ints_attribute("kernel_shape", {2, 2}), ints_attribute("strides", {2, 2})});
    if (v21) {
      g.add_initializer(tensor_data::int64("flat.shape", {2}, {0, features}));  // 0: keep N
      g.add_node("Reshape", {"pool.y", "flat.shape"}, {"flat.y"});
    } else {
      g.add_node("Flatten", {"pool.y"}, {"flat.y"}, {int_attribute("axis", 1)});
    }
    g.add_node("QuantizeLinear", {"flat.y", "act_scale", "act_zero_point"}, {"flat.q"});
    g.add_node("DequantizeLinear", {"flat.q", "act_scale", "act_zero_point"}, {"flat.dq"});

    std::vector<float> b2_scale;
    for (float s : w2_scale) b2_scale.push_back(r_scale * s);
    g.add_initializer(tensor_data::float32("dense.w_scale", {classes}, w2_scale));
    g.add_initializer(tensor_data::int8("dense.w_zero_point", {classes}, std::vector<std::int8_t>(classes, 0)));
    g.add_initializer(tensor_data::int32("dense.b_q", {classes}, bias2));
    g.add_initializer(tensor_data::float32("dense.b_scale", {classes}, b2_scale));
    g.add_initializer(tensor_data::int32("dense.b_zero_point", {classes}, std::vector<std::int32_t>(classes, 0)));
    g.add_node("DequantizeLinear", {"dense.b_q", "dense.b_scale", "dense.b_zero_point"}, {"dense.b"},
               {int_attribute("axis", 0)});
    if (v21) {  // MatMul: W2 is [features][classes], its channels on axis 1
      g.add_initializer(tensor_data::int8("dense.w_q", {features, classes}, w2));
      g.add_node("DequantizeLinear", {"dense.w_q", "dense.w_scale", "dense.w_zero_point"}, {"dense.w"},
                 {int_attribute("axis", 1)});
      g.add_node("MatMul", {"flat.dq", "dense.w"}, {"dense.mm"});
      g.add_node("Add", {"dense.mm", "dense.b"}, {"logits"});
    } else {  // Gemm with transB: W2 is [classes][features], its channels on axis 0
      g.add_initializer(tensor_data::int8("dense.w_q", {classes, features}, w2));
      g.add_node("DequantizeLinear", {"dense.w_q", "dense.w_scale", "dense.w_zero_point"}, {"dense.w"},
                 {int_attribute("axis", 0)});
      g.add_node("Gemm", {"flat.dq", "dense.w", "dense.b"}, {"logits"}, {int_attribute("transB", 1)});
    }
    g.add_initializer(tensor_data::float32_scalar("out_scale", out_scale));
    g.add_initializer(tensor_data::int8_scalar("out_zero_point", 0));
    g.add_node("QuantizeLinear", {"logits", "out_scale", "out_zero_point"}, {"logits_q"});
    g.outputs.push_back({"logits", data_type::float32, {"N", classes}});
    g.outputs.push_back({"logits_q", data_type::int8, {"N", classes}});

    model m(std::move(g), opset);
    m.doc_string = "xquant test fixture: a QDQ CNN written by hand with xq::onnx";
    m.metadata_props.push_back({"xquant.rounding", "half_to_even"});
    m.metadata_props.push_back({"xquant.fixture_opset", std::to_string(opset)});
    return m;
  }

  // The model's outputs by an independent scalar loop (double sums; exact here).
  void reference(const std::vector<float>& x, std::vector<float>& logits, std::vector<float>& logits_q) const {
    std::vector<float> xd(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      xd[i] = static_cast<float>(quantize(x[i], x_scale, 0, -128, 127)) * x_scale;
    std::vector<float> act(static_cast<std::size_t>(batch) * out_channels * size * size);
    for (int n = 0; n < batch; ++n)
      for (int o = 0; o < out_channels; ++o)
        for (int i = 0; i < size; ++i)
          for (int j = 0; j < size; ++j) {
            double acc = static_cast<double>(bias[o]) * (static_cast<double>(x_scale) * w_scale[o]);
            for (int c = 0; c < in_channels; ++c)
              for (int ki = 0; ki < 3; ++ki)
                for (int kj = 0; kj < 3; ++kj) {
                  const int ii = i + ki - 1, jj = j + kj - 1;
                  if (ii < 0 || ii >= size || jj < 0 || jj >= size) continue;
                  const double wv = static_cast<double>(w[((o * in_channels + c) * 3 + ki) * 3 + kj]) * w_scale[o];
                  acc += wv * xd[((n * in_channels + c) * size + ii) * size + jj];
                }
            const float relu = std::max(static_cast<float>(acc), 0.0f);
            const int q = quantize(relu, r_scale, r_zero, -128, 127);
            act[((n * out_channels + o) * size + i) * size + j] = static_cast<float>(q - r_zero) * r_scale;
          }
    logits.assign(static_cast<std::size_t>(batch) * classes, 0.0f);
    logits_q.assign(logits.size(), 0.0f);
    for (int n = 0; n < batch; ++n) {
      std::vector<float> flat(features);  // MaxPool 2x2, then NCHW flattening
      for (int o = 0; o < out_channels; ++o)
        for (int i = 0; i < pooled; ++i)
          for (int j = 0; j < pooled; ++j) {
            float m = -INFINITY;
            for (int a = 0; a < 2; ++a)
              for (int b = 0; b < 2; ++b)
                m = std::max(m, act[((n * out_channels + o) * size + 2 * i + a) * size + 2 * j + b]);
            const int q = quantize(m, r_scale, r_zero, -128, 127);  // the Q/DQ after Flatten/Reshape
            flat[(o * pooled + i) * pooled + j] = static_cast<float>(q - r_zero) * r_scale;
          }
      for (int k = 0; k < classes; ++k) {
        double acc = static_cast<double>(bias2[k]) * (static_cast<double>(r_scale) * w2_scale[k]);
        for (int j = 0; j < features; ++j) acc += static_cast<double>(w2_at(k, j)) * w2_scale[k] * flat[j];
        logits[n * classes + k] = static_cast<float>(acc);
        logits_q[n * classes + k] = static_cast<float>(quantize(static_cast<float>(acc), out_scale, 0, -128, 127));
      }
    }
  }
};

xq::tensor as_tensor(const std::vector<float>& v, std::vector<std::size_t> shape) {
  xq::tensor t = xq::tensor::from_shape(shape);
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int run(const std::string& command) {
  std::printf("onnx_fixture: %s\n", command.c_str());
  std::fflush(stdout);
  const int status = std::system(command.c_str());
#if defined(WIFEXITED)
  if (status != -1 && WIFEXITED(status)) return WEXITSTATUS(status);
  return 128;
#else
  return status;
#endif
}

int fail(const std::string& what) {
  std::fprintf(stderr, "onnx_fixture: FAILED: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int opset = 13;
  std::string out_dir, python, checker, skip_reason;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "onnx_fixture: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--opset")
      opset = std::stoi(value());
    else if (a == "--out")
      out_dir = value();
    else if (a == "--python")
      python = value();
    else if (a == "--checker")
      checker = value();
    else if (a == "--skip-reason")
      skip_reason = value();
    else {
      std::fprintf(
          stderr,
          "usage: onnx_fixture --opset 13|21 --out DIR [--python PY --checker onnx_check.py] [--skip-reason TEXT]\n");
      return 2;
    }
  }
  if (out_dir.empty() || (opset != 13 && opset != 21)) {
    std::fprintf(stderr, "onnx_fixture: --out DIR and --opset 13 or 21 are required\n");
    return 2;
  }
  try {
    fs::create_directories(out_dir);
    const fixture f(opset);
    const model m = f.build();
    const std::string path = (fs::path(out_dir) / "model.onnx").string();
    save(m, path);

    // Read back: the same model, the same bytes.
    const std::string bytes = serialize(m);
    const model back = load(path);
    if (back != m) return fail("load(save(m)) differs from m");
    if (serialize(back) != bytes) return fail("serialize(load(save(m))) differs from serialize(m)");
    std::printf("onnx_fixture: wrote %s (opset %lld, IR %lld, %zu nodes, %zu bytes); read back identical\n",
                path.c_str(), static_cast<long long>(m.opset()), static_cast<long long>(m.ir_version),
                m.graph.nodes.size(), bytes.size());

    // Input (covering saturation at both ends) and the expected outputs.
    std::mt19937 gen(7 + opset);
    std::uniform_real_distribution<float> dist(-9.0f, 9.0f);
    std::vector<float> x(static_cast<std::size_t>(batch) * in_channels * size * size);
    for (auto& v : x) v = dist(gen);
    std::vector<float> logits, logits_q;
    f.reference(x, logits, logits_q);
    const std::string x_path = (fs::path(out_dir) / "x.npy").string();
    const std::string logits_path = (fs::path(out_dir) / "logits.npy").string();
    const std::string logits_q_path = (fs::path(out_dir) / "logits_q.npy").string();
    const std::string wrong_path = (fs::path(out_dir) / "logits_q_wrong.npy").string();
    xq::io::save_npy(x_path, as_tensor(x, {batch, in_channels, size, size}));
    xq::io::save_npy(logits_path, as_tensor(logits, {batch, classes}));
    xq::io::save_npy(logits_q_path, as_tensor(logits_q, {batch, classes}));
    std::vector<float> wrong = logits_q;
    wrong[1] += 2.0f;  // two steps off: beyond the one-step tolerance
    xq::io::save_npy(wrong_path, as_tensor(wrong, {batch, classes}));

    if (python.empty() || checker.empty()) {
      std::printf("onnx_fixture: SKIPPED the onnx/onnxruntime check: %s\n",
                  skip_reason.empty() ? "no --python and --checker given" : skip_reason.c_str());
      return 77;
    }
    const std::string base = shell_quote(python) + " " + shell_quote(checker) + " " + shell_quote(path) +
                             " --input x=" + shell_quote(x_path) + " --expected logits=" + shell_quote(logits_path);
    const std::string report = (fs::path(out_dir) / "report.json").string();
    const int status = run(base + " --expected logits_q=" + shell_quote(logits_q_path) +
                           " --step logits_q=1 --min-share 1.0 --top1 --min-top1 1.0 --report " + shell_quote(report));
    if (status != 0) return fail("onnx_check.py exit status " + std::to_string(status) + " (report: " + report + ")");

    // The checker must not pass everything: two steps off on one element of 12 fails.
    const int wrong_status = run(base + " --expected logits_q=" + shell_quote(wrong_path) + " --step logits_q=1");
    if (wrong_status != 1)
      return fail("onnx_check.py accepted (or crashed on) a wrong expectation: exit status " +
                  std::to_string(wrong_status) + ", expected 1");
    std::printf(
        "onnx_fixture: opset %d passed: ONNX checker, ORT reference and optimized paths; a wrong expectation is "
        "rejected\n",
        opset);
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
