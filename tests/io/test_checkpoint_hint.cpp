// Issue 34, item 17: <xquant/xquant.hpp> declares save_checkpoint / load_checkpoint overloads
// that only static_assert where checkpoints are (tests/compile_fail/checkpoint_moved.cpp);
// with <xquant/io/checkpoint.hpp> included too, the real functions are chosen for every
// way of calling them (a string literal or a std::string path, optimizers or none).
#include <catch2/catch.hpp>

#include <string>

#include <xquant/xquant.hpp>
#include <xquant/io/checkpoint.hpp>  // after the umbrella: the hint overloads are declared first

#include "../test_support.hpp"

TEST_CASE("checkpoint: with the umbrella and the checkpoint header, the real functions are called",
          "[io][checkpoint][issue34]") {
  xq::testing::temp_dir dir;
  xq::set_seed(4);
  xq::dense saved(3);
  xq::build(saved, {1, 4});
  xq::adam opt(xq::trainable_parameters(saved));
  const std::string path = dir / "m.xqc";
  xq::save_checkpoint(path, saved, opt);
  xq::set_seed(5);
  xq::dense loaded(3);
  xq::build(loaded, {1, 4});
  xq::adam opt2(xq::trainable_parameters(loaded));
  xq::load_checkpoint(path, loaded, opt2);
  CHECK(xq::testing::same_bits(saved.kernel()->value, loaded.kernel()->value));
  xq::save_checkpoint(path.c_str(), saved);
  xq::load_checkpoint(path.c_str(), loaded);
  CHECK(xq::testing::same_bits(saved.bias()->value, loaded.bias()->value));
}
