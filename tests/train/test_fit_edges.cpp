// Issue 34: fit at its edges. A batch size near SIZE_MAX (the step count wrapped to 0:
// nothing trained, nothing reported), batch size 0.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/train/dataset.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/sgd.hpp>

namespace {

// n rows of 4 inputs, labels 0..2.
xq::dataset small_classification(std::size_t n) {
  xq::dataset d{xq::tensor::from_shape({n, 4}), xq::tensor::from_shape({n})};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < 4; ++j) d.inputs(i, j) = static_cast<float>((i * 7 + j * 3) % 11) / 11.0f - 0.5f;
    d.targets(i) = static_cast<float>(i % 3);
  }
  return d;
}

xq::fit_options quiet(std::size_t epochs) {
  xq::fit_options o;
  o.epochs = epochs;
  o.verbose = false;
  return o;
}

}  // namespace

TEST_CASE("batch_count: a batch larger than the data is one batch, never zero", "[train][dataset][issue34]") {
  constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();
  CHECK(xq::batch_count(5, huge) == 1);
  CHECK(xq::batch_count(5, huge - 1) == 1);
  CHECK(xq::batch_count(1, huge) == 1);
  CHECK(xq::batch_count(0, huge) == 0);
  CHECK(xq::batch_count(huge, huge) == 1);
  CHECK(xq::batch_count(huge, 1) == huge);
  CHECK(xq::batch_count(10, 3) == 4);
  CHECK(xq::batch_count(9, 3) == 3);
  CHECK_THROWS_WITH(xq::batch_count(5, 0), Catch::Contains("batch_size >= 1") && Catch::Contains("batch_size = 0"));
}

TEST_CASE("fit with batch_size SIZE_MAX trains on the whole dataset as one batch", "[train][fit][issue34]") {
  const xq::dataset train = small_classification(20);
  xq::set_seed(3);
  xq::dense model(3);
  xq::build(model, {1, 4});
  const xq::tensor before = model.kernel()->value;
  xq::sgd opt(xq::trainable_parameters(model), {0.1f});
  xq::fit_options o = quiet(2);
  o.batch_size = std::numeric_limits<std::size_t>::max();
  const xq::fit_history h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
  REQUIRE(h.size() == 2);
  CHECK(h.last().steps == 1);
  CHECK(h.last().samples == 20);
  CHECK(opt.iterations() == 2);
  const bool changed = model.kernel()->value != before;
  CHECK(changed);
}

TEST_CASE("fit refuses batch_size 0, saying what is valid", "[train][fit][issue34]") {
  const xq::dataset train = small_classification(6);
  xq::dense model(3);
  xq::build(model, {1, 4});
  xq::sgd opt(xq::trainable_parameters(model));
  xq::fit_options o = quiet(1);
  o.batch_size = 0;
  CHECK_THROWS_WITH(xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o),
                    Catch::Contains("xq::fit") && Catch::Contains("batch_size >= 1") &&
                        Catch::Contains("given batch_size = 0"));
}
