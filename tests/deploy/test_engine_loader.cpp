// The integer engine as a runtime that cannot be crashed (issue 33, findings 7 and 8): a
// saved model is checked as a whole when read — every op's rule against the shapes and kinds
// it reads, from input_shape forward; CBOR nesting, sizes and work bounded before anything
// is allocated — and a model in memory is checked before it runs. Each case here crashed
// (or cost gigabytes) before: tests/data/integer_model/README.md has the repro against main
// at 0009ee8 under AddressSanitizer, and its version-1 files. The files of this version are
// crafted the same way, each with a valid CRC: from a model of the engine's ops built by
// hand (what a lowering makes, with no model to lower: this file stays cheap to compile, as
// the sanitizers' build of it must) or from a payload written by hand.

#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <xquant/core/graph_trace.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/deploy/integer_model_file.hpp>
#include <xquant/io/checkpoint_format.hpp>
#include <xquant/io/file_envelope.hpp>

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

/// A per-tensor int8 grid of TF's QDQ on [-r, r] (the NVIDIA toolkit's activations).
xq::quantization_grid qdq_grid(float r) {
  xq::quantization_grid g;
  g.scale = {r / 127.0f};
  g.zero_point = {0};
  g.qmin = -127;
  g.rounding.op = xq::rounding_operator::tf_qdq;
  g.rounding.range_min = {-r};
  g.rounding.range_max = {r};
  return g;
}

template <class Op>
Op& add(integer_model& m, std::unique_ptr<Op> op, std::vector<std::size_t> inputs, const char* path) {
  op->path = path;
  op->inputs = std::move(inputs);
  op->output = m.value_count++;
  Op& ref = *op;
  m.ops.push_back(std::move(op));
  return ref;
}

/// An integer linear op of `form` with random int8 weights, an int32 bias and a
/// requantizer onto the int8 grid of scale out_scale (what the lowering makes).
std::unique_ptr<integer_linear_op> linear(integer_linear_op::form form, std::size_t in, std::size_t out, std::size_t k,
                                          std::size_t multiplier, unsigned seed) {
  auto op = std::make_unique<integer_linear_op>();
  op->shape_form = form;
  op->in_channels = in;
  op->out_channels = out;
  op->depth_multiplier = multiplier;
  if (form != integer_linear_op::form::dense) {
    op->geometry.window = {k, k};
    op->geometry.pads = {k / 2, k / 2, k / 2, k / 2};
  }
  const std::size_t count = form == integer_linear_op::form::dense ? in * out
                            : form == integer_linear_op::form::conv2d ? k * k * in * out
                                                                      : k * k * out;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> w(-127, 127), b(-500, 500);
  for (std::size_t i = 0; i < count; ++i) op->weights.push_back(std::int16_t(w(rng)));
  for (std::size_t o = 0; o < out; ++o) op->bias.push_back(b(rng));
  op->out_scale = 0.05f;
  op->out_qmin = -127;
  op->requant = requantizer(requantization::tflite_double_rounding, std::vector<double>(out, 1.0 / 4096), "linear");
  op->prepare();
  return op;
}

/// What a lowering makes of a small CNN on (12, 12, 1) images: quantize, conv 3x3 (6
/// filters), relu, 2x2 max pool, a depthwise 3x3 of multiplier 2, reshape, quantized dense
/// to 4 floats... every op a real lowering emits for it, built by hand.
integer_model small_engine() {
  integer_model m;
  m.input_shape = {12, 12, 1};
  m.scheme = requantization::tflite_double_rounding;
  m.input_value = m.value_count++;
  auto q = std::make_unique<quantize_op>();
  q->grid = qdq_grid(1.0f);
  std::size_t v = add(m, std::move(q), {m.input_value}, "conv input").output;
  v = add(m, linear(integer_linear_op::form::conv2d, 1, 6, 3, 1, 1), {v}, "conv").output;
  v = add(m, std::make_unique<relu_op>(), {v}, "relu").output;
  auto pool = std::make_unique<max_pool_op>();
  pool->geometry.window = pool->geometry.strides = {2, 2};
  v = add(m, std::move(pool), {v}, "pool").output;
  v = add(m, linear(integer_linear_op::form::depthwise_conv2d, 6, 12, 3, 2, 2), {v}, "depthwise").output;
  auto flat = std::make_unique<reshape_op>();
  flat->target = {6 * 6 * 12};
  v = add(m, std::move(flat), {v}, "flatten").output;
  auto dense = linear(integer_linear_op::form::dense, 6 * 6 * 12, 4, 0, 1, 3);
  dense->integer_output = false;
  dense->real_scale.assign(4, 1e-3f);
  dense->real_bias.assign(4, 0.5f);
  m.output_value = add(m, std::move(dense), {v}, "head").output;
  m.parity_points.push_back({"conv input", "conv", 0, 0, "conv/input_quantizer", 1, false, false});
  return m;
}

/// Images (n, 12, 12, 1) of values in [-1, 1].
xq::tensor images(std::size_t n) {
  xq::tensor x = xq::tensor::from_shape({n, 12, 12, 1});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& e : x) e = u(rng);
  return x;
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
  const xq::tensor inputs = images(8);
  CHECK(small_engine().run(inputs).shape() == std::vector<std::size_t>{8, 4});  // the model as made runs
  SECTION("input_shape edited to [144]: the first conv would read a rank-2 tensor's shape[1..3]") {
    integer_model m = small_engine();
    m.input_shape = {144};
    const std::string msg = refusal(m);
    CHECK_THAT(msg, Catch::Contains("crafted.xqi") && Catch::Contains("(conv2d)") && Catch::Contains("a rank-4 integer tensor") &&
                        Catch::Contains("(1, 144)"));
  }
  SECTION("a depthwise op for 1 channel on a 6-channel tensor: it would write past its accumulator") {
    integer_model m = small_engine();
    integer_linear_op& d = first_linear(m, "depthwise_conv2d");
    d.in_channels = 1;
    d.out_channels = d.depth_multiplier;
    d.weights.resize(d.geometry.window[0] * d.geometry.window[1] * d.out_channels);
    d.requant = requantizer(d.requant.scheme(), std::vector<double>(d.out_channels, d.requant.real_multipliers()[0]), "d");
    if (!d.bias.empty()) d.bias.resize(d.out_channels);
    d.prepare();
    CHECK_THAT(refusal(m), Catch::Contains("(depthwise_conv2d)") && Catch::Contains("with 1 channels (NHWC)") &&
                               Catch::Contains("(1, 6, 6, 6)"));
    // And a model in memory is refused before it runs, not run past its tensors.
    CHECK_THROWS_WITH(m.run(inputs), Catch::Contains("(depthwise_conv2d)") && Catch::Contains("with 1 channels"));
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
    CHECK_THROWS_AS(m.run(inputs, ref), xq::argument_error);
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
    CHECK_THAT(refusal(wrap(payload({4}, {{{"kind", "deformable_conv2d"}}}))),
               Catch::Contains("ops[0]") && Catch::Contains("unknown kind \"deformable_conv2d\""));
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
  // Every float family of the engine: a float dense, the functions with arguments (layer
  // norm, GELU, a transposed conv, bilinear upsampling), the activations, float add.
  integer_model m;
  m.input_shape = {4, 4, 2};
  m.input_value = m.value_count++;
  auto up = std::make_unique<function_op>();
  up->function = "upsampling2d";
  up->ints = {2, 2, 1};
  std::size_t v = add(m, std::move(up), {m.input_value}, "bilinear").output;
  auto t = std::make_unique<function_op>();
  t->function = "conv2d_transpose";
  t->ints = {1, 1, 1, 1, 1};
  t->tensors = {xq::tensor(xt::ones<float>({3, 3, 3, 2}) * 0.1f), xq::tensor::from_shape({0})};
  v = add(m, std::move(t), {v}, "up").output;
  auto norm = std::make_unique<function_op>();
  norm->function = "layer_norm";
  norm->ints = {3};
  norm->floats = {1e-3f};
  norm->tensors = {xq::tensor::from_shape({0}), xq::tensor::from_shape({0})};
  const std::size_t n = add(m, std::move(norm), {v}, "norm").output;
  auto gelu = std::make_unique<function_op>();
  gelu->function = "gelu";
  gelu->ints = {0};
  const std::size_t g = add(m, std::move(gelu), {n}, "gelu").output;
  auto sum = std::make_unique<real_function_op>();
  sum->function = "add";
  v = add(m, std::move(sum), {n, g}, "merge").output;
  auto dense = std::make_unique<real_linear_op>();
  dense->dense = true;
  dense->kernel = xq::tensor(xt::ones<float>({3, 5}) * 0.25f);
  v = add(m, std::move(dense), {v}, "head").output;
  auto softmax = std::make_unique<real_function_op>();
  softmax->function = "softmax";
  m.output_value = add(m, std::move(softmax), {v}, "probabilities").output;
  xq::tensor x = xq::tensor::from_shape({3, 4, 4, 2});
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = float(i % 7) * 0.1f - 0.3f;
  const xq::tensor alone = m.run(x);
  CHECK(alone.shape() == std::vector<std::size_t>{3, 8, 8, 5});
  xq::graph_trace trace;  // as a parity pass has one active while the engine runs
  const xq::tape tape;
  const bool same = m.run(x) == alone;
  CHECK(same);
  CHECK(trace.calls().empty());
  CHECK(tape.size() == 0);
  // And it saves and loads, every op by itself.
  const std::vector<std::uint8_t> bytes = encode_integer_model(m);
  const integer_model back = decode_integer_model(bytes.data(), bytes.size(), "floats.xqi");
  const bool same_back = back.run(x) == alone;
  CHECK(same_back);
}
