// embedding: lookup of rows for ids of any shape, Keras's initializer, scatter-add
// gradients (a repeated id gets every use's gradient), id errors naming the path.
#include <catch2/catch.hpp>
#include <string>
#include <xquant/core/model.hpp>
#include <xquant/layers/embedding.hpp>
#include <xquant/core/random.hpp>

#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

TEST_CASE("embedding looks up rows for ids of any shape", "[layers][embedding]") {
  xq::set_seed(3);
  xq::embedding embed(10, 4);
  CHECK(embed.embeddings() == nullptr);
  const xq::tensor ids = {{1, 0, 9}, {3, 3, 1}};
  auto y = embed(xq::var(ids));
  CHECK(y.shape() == xq::tensor::shape_type{2, 3, 4});
  const auto& table = embed.embeddings()->value;
  CHECK(table.shape() == xq::tensor::shape_type{10, 4});
  for (std::size_t a = 0; a < 2; ++a)
    for (std::size_t b = 0; b < 3; ++b)
      for (std::size_t k = 0; k < 4; ++k) CHECK(y.value()(a, b, k) == table(std::size_t(ids(a, b)), k));
  for (float v : table) {
    CHECK(v >= -0.05f);
    CHECK(v < 0.05f);
  }
  CHECK(embed.embeddings()->name() == "embedding/embeddings");
  CHECK(embed.embeddings()->trainable());
  CHECK(xq::count_parameters(embed) == 40);
  // A 1-d input and a 3-d input.
  CHECK(embed(xq::var(xq::tensor{2, 5})).shape() == xq::tensor::shape_type{2, 4});
  CHECK(embed(xq::var(xt::zeros<float>({2, 2, 2}))).shape() == xq::tensor::shape_type{2, 2, 2, 4});
  // The same seed gives the same table.
  xq::set_seed(3);
  xq::embedding again(10, 4);
  again.build();
  CHECK((again.embeddings()->value == table));
}

TEST_CASE("embedding scatter-adds its gradient into the table", "[layers][embedding][gradients]") {
  xq::embedding embed(6, 3);
  embed.build();
  const xq::var ids(xq::tensor{{2, 0, 2}, {5, 2, 0}});
  check_gradients([&] { return embed(ids); }, {embed.embeddings()}, {}, "embedding");
  // Row 2 appears three times: its gradient is the sum of the three rows of dy.
  embed.embeddings()->zero_grad();
  const xq::tensor dy = uniform({2, 3, 3}, -1, 1, 4);
  xq::tape t;
  t.backward(embed(ids), dy);
  const auto& g = embed.embeddings()->grad;
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(g(2, k) == Approx(dy(0, 0, k) + dy(0, 2, k) + dy(1, 1, k)));
    CHECK(g(0, k) == Approx(dy(0, 1, k) + dy(1, 2, k)));
    CHECK(g(1, k) == 0.0f);  // an unused row gets zero
  }
}

TEST_CASE("an id outside the table names the path, the range and the id", "[layers][embedding][errors]") {
  xq::embedding embed(10, 4);
  embed.name("decoder/tokens");
  auto message_of = [&](const xq::tensor& ids) -> std::string {
    try {
      embed(xq::var(ids));
    } catch (const xq::argument_error& e) {
      return e.what();
    }
    return "no argument_error";
  };
  CHECK(message_of(xq::tensor{{1, 2, 3}, {10, 0, 0}}) ==
        "decoder/tokens: expected integer ids in [0, 10), given id 10 at flat position 3 of an input of "
        "shape (2, 3)");
  CHECK(message_of(xq::tensor{-1}) ==
        "decoder/tokens: expected integer ids in [0, 10), given id -1 at flat position 0 of an input of "
        "shape (1,)");
  CHECK(message_of(xq::tensor{2.5f}) ==
        "decoder/tokens: expected integer ids in [0, 10), given id 2.5 at flat position 0 of an input of "
        "shape (1,)");
  CHECK_THROWS_AS(xq::embedding(0, 4).build(), xq::argument_error);
}
