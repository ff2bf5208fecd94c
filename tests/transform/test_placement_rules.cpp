// What used to go wrong without a word, and now either works or says what to change:
//  - an activation written as a function (xq::ops::relu) is a node of the traced graph:
//    NVIDIA's residual case places QDQ the same as for a relu layer; tfmot's and
//    PyTorch's schemes, which quantize a relu's output, refuse it and name the layer to use;
//  - a misspelt type in a spec is an error listing the known types; a spec entry naming
//    a composite's path quantizes the layers inside it as full mode would, or every one
//    of them when asked;
//  - a new layer's quantize<> specialization alone turns its QDQ on (NVIDIA's rule), and
//    one can say it should stay off.

#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

#include "../gradient_check.hpp"
#include "models.hpp"

namespace {

using xq::testing::uniform;
const xq::tensor::shape_type shape{2, 6, 6, 3};

struct as_layer {};
struct as_function {};

/// conv -> bn -> relu on one branch, the identity on the other, added; the relu is a
/// layer (`as_layer`) or xq::ops::relu (`as_function`). (A tag type, not a bool: the
/// quantize trait rebuilds class templates over types.)
template <class Style, class Conv = xq::conv2d, class Norm = xq::batch_norm, class Act = xq::relu,
          class Skip = xq::add>
struct residual_unit {
  Conv conv{xq::conv2d(3, 3).padding(xq::padding::same)};
  Norm norm;
  Act act;
  Skip skip;
  XQ_CHILDREN(conv, norm, act, skip)
  xq::var operator()(const xq::var& x) {
    const xq::var h = norm(conv(x));
    return skip(std::is_same_v<Style, as_function> ? xq::ops::relu(h) : act(h), x);
  }
};

template <class Model>
Model built(Model m) {
  xq::set_seed(12);
  xq::build(m, shape);
  return m;
}

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

TEST_CASE("ops::relu is a node of the graph: NVIDIA's residual case places QDQ as for a relu layer",
          "[quantize][placement]") {
  xq::quantize_options o;
  o.cases = xq::qdq_cases::resnet_v1();
  auto with_layer = xq::quantize_model(built(residual_unit<as_layer>()), o, shape);
  auto with_function = xq::quantize_model(built(residual_unit<as_function>()), o, shape);
  // The conv chain's input is left to TensorRT's fusion, the identity input is quantized.
  for (std::size_t i : {0u, 1u}) {
    CHECK(with_layer.skip.input_quantizer(i).enabled() == with_function.skip.input_quantizer(i).enabled());
  }
  CHECK_FALSE(with_function.skip.input_quantizer(0).enabled());
  CHECK(with_function.skip.input_quantizer(1).enabled());

  // The trace holds the function as a node with the activation role.
  auto twin = xq::quantize_layer(built(residual_unit<as_function>()));
  xq::set_paths(twin);
  xq::graph_trace trace;
  {
    const xq::no_grad off;
    (void)twin(xq::var(xt::zeros<float>(shape)));
  }
  bool seen = false;
  for (const auto& c : trace.calls())
    if (c.function) {
      seen = true;
      CHECK(c.type == "relu");
      CHECK(c.role == xq::layer_role::activation);
      CHECK(trace.producer(c.inputs[0])->path == "norm");
    }
  CHECK(seen);
}

TEST_CASE("tfmot and PyTorch quantize a relu's output: an ops::relu is refused, naming the layer to use",
          "[quantize][placement]") {
  for (auto scheme : {xq::schemes::tfmot(), xq::schemes::pytorch()}) {
    xq::quantize_options o;
    o.scheme = scheme;
    CHECK_NOTHROW(xq::quantize_model(built(residual_unit<as_layer>()), o, shape));
    const std::string msg = message_of([&] { xq::quantize_model(built(residual_unit<as_function>()), o, shape); });
    INFO(msg);
    CHECK_THAT(msg, Catch::Contains("xq::ops::relu (a function) applied to the output of norm (batch_norm)"));
    CHECK_THAT(msg, Catch::Contains("quantizes the output of a relu"));
    CHECK_THAT(msg, Catch::Contains("call an xq::relu member listed in XQ_CHILDREN instead of xq::ops::relu"));
  }
  // NVIDIA's scheme quantizes no activation: the function is fine there.
  CHECK_NOTHROW(xq::quantize_model(built(qtest::net<>()), {}, shape));
  // An add written as a function cannot take NVIDIA's residual QDQ.
  struct functional_add {
    xq::conv2d conv{xq::conv2d(3, 3).padding(xq::padding::same)};
    XQ_CHILDREN(conv)
    xq::var operator()(const xq::var& x) { return xq::ops::add(conv(x), x); }
  };
  xq::quantize_options o;
  o.cases = xq::qdq_cases::resnet_v1();
  functional_add f;
  xq::build(f, shape);
  xq::graph_trace trace;
  {
    const xq::no_grad off;
    (void)f(xq::var(xt::zeros<float>(shape)));
  }
  xq::quantization_spec extra;
  CHECK_THAT(message_of([&] { o.cases[0](trace, {}, extra); }),
             Catch::Contains("xq::ops::add (a function)") && Catch::Contains("an xq::add layer member"));
}

TEST_CASE("spec types: a misspelt one is an error listing the known types, a known one is fine anywhere",
          "[quantize][placement][spec]") {
  const auto model = built(qtest::residual<>());
  xq::quantize_options o;
  o.spec.add_type("max_pol2d");
  const std::string msg = message_of([&] { xq::quantize_model(model, o, shape); });
  INFO(msg);
  CHECK_THAT(msg, Catch::Contains("quantization_spec type entry \"max_pol2d\""));
  CHECK_THAT(msg, Catch::Contains("max_pool2d"));  // among the known types listed
  CHECK_THAT(msg, Catch::Contains("a type name no layer has"));
  xq::quantize_options ok;
  ok.spec.add_type("max_pool2d");
  ok.spec.add_type("multiply");  // no multiply in this model: a known type, no error
  auto q = xq::quantize_model(model, ok, shape);
  CHECK(q.pool.input_quantizer().enabled());
}

TEST_CASE("a spec entry naming a composite with block_placement::every_layer covers every layer inside it",
          "[quantize][placement][spec]") {
  const auto model = built(qtest::net<>());
  xq::quantize_options o;
  o.mode = xq::quantization_mode::partial;
  xq::layer_quantization every;
  every.block = xq::block_placement::every_layer;
  o.spec.add("body/first", every);  // the block: its conv, and its batch norm's input
  {
    auto q = xq::quantize_model(model, o, shape);
    CHECK(q.body.first.norm.input_quantizer().enabled());
  }
  o.spec.add("body/first/norm", {false, false});  // a nearer entry wins
  auto q = xq::quantize_model(model, o, shape);
  CHECK(q.body.first.conv.input_quantizer().enabled());
  CHECK(q.body.first.conv.weight_quantizer().enabled());
  CHECK_FALSE(q.body.first.norm.input_quantizer().enabled());
  CHECK_FALSE(q.body.second.conv.input_quantizer().enabled());  // outside "body/first"
  CHECK_FALSE(q.head.input_quantizer().enabled());
  // "body/fir" is not a composite's path: no layer's path continues it at a '/'.
  xq::quantize_options bad;
  bad.spec.add("body/fir");
  CHECK_THAT(message_of([&] { xq::quantize_model(model, bad, shape); }),
             Catch::Contains("quantization_spec entry \"body/fir\"") && Catch::Contains("body/first/conv"));
}

namespace {

/// Two residual blocks (conv -> bn -> relu -> add(x) -> max pool each), by path "first"
/// and "second".
template <class First = qtest::residual<>, class Second = qtest::residual<>>
struct two_blocks {
  First first;
  Second second;
  XQ_CHILDREN(first, second)
  xq::var operator()(const xq::var& x) { return second(first(x)); }
};

}  // namespace

// Issue 34, finding 12: partial quantization of a block by path quantized every layer in it
// (batch norms, relus, adds, max pools); a TensorRT user expects the block as full mode
// would quantize it.
TEST_CASE("a spec entry naming a composite quantizes it as full mode would, by default",
          "[quantize][placement][spec]") {
  const auto model = built(two_blocks<>());
  xq::quantize_options o;
  o.mode = xq::quantization_mode::partial;
  o.spec.add("first");
  {
    auto q = xq::quantize_model(model, o, shape);
    auto& b = q.first;
    CHECK(b.conv.input_quantizer().enabled());  // NVIDIA's scheme: conv input and weight
    CHECK(b.conv.weight_quantizer().enabled());
    CHECK_FALSE(b.norm.input_quantizer().enabled());  // off in NVIDIA's matrix
    CHECK_FALSE(b.act.input_quantizer().enabled());
    CHECK_FALSE(b.skip.input_quantizer(0).enabled());
    CHECK_FALSE(b.skip.input_quantizer(1).enabled());
    CHECK_FALSE(b.pool.input_quantizer().enabled());
    CHECK_FALSE(q.second.conv.input_quantizer().enabled());  // partial: outside "first"
    CHECK_FALSE(q.second.conv.weight_quantizer().enabled());
  }
  {
    // The spec's type entries are part of "as full mode would": max pools named by type.
    xq::quantize_options t = o;
    t.spec.add_type("max_pool2d");
    auto q = xq::quantize_model(model, t, shape);
    CHECK(q.first.pool.input_quantizer().enabled());
    CHECK(q.second.pool.input_quantizer().enabled());
    CHECK_FALSE(q.first.norm.input_quantizer().enabled());
  }
  {
    // The block's own flags narrow it: weights only, 4 bits.
    xq::quantize_options n = o;
    n.spec = {};
    n.spec.add("first", {false, true, {}, 4});
    auto q = xq::quantize_model(model, n, shape);
    CHECK_FALSE(q.first.conv.input_quantizer().enabled());
    CHECK(q.first.conv.weight_quantizer().enabled());
    CHECK(q.first.conv.weight_quantizer().config().num_bits == 4);
    CHECK_FALSE(q.first.norm.input_quantizer().enabled());
  }
  {
    // Full mode's QDQ cases too: NVIDIA's residual case on the block's add (its input from
    // the conv chain left alone, the skip input quantized).
    xq::quantize_options c = o;
    c.cases = xq::qdq_cases::resnet_v1();
    auto q = xq::quantize_model(model, c, shape);
    CHECK_FALSE(q.first.skip.input_quantizer(0).enabled());
    CHECK(q.first.skip.input_quantizer(1).enabled());
    CHECK_FALSE(q.first.norm.input_quantizer().enabled());
  }
  {
    // The other choice, explicitly: every layer inside with the entry's flags.
    xq::quantize_options e = o;
    e.spec = {};
    xq::layer_quantization every;
    every.block = xq::block_placement::every_layer;
    e.spec.add("first", every);
    auto q = xq::quantize_model(model, e, shape);
    auto& b = q.first;
    CHECK(b.conv.input_quantizer().enabled());
    CHECK(b.conv.weight_quantizer().enabled());
    CHECK(b.norm.input_quantizer().enabled());
    CHECK(b.act.input_quantizer().enabled());
    CHECK(b.skip.input_quantizer(0).enabled());
    CHECK(b.skip.input_quantizer(1).enabled());
    CHECK(b.pool.input_quantizer().enabled());
    CHECK_FALSE(q.second.conv.input_quantizer().enabled());
  }
  {
    // tfmot's scheme, as its full mode: the conv's kernel (its output goes to the batch
    // norm that fuses with it), the relu's and the add's outputs; nothing on the max pool.
    xq::quantize_options f = o;
    f.scheme = xq::schemes::tfmot();
    auto q = xq::quantize_model(model, f, shape);
    auto& b = q.first;
    CHECK(b.conv.weight_quantizer().enabled());
    CHECK_FALSE(b.conv.input_quantizer().enabled());
    CHECK_FALSE(b.conv.output_quantizer().enabled());
    CHECK_FALSE(b.norm.output_quantizer().enabled());
    CHECK(b.act.output_quantizer().enabled());
    CHECK(b.skip.output_quantizer().enabled());
    CHECK_FALSE(b.pool.output_quantizer().enabled());
    CHECK_FALSE(q.second.act.output_quantizer().enabled());
    CHECK_FALSE(q.second.conv.weight_quantizer().enabled());
  }
}

namespace my {

/// A weightless user layer with a twin by specialization only.
class shuffle : public xq::layer<shuffle> {
 public:
  shuffle() : xq::layer<shuffle>("shuffle") {}
  xq::var call(const xq::var& x) const { return xq::ops::relu(x); }
  std::vector<xq::parameter_ptr> parameters() const { return {}; }
};
/// The same, but its specialization says its QDQ stays off unless a spec names it.
class quiet_shuffle : public xq::layer<quiet_shuffle> {
 public:
  quiet_shuffle() : xq::layer<quiet_shuffle>("quiet_shuffle") {}
  xq::var call(const xq::var& x) const { return xq::ops::relu(x); }
  std::vector<xq::parameter_ptr> parameters() const { return {}; }
};

}  // namespace my

template <>
struct xq::quantize<my::shuffle> {
  using type = xq::input_quantized<my::shuffle>;
};
template <>
struct xq::quantize<my::quiet_shuffle> {
  using type = xq::input_quantized<my::quiet_shuffle>;
  static constexpr bool quantized_by_default = false;
};

TEST_CASE("a new layer's specialization alone turns its QDQ on, and it can say off", "[quantize][placement]") {
  auto model = xq::sequential(xq::dense(4), my::shuffle(), my::quiet_shuffle(), xq::dense(2));
  xq::build(model, {2, 3});
  auto q = xq::quantize_model(model, {}, xq::tensor::shape_type{2, 3});
  CHECK(q.get<1>().input_quantizer().enabled());
  CHECK_FALSE(q.get<2>().input_quantizer().enabled());
  // A spec still decides over both, by type name.
  xq::quantize_options o;
  o.spec.add_type("quiet_shuffle");
  o.spec.add_type("shuffle", {false, false});
  auto r = xq::quantize_model(model, o, xq::tensor::shape_type{2, 3});
  CHECK_FALSE(r.get<1>().input_quantizer().enabled());
  CHECK(r.get<2>().input_quantizer().enabled());
  // tfmot's placement for an unlisted layer: its output.
  xq::quantize_options t;
  t.scheme = xq::schemes::tfmot();
  t.scheme.skip_output_before_fused_consumer = false;
  auto s = xq::quantize_model(model, t, xq::tensor::shape_type{2, 3});
  CHECK(s.get<1>().output_quantizer().enabled());
  CHECK_FALSE(s.get<1>().input_quantizer().enabled());
}
