// Issue 34, item 8: save_checkpoint / load_checkpoint of a plain struct model in the global
// namespace (README's siamese pair: an XQ_CHILDREN struct with an operator(), no template,
// nothing of namespace xq for argument-dependent lookup to find). An unqualified set_paths
// call inside xq::detail did not compile for it.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/io/checkpoint.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/broadcasting.hpp>
#include <xquant/layers/global_average_pool2d.hpp>
#include <xquant/train/adam.hpp>

#include "../test_support.hpp"

// README's siamese pair, as a user writes it: global namespace, a plain struct.
struct siamese_pair {
  xq::conv2d features{xq::conv2d(4, 3)};
  xq::global_average_pool2d pool;
  xq::subtract difference;
  xq::dense head{xq::dense(2)};
  XQ_CHILDREN(features, pool, difference, head)
  xq::var operator()(const xq::var& a, const xq::var& b) {
    return head(difference(pool(features(a)), pool(features(b))));
  }
};

struct plain_mlp {
  xq::dense hidden{xq::dense(5)};
  xq::dense out{xq::dense(2)};
  XQ_CHILDREN(hidden, out)
  xq::var operator()(const xq::var& x) { return out(hidden(x)); }
};

namespace {

template <class Model>
void check_same_parameters(Model& a, Model& b) {
  const auto pa = xq::parameters(a), pb = xq::parameters(b);
  REQUIRE(pa.size() == pb.size());
  REQUIRE(!pa.empty());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i]->name());
    CHECK(pa[i]->name() == pb[i]->name());
    CHECK(xq::testing::same_bits(pa[i]->value, pb[i]->value));
  }
}

}  // namespace

TEST_CASE("checkpoint: a plain XQ_CHILDREN struct model in the global namespace saves and loads",
          "[io][checkpoint][issue34]") {
  xq::testing::temp_dir dir;
  SECTION("one input") {
    xq::set_seed(11);
    plain_mlp saved;
    xq::build(saved, {1, 3});
    xq::adam opt(xq::trainable_parameters(saved), {0.01f});
    xq::save_checkpoint(dir / "mlp.xqc", saved, opt);
    xq::set_seed(12);  // other initial weights
    plain_mlp loaded;
    xq::build(loaded, {1, 3});
    xq::adam opt2(xq::trainable_parameters(loaded), {0.01f});
    xq::load_checkpoint(dir / "mlp.xqc", loaded, opt2);
    check_same_parameters(saved, loaded);
    CHECK(loaded.hidden.kernel()->name() == "hidden/kernel");
  }
  SECTION("README's siamese pair") {
    xq::set_seed(21);
    siamese_pair saved;
    xq::build(saved, xq::input_shapes{{1, 6, 6, 1}, {1, 6, 6, 1}});
    xq::save_checkpoint(dir / "siamese.xqc", saved);
    xq::set_seed(22);
    siamese_pair loaded;
    xq::build(loaded, xq::input_shapes{{1, 6, 6, 1}, {1, 6, 6, 1}});
    xq::load_checkpoint(dir / "siamese.xqc", loaded);
    check_same_parameters(saved, loaded);
  }
}
