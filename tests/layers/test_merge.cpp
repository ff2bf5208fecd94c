// Merge layers: add, multiply, concatenate. Forward values, gradients (n inputs,
// one var used twice), any concatenation axis, and shape errors naming the path.
#include <catch2/catch.hpp>
#include <string>
#include <vector>
#include <xquant/layers/add.hpp>
#include <xquant/layers/concatenate.hpp>
#include <xquant/layers/multiply.hpp>
#include <xtensor/xbuilder.hpp>

#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

TEST_CASE("add and multiply compute elementwise sums and products", "[layers][merge]") {
  xq::var a(uniform({2, 3, 4}, -1, 1, 1)), b(uniform({2, 3, 4}, -1, 1, 2)), c(uniform({2, 3, 4}, -1, 1, 3));
  CHECK((xq::ops::add(a, b).value() == a.value() + b.value()));
  CHECK((xq::add()({a, b, c}).value() == (a.value() + b.value()) + c.value()));
  CHECK((xq::multiply()(a, b).value() == a.value() * b.value()));
  CHECK((xq::ops::multiply({a, b, c}).value() == (a.value() * b.value()) * c.value()));
  CHECK((xq::add()({a}).value() == a.value()));  // one input: identity
}

TEST_CASE("merge gradients match central differences", "[layers][merge][gradients]") {
  xq::var a(uniform({2, 3, 4}, -1, 1, 1), true), b(uniform({2, 3, 4}, -1, 1, 2), true),
      c(uniform({2, 3, 4}, -1, 1, 3), true);
  xq::add add;
  xq::multiply mul;
  check_gradients([&] { return add(a, b); }, {a.state(), b.state()}, {}, "add 2");
  check_gradients([&] { return add({a, b, c}); }, {a.state(), b.state(), c.state()}, {}, "add 3");
  check_gradients([&] { return mul(a, b); }, {a.state(), b.state()}, {}, "multiply 2");
  check_gradients([&] { return mul({a, b, c}); }, {a.state(), b.state(), c.state()}, {}, "multiply 3");
  // The same var twice: both uses' gradients add up.
  check_gradients([&] { return add(a, a); }, {a.state()}, {}, "a + a");
  check_gradients([&] { return mul(a, a); }, {a.state()}, {}, "a * a");
  check_gradients([&] { return mul({a, b, a}); }, {a.state(), b.state()}, {}, "a * b * a");
}

TEST_CASE("a + a gets twice the gradient, a * a gets 2 a dy", "[layers][merge]") {
  xq::var a(uniform({3, 2}, -1, 1, 4), true);
  const xq::tensor dy = uniform({3, 2}, -1, 1, 5);
  {
    xq::tape t;
    t.backward(xq::ops::add(a, a), dy);
    CHECK((a.grad() == dy + dy));
  }
  a.state()->zero_grad();
  {
    xq::tape t;
    t.backward(xq::ops::multiply(a, a), dy);
    CHECK(xt::allclose(a.grad(), 2.0f * a.value() * dy));
  }
  // An input that needs no gradient gets none.
  xq::var data(uniform({3, 2}, -1, 1, 6));
  a.state()->zero_grad();
  xq::tape t;
  t.backward(xq::ops::add(a, data), dy);
  CHECK_FALSE(data.state()->has_grad());
  CHECK((a.grad() == dy));
}

TEST_CASE("concatenate joins along axis 0, 1 and -1 with three inputs", "[layers][merge]") {
  SECTION("axis 0") {
    xq::var a(uniform({1, 3, 2}, -1, 1, 1), true), b(uniform({2, 3, 2}, -1, 1, 2), true),
        c(uniform({3, 3, 2}, -1, 1, 3), true);
    xq::concatenate cat(0);
    auto y = cat({a, b, c});
    CHECK((y.value() == xt::concatenate(xt::xtuple(a.value(), b.value(), c.value()), 0)));
    check_gradients([&] { return cat({a, b, c}); }, {a.state(), b.state(), c.state()}, {}, "concat axis 0");
  }
  SECTION("axis 1") {
    xq::var a(uniform({2, 1, 2}, -1, 1, 1), true), b(uniform({2, 4, 2}, -1, 1, 2), true),
        c(uniform({2, 2, 2}, -1, 1, 3), true);
    xq::concatenate cat(1);
    auto y = cat({a, b, c});
    CHECK(y.shape() == xq::tensor::shape_type{2, 7, 2});
    CHECK((y.value() == xt::concatenate(xt::xtuple(a.value(), b.value(), c.value()), 1)));
    check_gradients([&] { return cat({a, b, c}); }, {a.state(), b.state(), c.state()}, {}, "concat axis 1");
  }
  SECTION("axis -1 (the default)") {
    xq::var a(uniform({2, 3, 1}, -1, 1, 1), true), b(uniform({2, 3, 3}, -1, 1, 2), true),
        c(uniform({2, 3, 2}, -1, 1, 3), true);
    xq::concatenate cat;
    auto y = cat({a, b, c});
    CHECK((y.value() == xt::concatenate(xt::xtuple(a.value(), b.value(), c.value()), 2)));
    CHECK((xq::ops::concatenate({a, b, c}, -1).value() == y.value()));
    check_gradients([&] { return cat({a, b, c}); }, {a.state(), b.state(), c.state()}, {}, "concat axis -1");
    // The same var twice.
    check_gradients([&] { return cat(a, a); }, {a.state()}, {}, "concat a, a");
  }
  SECTION("axis -3 of a rank-3 input is axis 0") {
    xq::var a(uniform({1, 2, 2}, -1, 1, 1)), b(uniform({2, 2, 2}, -1, 1, 2));
    CHECK((xq::ops::concatenate({a, b}, -3).value() == xq::ops::concatenate({a, b}, 0).value()));
  }
}

namespace {
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const xq::shape_error& e) {
    return e.what();
  }
  return "no shape_error";
}
}  // namespace

TEST_CASE("merge layers name their path and both shapes on a mismatch", "[layers][merge][errors]") {
  xq::var a(xt::zeros<float>({2, 3})), b(xt::zeros<float>({2, 4})), c(xt::zeros<float>({3, 4}));
  xq::add add;
  add.set_path("block_1/residual");
  CHECK(message_of([&] { add(a, b); }) ==
        "block_1/residual: expected input 1 of shape (2, 3) (the shape of input 0), given (2, 4)");
  xq::multiply mul;
  CHECK(message_of([&] {
          mul({a, a, b});
        }) == "multiply: expected input 2 of shape (2, 3) (the shape of input 0), given (2, 4)");
  CHECK(message_of([&] {
          xq::ops::add(a, xq::var(xt::zeros<float>({2, 3, 1})));
        }) == "add: expected input 1 of shape (2, 3) (the shape of input 0), given (2, 3, 1)");
  xq::concatenate cat;
  cat.name("merge");
  CHECK(message_of([&] { cat(b, c); }) ==
        "merge: expected input 1 of shape (2, ?) (input 0's shape on every axis but 1), given (3, 4)");
  CHECK(message_of([&] {
          cat(a, xq::var(xt::zeros<float>({2, 3, 1})));
        }) ==
        "merge: expected input 1 of shape (2, ?) (input 0's shape on every axis but 1), given (2, 3, 1)");
  CHECK(message_of([&] { xq::concatenate(2)(a, a); }) ==
        "concatenate: expected inputs of rank at least 3 to concatenate along axis 2, given (2, 3)");
  CHECK(message_of([&] { xq::concatenate(-3)(a, a); }) ==
        "concatenate: expected inputs of rank at least 3 to concatenate along axis -3, given (2, 3)");
  CHECK_THROWS_AS(add(std::vector<xq::var>{}), xq::argument_error);
}
