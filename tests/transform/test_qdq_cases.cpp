// NVIDIA's custom QDQ placement cases as passes: residual connection, batch norm and
// max pool.

#include <catch2/catch.hpp>

#include "../gradient_check.hpp"
#include "models.hpp"

namespace {

const xq::tensor::shape_type shape{2, 6, 6, 3};

qtest::residual<> built_residual() {
  xq::set_seed(8);
  qtest::residual<> r;
  xq::build(r, shape);
  return r;
}

/// A batch norm fed by a pool (not by a conv) and one fed by a conv.
template <class Pool = xq::average_pool2d, class Norm = xq::batch_norm, class Conv = xq::conv2d,
          class Norm2 = xq::batch_norm>
struct two_norms {
  Pool pool{xq::average_pool2d(2)};
  Norm after_pool;
  Conv conv{xq::conv2d(3)};
  Norm2 after_conv;
  XQ_CHILDREN(pool, after_pool, conv, after_conv)
  xq::var operator()(const xq::var& x) { return after_conv(conv(after_pool(pool(x)))); }
};

}  // namespace

TEST_CASE("the residual case leaves the conv-chain input of an add unquantized", "[quantize][cases]") {
  const auto model = built_residual();
  xq::quantize_options o;
  o.cases = xq::qdq_cases::resnet_v1();
  auto twin = xq::quantize_model(model, o, shape);
  const xq::no_grad off;
  twin(xq::var(xt::zeros<float>(shape)));
  REQUIRE(twin.skip.inputs_seen() == 2);
  CHECK_FALSE(twin.skip.input_quantizer(0).enabled());  // act <- bn <- conv
  CHECK(twin.skip.input_quantizer(1).enabled());        // the identity branch
  CHECK_FALSE(twin.pool.input_quantizer().enabled());   // not in resnet_v1

  // A user entry for the add wins over the case.
  xq::quantization_spec spec;
  spec.add("skip", {true, true, {0, 1}});
  o.spec = spec;
  auto named = xq::quantize_model(model, o, shape);
  named(xq::var(xt::zeros<float>(shape)));
  CHECK(named.skip.input_quantizer(0).enabled());
  CHECK(named.skip.input_quantizer(1).enabled());
}

TEST_CASE("in partial mode a case's entries are the spec", "[quantize][cases]") {
  const auto model = built_residual();
  xq::quantize_options o;
  o.cases = {xq::qdq_cases::residual_connection()};
  o.mode = xq::quantization_mode::partial;
  auto twin = xq::quantize_model(model, o, shape);
  CHECK_FALSE(twin.conv.weight_quantizer().enabled());  // partial: only the case's entry
  const xq::no_grad off;
  twin(xq::var(xt::zeros<float>(shape)));
  CHECK(twin.skip.input_quantizer(1).enabled());
}

TEST_CASE("the batch-norm and max-pool cases", "[quantize][cases]") {
  xq::set_seed(1);
  two_norms<> model;
  xq::build(model, shape);
  xq::quantize_options o;
  o.cases = {xq::qdq_cases::batch_norm_inputs()};
  auto twin = xq::quantize_model(model, o, shape);
  CHECK(twin.after_pool.input_quantizer().enabled());
  CHECK_FALSE(twin.after_conv.input_quantizer().enabled());

  const auto residual = built_residual();
  o.cases = xq::qdq_cases::resnet_v2();
  auto r = xq::quantize_model(residual, o, shape);
  CHECK(r.pool.input_quantizer().enabled());
  CHECK_FALSE(r.norm.input_quantizer().enabled());  // fed by the conv
}

TEST_CASE("cases and folding need a traced pass", "[quantize][cases][errors]") {
  const auto model = built_residual();
  xq::quantize_options o;
  o.cases = xq::qdq_cases::resnet_v1();
  CHECK_THROWS_WITH(xq::quantize_model(model, o), Catch::Contains("sample input"));
}
