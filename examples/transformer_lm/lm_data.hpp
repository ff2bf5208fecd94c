#pragma once
// What the transformer LM examples share (transformer_lm.cpp, transformer_lm_low_bit.cpp):
// the text (Debian's fortunes), its characters as ids, the training and held-out windows,
// perplexity, and the training loop (Adam, warmup then cosine decay).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/dataset.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/schedule.hpp>

namespace lm {

/// The text: one file, or every fortune file of a directory (the names without a dot:
/// `cookie`, not `cookie.dat`, the index, nor `cookie.u8`, a link to the same text),
/// in name order.
inline std::string read_text(const std::string& where) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  if (fs::is_directory(where)) {
    for (const auto& e : fs::directory_iterator(where))
      if (e.is_regular_file() && !e.is_symlink() && e.path().filename().string().find('.') == std::string::npos)
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else {
    files.emplace_back(where);
  }
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw xq::io_error(f.string(), "cannot open the text");
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (text.size() < 100000)
    throw xq::io_error(where, "expected at least 100,000 characters of text (Debian: apt-get install fortunes), found " +
                                  std::to_string(text.size()));
  return text;
}

struct corpus {
  std::vector<float> ids;
  std::size_t vocab = 0;
};

/// Characters -> ids: every byte the text uses, in byte order.
inline corpus encode(const std::string& text) {
  std::vector<int> id(256, -1);
  for (unsigned char c : text) id[c] = 0;
  corpus out;
  for (int& v : id)
    if (v == 0) v = static_cast<int>(out.vocab++);
  out.ids.reserve(text.size());
  for (unsigned char c : text) out.ids.push_back(static_cast<float>(id[c]));
  return out;
}

/// Non-overlapping windows of T + 1 characters: inputs the first T, targets the last T
/// (each position's next character). Every 20th window is held out.
struct splits {
  xq::dataset train, held_out;
};

inline splits make_windows(const corpus& c, std::size_t t, std::size_t max_held_out) {
  const std::size_t windows = (c.ids.size() - 1) / t;
  std::vector<std::size_t> train_at, held_at;
  for (std::size_t w = 0; w < windows; ++w) (w % 20 == 19 && held_at.size() < max_held_out ? held_at : train_at).push_back(w);
  auto gather = [&](const std::vector<std::size_t>& at) {
    xq::dataset d{xq::tensor::from_shape({at.size(), t}), xq::tensor::from_shape({at.size(), t})};
    for (std::size_t i = 0; i < at.size(); ++i)
      for (std::size_t k = 0; k < t; ++k) {
        d.inputs(i, k) = c.ids[at[i] * t + k];
        d.targets(i, k) = c.ids[at[i] * t + k + 1];
      }
    return d;
  };
  return {gather(train_at), gather(held_at)};
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Perplexity per character on the held-out windows (inference mode).
template <class Model>
double perplexity(Model& m, const xq::dataset& d) {
  return std::exp(xq::evaluate(m, xq::sparse_softmax_cross_entropy, d, 250).loss);
}

/// `train` with the parameters to step and the loss given (LoRA's adapters, a distillation
/// loss: transformer_lm_low_bit's --recipes).
template <class Model, class Loss>
double train_with(Model& m, std::vector<xq::parameter_ptr> parameters, Loss&& loss, const xq::dataset& data,
                  std::size_t steps, std::size_t batch, float rate, unsigned seed) {
  const std::size_t per_epoch = data.size() / batch;
  xq::fit_options fo;
  fo.batch_size = batch;
  fo.seed = seed;
  fo.epochs = (steps + per_epoch - 1) / per_epoch;  // whole passes, as even as `steps` allows
  fo.max_steps_per_epoch = (steps + fo.epochs - 1) / fo.epochs;
  const std::size_t warmup = std::max<std::size_t>(1, steps / 20);
  xq::adam opt(std::move(parameters), {xq::linear_warmup(warmup, xq::cosine_decay{rate, steps, 0.05f})});
  const auto t0 = std::chrono::steady_clock::now();
  xq::fit(m, opt, loss, data, fo);
  return static_cast<double>(fo.epochs * fo.max_steps_per_epoch * batch) / seconds_since(t0);
}

/// Trains `steps` batches with Adam, warmup then cosine decay from `rate`; returns the
/// windows per second.
template <class Model>
double train(Model& m, const xq::dataset& data, std::size_t steps, std::size_t batch, float rate, unsigned seed) {
  return train_with(m, xq::trainable_parameters(m), xq::sparse_softmax_cross_entropy, data, steps, batch, rate, seed);
}

/// Whether the model's token table is one parameter: the lookup's and the projection's
/// are the same object, and the trainable list holds it once.
template <class Model>
bool tie_holds(const Model& m) {
  const xq::parameter_ptr& table = m.embed.embeddings();
  const xq::parameter_ptr& projected = m.project.kernel();
  std::size_t listed = 0;
  for (const auto& p : xq::trainable_parameters(m)) listed += p == table ? 1 : 0;
  return table && table == projected && listed == 1;
}

}  // namespace lm
