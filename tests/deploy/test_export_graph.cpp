// The ONNX exporter (deploy/onnx/export_graph.hpp, deploy/export_onnx.hpp): what it writes
// for a deploy graph, checked on the ONNX model in memory — graphs built by hand (the
// exporter reads nothing but the graph) and small models through export_onnx. onnxruntime
// runs the files in the onnx-labelled tests (onnx_export_cases.cpp).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include <xquant/deploy/export_onnx.hpp>
#include <xquant/deploy/graph/graph_decisions.hpp>
#include <xquant/xquant.hpp>

namespace {

namespace dp = xq::deploy;
using Catch::Matchers::Contains;

std::size_t count_ops(const xq::onnx::model& m, const std::string& op) {
  std::size_t n = 0;
  for (const auto& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

/// The node that outputs `name` (which must exist).
const xq::onnx::node& producer(const xq::onnx::model& m, const std::string& name) {
  const xq::onnx::node* n = m.graph.producer(name);
  REQUIRE(n != nullptr);
  return *n;
}

/// The type of initializer `name` (which must exist).
xq::onnx::data_type m_type(const xq::onnx::model& m, const std::string& name) {
  const xq::onnx::tensor_data* t = m.graph.find_initializer(name);
  REQUIRE(t != nullptr);
  return t->type;
}

/// A narrow int8 grid of one scale.
xq::quantization_grid narrow_grid(float scale) {
  xq::quantization_grid g;
  g.scale = {scale};
  g.zero_point = {0};
  g.qmin = -127;
  g.qmax = 127;
  return g;
}

/// Two siamese inputs: one conv called on both (its weights once), a subtract, two outputs.
template <class Conv = xq::conv2d, class Flat = xq::flatten, class Sub = xq::subtract, class Dense = xq::dense>
struct two_in_two_out {
  Conv features{xq::conv2d(3, 3)};
  Flat flat;
  Sub difference;
  Dense head{xq::dense(2)};
  XQ_CHILDREN(features, flat, difference, head)
  std::vector<xq::var> operator()(const xq::var& a, const xq::var& b) {
    const xq::var d = difference(flat(features(a)), flat(features(b)));
    return {head(d), d};
  }
};

}  // namespace

TEST_CASE("export_graph: a correlation from a hand-built graph, in standard operators", "[deploy][onnx]") {
  dp::deploy_graph g;
  const dp::value_id a = g.add_value({1, 4, 5, 3}, "a"), b = g.add_value({1, 4, 5, 3}, "b");
  g.inputs = {a, b};
  g.input_names = {"first", "second"};
  const dp::value_id v = g.add_node(dp::op::correlation{1}, {a, b}, {1, 4, 5, 9}, "cost", "correlation", 0);
  g.outputs = {v};
  g.output_names = {"volume"};
  dp::decide(g);
  const xq::onnx::model m = dp::export_graph(g);
  xq::onnx::validate(m);
  REQUIRE(m.graph.inputs.size() == 2);
  CHECK(m.graph.inputs[0].name == "first");
  CHECK(m.graph.inputs[1].name == "second");
  REQUIRE(m.graph.outputs.size() == 1);
  CHECK(m.graph.outputs[0].name == "volume");
  CHECK(*m.graph.outputs[0].shape == std::vector<xq::onnx::dimension>{"N", 4, 5, 9});
  // One slice of the padded second map per displacement, one sum over the channels.
  CHECK(count_ops(m, "Pad") == 1);
  CHECK(count_ops(m, "Slice") == 9);
  CHECK(count_ops(m, "ReduceSum") == 1);
  CHECK(m.opset() == 13);
}

TEST_CASE("export_graph: a tied table is one initializer, its quantized use Q -> Clip -> DQ", "[deploy][onnx]") {
  // ids -> gather (the table quantized, narrow range) -> flatten; the tied projection reads
  // the same weight in float.
  dp::deploy_graph g;
  const dp::value_id ids = g.add_value({1, 2}, "ids");
  g.inputs = {ids};
  g.input_names = {"input"};
  dp::graph_weight w;
  w.name = "embed/embeddings";
  w.value = xq::tensor::from_shape({4, 3});
  for (std::size_t i = 0; i < w.value.size(); ++i) w.value.data()[i] = float(i) * 0.1f - 0.5f;
  w.layers = {"embed", "project"};
  g.weights.push_back(w);
  dp::weight_use lookup;
  lookup.weight = 0;
  lookup.quantized = true;
  lookup.q.grid = narrow_grid(0.004f);  // the range 0.508: entries 0.6 and more lie past it
  lookup.q.quantizer = "embed/kernel_quantizer";
  for (std::size_t i = 0; i < w.value.size(); ++i) {
    const int q = int(std::nearbyint(w.value.data()[i] / 0.004f));
    lookup.q.integers.push_back(std::max(-127, std::min(127, q)));
  }
  lookup.q.dequantized = w.value;
  dp::op::gather gather;
  gather.table = lookup;
  const dp::value_id rows = g.add_node(gather, {ids}, {1, 2, 3}, "embed", "embedding", 0);
  const dp::value_id flat = g.add_node(dp::op::reshape{{6}}, {rows}, {1, 6}, "flatten", "flatten", 0);
  dp::op::linear project;
  project.shape = dp::op::linear::form::dense;
  project.transposed = true;
  project.kernel.weight = 0;
  const dp::value_id sliced = g.add_node(dp::op::slice{{1}, {0}, {3}}, {flat}, {1, 3}, "first", "slice", 0);
  const dp::value_id logits = g.add_node(project, {sliced}, {1, 4}, "project", "tied_projection", 0);
  g.outputs = {logits};
  g.output_names = {"output"};
  dp::decide(g);
  dp::export_options o;
  o.expose_quantized = true;
  const xq::onnx::model m = dp::export_graph(g, o);
  xq::onnx::validate(m);
  std::size_t tables = 0;
  for (const auto& t : m.graph.initializers) tables += t.dims == std::vector<std::int64_t>{4, 3};
  CHECK(tables == 1);
  REQUIRE(m.graph.find_initializer("tied/embed/kernel") != nullptr);
  // The Gather reads DequantizeLinear(Clip(QuantizeLinear(table))); the Gemm the table.
  const xq::onnx::node& dq = producer(m, producer(m, "embed").inputs[0]);
  REQUIRE(dq.op_type == "DequantizeLinear");
  const xq::onnx::node& clip = producer(m, dq.inputs[0]);
  REQUIRE(clip.op_type == "Clip");
  CHECK(m.graph.find_initializer(clip.inputs[1])->integer_values() == std::vector<std::int64_t>{-127});
  CHECK(m.graph.find_initializer(clip.inputs[2])->integer_values() == std::vector<std::int64_t>{127});
  CHECK(producer(m, clip.inputs[0]).inputs[0] == "tied/embed/kernel");
  CHECK(producer(m, "project").op_type == "Gemm");
  CHECK(producer(m, "project").inputs[1] == "tied/embed/kernel");
  // The use's integers are exposed, and the metadata says Q gives the simulation's.
  bool exposed = false;
  for (const auto& out : m.graph.outputs) exposed = exposed || out.name == "q:embed/kernel_quantizer";
  CHECK(exposed);
  bool noted = false;
  for (const auto& p : m.metadata_props)
    noted = noted || (p.first == "xquant.quantizer.embed/kernel_quantizer.tied_use" &&
                      p.second.find("at 12 of 12 entries") != std::string::npos);
  CHECK(noted);
}

TEST_CASE("export_graph: opsets it cannot write and graphs without decisions are refused", "[deploy][onnx]") {
  dp::deploy_graph g;
  const dp::value_id x = g.add_value({1, 3}, "x");
  g.inputs = {x};
  g.input_names = {"input"};
  dp::op::quantize q;
  q.grid = narrow_grid(0.5f);
  q.grid.qmin = -32767;  // 16 bits: QuantizeLinear's int16 is opset 21
  q.grid.qmax = 32767;
  q.grid.num_bits = 16;
  q.quantizer = "q";
  q.label = "x input";
  const dp::value_id y = g.add_node(q, {x}, {1, 3}, "q", "fake_quantizer", 0);
  g.outputs = {y};
  g.output_names = {"output"};
  CHECK_THROWS_WITH(dp::export_graph(g), Contains("decisions"));
  dp::decide(g);
  CHECK(dp::export_graph(g).opset() == 21);  // automatic: 21 for a 16-bit grid
  dp::export_options o;
  o.opset = 17;
  CHECK_THROWS_WITH(dp::export_graph(g, o), Contains("opset 0 (automatic), 13, or 19 and later"));
  o.opset = 13;
  CHECK_THROWS_WITH(dp::export_graph(g, o), Contains("q") && Contains("opset 21"));
}

TEST_CASE("export_onnx: several inputs and outputs, named, with shapes as xq::build takes them", "[deploy][onnx]") {
  xq::set_seed(3);
  two_in_two_out<> model;
  const xq::input_shapes shapes{{1, 5, 5, 1}, {1, 5, 5, 1}};
  xq::build(model, shapes);
  dp::export_options o;
  o.input_names = {"left", "right"};
  o.output_names = {"logits", "difference"};
  const xq::onnx::model m = dp::export_onnx(model, shapes, o);
  xq::onnx::validate(m);
  REQUIRE(m.graph.inputs.size() == 2);
  CHECK(m.graph.inputs[0].name == "left");
  CHECK(*m.graph.inputs[1].shape == std::vector<xq::onnx::dimension>{"N", 5, 5, 1});
  REQUIRE(m.graph.outputs.size() == 2);
  CHECK(m.graph.outputs[0].name == "logits");
  CHECK(m.graph.outputs[1].name == "difference");
  CHECK(*m.graph.outputs[1].shape == std::vector<xq::onnx::dimension>{"N", 27});
  // One conv called twice: one kernel initializer, two Conv nodes.
  CHECK(count_ops(m, "Conv") == 2);
  std::size_t kernels = 0;
  for (const auto& t : m.graph.initializers) kernels += t.name == "features/kernel";
  CHECK(kernels == 1);
  // The defaults: "input", "input_1"; "output", "output_1".
  const xq::onnx::model d = dp::export_onnx(model, shapes);
  CHECK(d.graph.inputs[1].name == "input_1");
  CHECK(d.graph.outputs[1].name == "output_1");
  o.output_names = {"one"};
  CHECK_THROWS_WITH(dp::export_onnx(model, shapes, o), Contains("output_names") && Contains("1 names"));
  o.output_names.clear();
  o.input_names = {"one"};
  CHECK_THROWS_WITH(dp::export_onnx(model, shapes, o), Contains("input_names") && Contains("1 names"));
}

TEST_CASE("export_onnx: an unbuilt model and a never-calibrated twin are refused, the latter allowed on request",
          "[deploy][onnx]") {
  auto model = xq::sequential(xq::conv2d(2, 3), xq::flatten(), xq::dense(3));
  CHECK_THROWS_WITH(dp::export_onnx(model, {6, 6, 1}), Contains("a built model"));
  xq::build(model, {1, 6, 6, 1});
  auto twin = xq::quantize_model(model, xq::quantize_options{}, {1, 6, 6, 1});
  CHECK_THROWS_WITH(dp::export_onnx(twin, {6, 6, 1}), Contains("conv2d/") && Contains("never did"));
  dp::export_options o;
  o.graph.allow_uncalibrated = true;
  const xq::onnx::model m = dp::export_onnx(twin, {6, 6, 1}, o);
  CHECK(count_ops(m, "QuantizeLinear") == 2);
}

namespace {

/// x (1, 2) -> a dense layer (2 -> 3) whose kernel is on `grid`, its integers `q`.
dp::deploy_graph dense_graph(const xq::quantization_grid& grid, const std::vector<std::int32_t>& q) {
  dp::deploy_graph g;
  const dp::value_id x = g.add_value({1, 2}, "x");
  g.inputs = {x};
  g.input_names = {"input"};
  dp::graph_weight w;
  w.name = "dense/kernel";
  w.value = xq::tensor::from_shape({2, 3});
  for (std::size_t i = 0; i < 6; ++i)
    w.value.data()[i] = float(q[i] - grid.zero_point[grid.channels() == 1 ? 0 : i % 3]) * grid.scale[grid.channels() == 1 ? 0 : i % 3];
  w.layers = {"dense"};
  g.weights.push_back(w);
  dp::op::linear l;
  l.kernel.weight = 0;
  l.kernel.quantized = true;
  l.kernel.q.grid = grid;
  l.kernel.q.integers = q;
  l.kernel.q.dequantized = w.value;
  l.kernel.q.quantizer = "dense/kernel_quantizer";
  const dp::value_id y = g.add_node(l, {x}, {1, 3}, "dense", "dense", 0);
  g.outputs = {y};
  g.output_names = {"output"};
  dp::decide(g);
  return g;
}

}  // namespace

TEST_CASE("export_graph: kernels int4 from opset 21, uint8 grids shifted onto int8, float_qdq's Q -> DQ",
          "[deploy][onnx]") {
  xq::quantization_grid four = narrow_grid(0.25f);
  four.qmin = -7;
  four.qmax = 7;
  four.num_bits = 4;
  const dp::deploy_graph g4 = dense_graph(four, {-7, -3, 0, 1, 5, 7});
  dp::export_options o;
  CHECK(m_type(dp::export_graph(g4, o), "dense/kernel") == xq::onnx::data_type::int8);
  o.opset = 21;
  const xq::onnx::model m21 = dp::export_graph(g4, o);
  xq::onnx::validate(m21);
  CHECK(m_type(m21, "dense/kernel") == xq::onnx::data_type::int4);
  CHECK(m21.graph.find_initializer("dense/kernel")->integer_values() == std::vector<std::int64_t>{-7, -3, 0, 1, 5, 7});

  // tfmot's FakeQuant kernels: uint8 [1, 255] around a zero point, per channel; int8 with
  // the integers and the zero points moved by -128 (the same reals out of DQ).
  xq::quantization_grid u8;
  u8.scale = {0.1f, 0.2f, 0.3f};
  u8.zero_point = {120, 128, 140};
  u8.qmin = 1;
  u8.qmax = 255;
  u8.per_channel = true;
  u8.channel_axis = -1;
  const dp::deploy_graph gu = dense_graph(u8, {1, 128, 255, 200, 60, 140});
  const xq::onnx::model mu = dp::export_graph(gu);
  xq::onnx::validate(mu);
  CHECK(mu.graph.find_initializer("dense/kernel")->integer_values() == std::vector<std::int64_t>{-127, 0, 127, 72, -68, 12});
  CHECK(mu.graph.find_initializer("dense/kernel/zero_point")->integer_values() == std::vector<std::int64_t>{-8, 0, 12});
  const xq::onnx::node& dq = producer(mu, producer(mu, "dense").inputs[1]);
  CHECK(dq.op_type == "DequantizeLinear");
  REQUIRE(dq.find_attribute("axis") != nullptr);
  CHECK(dq.find_attribute("axis")->i == 1);

  // NVIDIA's layout: the float kernel, QuantizeLinear, DequantizeLinear; a grid with a zero
  // point is refused, naming its quantizer.
  dp::export_options nvidia;
  nvidia.weight_layout = dp::onnx_weight_layout::float_qdq;
  const xq::onnx::model mf = dp::export_graph(g4, nvidia);
  CHECK(m_type(mf, "dense/kernel") == xq::onnx::data_type::float32);
  CHECK(producer(mf, producer(mf, producer(mf, "dense").inputs[1]).inputs[0]).op_type == "QuantizeLinear");
  CHECK_THROWS_WITH(dp::export_graph(gu, nvidia), Contains("dense/kernel_quantizer") && Contains("symmetric"));
}
