// Issue 34, item 15: the errors of a quantization_spec a user got wrong. num_bits = 0 used to
// blame a quantizer the entry turned off ("dense/output_quantizer: expected num_bits in
// [2, 61]"); the path-typo error listed only the leaves, though a composite's path is
// accepted.
#include <catch2/catch.hpp>

#include <string>

#include <xquant/xquant.hpp>

namespace {

template <class Conv = xq::conv2d>
struct spec_block {
  Conv conv{xq::conv2d(4, 3)};
  XQ_CHILDREN(conv)
  xq::var operator()(const xq::var& x) { return conv(x); }
};

auto spec_model() {
  auto model = xq::sequential<spec_block<>, xq::flatten, xq::dense>(spec_block<>(), xq::flatten(), xq::dense(3));
  xq::build(model, {1, 6, 6, 1});
  return model;
}

std::string quantize_error(xq::quantization_spec spec, xq::quantization_mode mode = xq::quantization_mode::partial) {
  auto model = spec_model();
  xq::quantize_options o;
  o.mode = mode;
  o.spec = std::move(spec);
  try {
    auto twin = xq::quantize_model(model, o, {1, 6, 6, 1});
  } catch (const xq::argument_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("quantization_spec: a num_bits out of range names the entry and the valid range",
          "[transform][spec][issue34]") {
  for (const int bits : {0, 1, -3, 62}) {
    INFO("num_bits " << bits);
    xq::quantization_spec spec;
    xq::layer_quantization q;
    q.quantize_input = false;  // the quantizers this entry leaves off were blamed
    q.num_bits = bits;
    spec.add("dense", q);
    const std::string what = quantize_error(spec);
    CHECK_THAT(what, Catch::Contains("quantization_spec entry \"dense\"") &&
                         Catch::Contains("num_bits in [2, 61] (the nvidia scheme's tf_qdq quantizers)") &&
                         Catch::Contains("num_bits = " + std::to_string(bits)));
    CHECK_THAT(what, !Catch::Contains("output_quantizer"));
  }
  xq::quantization_spec by_type;
  xq::layer_quantization zero;
  zero.num_bits = 0;
  by_type.add_type("conv2d", zero);
  CHECK_THAT(quantize_error(by_type, xq::quantization_mode::full),
             Catch::Contains("type entry \"conv2d\"") && Catch::Contains("num_bits = 0"));
  xq::quantization_spec ok;
  xq::layer_quantization four;
  four.num_bits = 4;
  ok.add("dense", four);
  CHECK(quantize_error(ok) == "no error");
}

TEST_CASE("quantization_spec: a path that names nothing lists the layers and the composites",
          "[transform][spec][issue34]") {
  xq::quantization_spec typo;
  typo.add("spec_blok");
  const std::string what = quantize_error(typo);
  CHECK_THAT(what, Catch::Contains("entry \"spec_blok\"") && Catch::Contains("spec_block/conv") &&
                       Catch::Contains("or of a composite holding some (spec_block)"));
  xq::quantization_spec block;
  block.add("spec_block");  // a composite's path is accepted
  CHECK(quantize_error(block) == "no error");
}
