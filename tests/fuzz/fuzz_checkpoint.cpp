// libFuzzer target over the checkpoint loader (xq::load_checkpoint_bytes), built with
// -fsanitize=fuzzer,address,undefined by tests/fuzz/CMakeLists.txt.
//
// The first byte of an input picks what the rest is:
//   even: a whole checkpoint file, loaded as it is (magic, CBOR envelope, CRC-32 ...);
//   odd:  a payload, wrapped in a valid envelope with its CRC-32 first, so that the
//         mutations reach the payload's decoder and the matching against the model
//         (with the CRC in the way, almost no mutated file gets past the envelope).
// A rejected input must throw xq::io_error or xq::argument_error and leave the model and
// the optimizer exactly as they were (all-or-nothing loading); anything else — another
// exception, a crash, a hang, a sanitizer report, a half-applied load — is a finding.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "fuzz_model.hpp"

namespace {

struct target {
  fuzz::twin model = fuzz::make_model(1);
  xq::adam optimizer{xq::trainable_parameters(model), {0.01f}};
};

target& the_target() {
  static target t;
  return t;
}

bool same_tensor(const xq::tensor& a, const xq::tensor& b) {
  return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// The model's and the optimizer's whole state, as a checkpoint holds it (cheaper to take
/// and compare than its encoding: this runs for every input).
xq::checkpoint_state state_of(target& t) { return xq::detail::ckpt::capture_checkpoint(t.model, t.optimizer); }

bool same_state(const xq::checkpoint_state& a, const xq::checkpoint_state& b) {
  if (a.parameters.size() != b.parameters.size() || a.quantizers.size() != b.quantizers.size() ||
      a.batch_norm_folds.size() != b.batch_norm_folds.size() || !a.optimizer || !b.optimizer)
    return false;
  for (std::size_t i = 0; i < a.parameters.size(); ++i) {
    const auto &x = a.parameters[i], &y = b.parameters[i];
    if (x.name != y.name || x.trainable != y.trainable || x.uses != y.uses || !same_tensor(x.value, y.value))
      return false;
  }
  for (std::size_t i = 0; i < a.quantizers.size(); ++i) {
    const auto &x = a.quantizers[i], &y = b.quantizers[i];
    // The ranges are parameters, compared above; these are the switches and counters.
    if (x.path != y.path || x.kind != y.kind || x.enabled != y.enabled || x.observer_enabled != y.observer_enabled ||
        x.fake_quant_enabled != y.fake_quant_enabled || x.batches_seen != y.batches_seen || x.built != y.built)
      return false;
  }
  for (std::size_t i = 0; i < a.batch_norm_folds.size(); ++i)
    if (a.batch_norm_folds[i].training_calls != b.batch_norm_folds[i].training_calls) return false;
  const auto &p = *a.optimizer, &q = *b.optimizer;
  if (p.iterations != q.iterations || p.slots.size() != q.slots.size()) return false;
  for (std::size_t i = 0; i < p.slots.size(); ++i) {
    const auto &x = p.slots[i], &y = q.slots[i];
    if (x.parameter != y.parameter || x.step != y.step || x.tensors.size() != y.tensors.size()) return false;
    for (std::size_t k = 0; k < x.tensors.size(); ++k)
      if (x.tensors[k].first != y.tensors[k].first || !same_tensor(x.tensors[k].second, y.tensors[k].second))
        return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  target& t = the_target();
  static xq::checkpoint_state before = state_of(t);  // changes only when a load succeeds
  std::vector<std::uint8_t> file;
  if (data[0] & 1) file = xq::detail::ckpt::wrap_checkpoint_payload(std::vector<std::uint8_t>(data + 1, data + size));
  else file.assign(data + 1, data + size);

  const char* rejected = nullptr;
  try {
    xq::load_checkpoint_bytes(file.data(), file.size(), "fuzz input", t.model, t.optimizer);
  } catch (const xq::io_error&) {
    rejected = "io_error";
  } catch (const xq::argument_error&) {
    rejected = "argument_error";
  }
  xq::checkpoint_state after = state_of(t);
  if (rejected && !same_state(before, after)) {
    std::fprintf(stderr, "fuzz_checkpoint: a rejected input (%s) changed the model\n", rejected);
    std::abort();
  }
  before = std::move(after);
  return 0;
}
