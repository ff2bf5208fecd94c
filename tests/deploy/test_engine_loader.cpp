// The integer engine as a runtime that cannot be crashed (issue 33, findings 7 and 8): a
// saved model is checked as a whole when read — every op's rule against the shapes and kinds
// it reads, from input_shape forward; CBOR nesting, sizes and work bounded before anything
// is allocated — and a model in memory is checked before it runs. Each case here crashed
// (or cost gigabytes) before: tests/data/integer_model/README.md has the repro against main
// at 0009ee8 under AddressSanitizer, and its version-1 files. The files of this version are
// crafted the same way, from a lowered model or by hand, each with a valid CRC.

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "deploy_models.hpp"

#include <xquant/deploy/integer_model_file.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/io/checkpoint_format.hpp>
#include <xquant/io/file_envelope.hpp>
#include <xquant/xquant.hpp>

#ifndef XQ_TEST_DATA_DIR
#define XQ_TEST_DATA_DIR XQ_GOLDEN_DIR "/.."
#endif

namespace {

using namespace xq::deploy;

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), {});
}

/// The message `decode_integer_model` refuses `bytes` with ("" if it loads).
std::string refusal(const std::vector<std::uint8_t>& bytes, const char* name = "crafted.xqi") {
  try {
    decode_integer_model(bytes.data(), bytes.size(), name);
  } catch (const xq::io_error& e) {
    return e.what();
  }
  return "";
}

std::string refusal(const integer_model& m, const char* name = "crafted.xqi") { return refusal(encode_integer_model(m), name); }

/// A payload written by hand into this version's envelope (a valid CRC).
std::vector<std::uint8_t> wrap(const nlohmann::ordered_json& payload) {
  return xq::io::wrap_envelope(integer_model_file_format(), nlohmann::ordered_json::to_cbor(payload));
}

/// A payload of one input of `shape` and the ops given (each map without path and output:
/// op k reads what its "inputs" say and writes tensor k + 1).
nlohmann::ordered_json payload(std::vector<std::size_t> shape, std::vector<nlohmann::ordered_json> ops) {
  nlohmann::ordered_json p = nlohmann::ordered_json::object();
  p["input_shape"] = shape;
  p["requantization"] = "float_multiplier";
  p["value_count"] = ops.size() + 1;
  p["input_value"] = 0;
  p["output_value"] = ops.size();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < ops.size(); ++k) {
    nlohmann::ordered_json op = ops[k];
    op["path"] = "op" + std::to_string(k);
    op["output"] = k + 1;
    if (!op.contains("inputs")) op["inputs"] = {k};
    list.push_back(op);
  }
  p["ops"] = list;
  p["parity_points"] = nlohmann::ordered_json::array();
  return p;
}

nlohmann::ordered_json window(std::size_t k, std::size_t pad = 0) {
  return {{"window", {k, k}}, {"strides", {1, 1}}, {"dilation", {1, 1}}, {"pads", {pad, pad, pad, pad}}};
}

/// The small CNN, quantized (not trained: its quantizers' initial ranges) and lowered.
integer_model small_engine() {
  auto model = deploy_test::make_small_cnn();
  xq::build(model, {1, 12, 12, 1});
  auto qat = xq::quantize_model(model, xq::quantize_options{}, {1, 12, 12, 1});
  return lower(qat, {12, 12, 1});
}

integer_linear_op& first_linear(integer_model& m, const char* kind) {
  for (auto& op : m.ops)
    if (auto* l = dynamic_cast<integer_linear_op*>(op.get()); l && std::string(op->kind()) == kind) return *l;
  FAIL("no " << kind << " op");
  throw;
}

}  // namespace

TEST_CASE("integer model files: an op that does not fit the tensor it reads is refused when read, naming it",
          "[deploy][file][loader]") {
  const xq::dataset data = deploy_test::quadrant_data(8, 3);
  SECTION("input_shape edited to [144]: the first conv would read a rank-2 tensor's shape[1..3]") {
    integer_model m = small_engine();
    m.input_shape = {144};
    const std::string msg = refusal(m);
    CHECK_THAT(msg, Catch::Contains("crafted.xqi") && Catch::Contains("(conv2d)") && Catch::Contains("a rank-4 integer tensor") &&
                        Catch::Contains("(1, 144)"));
  }
  SECTION("a depthwise op for 1 channel on a 4-channel tensor: it would write past its accumulator") {
    xq::set_seed(7);
    deploy_test::separable_net<> model;
    xq::build(model, {1, 12, 12, 1});
    auto qat = xq::quantize_model(model, xq::quantize_options{}, {1, 12, 12, 1});
    integer_model m = lower(qat, {12, 12, 1});
    integer_linear_op& d = first_linear(m, "depthwise_conv2d");
    d.in_channels = 1;
    d.out_channels = d.depth_multiplier;
    d.weights.resize(d.geometry.window[0] * d.geometry.window[1] * d.out_channels);
    d.requant = requantizer(d.requant.scheme(), std::vector<double>(d.out_channels, d.requant.real_multipliers()[0]), "d");
    if (!d.bias.empty()) d.bias.resize(d.out_channels);
    d.prepare();
    CHECK_THAT(refusal(m), Catch::Contains("(depthwise_conv2d)") && Catch::Contains("with 1 channels (NHWC)") &&
                               Catch::Contains("(1, 12, 12, 4)"));
    // And a model in memory is refused before it runs, not run past its tensors.
    CHECK_THROWS_WITH(m.run(data.inputs), Catch::Contains("(depthwise_conv2d)") && Catch::Contains("with 1 channels"));
  }
  SECTION("a conv told 12 input channels (it reads 1): the reference kernel would read past its input rows") {
    integer_model m = small_engine();
    integer_linear_op& conv = first_linear(m, "conv2d");
    conv.in_channels = 12;
    conv.weights.assign(conv.geometry.window[0] * conv.geometry.window[1] * 12 * conv.out_channels, 1);
    conv.prepare();
    CHECK_THAT(refusal(m), Catch::Contains("(conv2d)") && Catch::Contains("with 12 channels") && Catch::Contains("(1, 12, 12, 1)"));
    run_options ref;
    ref.reference_kernels = true;
    CHECK_THROWS_AS(m.run(data.inputs, ref), xq::argument_error);
  }
  SECTION("a dense op whose channel count disagrees with its weights or its input") {
    integer_model m = small_engine();
    integer_linear_op& dense = first_linear(m, "dense");
    dense.weights.pop_back();
    CHECK_THAT(refusal(m), Catch::Contains("(dense)") && Catch::Contains("weights for"));
  }
  SECTION("a conv with a filter's weights short (fuzz_integer_model: packing them read past the weights)") {
    integer_model m = small_engine();
    integer_linear_op& conv = first_linear(m, "conv2d");
    conv.weights.resize(conv.weights.size() - conv.out_channels);
    conv.prepare();  // packs nothing: the weights are not what the window and channels say
    CHECK_THAT(refusal(m), Catch::Contains("(conv2d)") && Catch::Contains("weights for"));
    // The fuzzer's input itself.
    CHECK_THAT(refusal(read_file(XQ_TEST_DATA_DIR "/integer_model/fuzz_conv_weights_short.xqi")), Catch::Contains("weights"));
  }
  SECTION("a binary dense told 256 inputs on 16 channels, and a sign op on bits") {
    nlohmann::ordered_json sign = {{"kind", "sign"}};
    nlohmann::ordered_json dense = {{"kind", "binary_dense"}, {"window", window(1)}, {"in_channels", 256}, {"out_channels", 2},
                                    {"words_per_row", 4}, {"weights", nlohmann::ordered_json::binary(std::vector<std::uint8_t>(64, 0x55))}};
    CHECK_THAT(refusal(wrap(payload({16}, {sign, dense}))),
               Catch::Contains("ops[1] op1 (binary_dense)") && Catch::Contains("bits of 256 channels") && Catch::Contains("(1, 16)"));
    CHECK_THAT(refusal(wrap(payload({16}, {sign, sign}))),
               Catch::Contains("ops[1] op1 (sign)") && Catch::Contains("a real, integer or accumulator tensor") &&
                   Catch::Contains("a bits tensor"));
  }
  SECTION("an op that reads a tensor computed after it, or writes one twice") {
    integer_model m = small_engine();
    m.ops[1]->inputs = {m.ops.back()->output};
    CHECK_THAT(refusal(m), Catch::Contains("inputs computed before it"));
    integer_model n = small_engine();
    n.ops[2]->output = n.ops[1]->output;
    CHECK_THAT(refusal(n), Catch::Contains("an output tensor computed once"));
  }
  SECTION("an op of a kind no decoder is registered for") {
    CHECK_THAT(refusal(wrap(payload({4}, {{{"kind", "correlation"}}}))),
               Catch::Contains("ops[0]") && Catch::Contains("unknown kind \"correlation\""));
  }
}

TEST_CASE("integer model files: nesting, sizes and work are bounded before anything is allocated",
          "[deploy][file][loader]") {
  SECTION("1 MB of nested CBOR (0x81) as the payload: refused at 32 levels, no stack overflow") {
    std::vector<std::uint8_t> deep(1 << 20, 0x81);
    deep.push_back(0x00);
    CHECK_THAT(refusal(xq::io::wrap_envelope(integer_model_file_format(), deep)), Catch::Contains("nested deeper than 32"));
    // And in the envelope itself: 40 arrays deep where the version should be.
    const std::string magic = xq::io::envelope_magic(integer_model_file_format());
    std::vector<std::uint8_t> file(magic.begin(), magic.end());
    for (const char* key : {"\x67version"}) file.insert(file.end(), key, key + 8);
    file.insert(file.end(), 40, 0x81);
    file.push_back(0x02);
    CHECK_THAT(refusal(file), Catch::Contains("crafted.xqi") && Catch::Contains("nested deeper than 32"));
  }
  SECTION("a constant of shape [0, 2^28, 2^28, 2^28]: holds nothing, and would overflow xtensor's strides") {
    const std::uint64_t big = std::uint64_t(1) << 28;
    const nlohmann::ordered_json constant = {{"kind", "constant"}, {"inputs", nlohmann::ordered_json::array()},
                                             {"value", {{"shape", {0, big, big, big}}, {"data", nlohmann::ordered_json::binary({})}}}};
    CHECK_THAT(refusal(wrap(payload({4}, {constant}))), Catch::Contains("ops[0].value") && Catch::Contains("a 0 counted as 1"));
  }
  SECTION("a real_conv2d kernel whose shape's product wraps to 0") {
    const std::uint64_t d = std::uint64_t(1) << 16;
    const nlohmann::ordered_json conv = {{"kind", "real_conv2d"}, {"depthwise", false},
                                         {"kernel", {{"shape", {d, d, d, d}}, {"data", nlohmann::ordered_json::binary({})}}},
                                         {"has_bias", false}, {"strides", {1, 1}}, {"dilation", {1, 1}}, {"padding", 0},
                                         {"pad_value", 0.0}, {"transposed", false}};
    CHECK_THAT(refusal(wrap(payload({4, 4, 1}, {conv}))), Catch::Contains("ops[0].kernel") && Catch::Contains("elements"));
  }
  SECTION("value_count at its old limit, 2^24: every run would allocate 2.4 GB of empty tensors") {
    integer_model m = small_engine();
    m.value_count = std::size_t(1) << 24;
    CHECK_THAT(refusal(m), Catch::Contains("value_count"));
    m.value_count = 2 * m.ops.size() + 2;  // within the reader's range, beyond the model's
    CHECK_THAT(refusal(m), Catch::Contains(xq::detail::concat("1 to ", 2 * m.ops.size() + 1, " tensors")));
  }
  SECTION("pads of 4096 around a conv: 8.2 GB and 15 s per run") {
    integer_model m = small_engine();
    first_linear(m, "conv2d").geometry.pads = {4096, 4096, 4096, 4096};
    CHECK_THAT(refusal(m), Catch::Contains("(conv2d)") && Catch::Contains("at most 67108864 elements per sample"));
    first_linear(m, "conv2d").geometry.pads = {4097, 0, 0, 0};
    CHECK_THAT(refusal(m), Catch::Contains("window.pads: expected sizes up to 4096"));
  }
  SECTION("a product of 2^37 multiply-adds per sample, from 6 KB") {
    const nlohmann::ordered_json matmul = {{"kind", "matmul"},     {"inputs", {0, 0}},
                                           {"function", "matmul"}, {"ints", {0, 1}},
                                           {"floats", nlohmann::ordered_json::binary({})}, {"tensors", nlohmann::ordered_json::array()}};
    const std::vector<std::uint8_t> file = wrap(payload({4096, 8192}, {matmul}));
    CHECK(file.size() < 6000);
    CHECK_THAT(refusal(file), Catch::Contains("(matmul)") && Catch::Contains("at most 68719476736 multiply-adds per sample"));
    // The same product on fewer rows is within the bound.
    CHECK(refusal(wrap(payload({64, 8192}, {matmul}))).empty());
  }
  SECTION("a batch the bound allows per sample is checked again when it runs") {
    const nlohmann::ordered_json relu = {{"kind", "relu"}};
    const std::vector<std::uint8_t> file = wrap(payload({4}, {relu}));
    const integer_model m = decode_integer_model(file.data(), file.size(), "relu.xqi");
    CHECK(m.check(3).at(1).shape == std::vector<std::size_t>{3, 4});
  }
}

TEST_CASE("integer model files: version 1 is refused with the reason, this version round-trips", "[deploy][file]") {
  // Written by main at 0009ee8 (the repro program's "valid" case).
  const std::vector<std::uint8_t> v1 = read_file(XQ_TEST_DATA_DIR "/integer_model/v1_small_cnn.xqi");
  CHECK_THAT(refusal(v1, "v1.xqi"),
             Catch::Contains("v1.xqi") && Catch::Contains("unsupported integer model format version 1 (this xquant reads version 2)") &&
                 Catch::Contains("lower the model again"));
  // The crafted version-1 files of findings 7 and 8 are refused by their version too.
  for (const char* crafted : {"input_rank2", "depthwise_one_channel", "conv_twelve_channels", "binary_dense_256_on_16",
                              "sign_on_bits", "constant_zero_size", "kernel_shape_wraps", "value_count_limit", "pads_4096"}) {
    CAPTURE(crafted);
    const std::vector<std::uint8_t> bytes = read_file(std::string(XQ_TEST_DATA_DIR "/integer_model/v1_") + crafted + ".xqi");
    CHECK_THAT(refusal(bytes), Catch::Contains("version 1"));
  }
  // This version: the magic of the shared envelope, every op saved and loaded by itself.
  const integer_model m = small_engine();
  const std::vector<std::uint8_t> bytes = encode_integer_model(m);
  const std::string magic = xq::io::envelope_magic(integer_model_file_format());
  REQUIRE(bytes.size() > magic.size());
  CHECK(std::string(bytes.begin(), bytes.begin() + std::ptrdiff_t(magic.size())) == magic);
  const integer_model back = decode_integer_model(bytes.data(), bytes.size(), "m.xqi");
  CHECK(back.summary() == m.summary());
  CHECK(encode_integer_model(back) == bytes);
}

TEST_CASE("checkpoints: the shared envelope keeps their bytes", "[io][checkpoint]") {
  // A version-2 checkpoint written by main at 0009ee8, before the envelope moved to io/.
  const std::vector<std::uint8_t> old = read_file(XQ_TEST_DATA_DIR "/checkpoint/v2_small_cnn.xqc");
  const xq::checkpoint_state state = xq::decode_checkpoint(old.data(), old.size(), "v2_small_cnn.xqc");
  CHECK(state.version == 2);
  CHECK(xq::encode_checkpoint(state) == old);
  CHECK(xq::detail::ckpt::checkpoint_magic() == xq::io::envelope_magic(xq::detail::ckpt::checkpoint_file_format()));
}

TEST_CASE("integer engine: a runtime, its float functions record nothing in a caller's trace or tape",
          "[deploy][runtime]") {
  // The layout functions, layer norm, GELU, a transposed conv, bilinear upsampling, float
  // add and a float dense: every float function family of the engine.
  const xq::dataset data = deploy_test::quadrant_data(4, 5);
  xq::set_seed(12);
  deploy_test::grid_net<> model;
  xq::build(model, {1, 12, 12, 1});
  xq::quantize_options qo;
  qo.spec.add("bilinear").add("norm");
  auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
  const integer_model engine = lower(qat, {12, 12, 1});
  const xq::tensor alone = engine.run(data.inputs);
  xq::graph_trace trace;  // as a parity pass has one active while the engine runs
  const xq::tape tape;
  const bool same = engine.run(data.inputs) == alone;
  CHECK(same);
  CHECK(trace.calls().empty());
  CHECK(tape.size() == 0);
}
