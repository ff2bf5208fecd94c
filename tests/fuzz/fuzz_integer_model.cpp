// libFuzzer target over the integer-model loader and runtime (xq::deploy::decode_integer_model,
// then integer_model::run), built with -fsanitize=fuzzer,address,undefined by
// tests/fuzz/CMakeLists.txt.
//
// The first byte of an input picks what the rest is:
//   even: a whole .xqi file, loaded as it is (magic, CBOR envelope, CRC-32 ...);
//   odd:  a payload, wrapped in a valid envelope with its CRC-32 first.
// A loaded model is then run on a small batch with the fast and the reference kernels,
// when its check says a run is cheap (the loader bounds any run, not to a fuzzer's pace).
// Rejecting an input is an xq::io_error (the loader) or an xq::argument_error (a run: an id
// outside a table, a value a peer's operator refuses); anything else — another exception,
// the engine's "internal" error (an op computed other than its rule said), a crash, a hang,
// a sanitizer report — is a finding.
//
// The custom mutator (LLVMFuzzerCustomMutator) keeps inputs valid files: it opens the
// envelope, mutates the CBOR payload structurally — numbers (to the bounds and edges the
// loader checks), array lengths, op kinds, tensor indices, byte strings, whole ops — and
// wraps it again with a valid CRC-32, so the mutations reach the op decoders and the model
// check (byte flips alone stop at the CRC). One mutation in eight is libFuzzer's own, on the
// whole file, for the envelope.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <xquant/deploy/integer_model_file.hpp>
#include <xquant/io/detail/cbor_codec.hpp>
#include <xquant/io/file_envelope.hpp>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using json = nlohmann::json;
using xq::deploy::integer_model;

/// A batch of 2 of the model's input: a few ids and signs, then a ramp (gather ops take
/// small non-negative integers).
xq::tensor input_of(const integer_model& m) {
  std::vector<std::size_t> shape = {2};
  shape.insert(shape.end(), m.input_shape.begin(), m.input_shape.end());
  xq::tensor x = xq::tensor::from_shape(shape);
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = i % 3 == 0 ? float(i % 5) : float(int(i % 7) - 3) * 0.37f;
  return x;
}

/// Whether a run of the checked model is cheap enough to do for every input.
bool cheap(const integer_model& m) {
  std::uint64_t elements = 0;
  std::vector<xq::deploy::engine_tensor> values;
  try {
    values = m.check(2);
  } catch (const xq::argument_error&) {
    return false;  // within the bounds for one sample, not for two: run() would refuse it
  }
  for (const xq::deploy::engine_tensor& t : values) {
    std::uint64_t n = 1;
    for (std::size_t d : t.shape) n *= d;
    elements += n;
  }
  return elements <= (std::uint64_t(1) << 18) && m.ops.size() <= 256;
}

void run_checked(const std::vector<std::uint8_t>& file) {
  integer_model m;
  try {
    m = xq::deploy::decode_integer_model(file.data(), file.size(), "fuzz input");
  } catch (const xq::io_error&) {
    return;
  }
  if (!cheap(m)) return;
  const xq::tensor x = input_of(m);
  for (bool reference : {false, true}) {
    xq::deploy::run_options o;
    o.reference_kernels = reference;
    o.batch_slice = 1;
    try {
      (void)m.run(x, o);
    } catch (const xq::argument_error&) {
      // documented: a run refuses what only its data shows
    }
  }
}

// ---- the structure-aware mutator -------------------------------------------------------

/// Every node of a CBOR tree, with the key it sits under ("" in arrays and at the root).
void collect(json& j, const std::string& key, std::vector<std::pair<json*, std::string>>& out) {
  out.emplace_back(&j, key);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) collect(it.value(), it.key(), out);
  else if (j.is_array())
    for (json& e : j) collect(e, "", out);
}

template <class T>
const T& pick(std::mt19937& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}

const std::vector<std::uint64_t>& edges() {
  static const std::vector<std::uint64_t> v = {0,       1,         2,          3,           4,         7,         8,
                                               15,      16,        31,         32,          63,        64,        65,
                                               127,     128,       255,        256,         4095,      4096,      4097,
                                               1 << 16, 1 << 20,   1 << 24,    1 << 26,     1 << 28,   1u << 31,  ~0u,
                                               std::uint64_t(1) << 32, std::uint64_t(1) << 62, ~std::uint64_t(0)};
  return v;
}

/// The strings the loader dispatches on: kinds, functions, grids' names.
const std::vector<std::string>& words() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> w = xq::deploy::registered_op_kinds();
    for (const char* s : {"float_multiplier", "tflite_double_rounding", "tflite_single_rounding", "integer", "binary",
                          "fp8_e4m3fn", "fp4_e2m1", "float32", "e8m0", "ue4m3", "quantize_linear", "tf_qdq", "tf_fake_quant",
                          "torch_affine", "torch_affine_float_zero_point", "lsq", "dorefa_weights", "sign", "ternary", ""})
      w.push_back(s);
    return w;
  }();
  return v;
}

void mutate_number(json& j, std::mt19937& rng) {
  std::uniform_int_distribution<int> way(0, 5);
  if (j.is_number_float()) {
    const double v = j.get<double>();
    const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e38, -1e38, std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::quiet_NaN(), v * 2, -v, v / 3};
    j = specials[std::uniform_int_distribution<int>(0, 12)(rng)];
    return;
  }
  // Wrapping arithmetic (as unsigned): the edges of every integer type are fair game.
  const std::uint64_t v = j.is_number_unsigned() ? j.get<std::uint64_t>() : std::uint64_t(j.get<std::int64_t>());
  switch (way(rng)) {
    case 0: j = pick(rng, edges()); break;
    case 1: j = std::int64_t(v + 1); break;
    case 2: j = std::int64_t(v - 1); break;
    case 3: j = -std::int64_t(pick(rng, edges()) & 0xffff); break;
    case 4: j = std::int64_t(v * 2); break;
    default: j = std::uniform_int_distribution<std::int64_t>(0, 20)(rng); break;
  }
}

void mutate_bytes(json::binary_t& b, std::mt19937& rng) {
  std::uniform_int_distribution<int> way(0, 5);
  switch (way(rng)) {
    case 0: b.resize(b.size() / 2); break;
    case 1: b.resize(b.size() + pick(rng, std::vector<std::size_t>{1, 2, 4, 8, 64})); break;
    case 2: b.clear(); break;
    default: {  // a value at a random place: an int16, int32, float or byte edge
      if (b.empty()) break;
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, b.size() - 1)(rng);
      const std::uint32_t values[] = {0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000u, 0x7f800000u, 0x7fc00000u, 0x00000001, 0};
      const std::uint32_t v = values[std::uniform_int_distribution<int>(0, 8)(rng)];
      for (std::size_t k = 0; k < 4 && at + k < b.size(); ++k) b[at + k] = std::uint8_t(v >> (8 * k));
    }
  }
}

void mutate_tree(json& root, std::mt19937& rng) {
  std::vector<std::pair<json*, std::string>> nodes;
  collect(root, "", nodes);
  const int rounds = std::uniform_int_distribution<int>(1, 3)(rng);
  for (int r = 0; r < rounds; ++r) {
    auto [node, key] = pick(rng, nodes);
    json& j = *node;
    if (j.is_number()) {
      mutate_number(j, rng);
    } else if (j.is_boolean()) {
      j = !j.get<bool>();
    } else if (j.is_string()) {
      j = pick(rng, words());
    } else if (j.is_binary()) {
      mutate_bytes(j.get_binary(), rng);
    } else if (j.is_array()) {
      std::uniform_int_distribution<int> way(0, 4);
      const int w = way(rng);
      if (w == 0 && !j.empty()) j.erase(j.begin() + std::ptrdiff_t(std::uniform_int_distribution<std::size_t>(0, j.size() - 1)(rng)));
      else if (w == 1 && !j.empty()) j.push_back(j[std::uniform_int_distribution<std::size_t>(0, j.size() - 1)(rng)]);
      else if (w == 2 && j.size() > 1) std::swap(j[0], j[j.size() - 1]);
      else if (w == 3) j.push_back(pick(rng, edges()));
      else j.clear();
    } else if (j.is_object() && !j.empty()) {
      auto it = j.begin();
      std::advance(it, std::uniform_int_distribution<std::size_t>(0, j.size() - 1)(rng));
      const int way = std::uniform_int_distribution<int>(0, 2)(rng);
      if (way == 0) j.erase(it);                      // a missing field
      else if (way == 1) it.value() = json(nullptr);  // a field of another type
      else it.value() = json::binary({0x81, 0x81, 0x00});  // another type again
    }
    // A node may have moved (arrays and maps change): collect again for the next round.
    nodes.clear();
    collect(root, "", nodes);
  }
}

/// The payload of `file` (mode 0: a whole file; 1: a payload), or false.
bool payload_of(const std::uint8_t* data, std::size_t size, std::vector<std::uint8_t>& payload) {
  if (size == 0) return false;
  if (data[0] & 1) {
    payload.assign(data + 1, data + size);
    return true;
  }
  try {
    unsigned version = 0;
    payload = xq::io::open_envelope(xq::deploy::integer_model_file_format(), data + 1, size - 1, "seed", version);
    return true;
  } catch (const xq::io_error&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<std::uint8_t> file;
  if (data[0] & 1)
    file = xq::io::wrap_envelope(xq::deploy::integer_model_file_format(), std::vector<std::uint8_t>(data + 1, data + size));
  else
    file.assign(data + 1, data + size);
  run_checked(file);
  return 0;
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> payload;
  json tree;
  std::string error;
  if (std::uniform_int_distribution<int>(0, 7)(rng) == 0 || !payload_of(data, size, payload) ||
      !xq::io::detail::parse_bounded_cbor(payload.data(), payload.size(), tree, error))
    return LLVMFuzzerMutate(data, size, max_size);
  mutate_tree(tree, rng);
  const std::vector<std::uint8_t> file =
      xq::io::wrap_envelope(xq::deploy::integer_model_file_format(), json::to_cbor(tree));
  if (file.size() + 1 > max_size) return LLVMFuzzerMutate(data, size, max_size);
  data[0] = 0;
  std::memcpy(data + 1, file.data(), file.size());
  return file.size() + 1;
}
