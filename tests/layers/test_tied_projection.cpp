// tied_projection: x · Eᵀ with an embedding's own table; one weight, two uses.

#include <catch2/catch.hpp>

#include <xquant/xquant.hpp>

#include "../gradient_check.hpp"
#include "../transform/models.hpp"

namespace {

using xq::testing::uniform;

xq::tensor ids() { return xq::tensor{{0, 3, 5}, {5, 1, 2}}; }

}  // namespace

TEST_CASE("tied_projection computes x · Eᵀ + b with the embedding's table", "[layers][tied]") {
  xq::set_seed(3);
  xq::embedding e(6, 4);
  e.build();
  xq::tied_projection p(e, true);
  CHECK(p.kernel().get() == e.embeddings().get());  // the same parameter, not a copy
  p.bias()->value = uniform({6}, -1, 1, 2);
  const xq::tensor x = uniform({2, 3, 4}, -1, 1, 1);
  const xq::no_grad off;
  const xq::tensor y = p(xq::var(x)).value();
  REQUIRE(y.shape() == xq::tensor::shape_type{2, 3, 6});
  const auto& E = e.embeddings()->value;
  for (std::size_t v = 0; v < 6; ++v) {
    double want = p.bias()->value(v);
    for (std::size_t k = 0; k < 4; ++k) want += double(x(1, 2, k)) * E(v, k);
    CHECK(y(1, 2, v) == Approx(want).epsilon(1e-6));
  }
  CHECK_THROWS_WITH(p(xq::var(uniform({2, 5}))), Catch::Contains("tied_projection") && Catch::Contains("(..., 4)"));
  xq::embedding unbuilt(6, 4);
  CHECK_THROWS_WITH(xq::tied_projection(unbuilt), Catch::Contains("build()"));
}

TEST_CASE("both uses of a tied table add their gradients into the one parameter", "[layers][tied][gradient]") {
  xq::set_seed(5);
  qtest::tied_lm<> lm(6, 4);
  xq::build(lm, {2, 3});
  const auto params = xq::parameters(lm);
  CHECK(params.size() == 4);  // the table once, the dense kernel and bias, the projection's bias
  CHECK(lm.embed.embeddings()->name() == "embed/embeddings");  // named after its owner
  std::vector<std::shared_ptr<xq::variable_state>> wrt(params.begin(), params.end());
  const xq::var x(ids());
  xq::testing::check_gradients([&] { return lm(x); }, wrt, {}, "tied lm");

  // The table's gradient is the sum of the lookup's and the projection's: each measured
  // with the other use reading a constant copy of the table.
  const xq::var constant_table(xq::tensor(lm.embed.embeddings()->value));
  const xq::var table(lm.embed.embeddings());
  const xq::tensor dy = uniform({2, 3, 6}, -1, 1, 9);
  auto table_grad = [&](const xq::var& lookup_table, const xq::var& projection_table) {
    lm.embed.embeddings()->zero_grad();
    xq::tape t;
    const xq::var h = lm.mix(xq::ops::embedding_lookup(x, lookup_table));
    t.backward(xq::ops::matmul_transposed(h, projection_table, nullptr), dy);
    return xq::tensor(lm.embed.embeddings()->grad);
  };
  const xq::tensor both = table_grad(table, table);
  const xq::tensor lookup_only = table_grad(table, constant_table);
  const xq::tensor projection_only = table_grad(constant_table, table);
  CHECK(xt::allclose(both, lookup_only + projection_only, 1e-6, 1e-7));
  CHECK(xt::any(xt::not_equal(lookup_only, 0.0f)));
  CHECK(xt::any(xt::not_equal(projection_only, 0.0f)));
}

TEST_CASE("an optimizer steps a tied table once per step", "[layers][tied]") {
  xq::set_seed(6);
  qtest::tied_lm<> lm(6, 4);
  const xq::var tokens(xq::tensor{0, 3, 5, 5, 1, 2});
  xq::build(lm, {6});
  xq::adam opt(xq::trainable_parameters(lm));
  CHECK(opt.state().size() == 4);  // the table, the dense kernel and bias, the projection bias
  const xq::tensor before = lm.embed.embeddings()->value;
  {
    xq::tape t;
    auto loss = xq::sparse_softmax_cross_entropy(lm(tokens), xq::tensor{1, 2, 3, 4, 5, 0});
    t.backward(loss);
  }
  const xq::tensor grad = lm.embed.embeddings()->grad;
  opt.step();
  // One Adam step from zero moments moves every element with a gradient by lr·sign(g)
  // (up to epsilon): twice as far would mean two steps.
  const xq::tensor moved = lm.embed.embeddings()->value - before;
  for (std::size_t i = 0; i < grad.size(); ++i)
    if (std::abs(grad.data()[i]) > 1e-4f) CHECK(std::abs(moved.data()[i]) == Approx(1e-3).epsilon(1e-2));
}

namespace {
/// An autoencoder whose decoder is its encoder's kernel, transposed.
template <class Encoder = xq::dense, class Act = xq::tanh, class Decoder = xq::tied_projection>
struct autoencoder {
  Encoder encoder{xq::dense(3)};
  Act act;
  Decoder decoder;
  XQ_CHILDREN(encoder, act, decoder)
  xq::var operator()(const xq::var& x) { return decoder(act(encoder(x))); }
};
}  // namespace

TEST_CASE("an autoencoder's decoder ties to its encoder's kernel", "[layers][tied][gradient]") {
  xq::set_seed(8);
  autoencoder<> ae;
  ae.encoder.build(8);                                      // kernel (8, 3)
  ae.decoder = xq::tied_projection(ae.encoder.kernel(), true);  // x (.., 3) -> (.., 8)
  xq::build(ae, {5, 8});
  CHECK(ae.decoder.kernel().get() == ae.encoder.kernel().get());
  const auto params = xq::parameters(ae);
  CHECK(params.size() == 3);  // the shared kernel once, two biases
  xq::var x(uniform({5, 8}, -1, 1, 4), true);
  std::vector<std::shared_ptr<xq::variable_state>> wrt{x.state()};
  for (const auto& p : params) wrt.push_back(p);
  xq::testing::check_gradients([&] { return ae(x); }, wrt, {}, "tied autoencoder");
  CHECK_THROWS_WITH(xq::tied_projection(ae.encoder.bias()), Catch::Contains("rank 2"));
  CHECK_THROWS_WITH(xq::tied_projection(xq::parameter_ptr()), Catch::Contains("null parameter"));
}

TEST_CASE("tied_dense is the identity view of a shared kernel", "[layers][tied][gradient]") {
  xq::set_seed(10);
  xq::dense first(4);
  xq::build(first, {1, 4});
  xq::tied_dense second(first.kernel(), true);
  CHECK(second.kernel().get() == first.kernel().get());
  xq::var x(uniform({3, 4}, -1, 1, 2), true);
  const auto forward = [&] { return second(xq::ops::tanh(first(x))); };  // W used twice, untransposed
  {
    const xq::no_grad off;
    const xq::tensor h = xt::tanh(first(x).value());
    const xq::tensor want = xq::ops::matmul_bias(xq::var(h), xq::var(first.kernel()), nullptr).value();
    CHECK(xt::allclose(forward().value(), want, 0.0, 0.0));  // the bias starts at 0
  }
  std::vector<std::shared_ptr<xq::variable_state>> wrt{x.state(), first.kernel(), first.bias(), second.bias()};
  xq::testing::check_gradients(forward, wrt, {}, "tied dense");
  // Its twin quantizes its own use of the kernel.
  auto twin = xq::quantize_layer(second);
  CHECK(twin.float_layer().kernel().get() == first.kernel().get());
  auto copy = xq::clone_model(second);
  CHECK(copy.kernel().get() != first.kernel().get());
}
