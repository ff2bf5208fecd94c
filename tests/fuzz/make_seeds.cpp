// Writes the seed corpus of fuzz_checkpoint into the directory given: valid checkpoints
// of the fuzzer's model (fresh, trained, with SGD, without optimizer) as whole files
// (first byte 0) and as bare payloads (first byte 1), plus a truncated file.

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_model.hpp"

namespace {

void write(const std::string& dir, const std::string& name, unsigned char mode, const std::vector<std::uint8_t>& b) {
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  out.put(static_cast<char>(mode));
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out) throw std::runtime_error("cannot write " + dir + "/" + name);
}

void write_both(const std::string& dir, const std::string& name, const std::vector<std::uint8_t>& file) {
  write(dir, name + ".xqc", 0, file);
  unsigned version = 0;
  write(dir, name + ".payload", 1, xq::detail::ckpt::open_checkpoint_envelope(file.data(), file.size(), name, version));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  try {
    fuzz::twin m = fuzz::make_model(1);
    xq::adam adam(xq::trainable_parameters(m), {0.01f});
    write_both(dir, "fresh_adam", xq::save_checkpoint_bytes(m, adam));
    write_both(dir, "no_optimizer", xq::save_checkpoint_bytes(m));
    for (unsigned s = 1; s <= 3; ++s) fuzz::train_step(m, adam, s);
    const std::vector<std::uint8_t> trained = xq::save_checkpoint_bytes(m, adam);
    write_both(dir, "trained_adam", trained);
    write(dir, "truncated.xqc", 0, std::vector<std::uint8_t>(trained.begin(), trained.begin() + trained.size() / 2));

    fuzz::twin n = fuzz::make_model(2);
    xq::sgd sgd(xq::trainable_parameters(n), {0.05f, 0.9f});
    fuzz::train_step(n, sgd, 2);
    write_both(dir, "trained_sgd", xq::save_checkpoint_bytes(n, sgd));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
