#pragma once
/// \file dropout.ipp
/// dropout's code (layers/dropout.hpp).

#include <cstddef>
#include <sstream>
#include <string>

#include "../dropout.hpp"
#include "../../core/mode.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(dropout)

namespace detail {

XQ_DECL void require_dropout_rate(const std::string& path, float rate) {
  if (!(rate >= 0.0f && rate < 1.0f)) throw argument_error(path, "a dropout rate in [0, 1)", concat(rate));
}

}  // namespace detail

namespace ops {

XQ_DECL var dropout(const var& x, float rate, std::mt19937& rng, const std::string& path) {
  detail::require_dropout_rate(path, rate);
  if (rate == 0.0f) return x;
  const float scale = 1.0f / (1.0f - rate);
  // Keep a value when a 32-bit draw is >= rate * 2^32: probability 1 - rate up to
  // 2^-32, one engine call per value and no float conversion.
  const std::uint64_t threshold = static_cast<std::uint64_t>(static_cast<double>(rate) * 4294967296.0);
  const std::size_t n = x.size();
  std::vector<unsigned char> keep(n);
  tensor y = tensor::from_shape(x.shape());
  const float* xp = x.value().data();
  float* yp = y.data();
  // On a shard of a data-parallel batch: the whole batch's draws, this shard's kept, so
  // the masks (and the generator after them) are one process's (core/sharded_batch.hpp).
  std::size_t before = 0, total = n;
  if (sharded_batch* shards = sharded_batch::active(batch_dependence::dropout_masks)) before = shards->position(n, total);
  rng.discard(before);
  for (std::size_t i = 0; i < n; ++i) {
    keep[i] = static_cast<std::uint64_t>(rng()) >= threshold;
    // (x * scale) * mask, in TF's order of operations.
    yp[i] = (xp[i] * scale) * (keep[i] ? 1.0f : 0.0f);
  }
  rng.discard(total - before - n);
  return make_result(std::move(y), needs_grad(x), [x, keep = std::move(keep), scale](const tensor& dy) {
    tensor dx = tensor::from_shape(x.shape());
    const float* dyp = dy.data();
    float* dxp = dx.data();
    for (std::size_t i = 0, count = dx.size(); i < count; ++i)
      dxp[i] = (dyp[i] * scale) * (keep[i] ? 1.0f : 0.0f);
    add_grad(x, std::move(dx));
  });
}

}  // namespace ops

XQ_DECL var dropout::call(const var& x) {
  if (!is_training()) return x;
  return ops::dropout(x, rate_, rng_, path());
}

XQ_DECL dropout::dropout(float rate, std::uint32_t seed)
    : layer<dropout>("dropout"), rate_(rate), seed_(seed), rng_(seed) {
  detail::require_dropout_rate("dropout", rate);
}

XQ_DECL void dropout::reseed(std::uint32_t seed) {
  seed_ = seed;
  rng_.seed(seed);
}

XQ_DECL void dropout::reseed() { rng_.seed(seed_); }

XQ_DECL std::string dropout::generator_state() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

XQ_DECL void dropout::set_generator_state(const std::string& state) {
  // Every number must be a 32-bit word (the stream would take larger ones: the words are
  // stored in a 64-bit type here), and all of the text one state, nothing after it.
  std::istringstream words(state);
  std::string word;
  std::size_t count = 0;
  bool words_ok = true;
  while (words >> word) {
    ++count;
    words_ok = words_ok && word.size() <= 10 && word.find_first_not_of("0123456789") == std::string::npos &&
               std::stoull(word) <= 0xffffffffull;
  }
  std::istringstream in(state);
  std::mt19937 restored;
  in >> restored;
  if (!words_ok || in.fail() || !(in >> std::ws).eof())
    throw argument_error(path(), "a std::mt19937 state (its 32-bit state words, as generator_state() writes them)",
                         detail::concat("text of ", count, " numbers that is not one"));
  rng_ = restored;
}

}  // namespace xq
