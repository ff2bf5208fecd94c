// The integer engine (include/xquant/deploy/): requantization schemes against TFLite's and
// ORT's arithmetic, the fast kernels against the exact references, and lowered models
// against their simulation (a folded-BN QAT CNN, a reused block, a binarized network).

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "deploy_models.hpp"
#include "engine_checks.hpp"

#include <xquant/deploy/binary_gemm.hpp>
#include <xquant/deploy/export_onnx.hpp>
#include <xquant/deploy/function_op.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/deploy/integer_model_file.hpp>
#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/wrappers/quant_conv2d.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xtensor/xrandom.hpp>
#include <xtensor/xview.hpp>
#include <xquant/xquant.hpp>

namespace {

using xq::deploy::requantization;

using namespace deploy_test;

/// Every remaining layer kind: relu6 (layer and function), a residual add, average
/// pooling, swish, a sigmoid gate (function) through multiply, tanh, concatenations,
/// global average and max pooling, leaky_relu and softmax.
template <class Conv = xq::conv2d, class Add = xq::add, class Cat = xq::concatenate, class Mul = xq::multiply,
          class Pool = xq::average_pool2d, class Gap = xq::global_average_pool2d, class Gmp = xq::global_max_pool2d,
          class Relu6 = xq::relu6, class Leaky = xq::leaky_relu, class Swish = xq::swish, class Tanh = xq::tanh,
          class Dense = xq::dense, class Softmax = xq::softmax>
struct layer_zoo {
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
  Dense hidden{xq::dense(12)};
  Dense head{xq::dense(4)};
  Softmax probabilities;
  XQ_CHILDREN(stem, branch, side, gate, residual, pool, gated, features, pooled, gap, gmp, clip, leaky, swish, squash,
              hidden, head, probabilities)
  xq::var operator()(const xq::var& x) {
    const xq::var h = clip(stem(x));
    const xq::var b = xq::ops::relu6(branch(h));
    const xq::var r = pool(residual(h, b));
    const xq::var m = gated(swish(side(r)), xq::ops::sigmoid(gate(r)));
    const xq::var c = features({m, squash(r)});
    const xq::var e = pooled(gap(c), gmp(c));
    return probabilities(head(leaky(hidden(e))));
  }
};

/// ids (N, 6) -> an embedding (8 x 8), a hidden layer, and a projection tied to the table.
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

/// integer_model::run computes the batch in slices (spread over threads): the output of
/// any slicing is the whole batch's, bit for bit.
void check_slices(const xq::deploy::integer_model& engine, const xq::tensor& inputs) {
  const xq::tensor whole = engine.run_all(inputs).at(engine.output_value).to_real();
  for (std::size_t slice : {std::size_t(0), std::size_t(1), std::size_t(3), inputs.shape()[0]}) {
    CAPTURE(slice);
    xq::deploy::run_options o;
    o.batch_slice = slice;
    const bool same = engine.run(inputs, o) == whole;
    CHECK(same);
  }
}

/// The engine encoded and decoded: the same summary, the same output bits.
void check_saves_and_loads(const xq::deploy::integer_model& engine, const xq::tensor& inputs, const char* name) {
  const std::vector<std::uint8_t> bytes = xq::deploy::encode_integer_model(engine);
  const xq::deploy::integer_model back = xq::deploy::decode_integer_model(bytes.data(), bytes.size(), name);
  CHECK(back.summary() == engine.summary());
  const bool same = back.run(inputs) == engine.run(inputs);
  CHECK(same);
}

/// The model lowered with a float bias: the lowering whose integers are the simulation's.
template <class Model>
xq::deploy::integer_model lower_with_float_bias(Model& qat, const std::vector<std::size_t>& sample) {
  xq::deploy::lower_options lo;
  lo.bias = xq::deploy::bias_precision::float32;
  return xq::deploy::lower(qat, sample, lo);
}

/// Parity at every quantized tensor (all but a handful of elements identical, none past one step), fast == reference kernels, and a save/load
/// round trip that runs the same.
template <class Model>
void check_exact(Model& qat, const std::vector<std::size_t>& sample, const xq::tensor& inputs, const xq::tensor* labels,
                 std::size_t expected_points) {
  const xq::deploy::integer_model engine = lower_with_float_bias(qat, sample);
  INFO(engine.summary());
  CHECK(engine.parity_points.size() == expected_points);
  const auto report = xq::deploy::parity(qat, engine, inputs, labels, 64);
  INFO(report.table());
  std::printf("%s", report.table().c_str());
  for (const auto& row : report.rows) {
    CAPTURE(row.label);
    // The float-bias engine computes scale * (exact int32 sum) + bias, the simulation a
    // float convolution in oneDNN's or the GEMM's order: the two floats differ in the last
    // bits, and a value within that of a rounding boundary lands one step away (measured: 1
    // of 202,800 at one layer of the layers' net, none elsewhere).
    CHECK(row.within_one_step == row.elements);
    CHECK(row.identical + 4 >= row.elements);
  }
  CHECK(report.same_top1_share() == 1.0);
  // The float output (the logits: acc * s_in * s_w + b against the simulation's float GEMM
  // of the same fake-quantized values) within float rounding of its own magnitude.
  const xq::tensor out = engine.run(inputs);
  const double magnitude = std::max(1.0, double(xt::amax(xt::abs(out))()));
  CAPTURE(magnitude);
  CHECK(report.max_output_difference <= 1e-5 * magnitude);
  CHECK(deploy_test::fast_kernels_match_reference(engine, inputs));
  check_slices(engine, inputs);
  check_saves_and_loads(engine, inputs, "zoo.xqi");
}

}  // namespace

namespace {

/// The layer zoo trained in float, quantized with NVIDIA's placement (conv/dense inputs and
/// kernels, the average pools' inputs (the scheme's default), the residual add's inputs
/// (its residual case), and by the spec the concatenation's and the multiply's inputs),
/// then trained a little more.
auto trained_zoo_qat(const xq::dataset& data) {
  xq::set_seed(4);
  layer_zoo<> model;
  xq::build(model, {1, 12, 12, 1});
  train(model, data, 2, 3e-3f);
  xq::quantize_options qo;
  qo.cases = {xq::qdq_cases::residual_connection()};
  qo.spec.add("features").add("gated").add("pooled", {true, true, {1}});
  auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
  train(qat, data, 1, 5e-4f);
  return qat;
}

}  // namespace

TEST_CASE("lower: merges, pools and activations compute the simulation's integers", "[deploy][lower][layers]") {
  const xq::dataset data = quadrant_data(256, 41), test = quadrant_data(200, 42);
  auto qat = trained_zoo_qat(data);
  CHECK(qat.residual.input_quantizer(0).enabled());
  CHECK(qat.pool.input_quantizer().enabled());
  const xq::deploy::integer_model engine = xq::deploy::lower(qat, {12, 12, 1});
  INFO(engine.summary());
  std::size_t clamps = 0, floats = 0, concats = 0;
  for (const auto& op : engine.ops) {
    clamps += std::string(op->kind()) == "clamp";
    floats += dynamic_cast<const xq::deploy::real_function_op*>(op.get()) != nullptr;
    concats += std::string(op->kind()) == "concatenate";
  }
  CHECK(clamps >= 1);  // relu6 on the integers of the next grid
  CHECK(concats == 2);
  CHECK(floats >= 8);
  // stem, branch, side, gate, hidden and head inputs; the add's two; the average pools'
  // (gap: the scheme's default); the multiply's two; the features' two; the pooled
  // concatenation's input 1.
  check_exact(qat, {12, 12, 1}, test.inputs, &test.targets, 15);
}

TEST_CASE("lower: integer-only average pooling rounds as TFLite on the input's grid", "[deploy][lower][layers]") {
  const xq::dataset data = quadrant_data(256, 41), test = quadrant_data(200, 42);
  auto qat = trained_zoo_qat(data);
  xq::deploy::lower_options lo;
  lo.average_pool = xq::deploy::average_pooling::integer;
  const xq::deploy::integer_model engine = xq::deploy::lower(qat, {12, 12, 1}, lo);
  INFO(engine.summary());
  std::vector<const xq::deploy::integer_average_pool_op*> pools;
  for (const auto& op : engine.ops)
    if (const auto* p = dynamic_cast<const xq::deploy::integer_average_pool_op*>(op.get())) pools.push_back(p);
  REQUIRE(pools.size() == 2);  // the 2x2 pool and the global one: both inputs are quantized
  // Each output is its window's mean of the input integers rounded half away from zero
  // (computed here in double with std::round), on the input's grid.
  const std::vector<xq::deploy::engine_tensor> values = engine.run_all(test.inputs);
  for (const auto* p : pools) {
    const xq::deploy::engine_tensor& in = values.at(p->inputs.at(0));
    const xq::deploy::engine_tensor& out = values.at(p->output);
    REQUIRE(in.kind == xq::deploy::value_kind::integer);
    REQUIRE(out.kind == xq::deploy::value_kind::integer);
    CHECK(out.scale == in.scale);
    CHECK(out.zero_point == in.zero_point);
    const std::size_t h = in.shape[1], w = in.shape[2], c = in.shape[3], oh = out.shape[1], ow = out.shape[2];
    const auto& g = p->geometry;
    std::size_t wrong = 0, checked = 0;
    for (std::size_t b = 0; b < in.shape[0]; ++b)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j)
          for (std::size_t q = 0; q < c; ++q) {
            double sum = 0;
            int count = 0;
            for (std::size_t u = 0; u < g.window[0]; ++u)
              for (std::size_t v = 0; v < g.window[1]; ++v) {
                const long row = long(i * g.strides[0] + u) - long(g.pads[0]);
                const long col = long(j * g.strides[1] + v) - long(g.pads[1]);
                if (row < 0 || col < 0 || row >= long(h) || col >= long(w)) continue;
                sum += in.integer[((b * h + std::size_t(row)) * w + std::size_t(col)) * c + q];
                ++count;
              }
            wrong += out.integer[((b * oh + i) * ow + j) * c + q] != std::int16_t(std::round(sum / count));
            ++checked;
          }
    INFO(p->path << ": " << wrong << " of " << checked << " outputs differ");
    CHECK(checked > 0);
    CHECK(wrong == 0);
  }
  // The simulation pools floats and rounds once; the integer pool rounds first. The
  // predictions still agree (the parity report counts the steps that moved).
  const auto report = xq::deploy::parity(qat, engine, test.inputs, &test.targets);
  INFO(report.table());
  CHECK(report.same_top1_share() >= 0.95);
  // The op saves and loads.
  check_saves_and_loads(engine, test.inputs, "zoo.xqi");
}

namespace {

/// A centred integer tensor of one row on a grid of scale `scale`.
xq::deploy::engine_tensor centred(std::vector<std::int16_t> v, float scale) {
  xq::deploy::engine_tensor t;
  t.kind = xq::deploy::value_kind::integer;
  t.shape = {1, v.size()};
  t.integer = std::move(v);
  t.scale = scale;
  return t;
}

/// TFLite's int8 ADD of two centred values, transcribed from its kernel with the public
/// fixed-point helpers: shift left 20, scale each by s_k / (2 max s), sum, scale by
/// 2 max s / (2^20 s_out).
std::int32_t tflite_add(std::int32_t a, std::int32_t b, float sa, float sb, float so, bool single) {
  using xq::deploy::requantizer;
  const double twice = 2.0 * double(std::max(sa, sb));
  const auto ma = xq::deploy::quantize_multiplier(double(sa) / twice);
  const auto mb = xq::deploy::quantize_multiplier(double(sb) / twice);
  const auto mo = xq::deploy::quantize_multiplier(twice / (double(1 << 20) * double(so)));
  auto mul = [&](std::int32_t x, xq::deploy::fixed_point_multiplier m) {
    return single ? requantizer::single_rounding(x, m) : requantizer::double_rounding(x, m);
  };
  return mul(mul(a * (1 << 20), ma) + mul(b * (1 << 20), mb), mo);
}

/// x -> two 1x1 convs (relu), concatenated with a QDQ on each input (two grids), then a
/// quantized 3x3 conv, global average pooling and a dense head.
template <class Conv = xq::conv2d, class Cat = xq::concatenate, class Gap = xq::global_average_pool2d,
          class Dense = xq::dense>
struct two_grid_concat {
  Conv left{xq::conv2d(3, 1)};
  Conv right{xq::conv2d(5, 1)};
  Cat features;
  Conv mix{xq::conv2d(6, 3)};
  Gap gap;
  Dense head{xq::dense(4)};
  XQ_CHILDREN(left, right, features, mix, gap, head)
  xq::var operator()(const xq::var& x) {
    const xq::var c = features({xq::ops::relu(left(x)), xq::ops::relu(right(x))});
    return head(gap(xq::ops::relu(mix(c))));
  }
};

/// Every integer output of `op` against the exact real value of its inputs' integers
/// (computed in double): at most one step away. Returns how many were one step away.
template <class Exact>
std::size_t check_within_one_step(const std::vector<xq::deploy::engine_tensor>& values, const xq::deploy::lowered_op& op,
                                  Exact exact) {
  const xq::deploy::engine_tensor& y = values.at(op.output);
  REQUIRE(y.kind == xq::deploy::value_kind::integer);
  std::size_t off = 0, wrong = 0;
  for (std::size_t e = 0; e < y.integer.size(); ++e) {
    const double q = std::min<double>(y.qmax, std::max<double>(y.qmin, std::nearbyint(exact(e) / double(y.scale) + y.zero_point)));
    const double d = std::fabs(double(y.integer[e] + y.zero_point) - q);
    off += d == 1.0;
    wrong += d > 1.0;
  }
  INFO(op.path << " (" << op.kind() << "): " << wrong << " of " << y.integer.size() << " more than one step away");
  CHECK(wrong == 0);
  return off;
}

/// `qat` lowered with integer-only merges and the requantization `scheme`.
template <class Model>
xq::deploy::integer_model lower_with_integer_merges(Model& qat, requantization scheme) {
  xq::deploy::lower_options lo;
  lo.requant = scheme;
  lo.merge = xq::deploy::merge_arithmetic::integer;
  return xq::deploy::lower(qat, {12, 12, 1}, lo);
}

}  // namespace

TEST_CASE("integer_add_op: TFLite's ADD rounds ties away from zero, onnxruntime's QLinearAdd to even",
          "[deploy][lower][layers]") {
  // 0.5 * a + 0.25 * b onto scale 1: a = ±1, b = 0 is a tie (±0.5); a = 3, b = 2 gives 2.
  const std::vector<std::int16_t> a = {1, -1, 3, 127, -128, 5}, b = {0, 0, 2, 127, -128, -7};
  const std::vector<std::int16_t> ties_away = {1, -1, 2, 95, -96, 1}, ties_even = {0, 0, 2, 95, -96, 1};
  for (auto scheme : {requantization::float_multiplier, requantization::tflite_double_rounding,
                      requantization::tflite_single_rounding}) {
    CAPTURE(xq::deploy::to_string(scheme));
    xq::deploy::integer_add_op op;
    op.path = "block/add";
    op.scheme = scheme;
    op.input_scales = {0.5f, 0.25f};
    op.out = xq::deploy::integer_grid{1.0f, 0, -128, 127};
    op.inputs = {0, 1};
    op.output = 2;
    op.prepare();
    std::vector<xq::deploy::engine_tensor> values = {centred(a, 0.5f), centred(b, 0.25f), {}};
    op.run(values, {});
    const std::vector<std::int16_t>& got = values[2].integer;
    // TFLite's single rounding rounds half up (-0.5 -> 0), its double rounding away from zero.
    std::vector<std::int16_t> expected = scheme == requantization::float_multiplier ? ties_even : ties_away;
    if (scheme == requantization::tflite_single_rounding) expected[1] = 0;
    CHECK(got == expected);
    for (std::size_t e = 0; e < a.size() && scheme != requantization::float_multiplier; ++e)
      CHECK(got[e] == tflite_add(a[e], b[e], 0.5f, 0.25f, 1.0f, scheme == requantization::tflite_single_rounding));
    // An input on another grid than the op was prepared for is refused, naming the op.
    values[1].scale = 0.3f;
    CHECK_THROWS_WITH(op.run(values, {}), Catch::Contains("block/add") && Catch::Contains("scale 0.25"));
  }
  // The output saturates: 127 * 0.5 + 127 * 0.25 = 95.25 onto scale 0.5 is 190.5 -> 127.
  xq::deploy::integer_add_op op;
  op.scheme = requantization::tflite_double_rounding;
  op.input_scales = {0.5f, 0.25f};
  op.out = xq::deploy::integer_grid{0.5f, 0, -128, 127};
  op.inputs = {0, 1};
  op.output = 2;
  op.prepare();
  std::vector<xq::deploy::engine_tensor> values = {centred({127}, 0.5f), centred({127}, 0.25f), {}};
  op.run(values, {});
  CHECK(values[2].integer == std::vector<std::int16_t>{127});
}

TEST_CASE("lower: integer-only add and multiply, TFLite's and onnxruntime's arithmetic", "[deploy][lower][layers]") {
  const xq::dataset data = quadrant_data(256, 41), test = quadrant_data(200, 42);
  auto qat = trained_zoo_qat(data);
  for (auto scheme : {requantization::float_multiplier, requantization::tflite_double_rounding,
                      requantization::tflite_single_rounding}) {
    CAPTURE(xq::deploy::to_string(scheme));
    const xq::deploy::integer_model engine = lower_with_integer_merges(qat, scheme);
    INFO(engine.summary());
    const xq::deploy::integer_add_op* add = nullptr;
    const xq::deploy::integer_multiply_op* mul = nullptr;
    std::size_t float_merges = 0;
    for (const auto& op : engine.ops) {
      if (auto* a = dynamic_cast<const xq::deploy::integer_add_op*>(op.get())) add = a;
      if (auto* m = dynamic_cast<const xq::deploy::integer_multiply_op*>(op.get())) mul = m;
      const std::string k = op->kind();
      float_merges += k == "add" || k == "multiply";
    }
    // The residual add feeds the quantized average pool; the gate's product feeds the
    // quantized concatenation: both have a grid to land on.
    REQUIRE(add != nullptr);
    REQUIRE(mul != nullptr);
    CHECK(float_merges == 0);
    CHECK(add->left_shift == 20);
    const std::vector<xq::deploy::engine_tensor> values = engine.run_all(test.inputs);
    const auto& a0 = values.at(add->inputs[0]);
    const auto& a1 = values.at(add->inputs[1]);
    const auto& y = values.at(add->output);
    const std::size_t add_off = check_within_one_step(values, *add, [&](std::size_t e) {
      return double(a0.integer[e]) * a0.scale + double(a1.integer[e]) * a1.scale;
    });
    for (std::size_t e = 0; e < y.integer.size(); ++e) {
      std::int32_t expected = 0;
      if (scheme == requantization::float_multiplier)  // MLAS's scalar QLinearAdd
        expected = std::int32_t(std::nearbyint((a0.scale * float(a0.integer[e]) + a1.scale * float(a1.integer[e])) / y.scale));
      else
        expected = tflite_add(a0.integer[e], a1.integer[e], a0.scale, a1.scale, y.scale,
                              scheme == requantization::tflite_single_rounding);
      expected = std::max(y.qmin, std::min(y.qmax, expected + y.zero_point)) - y.zero_point;
      if (y.integer[e] != expected) {
        FAIL_CHECK("add output " << e << ": " << y.integer[e] << ", expected " << expected);
        break;
      }
    }
    const auto& m0 = values.at(mul->inputs[0]);
    const auto& m1 = values.at(mul->inputs[1]);
    const std::size_t mul_off = check_within_one_step(values, *mul, [&](std::size_t e) {
      return double(m0.integer[e]) * m0.scale * double(m1.integer[e]) * m1.scale;
    });
    std::printf("integer merges (%s): one step from the exact value: add %zu of %zu outputs, multiply %zu of %zu\n",
                xq::deploy::to_string(scheme), add_off, y.integer.size(), mul_off, values.at(mul->output).integer.size());
    // The simulation rounds the float sum once, the engine the integers' sum: predictions agree.
    const auto report = xq::deploy::parity(qat, engine, test.inputs, &test.targets);
    INFO(report.table());
    if (scheme == requantization::float_multiplier) std::printf("%s", report.table().c_str());
    CHECK(report.same_top1_share() >= 0.95);
    CHECK(deploy_test::fast_kernels_match_reference(engine, test.inputs));
    check_saves_and_loads(engine, test.inputs, "zoo.xqi");
  }
}

TEST_CASE("lower: an integer-only concatenation rescales each input onto the next grid", "[deploy][lower][layers]") {
  const xq::dataset data = quadrant_data(256, 43), test = quadrant_data(200, 44);
  xq::set_seed(5);
  two_grid_concat<> model;
  xq::build(model, {1, 12, 12, 1});
  train(model, data, 2, 3e-3f);
  xq::quantize_options qo;
  qo.spec.add("features");
  auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
  train(qat, data, 1, 5e-4f);
  CHECK(qat.features.input_quantizer(0).enabled());
  CHECK(qat.features.input_quantizer(1).enabled());
  for (auto scheme : {requantization::float_multiplier, requantization::tflite_double_rounding}) {
    CAPTURE(xq::deploy::to_string(scheme));
    const xq::deploy::integer_model engine = lower_with_integer_merges(qat, scheme);
    INFO(engine.summary());
    std::vector<const xq::deploy::rescale_op*> rescales;
    const xq::deploy::concatenate_op* cat = nullptr;
    for (const auto& op : engine.ops) {
      if (auto* r = dynamic_cast<const xq::deploy::rescale_op*>(op.get())) rescales.push_back(r);
      if (auto* c = dynamic_cast<const xq::deploy::concatenate_op*>(op.get())) cat = c;
    }
    // The concatenation's range is its wider input's (the max of the two maxima), so the
    // narrower input, at least, is rescaled onto the mix conv's input grid.
    REQUIRE(!rescales.empty());
    REQUIRE(cat != nullptr);
    const std::vector<xq::deploy::engine_tensor> values = engine.run_all(test.inputs);
    const auto& joined = values.at(cat->output);
    CHECK(joined.kind == xq::deploy::value_kind::integer);
    CHECK(joined.scale == qat.mix.input_quantizer().site().grid(1).scale[0]);
    for (const auto* r : rescales) {
      const auto& x = values.at(r->inputs.at(0));
      check_within_one_step(values, *r, [&](std::size_t e) { return double(x.integer[e]) * x.scale; });
    }
    const auto report = xq::deploy::parity(qat, engine, test.inputs, &test.targets);
    INFO(report.table());
    CHECK(report.same_top1_share() >= 0.95);
    check_saves_and_loads(engine, test.inputs, "cat.xqi");
  }
}

TEST_CASE("lower: an embedding and its tied projection", "[deploy][lower][layers]") {
  const xq::dataset data = token_data(256, 51), test = token_data(200, 52);
  for (bool lookup_quantized : {true, false}) {
    CAPTURE(lookup_quantized);
    xq::set_seed(6);
    tied_lm<> model(true);
    xq::build(model, {1, 6});
    train(model, data, 3, 1e-2f);
    // One table, two uses, each with its own kernel quantizer: the lookup quantized and
    // the projection not, then the reverse (the projection an integer dense).
    xq::quantization_spec spec;
    spec.add(lookup_quantized ? "embed" : "project").add("hidden");
    auto qat = xq::quantize_model(model, xq::quantization_mode::partial, spec);
    train(qat, data, 1, 1e-3f);
    CHECK(qat.embed.weight_quantizer().enabled() == lookup_quantized);
    CHECK(qat.project.weight_quantizer().enabled() != lookup_quantized);
    const auto engine = lower_with_float_bias(qat, {6});
    INFO(engine.summary());
    std::size_t gathers = 0, integer_dense = 0;
    for (const auto& op : engine.ops) {
      if (auto* g = dynamic_cast<const xq::deploy::gather_op*>(op.get())) {
        ++gathers;
        CHECK(g->quantized == lookup_quantized);
      }
      integer_dense += dynamic_cast<const xq::deploy::integer_linear_op*>(op.get()) != nullptr;
    }
    CHECK(gathers == 1);
    CHECK(integer_dense == (lookup_quantized ? 1u : 2u));
    check_exact(qat, {6}, test.inputs, &test.targets, lookup_quantized ? 1 : 2);
  }
}

TEST_CASE("requantization: TFLite's fixed point and ORT's float multiplier", "[deploy][requantize]") {
  using xq::deploy::quantize_multiplier;
  using xq::deploy::requantizer;
  // QuantizeMultiplier(0.5) = 2^30 * 2^(0 - 31) ... (TFLite: q = frexp(0.5) = 0.5, shift 0).
  const auto half = quantize_multiplier(0.5);
  CHECK(half.multiplier == (1 << 30));
  CHECK(half.shift == 0);
  const auto tiny = quantize_multiplier(0.0003);
  CHECK(tiny.shift == -11);  // 0.0003 = 0.6144 * 2^-11
  // Ties: gemmlowp's high multiply nudges by 2^30 or 1 - 2^30 and truncates, so its ties go
  // toward +infinity (-1.5 -> -1); its power-of-two division rounds them away from zero;
  // ORT's float multiplier rounds them to even.
  CHECK(xq::deploy::saturating_rounding_doubling_high_mul(-3, 1 << 30) == -1);
  CHECK(xq::deploy::saturating_rounding_doubling_high_mul(3, 1 << 30) == 2);
  CHECK(xq::deploy::rounding_divide_by_pot(-3, 1) == -2);
  CHECK(xq::deploy::rounding_divide_by_pot(3, 1) == 2);
  CHECK(requantizer::double_rounding(3, half) == 2);
  CHECK(requantizer::double_rounding(-3, half) == -1);
  CHECK(requantizer::double_rounding(5, half) == 3);
  CHECK(requantizer::single_rounding(5, half) == 3);
  CHECK(requantizer::single_rounding(-5, half) == -2);  // (x*M + 2^30) >> 31: half up
  CHECK(requantizer::round_float(5, 0.5f) == 2);
  CHECK(requantizer::round_float(7, 0.5f) == 4);
  CHECK(requantizer::round_float(-5, 0.5f) == -2);
  // Against a double reference away from ties: single rounding is exact, double rounding
  // (two roundings) and the float multiplier (float(acc) * float(m)) are within one.
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::int32_t> acc(-2000000, 2000000);
  for (double m : {0.00021, 0.0371, 0.5, 0.93, 3.7}) {
    const requantizer f(requantization::float_multiplier, {m}, "t");
    const requantizer d(requantization::tflite_double_rounding, {m}, "t");
    const requantizer s(requantization::tflite_single_rounding, {m}, "t");
    for (int i = 0; i < 2000; ++i) {
      const std::int32_t a = acc(rng);
      const double exact = double(a) * m;
      if (std::fabs(exact - std::floor(exact) - 0.5) < 1e-3) continue;
      const auto r = static_cast<std::int32_t>(std::lround(exact));
      CHECK(std::abs(d(a, 0) - r) <= 1);
      CHECK(std::abs(s(a, 0) - r) <= 0);
      CHECK(std::abs(f(a, 0) - r) <= 1);  // float(acc) * float(m) may round once more
    }
  }
  CHECK_THROWS_AS(requantizer(requantization::tflite_double_rounding, {0.0}, "layer/x"), xq::argument_error);
  CHECK_THROWS_WITH(requantizer(requantization::float_multiplier, {-1.0}, "layer/x"),
                    Catch::Contains("layer/x") && Catch::Contains("-1"));
  CHECK(xq::deploy::requantization_from_string("tflite_single_rounding") == requantization::tflite_single_rounding);
  CHECK_THROWS_AS(xq::deploy::requantization_from_string("nearest"), xq::argument_error);
}

TEST_CASE("integer GEMM: the packed kernel equals the int32 reference", "[deploy][kernels]") {
  std::mt19937 rng(3);
  for (auto [m, n, k] : {std::array<std::size_t, 3>{1, 1, 1}, {7, 5, 3}, {33, 17, 288}, {64, 64, 577}}) {
    std::uniform_int_distribution<int> xs(-255, 255), ws(-127, 127);
    std::vector<std::int16_t> a(m * k), b(k * n);
    for (auto& v : a) v = std::int16_t(xs(rng));
    for (auto& v : b) v = std::int16_t(ws(rng));
    a[0] = -255;
    b[0] = -127;  // the extreme product
    std::vector<std::int32_t> bias(n), ref(m * n), fast(m * n);
    for (auto& v : bias) v = xs(rng) * 1000;
    xq::deploy::gemm_s16_reference(m, n, k, a.data(), k, b.data(), bias.data(), ref.data());
    xq::deploy::gemm_s16(m, a.data(), k, xq::deploy::packed_s16_matrix(b.data(), k, n), bias.data(), fast.data());
    CHECK(ref == fast);
  }
}

TEST_CASE("binary GEMM: XNOR-popcount equals the ±1 dot product", "[deploy][kernels]") {
  std::mt19937_64 rng(5);
  const std::size_t m = 9, n = 13, k = 150, words = 3;
  std::vector<std::uint64_t> a(m * words, 0), b(n * words, 0);
  std::vector<int> av(m * k), bv(n * k);
  for (std::size_t i = 0; i < m * k; ++i) {
    av[i] = rng() & 1 ? -1 : 1;
    if (av[i] < 0) a[(i / k) * words + (i % k) / 64] |= std::uint64_t(1) << ((i % k) % 64);
  }
  for (std::size_t i = 0; i < n * k; ++i) {
    bv[i] = rng() & 1 ? -1 : 1;
    if (bv[i] < 0) b[(i / k) * words + (i % k) / 64] |= std::uint64_t(1) << ((i % k) % 64);
  }
  std::vector<std::int32_t> ref(m * n), fast(m * n);
  xq::deploy::binary_gemm_reference(m, n, words, std::int32_t(k), a.data(), b.data(), ref.data());
  xq::deploy::binary_gemm(m, n, words, std::int32_t(k), a.data(), b.data(), fast.data());
  CHECK(ref == fast);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      int dot = 0;
      for (std::size_t p = 0; p < k; ++p) dot += av[i * k + p] * bv[j * k + p];
      CHECK(ref[i * n + j] == dot);
    }
}

TEST_CASE("lower: a folded-BN QAT CNN computes the simulation's integers", "[deploy][lower]") {
  auto model = make_small_cnn();
  const xq::dataset data = quadrant_data(256, 11);
  auto qat = trained_qat(model, data);
  const xq::dataset test = quadrant_data(200, 12);

  struct variant {
    requantization scheme;
    xq::deploy::bias_precision bias;
  };
  for (variant v : {variant{requantization::float_multiplier, xq::deploy::bias_precision::float32},
                    variant{requantization::float_multiplier, xq::deploy::bias_precision::int32},
                    variant{requantization::tflite_double_rounding, xq::deploy::bias_precision::int32},
                    variant{requantization::tflite_single_rounding, xq::deploy::bias_precision::int32}}) {
    const bool float_bias = v.bias == xq::deploy::bias_precision::float32;
    CAPTURE(xq::deploy::to_string(v.scheme), float_bias);
    xq::deploy::lower_options lo;
    lo.requant = v.scheme;
    lo.bias = v.bias;
    const xq::deploy::integer_model engine = xq::deploy::lower(qat, {12, 12, 1}, lo);
    INFO(engine.summary());
    // Every conv and dense is an integer op; the batch norms are absorbed; the logits are
    // float; the ReLUs after the convs saturate in their requantization (no pass of their own).
    std::size_t integer_ops = 0, fused_relus = 0;
    for (const auto& op : engine.ops) {
      CHECK(std::string(op->kind()) != "batch_norm");
      CHECK(std::string(op->kind()) != "relu");
      if (auto* l = dynamic_cast<const xq::deploy::integer_linear_op*>(op.get())) {
        ++integer_ops;
        fused_relus += l->relu;
        CHECK(l->integer_output == (integer_ops < 4));
      }
    }
    CHECK(integer_ops == 4);
    CHECK(fused_relus >= 2);
    CHECK(engine.parity_points.size() == 4);

    const auto report = xq::deploy::parity(qat, engine, test.inputs, &test.targets, 64);
    INFO(report.table());
    for (const auto& row : report.rows) {
      // The float bias adds what the simulation adds; the simulation's float sums of
      // dequantized products round where the engine's int32 sums are exact, which moves
      // an integer by one step in a few of 10^5 (depending on the conv backend's order of
      // summation and on the trained weights). An int32 bias moves outputs by up to half
      // an accumulator step (a few in 10^4 cross a rounding boundary), and a moved
      // integer moves the next layers' sums.
      CHECK(row.share() >= (float_bias ? 0.999 : 0.95));
      CHECK(row.max_steps <= 1);
    }
    CHECK(report.same_top1_share() >= (float_bias ? 0.995 : 0.97));
    CHECK(std::fabs(report.engine_accuracy() - report.simulated_accuracy()) <= 0.02);

    // The fast kernels give exactly the reference kernels' integers, on every instruction set.
    CHECK(deploy_test::fast_kernels_match_reference(engine, test.inputs));
  }
  xq::deploy::lower_options bad;
  bad.requant = requantization::tflite_double_rounding;
  bad.bias = xq::deploy::bias_precision::float32;
  CHECK_THROWS_WITH(xq::deploy::lower(qat, {12, 12, 1}, bad), Catch::Contains("block/conv"));
}

TEST_CASE("lower: a separable convolution is its depthwise and pointwise integer convolutions",
          "[deploy][lower][layers]") {
  const xq::dataset data = quadrant_data(256, 41), test = quadrant_data(200, 42);
  auto qat = trained_separable_qat(data);
  const xq::deploy::integer_model engine = xq::deploy::lower(qat, {12, 12, 1});
  std::size_t integer_ops = 0;
  for (const auto& op : engine.ops) integer_ops += dynamic_cast<const xq::deploy::integer_linear_op*>(op.get()) != nullptr;
  CHECK(integer_ops == 4);  // stem, depthwise, pointwise, head
  CHECK(engine.parity_points.size() == 4);  // their inputs
  // With float biases the engine adds what the simulation adds; what is left is the
  // simulation's float sums of dequantized products, which round where the engine's int32
  // sums are exact: one step, in about one element of 10^4 here (as the folded CNN's below).
  const auto report = xq::deploy::parity(qat, lower_with_float_bias(qat, {12, 12, 1}), test.inputs, &test.targets, 64);
  INFO(report.table());
  for (const auto& row : report.rows) {
    CAPTURE(row.label);
    CHECK(row.share() >= 0.999);
    CHECK(row.max_steps <= 1);
  }
  CHECK(report.same_top1_share() >= 0.995);
  CHECK(deploy_test::fast_kernels_match_reference(engine, test.inputs));
  check_saves_and_loads(engine, test.inputs, "separable.xqi");
}

TEST_CASE("lower: the binarized network computes XNOR-popcount and agrees with Larq's simulation",
          "[deploy][lower][binary]") {
  auto model = make_binary_cnn();
  const xq::dataset data = quadrant_data(256, 21);
  xq::build(model, {1, 12, 12, 1});
  train(model, data, 2, 1e-2f);

  const auto engine = xq::deploy::lower(model, {12, 12, 1});
  INFO(engine.summary());
  std::size_t binary_ops = 0, fused_stems = 0;
  for (const auto& op : engine.ops) {
    if (dynamic_cast<const xq::deploy::binary_linear_op*>(op.get())) ++binary_ops;
    if (auto* r = dynamic_cast<const xq::deploy::real_linear_op*>(op.get())) fused_stems += r->pooled;
  }
  CHECK(binary_ops == 3);
  CHECK(fused_stems == 1);  // the ±1 stem with its max pool
  const xq::dataset test = quadrant_data(100, 22);
  const auto report = xq::deploy::parity(model, engine, test.inputs, &test.targets, 50);
  INFO(report.table());
  REQUIRE(report.rows.size() == 3);
  for (const auto& row : report.rows) CHECK(row.share() == 1.0);
  CHECK(report.same_top1_share() == 1.0);
  CHECK(report.max_output_difference <= 1e-4);
  CHECK(deploy_test::fast_kernels_match_reference(engine, test.inputs));
  check_slices(engine, test.inputs);
  check_saves_and_loads(engine, test.inputs, "bnn.xqi");
}

TEST_CASE("lower: a binary conv's int32 sums averaged as floats keep their channels", "[deploy][lower][binary]") {
  // A bias-free binary conv leaves its popcount sums as int32; the average pool after it
  // reads them as floats, one identity affine per channel.
  using bconv = xq::quant_conv2d<xq::approx_sign, xq::ste_sign>;
  xq::set_seed(5);
  auto model = xq::sequential(bconv(8, 3, xq::approx_sign(), xq::ste_sign()).use_bias(false),
                              xq::global_average_pool2d(), xq::dense(3));
  xq::build(model, {1, 6, 6, 2});
  const xq::tensor x = xt::random::randn<float>({10, 6, 6, 2});
  const auto engine = xq::deploy::lower(model, {6, 6, 2});
  xq::tensor simulated;
  {
    const xq::no_grad nothing;
    simulated = model(xq::var(x)).value();
  }
  const xq::tensor out = engine.run(x);
  REQUIRE(out.shape() == simulated.shape());
  CHECK(xt::amax(xt::abs(out - simulated))() < 1e-4f);
  check_saves_and_loads(engine, x, "binary_average.xqi");
}

namespace {
/// A layer xquant has no integer form for: a user's own.
struct channel_shuffle : xq::layer<channel_shuffle> {
  channel_shuffle() : xq::layer<channel_shuffle>("channel_shuffle") {}
  xq::var call(const xq::var& x) const { return xq::ops::relu(x); }
  std::vector<xq::parameter_ptr> parameters() const { return {}; }
};
}  // namespace

TEST_CASE("lower: a layer without an integer form is named", "[deploy][lower]") {
  auto model = xq::sequential(xq::conv2d(4, 3), channel_shuffle(), xq::flatten(), xq::dense(3));
  xq::build(model, {1, 8, 8, 1});
  CHECK_THROWS_WITH(xq::deploy::lower(model, {8, 8, 1}),
                    Catch::Contains("channel_shuffle") && Catch::Contains("a layer with a deploy form"));
}

namespace {
/// One image against itself at two scales of features: a cost volume.
template <class Conv = xq::conv2d, class Corr = xq::correlation, class Flat = xq::flatten, class Dense = xq::dense>
struct self_cost {
  Conv a{xq::conv2d(4, 3)}, b{xq::conv2d(4, 3)};
  Corr cost{xq::correlation(1)};
  Flat flat;
  Dense head{xq::dense(4)};
  XQ_CHILDREN(a, b, cost, flat, head)
  xq::var operator()(const xq::var& x) { return head(flat(cost(a(x), b(x)))); }
};
}  // namespace

TEST_CASE("lower: the correlation (cost volume) is an engine op, on integers or the simulation's floats",
          "[deploy][lower][layers]") {
  const xq::dataset data = quadrant_data(128, 41), test = quadrant_data(200, 42);
  xq::tensor x = xt::view(data.inputs, xt::all(), xt::range(0, 6), xt::range(0, 6), xt::all());
  xq::tensor t = xt::view(test.inputs, xt::all(), xt::range(0, 6), xt::range(0, 6), xt::all());
  const xq::dataset small{x, data.targets};
  for (bool quantized_maps : {true, false}) {
    CAPTURE(quantized_maps);
    xq::set_seed(5);
    self_cost<> model;
    xq::build(model, {1, 6, 6, 1});
    xq::quantization_spec spec;
    spec.add("a").add("b").add("head");
    if (quantized_maps) spec.add("cost");  // both feature maps through their QDQ sites
    auto qat = xq::quantize_model(model, xq::quantization_mode::partial, spec);
    train(qat, small, 2, 5e-3f);
    const auto engine = lower_with_float_bias(qat, {6, 6, 1});  // the convs land on the maps' grids exactly
    INFO(engine.summary());
    const xq::deploy::correlation_op* c = nullptr;
    for (const auto& op : engine.ops)
      if (auto* k = dynamic_cast<const xq::deploy::correlation_op*>(op.get())) c = k;
    REQUIRE(c);
    CHECK(c->input_scales.size() == (quantized_maps ? 2u : 0u));
    CHECK(c->integer_output == quantized_maps);  // lands on the head's input grid through flatten
    const auto report = xq::deploy::parity(qat, engine, t);
    for (const auto& row : report.rows) {
      CAPTURE(row.label);
      if (row.label == "head input" && quantized_maps) {
        // One rounding of the exact int32 sum against the simulation's float sum: at most
        // one step, on values within a rounding of a grid boundary.
        CHECK(row.share() >= 0.999);
        CHECK(row.max_steps <= 1);
      } else {
        CHECK(row.share() == 1.0);
      }
    }
    check_saves_and_loads(engine, t, "correlation.xqi");
    check_slices(engine, t);
    CHECK(deploy_test::fast_kernels_match_reference(engine, t));
  }
}

TEST_CASE("export: the correlation in standard operators, an uncalibrated twin only when asked", "[deploy][onnx]") {
  self_cost<> model;
  xq::build(model, {1, 6, 6, 1});
  auto twin = xq::quantize_model(model, xq::quantize_options{}, {1, 6, 6, 1});
  // onnxruntime checks the volume itself (onnx.export_correlation*); here, its form.
  CHECK_THROWS_WITH(xq::deploy::export_onnx(twin, {6, 6, 1}), Catch::Contains("never did"));
  xq::deploy::export_options eo;
  eo.graph.allow_uncalibrated = true;
  const xq::onnx::model m = xq::deploy::export_onnx(twin, {6, 6, 1}, eo);
  std::size_t sums = 0;
  for (const auto& n : m.graph.nodes) sums += n.op_type == "ReduceSum";
  CHECK(sums == 1);
}

TEST_CASE("integer model files: save, load, run the same, and refuse corrupt and foreign files",
          "[deploy][file]") {
  auto model = make_small_cnn();
  const xq::dataset data = quadrant_data(128, 31);
  auto qat = trained_qat(model, data);
  xq::deploy::lower_options lo;
  lo.requant = requantization::tflite_double_rounding;
  const auto engine = xq::deploy::lower(qat, {12, 12, 1}, lo);
  const std::string path = "test_integer_model.xqi";
  xq::deploy::save_integer_model(engine, path);
  const auto back = xq::deploy::load_integer_model(path);
  CHECK(back.summary() == engine.summary());
  const xq::dataset test = quadrant_data(40, 32);
  const bool same = back.run(test.inputs) == engine.run(test.inputs);
  CHECK(same);
  CHECK(xq::deploy::parity(qat, back, test.inputs).rows.size() == engine.parity_points.size());

  std::vector<std::uint8_t> bytes = xq::deploy::encode_integer_model(engine);
  // A flipped byte in the payload: the CRC says so.
  std::vector<std::uint8_t> flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x40;
  CHECK_THROWS_AS(xq::deploy::decode_integer_model(flipped.data(), flipped.size(), "f.xqi"), xq::io_error);
  // Truncated, empty, foreign.
  CHECK_THROWS_WITH(xq::deploy::decode_integer_model(bytes.data(), bytes.size() / 3, "t.xqi"), Catch::Contains("t.xqi"));
  CHECK_THROWS_AS(xq::deploy::decode_integer_model(bytes.data(), 0, "e.xqi"), xq::io_error);
  const std::vector<std::uint8_t> ckpt = {0xa1, 0x66, 'f', 'o', 'r', 'm', 'a', 't', 0x61, 'x'};
  CHECK_THROWS_WITH(xq::deploy::decode_integer_model(ckpt.data(), ckpt.size(), "c.xqi"),
                    Catch::Contains("not an xquant integer model"));
  CHECK_THROWS_AS(xq::deploy::load_integer_model("no_such_file.xqi"), xq::io_error);
  std::remove(path.c_str());
}

TEST_CASE("lower: tfmot's and PyTorch's placement, quantizers on layer outputs", "[deploy][lower]") {
  const xq::dataset data = quadrant_data(256, 61), test = quadrant_data(200, 62);
  for (const bool pytorch : {false, true}) {
    CAPTURE(pytorch);
    auto qat = output_placement_qat(data, pytorch);
    // The relus' output quantizers are the grids: each conv / dense after the first is
    // requantized straight onto the next relu's output grid (the relu then runs on
    // integers), its input being the previous one's integers; the first conv reads the
    // float image, so it and its batch norm stay float until the relu's quantizer.
    const auto engine = lower_with_float_bias(qat, {12, 12, 1});
    INFO(engine.summary());
    std::size_t integer_linear = 0, real_linear = 0;
    for (const auto& op : engine.ops) {
      integer_linear += dynamic_cast<const xq::deploy::integer_linear_op*>(op.get()) != nullptr;
      real_linear += dynamic_cast<const xq::deploy::real_linear_op*>(op.get()) != nullptr;
    }
    CHECK(integer_linear == 3);
    CHECK(real_linear == 1);
    std::size_t outputs = 0;
    for (const auto& p : engine.parity_points) outputs += p.output;
    CHECK(outputs == 4);  // three relus' and the logits' quantizers
    check_exact(qat, {12, 12, 1}, test.inputs, &test.targets, 4);
    // The output parity points save and load as such.
    const std::vector<std::uint8_t> bytes = xq::deploy::encode_integer_model(engine);
    const auto back = xq::deploy::decode_integer_model(bytes.data(), bytes.size(), "tfmot.xqi");
    std::size_t back_outputs = 0;
    for (const auto& p : back.parity_points) back_outputs += p.output;
    CHECK(back_outputs == 4);
  }
}

TEST_CASE("lower: a batch norm's own output quantizer is the grid its conv lands on", "[deploy][lower]") {
  const xq::dataset data = quadrant_data(256, 61), test = quadrant_data(200, 62);
  xq::set_seed(3);
  auto model = xq::sequential(xq::conv2d(6, 3).padding(xq::padding::same), xq::relu(), xq::conv2d(6, 3),
                              xq::batch_norm(), xq::max_pool2d(2), xq::flatten(), xq::dense(4));
  xq::build(model, {1, 12, 12, 1});
  train(model, data, 2, 3e-3f);
  // NVIDIA's placement, and a QDQ on the batch norm's output by the spec.
  xq::quantize_options qo;
  xq::layer_quantization on_output;
  on_output.quantize_input = false;
  on_output.quantize_output = true;
  qo.spec.add("batch_normalization", on_output);
  auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
  train(qat, data, 1, 5e-4f);
  const auto engine = xq::deploy::lower(qat, {12, 12, 1});
  INFO(engine.summary());
  bool norm_absorbed = true, norm_point = false;
  for (const auto& op : engine.ops) norm_absorbed = norm_absorbed && std::string(op->kind()) != "batch_norm";
  for (const auto& p : engine.parity_points) norm_point = norm_point || (p.output && p.layer_path == "batch_normalization");
  CHECK(norm_absorbed);
  CHECK(norm_point);
  // The two convs' and the dense's inputs, and the batch norm's output: every integer.
  check_exact(qat, {12, 12, 1}, test.inputs, &test.targets, 4);
}

TEST_CASE("lower: padding, cropping, upsampling, a transposed conv, gelu, slice, layer norm and transpose",
          "[deploy][lower][layers]") {
  const xq::dataset data = quadrant_data(256, 71), test = quadrant_data(200, 72);
  auto qat = trained_grid_qat(data);
  const xq::deploy::integer_model engine = lower_with_float_bias(qat, {12, 12, 1});
  INFO(engine.summary());
  // The layout functions move the integers of the grid they are on; the others compute in float.
  std::map<std::string, std::string> kinds;
  for (const auto& op : engine.ops)
    if (const auto* f = dynamic_cast<const xq::deploy::function_op*>(op.get()))
      kinds[f->function] = f->moves_only() ? "moves" : "float";
  CHECK(kinds["zero_padding2d"] == "moves");
  CHECK(kinds["cropping2d"] == "moves");
  CHECK(kinds["upsampling2d"] == "float");  // the bilinear one (the nearest one moves; both exist)
  CHECK(kinds["slice"] == "moves");
  CHECK(kinds["transpose"] == "moves");
  CHECK(kinds["conv2d_transpose"] == "float");
  CHECK(kinds["gelu"] == "float");
  CHECK(kinds["layer_norm"] == "float");
  // The stem lands on the middle conv's input grid through relu and the padding (both
  // commute with rounding), and the padding moves those integers.
  const std::vector<xq::deploy::engine_tensor> values = engine.run_all(test.inputs);
  std::size_t padded_integers = 0;
  for (const auto& op : engine.ops)
    if (const auto* f = dynamic_cast<const xq::deploy::function_op*>(op.get()); f && f->function == "zero_padding2d")
      padded_integers += values.at(f->output).kind == xq::deploy::value_kind::integer;
  CHECK(padded_integers == 1);
  // stem, middle, refine, the transposed conv and the head (NVIDIA's), the bilinear
  // upsampling's and the layer norm's (opted in).
  check_exact(qat, {12, 12, 1}, test.inputs, &test.targets, 7);
}

TEST_CASE("lower: a transformer block, its position indices a constant", "[deploy][lower][layers]") {
  const xq::dataset data = token_data(256, 73), test = token_data(200, 74);
  auto qat = trained_transformer_qat(data);
  const xq::deploy::integer_model engine = lower_with_float_bias(qat, {6});
  INFO(engine.summary());
  std::size_t constants = 0, attention = 0;
  for (const auto& op : engine.ops) {
    constants += std::string(op->kind()) == "constant";
    attention += std::string(op->kind()) == "attention_probabilities" || std::string(op->kind()) == "attend";
  }
  CHECK(constants == 1);
  CHECK(attention == 2);
  // Every dense layer's input (query, key, value, attention output, up, down, keys, head)
  // and the attention scores' two inputs (opted in).
  check_exact(qat, {6}, test.inputs, &test.targets, 10);
}

TEST_CASE("lower: an LSTM and GRUs, forwards and backwards, sequences and last states", "[deploy][lower][layers]") {
  const xq::dataset data = token_data(256, 76), test = token_data(200, 77);
  auto qat = trained_recurrent_qat(data);
  const xq::deploy::integer_model engine = lower_with_float_bias(qat, {6});
  INFO(engine.summary());
  std::size_t loops = 0;
  for (const auto& op : engine.ops)
    loops += std::string(op->kind()) == "lstm_recurrence" || std::string(op->kind()) == "gru_recurrence";
  CHECK(loops == 3);
  // The three projections' inputs and the head's (NVIDIA's; a recurrence's input never).
  check_exact(qat, {6}, test.inputs, &test.targets, 4);
}

namespace {
/// Doubles its input in code the trace does not see: not a constant, whatever the input.
template <class Conv = xq::conv2d, class Flat = xq::flatten, class Dense = xq::dense>
struct untraced_input {
  Conv conv{xq::conv2d(2, 3)};
  Flat flat;
  Dense head{xq::dense(3)};
  XQ_CHILDREN(conv, flat, head)
  xq::var operator()(const xq::var& x) {
    xq::tensor doubled = x.value();
    for (float& v : doubled) v *= 2.0f;
    return head(flat(conv(xq::var(doubled))));
  }
};
}  // namespace

TEST_CASE("lower and export: a value made from the input outside the trace is refused, not fixed",
          "[deploy][lower]") {
  untraced_input<> model;
  xq::build(model, {1, 6, 6, 1});
  CHECK_THROWS_WITH(xq::deploy::lower(model, {6, 6, 1}),
                    Catch::Contains("conv") && Catch::Contains("a value computed by code the trace does not see"));
  CHECK_THROWS_WITH(xq::deploy::export_onnx(model, {6, 6, 1}),
                    Catch::Contains("conv") && Catch::Contains("a value computed by code the trace does not see"));
}

TEST_CASE("integer model files: a function op with arguments out of range is refused, naming it", "[deploy][file]") {
  const xq::dataset data = quadrant_data(64, 75);
  auto qat = trained_grid_qat(data);
  xq::deploy::integer_model engine = xq::deploy::lower(qat, {12, 12, 1});
  bool changed = false;
  for (auto& op : engine.ops)
    if (auto* f = dynamic_cast<xq::deploy::function_op*>(op.get()); f && f->function == "slice") {
      f->ints[1] = f->ints[2];  // begin == end: an empty slice
      changed = true;
    }
  REQUIRE(changed);
  const std::vector<std::uint8_t> bytes = xq::deploy::encode_integer_model(engine);
  CHECK_THROWS_WITH(xq::deploy::decode_integer_model(bytes.data(), bytes.size(), "s.xqi"),
                    Catch::Contains("s.xqi") && Catch::Contains("first_six") && Catch::Contains("a begin before the end"));
}
