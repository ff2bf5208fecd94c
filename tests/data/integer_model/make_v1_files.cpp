// Reproduces issue 33's findings 7 and 8 against the integer-model loader of main at 0009ee8
// (before the engine became a runtime) and writes the version-1 files of this directory.
// Each case crafts a file with a valid CRC through the old encoder (or by hand), writes it,
// then loads it and runs it (the reference kernels with XQ_REFERENCE=1; nothing with
// --write-only). Not built with the project: it compiles against that commit's headers
// (README.md says how).
//   make_v1_files <case> <dir> [--write-only]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <xquant/deploy/function_op.hpp>
#include <xquant/deploy/integer_model_file.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/io/checkpoint.hpp>
#include <xquant/io/checkpoint_format.hpp>
#include <xquant/xquant.hpp>

#include "deploy_models.hpp"

using namespace xq::deploy;

static void write(const std::string& path, const std::vector<std::uint8_t>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

static std::vector<std::uint8_t> wrap(const nlohmann::json& payload) {
  const std::vector<std::uint8_t> p = nlohmann::json::to_cbor(payload);
  nlohmann::json file;
  file["format"] = "xquant-integer-model";
  file["version"] = 1;
  file["crc32"] = xq::detail::ckpt::checkpoint_crc32(p.data(), p.size());
  file["payload"] = nlohmann::json::binary(p);
  return nlohmann::json::to_cbor(file);
}

static integer_model small_engine() {
  auto model = deploy_test::make_small_cnn();
  xq::build(model, {1, 12, 12, 1});
  auto qat = xq::quantize_model(model, xq::quantize_options{}, {1, 12, 12, 1});
  return lower(qat, {12, 12, 1});
}

static integer_model separable_engine() {
  xq::set_seed(7);
  deploy_test::separable_net<> model;
  xq::build(model, {1, 12, 12, 1});
  auto qat = xq::quantize_model(model, xq::quantize_options{}, {1, 12, 12, 1});
  return lower(qat, {12, 12, 1});
}

template <class Op>
static Op* first(integer_model& m, const char* kind = nullptr) {
  for (auto& op : m.ops)
    if (auto* o = dynamic_cast<Op*>(op.get()); o && (!kind || std::string(op->kind()) == kind)) return o;
  return nullptr;
}

int main(int argc, char** argv) {
  const std::string c = argv[1], dir = argv[2];
  const std::string path = dir + "/" + c + ".xqi";
  std::vector<std::size_t> in_shape = {12, 12, 1};
  if (c == "input_rank2") {  // input_shape [144]
    integer_model m = small_engine();
    m.input_shape = {144};
    in_shape = {144};
    write(path, encode_integer_model(m));
  } else if (c == "depthwise_one_channel") {  // a depthwise op for 1 channel on a 4-channel tensor
    integer_model m = separable_engine();
    auto* d = first<integer_linear_op>(m, "depthwise_conv2d");
    d->in_channels = 1;
    d->out_channels = d->depth_multiplier;
    d->weights.resize(d->geometry.window[0] * d->geometry.window[1] * d->out_channels);
    d->requant = requantizer(d->requant.scheme(), std::vector<double>(d->out_channels, d->requant.real_multipliers()[0]), "x");
    d->real_scale.resize(d->integer_output && !d->float_bias ? 0 : d->out_channels);
    d->real_bias.resize(d->real_scale.size());
    d->bias.resize(d->bias.empty() ? 0 : d->out_channels);
    write(path, encode_integer_model(m));
  } else if (c == "conv_twelve_channels") {  // a conv told 12 input channels (it reads 1)
    integer_model m = small_engine();
    auto* conv = first<integer_linear_op>(m, "conv2d");
    conv->in_channels = 12;
    conv->weights.resize(conv->geometry.window[0] * conv->geometry.window[1] * 12 * conv->out_channels, 1);
    conv->prepare();
    write(path, encode_integer_model(m));
  } else if (c == "binary_dense_256_on_16" || c == "sign_on_bits") {  // hand-made models
    nlohmann::json p;
    p["input_shape"] = {16};
    p["requantization"] = "float_multiplier";
    p["value_count"] = 3;
    p["input_value"] = 0;
    p["output_value"] = 2;
    nlohmann::json sign = {{"kind", "sign"}, {"path", "sign"}, {"inputs", {0}}, {"output", 1}};
    nlohmann::json second;
    if (c == "sign_on_bits") {
      second = {{"kind", "sign"}, {"path", "sign again"}, {"inputs", {1}}, {"output", 2}};
    } else {
      std::vector<std::uint8_t> weights(2 * 4 * 8, 0x55);
      second = {{"kind", "binary_dense"}, {"path", "dense"}, {"inputs", {1}}, {"output", 2},
                {"window", {{"window", {1, 1}}, {"strides", {1, 1}}, {"dilation", {1, 1}}, {"pads", {0, 0, 0, 0}}}},
                {"in_channels", 256}, {"out_channels", 2}, {"words_per_row", 4},
                {"weights", nlohmann::json::binary(weights)}};
    }
    p["ops"] = {sign, second};
    p["parity_points"] = nlohmann::json::array();
    in_shape = {16};
    write(path, wrap(p));
  } else if (c == "nested_cbor") {  // 1 MB of 0x81 as the payload
    std::vector<std::uint8_t> deep(1 << 20, 0x81);
    deep.push_back(0x00);
    nlohmann::json file;
    file["format"] = "xquant-integer-model";
    file["version"] = 1;
    file["crc32"] = xq::detail::ckpt::checkpoint_crc32(deep.data(), deep.size());
    file["payload"] = nlohmann::json::binary(deep);
    write(path, nlohmann::json::to_cbor(file));
  } else if (c == "constant_zero_size") {  // a constant [0, 2^28, 2^28, 2^28]
    nlohmann::json p;
    p["input_shape"] = {4};
    p["requantization"] = "float_multiplier";
    p["value_count"] = 2;
    p["input_value"] = 0;
    p["output_value"] = 1;
    const std::uint64_t big = std::uint64_t(1) << 28;
    p["ops"] = {{{"kind", "constant"}, {"path", "c"}, {"inputs", nlohmann::json::array()}, {"output", 1},
                 {"shape", {0, big, big, big}}, {"value", nlohmann::json::binary({})}}};
    p["parity_points"] = nlohmann::json::array();
    in_shape = {4};
    write(path, wrap(p));
  } else if (c == "kernel_shape_wraps") {  // a real_conv2d kernel whose shape's product wraps to 0
    nlohmann::json p;
    p["input_shape"] = {4, 4, 1};
    p["requantization"] = "float_multiplier";
    p["value_count"] = 2;
    p["input_value"] = 0;
    p["output_value"] = 1;
    const std::uint64_t d = std::uint64_t(1) << 16;
    p["ops"] = {{{"kind", "real_conv2d"}, {"path", "conv"}, {"inputs", {0}}, {"output", 1}, {"depthwise", false},
                 {"kernel_shape", {d, d, d, d}}, {"kernel", nlohmann::json::binary({})}, {"has_bias", false},
                 {"bias", nlohmann::json::binary({})}, {"strides", {1, 1}}, {"dilation", {1, 1}}, {"padding", 0},
                 {"pad_value", 0.0}}};
    p["parity_points"] = nlohmann::json::array();
    in_shape = {4, 4, 1};
    write(path, wrap(p));
  } else if (c == "value_count_limit") {  // value_count 2^24: every run allocates that many tensors
    integer_model m = small_engine();
    m.value_count = std::size_t(1) << 24;
    write(path, encode_integer_model(m));
  } else if (c == "pads_4096") {  // a conv padded by 4096 on every side
    integer_model m = small_engine();
    first<integer_linear_op>(m, "conv2d")->geometry.pads = {4096, 4096, 4096, 4096};
    write(path, encode_integer_model(m));
  } else if (c == "checkpoint") {  // a checkpoint of version 2, for the byte-identity test
    auto model = deploy_test::make_small_cnn();
    xq::build(model, {1, 12, 12, 1});
    auto qat = xq::quantize_model(model, xq::quantize_options{}, {1, 12, 12, 1});
    xq::save_checkpoint(dir + "/v2_small_cnn.xqc", qat);
    return 0;
  } else if (c == "valid") {  // a valid version-1 file, for the version test
    write(dir + "/v1_small_cnn.xqi", encode_integer_model(small_engine()));
    return 0;
  }
  std::fprintf(stderr, "wrote %s\n", path.c_str());
  if (argc > 3 && std::string(argv[3]) == "--write-only") return 0;
  const integer_model back = load_integer_model(path);
  std::fprintf(stderr, "loaded: %zu ops; running\n", back.ops.size());
  std::vector<std::size_t> shape = {2};
  shape.insert(shape.end(), in_shape.begin(), in_shape.end());
  xq::tensor x = xq::tensor::from_shape(shape);
  for (auto& v : x) v = 0.25f;
  run_options o;
  o.reference_kernels = std::getenv("XQ_REFERENCE") != nullptr;
  const xq::tensor y = back.run(x, o);
  std::fprintf(stderr, "ran: %zu outputs\n", y.size());
  return 0;
}
