// The deploy graph (include/xquant/deploy/graph/): what it holds for a model — weights once
// per parameter (a tied table once), quantization points with their grids, any number of
// inputs and outputs — the decisions it makes once, the deploy protocol from a user's side
// (a layer written from docs/layer_contract.md's "Deploying" section alone, lowered with
// parity on its integers), and what the build refuses (issue 33's finding 10).

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include <xquant/deploy/graph/build_graph.hpp>
#include <xquant/deploy/integer_model_file.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/quantizers/calibrate.hpp>
#include <xquant/quantizers/lsq_quantizer.hpp>
#include <xquant/xquant.hpp>
#include <xtensor/xrandom.hpp>
#include <xtensor/xview.hpp>

#include "deploy_models.hpp"

namespace user {

/// relu, then the largest value of each channel over the image: (N, H, W, C) -> (N, C).
/// A leaf layer with its own forward and backward, deployed through the protocol of
/// docs/layer_contract.md ("Deploying") as a composition of two existing ops.
class relu_channel_max : public xq::layer<relu_channel_max> {
 public:
  relu_channel_max() : xq::layer<relu_channel_max>("relu_channel_max") {}
  xq::var call(const xq::var& x) const {
    const auto& s = x.shape();
    const std::size_t n = s[0], pixels = s[1] * s[2], c = s[3];
    xq::tensor y = xq::tensor::from_shape({n, c});
    std::vector<std::size_t> arg(n * c, 0);
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t j = 0; j < c; ++j) {
        float best = 0.0f;  // relu first: nothing below 0
        for (std::size_t p = 0; p < pixels; ++p) {
          const float v = x.value().data()[(b * pixels + p) * c + j];
          if (v > best) best = v, arg[b * c + j] = p + 1;
        }
        y.data()[b * c + j] = best;
      }
    return xq::make_result(std::move(y), xq::needs_grad(x), [x, arg, pixels, c](const xq::tensor& dy) {
      xq::tensor dx = xt::zeros<float>(x.shape());
      for (std::size_t i = 0; i < arg.size(); ++i)
        if (arg[i]) dx.data()[((i / c) * pixels + arg[i] - 1) * c + i % c] = dy.data()[i];
      xq::add_grad(x, std::move(dx));
    });
  }
  std::vector<xq::parameter_ptr> parameters() const { return {}; }
};

/// Its deploy form: a relu, then a global max pool (the relu's output has the input's shape).
xq::deploy::value_id describe_deployment(const relu_channel_max&, xq::deploy::layer_builder& b) {
  xq::deploy::op::activation relu;
  relu.f = xq::deploy::op::activation::function::relu;
  const xq::deploy::value_id y = b.add(relu, {b.input(0)});
  xq::deploy::op::pool max;
  max.what = xq::deploy::op::pool::kind::max;
  max.global = true;
  return b.add(max, {y});
}

/// A layer that says it cannot deploy, and why.
class random_shift : public xq::layer<random_shift> {
 public:
  random_shift() : xq::layer<random_shift>("random_shift") {}
  xq::var call(const xq::var& x) const { return x; }
  std::vector<xq::parameter_ptr> parameters() const { return {}; }
};
xq::deploy::value_id describe_deployment(const random_shift&, xq::deploy::layer_builder& b) {
  b.refuse("it samples its shift at run time");
}

/// A form that returns a value of the wrong shape.
class bad_form : public xq::layer<bad_form> {
 public:
  bad_form() : xq::layer<bad_form>("bad_form") {}
  xq::var call(const xq::var& x) const { return x; }
  std::vector<xq::parameter_ptr> parameters() const { return {}; }
};
xq::deploy::value_id describe_deployment(const bad_form&, xq::deploy::layer_builder& b) {
  xq::deploy::op::pool p;
  p.global = true;
  return b.add(p, {b.input(0)}, {1, 4});
}

}  // namespace user

// The twin of the user's layer: NVIDIA's way of supporting a new layer, a wrapper.
template <>
struct xq::quantize<user::relu_channel_max> {
  using type = xq::input_quantized<user::relu_channel_max>;
};

namespace {

using namespace deploy_test;

template <class Conv = xq::conv2d, class Max = user::relu_channel_max, class Head = xq::dense>
struct user_net {
  Conv conv{xq::conv2d(6, 3).padding(xq::padding::same)};
  Max max;
  Head head{xq::dense(4)};
  XQ_CHILDREN(conv, max, head)
  xq::var operator()(const xq::var& x) { return head(max(conv(x))); }
};

/// Two frames through one feature extractor, then their difference and their sum.
template <class Conv = xq::conv2d, class Sub = xq::subtract, class Add = xq::add>
struct siamese {
  Conv features{xq::conv2d(4, 3).padding(xq::padding::same)};
  Sub difference;
  Add sum;
  XQ_CHILDREN(features, difference, sum)
  std::vector<xq::var> operator()(const xq::var& a, const xq::var& b) {
    const xq::var fa = features(a), fb = features(b);
    return {difference({fa, fb}), sum({fa, fb})};
  }
};

/// An embedding and its tied projection.
template <class Embed = xq::embedding, class Project = xq::tied_projection>
struct tied_pair {
  Embed embed{xq::embedding(12, 6)};
  Project project;
  XQ_CHILDREN(embed, project)
  tied_pair() = default;
  explicit tied_pair(bool) {
    embed.build();
    project = Project(embed, true);
  }
  xq::var operator()(const xq::var& ids) { return project(embed(ids)); }
};

template <class Op>
std::size_t count_ops(const xq::deploy::deploy_graph& g) {
  std::size_t n = 0;
  for (const auto& node : g.nodes) n += std::holds_alternative<Op>(node.op) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("deploy graph: a user's layer written from the layer contract deploys, quantized, with parity",
          "[deploy][graph]") {
  user_net<> model;
  xq::build(model, {1, 8, 8, 1});
  const xq::dataset data = quadrant_data(64, 3);
  xq::tensor x = xt::view(data.inputs, xt::range(0, 64), xt::range(0, 8), xt::range(0, 8), xt::all());
  auto qat = xq::quantize_model(model, xq::quantize_options{}, {1, 8, 8, 1});
  REQUIRE(qat.max.input_quantizer().enabled());  // placed by the scheme, as an unlisted layer with a wrapper
  {
    const xq::training_mode training;
    for (int i = 0; i < 3; ++i) qat(xq::var(x));
  }
  const auto g = xq::deploy::build_graph(qat, xq::input_shapes{{1, 8, 8, 1}});
  CHECK(count_ops<xq::deploy::op::pool>(g) == 1);
  CHECK(count_ops<xq::deploy::op::activation>(g) == 1);
  CHECK(count_ops<xq::deploy::op::quantize>(g) == 3);  // conv, the user's layer, dense: their inputs
  const auto engine = xq::deploy::lower(qat, {8, 8, 1});
  const auto report = xq::deploy::parity(qat, engine, x);
  bool saw_user_layer = false;
  for (const auto& row : report.rows) {
    CAPTURE(row.label);
    CHECK(row.share() == 1.0);
    saw_user_layer = saw_user_layer || row.label == "max input";
  }
  CHECK(saw_user_layer);
  CHECK(report.same_top1_share() == 1.0);
}

TEST_CASE("deploy graph: a tied table is one weight with two users, each use quantized on its own",
          "[deploy][graph]") {
  tied_pair<> model(true);
  xq::build(model, {1, 5});
  xq::quantization_spec spec;
  spec.add("embed").add("project");
  auto q = xq::quantize_model(model, xq::quantization_mode::partial, spec);
  xq::tensor ids = xq::tensor::from_shape({4, 5});
  for (std::size_t i = 0; i < ids.size(); ++i) ids.data()[i] = float(i % 12);
  {
    const xq::training_mode training;
    q(xq::var(ids));
  }
  const auto g = xq::deploy::build_graph(q, xq::input_shapes{{1, 5}}, xq::deploy::graph_options{true, {}, {}});
  std::size_t tied = 0;
  for (const auto& w : g.weights)
    if (w.tied()) {
      ++tied;
      CHECK(w.name == "embed/embeddings");
      CHECK(w.layers == std::vector<std::string>{"embed", "project"});
    }
  CHECK(tied == 1);
  // Each use through its own kernel quantizer: two quantized uses of the one weight.
  std::size_t uses = 0;
  for (const auto& n : g.nodes) {
    if (const auto* l = std::get_if<xq::deploy::op::linear>(&n.op)) uses += l->kernel.quantized ? 1 : 0;
    if (const auto* t = std::get_if<xq::deploy::op::gather>(&n.op)) uses += t->table.quantized ? 1 : 0;
  }
  CHECK(uses == 2);
}

TEST_CASE("deploy graph: two inputs and two outputs, one extractor called on both", "[deploy][graph]") {
  siamese<> model;
  xq::build(model, xq::input_shapes{{1, 6, 6, 1}, {1, 6, 6, 1}});
  xq::deploy::graph_options o;
  o.input_names = {"frame_1", "frame_2"};
  const auto g = xq::deploy::build_graph(model, xq::input_shapes{{2, 6, 6, 1}, {2, 6, 6, 1}}, o);
  CHECK(g.inputs.size() == 2);
  CHECK(g.input_names == std::vector<std::string>{"frame_1", "frame_2"});
  CHECK(g.outputs.size() == 2);
  CHECK(g.output_names == std::vector<std::string>{"output", "output_1"});
  CHECK(count_ops<xq::deploy::op::linear>(g) == 2);  // one layer, two calls
  CHECK(g.weights.size() == 2);                      // its kernel and bias, once
  std::size_t second_call = 0;
  for (const auto& n : g.nodes) second_call += n.layer == "features" && n.call == 1 ? 1 : 0;
  CHECK(second_call == 1);
}

TEST_CASE("deploy graph: batch norms absorbed, folds cancelled and landing grids decided once", "[deploy][graph]") {
  auto model = make_small_cnn();
  const xq::dataset data = quadrant_data(64, 9);
  auto qat = trained_qat(model, data);
  const auto g = xq::deploy::build_graph(qat, xq::input_shapes{{1, 12, 12, 1}});
  std::size_t absorbed = 0, cancelled = 0, landing = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& d = g.decisions[i];
    if (d.absorbs == xq::deploy::no_index) continue;
    ++absorbed;
    cancelled += d.fold_cancels ? 1 : 0;
    CHECK(std::holds_alternative<xq::deploy::op::batch_norm>(g.nodes[d.absorbs].op));
    CHECK(g.decisions[d.absorbs].absorbed_by == i);
    if (d.lands_on != xq::deploy::no_index) {
      ++landing;  // through relu and max pooling to the next conv's input quantizer
      CHECK(std::holds_alternative<xq::deploy::op::quantize>(g.nodes[d.lands_on].op));
    }
  }
  CHECK(absorbed == 2);
  CHECK(cancelled == 2);  // trained_qat folds both batch norms
  CHECK(landing == 2);
}

TEST_CASE("deploy graph: what the build refuses names the layer and why", "[deploy][graph]") {
  SECTION("a layer whose form refuses") {
    auto model = xq::sequential(xq::conv2d(4, 3), user::random_shift(), xq::flatten(), xq::dense(2));
    xq::build(model, {1, 6, 6, 1});
    CHECK_THROWS_WITH(xq::deploy::build_graph(model, xq::input_shapes{{1, 6, 6, 1}}),
                      Catch::Contains("random_shift") && Catch::Contains("it samples its shift at run time"));
  }
  SECTION("a form whose output has another shape than the traced one") {
    auto model = xq::sequential(xq::conv2d(4, 3), user::bad_form(), xq::flatten(), xq::dense(2));
    xq::build(model, {1, 6, 6, 1});
    CHECK_THROWS_WITH(xq::deploy::build_graph(model, xq::input_shapes{{1, 6, 6, 1}}),
                      Catch::Contains("bad_form") && Catch::Contains("(1, 4, 4, 4)") && Catch::Contains("(1, 4)"));
  }
  SECTION("a model never built") {
    auto model = xq::sequential(xq::conv2d(4, 3), xq::flatten(), xq::dense(2));
    CHECK_THROWS_WITH(xq::deploy::lower(model, {6, 6, 1}),
                      Catch::Contains("conv2d") && Catch::Contains("a built model") && Catch::Contains("never built"));
    CHECK_FALSE(model.get<0>().kernel());  // read, not changed: the refused model is still unbuilt
  }
  SECTION("a PTQ twin never calibrated, until calibrated") {
    auto model = make_small_cnn();
    xq::build(model, {1, 12, 12, 1});
    auto ptq = xq::quantize_model(model, xq::quantize_options{}, {1, 12, 12, 1});
    CHECK_THROWS_WITH(xq::deploy::lower(ptq, {12, 12, 1}),
                      Catch::Contains("block/conv/") && Catch::Contains("quantizer") && Catch::Contains("never did"));
    xq::deploy::lower_options allow;
    allow.graph.allow_uncalibrated = true;
    CHECK_NOTHROW(xq::deploy::lower(ptq, {12, 12, 1}, allow));
    const xq::dataset data = quadrant_data(32, 5);
    xq::calibrate(ptq, data.inputs);
    CHECK_NOTHROW(xq::deploy::lower(ptq, {12, 12, 1}));
  }
  SECTION("a weight that is not finite") {
    auto model = xq::sequential(xq::conv2d(4, 3), xq::flatten(), xq::dense(2));
    xq::build(model, {1, 6, 6, 1});
    model.get<2>().bias()->value.data()[1] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH(xq::deploy::lower(model, {6, 6, 1}),
                      Catch::Contains("dense/bias") && Catch::Contains("finite weights"));
  }
}

TEST_CASE("parity: labels must be one whole class index per image", "[deploy][graph]") {
  auto model = xq::sequential(xq::conv2d(4, 3), xq::flatten(), xq::dense(3));
  xq::build(model, {1, 6, 6, 1});
  const auto engine = xq::deploy::lower(model, {6, 6, 1});
  xq::tensor x = xt::zeros<float>({4, 6, 6, 1});
  auto labels_of = [](std::vector<float> v, std::vector<std::size_t> shape) {
    xq::tensor t = xq::tensor::from_shape(shape);
    std::copy(v.begin(), v.end(), t.begin());
    return t;
  };
  const xq::tensor fewer = labels_of({0, 1, 2}, {3});
  CHECK_THROWS_WITH(xq::deploy::parity(model, engine, x, &fewer), Catch::Contains("4 labels"));
  const xq::tensor nan = labels_of({0, 1, std::nanf(""), 2}, {4});
  CHECK_THROWS_WITH(xq::deploy::parity(model, engine, x, &nan), Catch::Contains("class indices 0 to 2"));
  const xq::tensor out_of_range = labels_of({0, 1, 3, 2}, {4});
  CHECK_THROWS_WITH(xq::deploy::parity(model, engine, x, &out_of_range), Catch::Contains("3 at label 2"));
  const xq::tensor rank2 = labels_of({0, 1, 2, 0}, {4, 1});
  CHECK_THROWS_WITH(xq::deploy::parity(model, engine, x, &rank2), Catch::Contains("rank 1"));
  const xq::tensor good = labels_of({0, 1, 2, 0}, {4});
  CHECK(xq::deploy::parity(model, engine, x, &good).samples == 4);
}

// Issue 34, finding 14: the table printed "top-1: 32768 of 32768 predictions identical" for
// a flow regression, a top-1 over the two components of each pixel's vector.
TEST_CASE("parity: the table prints top-1 only for class scores or with labels", "[deploy][graph]") {
  xq::tensor x = xt::random::rand<float>({4, 6, 6, 1});
  auto regression = xq::sequential(xq::conv2d(2, 3).padding(xq::padding::same));  // (N, 6, 6, 2)
  xq::build(regression, {1, 6, 6, 1});
  const auto flow = xq::deploy::parity(regression, xq::deploy::lower(regression, {6, 6, 1}), x);
  CHECK_FALSE(flow.class_scores);
  CHECK(flow.output_elements == 4 * 6 * 6 * 2);
  INFO(flow.table());
  CHECK_THAT(flow.table(), Catch::Contains("output: 288 of 288 elements identical"));
  CHECK_THAT(flow.table(), !Catch::Contains("top-1"));

  auto classifier = xq::sequential(xq::conv2d(4, 3), xq::flatten(), xq::dense(3));  // (N, 3)
  xq::build(classifier, {1, 6, 6, 1});
  const auto engine = xq::deploy::lower(classifier, {6, 6, 1});
  const auto scores = xq::deploy::parity(classifier, engine, x);
  CHECK(scores.class_scores);
  CHECK_THAT(scores.table(), Catch::Contains("top-1: 4 of 4 predictions identical"));
  xq::tensor labels = xq::tensor::from_shape({4});
  std::fill(labels.begin(), labels.end(), 1.0f);
  CHECK_THAT(xq::deploy::parity(classifier, engine, x, &labels).table(),
             Catch::Contains("top-1: 4 of 4") && Catch::Contains("accuracy simulated"));
}

TEST_CASE("lower: two inputs and two outputs, saved and loaded, with parity", "[deploy][graph][lower]") {
  xq::set_seed(4);
  siamese<> model;
  const xq::input_shapes shapes{{1, 6, 6, 1}, {1, 6, 6, 1}};
  xq::build(model, shapes);
  xq::quantize_options qo;
  qo.mode = xq::quantization_mode::partial;
  qo.spec.add("features").add("difference").add("sum");
  auto qat = xq::quantize_model(model, qo, shapes);
  xq::tensor a = xt::random::rand<float>({16, 6, 6, 1}), b = xt::random::rand<float>({16, 6, 6, 1});
  {
    const xq::training_mode training;
    for (int i = 0; i < 2; ++i) qat(xq::var(a), xq::var(b));
  }
  const auto engine = xq::deploy::lower(qat, shapes);
  CHECK(engine.input_values().size() == 2);
  CHECK(engine.output_values().size() == 2);
  const std::vector<xq::tensor> out = engine.run({a, b});
  REQUIRE(out.size() == 2);
  std::vector<xq::tensor> simulated;
  {
    const xq::no_grad nothing;
    for (const xq::var& y : xq::call_model(qat, {xq::var(a), xq::var(b)})) simulated.push_back(y.value());
  }
  for (std::size_t k = 0; k < 2; ++k) {
    CAPTURE(k);
    REQUIRE(out[k].shape() == simulated[k].shape());
    CHECK(xt::amax(xt::abs(out[k] - simulated[k]))() < 1e-5f);
  }
  const auto report = xq::deploy::parity(qat, engine, std::vector<xq::tensor>{a, b});
  CHECK(report.rows.size() == 6);  // the extractor's input per call (2), the merges' inputs (4)
  for (const auto& row : report.rows) {
    CAPTURE(row.label);
    CHECK(row.share() >= 0.999);  // the int32 bias: a value within half a step of a boundary may move
  }
  CHECK(report.output_elements == 2 * 16 * 6 * 6 * 4);
  const std::vector<std::uint8_t> bytes = xq::deploy::encode_integer_model(engine);
  const auto back = xq::deploy::decode_integer_model(bytes.data(), bytes.size(), "siamese.xqi");
  CHECK(back.input_shapes() == engine.input_shapes());
  const std::vector<xq::tensor> again = back.run({a, b});
  CHECK(again[0] == out[0]);
  CHECK(again[1] == out[1]);
  CHECK_THROWS_WITH(engine.run(a), Catch::Contains("one input and one output"));
  CHECK_THROWS_WITH(engine.run({a}), Catch::Contains("2 inputs"));
}

TEST_CASE("lower: an LSQ-trained CNN and a tfmot-scheme CNN, their grids through the quantizer base, parity printed",
          "[deploy][graph][lower]") {
  const xq::dataset data = quadrant_data(128, 21), test = quadrant_data(200, 22);
  SECTION("LSQ (learned scales) on the inputs and kernels of Larq-style quant layers") {
    using lsq_conv = xq::quant_conv2d<xq::lsq_quantizer, xq::lsq_quantizer>;
    using lsq_dense = xq::quant_dense<xq::lsq_quantizer, xq::lsq_quantizer>;
    xq::set_seed(19);
    auto model = xq::sequential(lsq_conv(6, 3, xq::lsq_quantizer(), xq::lsq_quantizer()).padding(xq::padding::same),
                                xq::relu(), xq::max_pool2d(2), xq::flatten(),
                                lsq_dense(4, xq::lsq_quantizer(), xq::lsq_quantizer()));
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 2, 3e-3f);
    xq::deploy::lower_options lo;
    lo.bias = xq::deploy::bias_precision::float32;  // the simulation's float bias: its integers exactly
    const auto engine = xq::deploy::lower(model, {12, 12, 1}, lo);
    const auto report = xq::deploy::parity(model, engine, test.inputs, &test.targets);
    std::cout << "LSQ CNN, integer engine against the simulation:\n" << report.table();
    REQUIRE(report.rows.size() == 2);
    for (const auto& row : report.rows) {
      CAPTURE(row.label);
      CHECK(row.share() == 1.0);
    }
    CHECK(report.same_top1_share() == 1.0);
  }
  SECTION("tfmot's scheme: quantizers on layer outputs, asymmetric FakeQuant grids, folded batch norms") {
    xq::set_seed(29);
    auto model = xq::sequential(xq::conv2d(6, 3).padding(xq::padding::same).use_bias(false),
                                xq::batch_norm().momentum(0.5f), xq::relu(), xq::max_pool2d(2), xq::flatten(),
                                xq::dense(4));
    xq::build(model, {1, 12, 12, 1});
    train(model, data, 2, 3e-3f);
    xq::quantize_options qo;
    qo.scheme = xq::schemes::tfmot();
    qo.fold_batch_norm = true;
    qo.freeze_batch_norm_after = 4;
    auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
    train(qat, data, 1, 5e-4f);
    xq::deploy::lower_options lo;
    lo.bias = xq::deploy::bias_precision::float32;
    const auto engine = xq::deploy::lower(qat, {12, 12, 1}, lo);
    const auto report = xq::deploy::parity(qat, engine, test.inputs, &test.targets);
    std::cout << "tfmot CNN, integer engine against the simulation:\n" << report.table();
    REQUIRE_FALSE(report.rows.empty());
    for (const auto& row : report.rows) {
      CAPTURE(row.label);
      CHECK(row.share_within_one_step() == 1.0);
      CHECK(row.share() >= 0.9999);  // tfmot leaves the input float: the first conv's float sums
    }
    CHECK(report.same_top1_share() == 1.0);
  }
}
