// Writes the seed corpora of the reader fuzzers (fuzz_idx, fuzz_npy, fuzz_weight_import,
// fuzz_integer_model) into <dir>/idx, <dir>/npy, <dir>/weight_import and
// <dir>/integer_model: small valid files of every kind the readers take, and zero-size
// shapes (a dimension 0 beside others), so that the fuzzer starts next to the shapes that
// once overflowed xtensor's strides (issue 14, finding 2); for the integer model, real
// saved models of every op family (the deployment tests' models, lowered with each
// requantization, bias and merge option), as whole files and as bare payloads.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <xquant/deploy/integer_model_file.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/io/npy.hpp>

#include "../deploy/deploy_models.hpp"
#include "weight_import_model.hpp"

namespace {

using bytes = std::vector<std::uint8_t>;

void write(const std::filesystem::path& file, const bytes& b) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

bytes read(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// An IDX file: magic (0, 0, type, rank), big-endian dimensions, then `payload`.
bytes idx(std::uint8_t type, const std::vector<std::uint32_t>& dims, const bytes& payload) {
  bytes b = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (const std::uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

/// A .npy file (format 1.0) with the header dictionary `dict` and `payload`.
bytes npy(const std::string& dict, const bytes& payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<std::uint8_t>(header.size() & 0xff),
             static_cast<std::uint8_t>(header.size() >> 8)};
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

/// A saved model as fuzz_integer_model reads it: mode 0 and the file, mode 1 and its payload.
void write_model(const std::filesystem::path& dir, const std::string& name, const xq::deploy::integer_model& m) {
  const bytes file = xq::deploy::encode_integer_model(m);
  bytes whole = {0};
  whole.insert(whole.end(), file.begin(), file.end());
  write(dir / (name + ".xqi"), whole);
  unsigned version = 0;
  const bytes payload = xq::io::open_envelope(xq::deploy::integer_model_file_format(), file.data(), file.size(), name, version);
  bytes bare = {1};
  bare.insert(bare.end(), payload.begin(), payload.end());
  write(dir / (name + ".payload"), bare);
}

/// The integer models of the deployment tests' models (briefly trained where a test trains
/// them, on few samples: the seeds need their ops, not their accuracy).
void write_integer_models(const std::filesystem::path& dir) {
  namespace dt = deploy_test;
  using xq::deploy::lower_options;
  const xq::dataset images = dt::quadrant_data(16, 1), tokens = dt::token_data(16, 2);
  {
    auto model = dt::make_small_cnn();
    auto qat = dt::trained_qat(model, images);
    write_model(dir, "small_cnn", xq::deploy::lower(qat, {12, 12, 1}));
    lower_options o;
    o.requant = xq::deploy::requantization::tflite_double_rounding;
    o.average_pool = xq::deploy::average_pooling::integer;
    o.merge = xq::deploy::merge_arithmetic::integer;
    write_model(dir, "small_cnn_tflite", xq::deploy::lower(qat, {12, 12, 1}, o));
    o.requant = xq::deploy::requantization::tflite_single_rounding;
    write_model(dir, "small_cnn_single_rounding", xq::deploy::lower(qat, {12, 12, 1}, o));
    o.bias = xq::deploy::bias_precision::float32;
    o.requant = xq::deploy::requantization::float_multiplier;
    write_model(dir, "small_cnn_float_bias", xq::deploy::lower(qat, {12, 12, 1}, o));
  }
  {
    auto bnn = dt::make_binary_cnn();
    xq::build(bnn, {1, 12, 12, 1});
    write_model(dir, "binary_cnn", xq::deploy::lower(bnn, {12, 12, 1}));
  }
  {
    auto qat = dt::trained_separable_qat(images);
    write_model(dir, "separable", xq::deploy::lower(qat, {12, 12, 1}));
  }
  for (const bool pytorch : {false, true}) {
    auto qat = dt::output_placement_qat(images, pytorch);
    write_model(dir, pytorch ? "pytorch_placement" : "tfmot_placement", xq::deploy::lower(qat, {12, 12, 1}));
  }
  {
    auto qat = dt::trained_grid_qat(images);
    write_model(dir, "layout_and_float_functions", xq::deploy::lower(qat, {12, 12, 1}));
  }
  {
    auto qat = dt::trained_transformer_qat(tokens);
    write_model(dir, "transformer", xq::deploy::lower(qat, {6}));
  }
  {
    auto qat = dt::trained_recurrent_qat(tokens);
    write_model(dir, "recurrent", xq::deploy::lower(qat, {6}));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path root = argv[1];
  try {
    for (const char* d : {"idx", "npy", "weight_import", "integer_model"}) fs::create_directories(root / d);
    const fs::path i = root / "idx";
    write(i / "labels_u8", idx(0x08, {4}, {0, 9, 3, 1}));
    write(i / "images_u8", idx(0x08, {2, 2, 3}, bytes(12, 200)));
    write(i / "images_nhwc_u8", idx(0x08, {1, 2, 2, 3}, bytes(12, 7)));
    write(i / "labels_i32", idx(0x0C, {2}, {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}));
    write(i / "floats", idx(0x0D, {2}, {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0}));
    write(i / "doubles", idx(0x0E, {1}, {0x3f, 0xf0, 0, 0, 0, 0, 0, 0}));
    write(i / "zero_size", idx(0x08, {0, 28, 28}, {}));
    write(i / "zero_size_wide", idx(0x08, {0, 65536, 65536}, {}));
    write(i / "rank0", idx(0x08, {}, {42}));

    const fs::path n = root / "npy";
    xq::io::save_npy((n / "f4_2x3").string(), xq::tensor{{1, 2, 3}, {4, 5, 6}});
    write(n / "f4_zero_size", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", {}));
    write(n / "f4_zero_size_wide", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 65536, 65536), }", {}));
    write(n / "f8_fortran", npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 1), }",
                                {0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40}));
    write(n / "i4", npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", {1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff}));
    write(n / "u1_scalar", npy("{'descr': '|u1', 'fortran_order': False, 'shape': (), }", {5}));
    write(n / "b1", npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {1, 0, 1}));
    write(n / "f4_big_endian", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", {0x3f, 0x80, 0, 0}));

    // Each parameter of the import model as its own .npy, in both layouts: the first byte
    // picks the layout (bit 0) and the parameter (the rest), as fuzz_weight_import reads it.
    const fs::path w = root / "weight_import";
    fuzz::import_model m = fuzz::make_import_model();
    const auto params = xq::parameters(m);
    const fs::path scratch = w / "scratch.npy";
    for (std::size_t k = 0; k < params.size() && k < fuzz::import_parameter_count; ++k) {
      for (const bool pytorch : {false, true}) {
        xq::tensor value = params[k]->value;
        if (pytorch && value.dimension() == 4) value = xt::transpose(value, {3, 2, 0, 1});  // HWIO -> OIHW
        if (pytorch && value.dimension() == 2) value = xt::transpose(value);               // (in, out) -> (out, in)
        xq::io::save_npy(scratch.string(), value);
        bytes b = {static_cast<std::uint8_t>((k << 1) | (pytorch ? 1 : 0))};
        const bytes file = read(scratch);
        b.insert(b.end(), file.begin(), file.end());
        write(w / (std::string(fuzz::import_file_stem(pytorch, k)) + (pytorch ? ".pytorch" : ".keras")), b);
      }
    }
    fs::remove(scratch);

    write_integer_models(root / "integer_model");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_reader_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
