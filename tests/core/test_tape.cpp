// The tape: recording, no_grad, reuse (gradients add up), a three-level nested
// composite written forward-only, paths, and parameter de-duplication.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include <xquant/core/model.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/embedding.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/core/random.hpp>

#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {

struct inner_block {  // level 3
  xq::dense a{6}, b{5};
  XQ_CHILDREN(a, b)
  xq::var operator()(const xq::var& x) { return b(a(x)); }
};

struct middle_block {  // level 2: the inner block is used twice (reuse)
  inner_block inner;
  xq::dense proj{5};
  XQ_CHILDREN(inner, proj)
  xq::var operator()(const xq::var& x) { return proj(inner(x)); }
};

struct outer_model {  // level 1
  middle_block block;
  xq::dense head{3};
  XQ_CHILDREN(block, head)
  xq::var operator()(const xq::var& x) { return head(block(x)); }
};

}  // namespace

TEST_CASE("tape records only while alive and not under no_grad", "[core][tape]") {
  xq::dense d(4);
  xq::var x(uniform({2, 3}), true);
  {
    xq::no_grad off;
    xq::tape t;
    auto y = d(x);
    CHECK(t.size() == 0);
    CHECK_FALSE(y.requires_grad());
  }
  {
    auto y = d(x);  // no tape at all
    CHECK_FALSE(y.requires_grad());
  }
  xq::tape t;
  auto y = d(x);
  CHECK(t.size() == 1);
  CHECK(y.requires_grad());
  t.backward(y);
  CHECK(t.size() == 0);
  CHECK(x.grad().shape() == x.value().shape());
  CHECK(d.kernel()->has_grad());
}

TEST_CASE("a layer called twice in one graph adds its parameter gradients", "[core][tape]") {
  xq::dense d(3);
  xq::var x1(uniform({2, 3}, -1, 1, 3)), x2(uniform({2, 3}, -1, 1, 4));
  d(x1);  // build
  d.kernel()->zero_grad();
  {
    xq::tape t;
    auto y = xq::var(d(x1));
    t.backward(y);
  }
  const xq::tensor g1 = d.kernel()->grad;
  d.kernel()->zero_grad();
  {
    xq::tape t;
    t.backward(d(x2));
  }
  const xq::tensor g2 = d.kernel()->grad;
  d.kernel()->zero_grad();
  {
    xq::tape t;
    auto y = d(d(x1));  // two nodes of one layer in one graph
    (void)y;
  }
  // Two independent uses, one backward: gradient = sum of both.
  {
    xq::tape t;
    auto a = d(x1);
    auto b = d(x2);
    t.backward(a);
    // b's node was recorded but never reached: its gradient must not appear.
    (void)b;
  }
  CHECK(xt::allclose(d.kernel()->grad, g1));
  d.kernel()->zero_grad();
  // The reused layer in a chain, checked numerically.
  xq::var x(uniform({4, 3}, -1, 1, 5), true);
  check_gradients([&] { return d(d(x)); }, {x.state(), d.kernel(), d.bias()}, {}, "dense reused");
  (void)g2;
}

TEST_CASE("a three-level nested composite written forward-only gets its backward", "[core][tape]") {
  xq::set_seed(11);
  outer_model m;
  xq::var x(uniform({4, 7}, -1, 1, 9), true);
  m(x);
  xq::set_paths(m);
  CHECK(m.block.inner.a.path() == "block/inner/a");
  CHECK(m.block.inner.a.kernel()->name() == "block/inner/a/kernel");
  CHECK(m.head.path() == "head");

  auto params = xq::parameters(m);
  CHECK(params.size() == 8);  // 4 dense layers, kernel + bias each
  std::vector<std::shared_ptr<xq::variable_state>> wrt{x.state()};
  for (auto& p : params) wrt.push_back(p);
  check_gradients([&] { return m(x); }, wrt, {}, "nested composite");
}

TEST_CASE("sequential names its layers Keras-style and chains them", "[core][sequential]") {
  xq::sequential<xq::dense, xq::dense, xq::dense> s(xq::dense(8), xq::dense(4).name("mid"), xq::dense(2));
  xq::build(s, {3, 5});
  CHECK(s.get<0>().path() == "dense");
  CHECK(s.get<1>().path() == "mid");
  CHECK(s.get<2>().path() == "dense_1");
  CHECK(xq::count_parameters(s) == (5 * 8 + 8) + (8 * 4 + 4) + (4 * 2 + 2));
}

TEST_CASE("dense rejects a wrong input width naming its path", "[core][errors]") {
  xq::sequential<xq::dense, xq::dense> s(xq::dense(8), xq::dense(2));
  xq::build(s, {3, 5});
  try {
    s.get<1>()(xq::var(xt::zeros<float>({3, 7})));
    FAIL("no exception");
  } catch (const xq::shape_error& e) {
    CHECK(std::string(e.what()) == "dense_1: expected input of shape (N, 8), given (3, 7)");
  }
}

// Issue 14 (finding 6): an explicit name equal to a generated one gave two layers one
// path, so import_weights loaded one file into both.
TEST_CASE("sequential never gives two layers one path when a name equals a generated one", "[core][sequential]") {
  xq::sequential<xq::dense, xq::dense, xq::dense, xq::dense> s(xq::dense(3), xq::dense(3), xq::dense(3).name("dense_1"),
                                                               xq::dense(2));
  xq::build(s, {1, 3});
  CHECK(s.get<0>().path() == "dense");
  CHECK(s.get<1>().path() == "dense_2");  // "dense_1" is the third layer's own name
  CHECK(s.get<2>().path() == "dense_1");
  CHECK(s.get<3>().path() == "dense_3");
  const auto paths = xq::detail::layer_paths(xq::as_layer_ref(s));
  CHECK(std::set<std::string>(paths.begin(), paths.end()).size() == paths.size());
}

TEST_CASE("dense and embedding refuse zero sizes, as Keras does", "[core][errors]") {
  CHECK_THROWS_WITH(xq::dense(0), Catch::Contains("dense") && Catch::Contains("units of at least 1"));
  CHECK_THROWS_WITH(xq::embedding(0, 4), Catch::Contains("embedding") && Catch::Contains("input_dim 0, output_dim 4"));
  CHECK_THROWS_WITH(xq::embedding(10, 0), Catch::Contains("input_dim 10, output_dim 0"));
}

namespace readme_like {
struct block {
  xq::dense fc{4};
  XQ_CHILDREN(fc)
  xq::var operator()(const xq::var& x) { return fc(x); }
};
}  // namespace readme_like

TEST_CASE("sequential names a composite child after its type", "[core][sequential]") {
  xq::sequential<readme_like::block, readme_like::block, xq::dense> s(readme_like::block{},
                                                                        readme_like::block{}, xq::dense(2));
  xq::build(s, {1, 3});
  CHECK(s.get<0>().fc.path() == "block/fc");
  CHECK(s.get<1>().fc.path() == "block_1/fc");
  CHECK(s.get<1>().fc.kernel()->name() == "block_1/fc/kernel");
}

// Issue 14 (findings 3 and 6): backward refuses what it cannot differentiate, before
// anything runs, instead of dereferencing null or silently giving no gradients.
TEST_CASE("backward refuses an empty var, a second backward, and a var of another tape", "[core][tape][errors]") {
  xq::dense d(2);
  xq::var x(uniform({2, 3}));
  SECTION("an empty var names the problem (it used to read the null var's shape)") {
    xq::tape t;
    CHECK_THROWS_WITH(t.backward(xq::var()), Catch::Contains("xq::tape::backward") && Catch::Contains("an empty var"));
    CHECK_THROWS_WITH(t.backward(xq::var(), xq::tensor()), Catch::Contains("an empty var"));
  }
  SECTION("a second backward on one tape") {
    xq::tape t;
    xq::var y = d(x);
    t.backward(y);
    const xq::tensor first = d.kernel()->grad;
    CHECK_THROWS_WITH(t.backward(y), Catch::Contains("one backward per tape") &&
                                         Catch::Contains("a second backward on this tape"));
    CHECK(bool(d.kernel()->grad == first));  // nothing added
  }
  SECTION("a var recorded on a tape that has ended") {
    xq::var y;
    {
      xq::tape old;
      y = d(x);
    }
    d.kernel()->zero_grad();
    xq::tape t;
    CHECK_THROWS_WITH(t.backward(y), Catch::Contains("a var recorded on this tape") &&
                                         Catch::Contains("which is not this one"));
    CHECK_FALSE(d.kernel()->has_grad());
  }
  SECTION("a var that needs no gradient") {
    xq::tape t;
    xq::var z;
    {
      xq::no_grad off;
      z = d(x);
    }
    CHECK_THROWS_WITH(t.backward(z), Catch::Contains("a var that needs none"));
  }
  SECTION("a leaf that needs a gradient is still fine: its gradient is the seed") {
    xq::tape t;
    xq::var leaf(uniform({2}), true);
    t.backward(leaf);
    CHECK(bool(leaf.grad() == xt::ones<float>({2})));
  }
}
