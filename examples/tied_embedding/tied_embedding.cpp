// A character-level language model with tied weights, trained under QAT, saved and
// loaded back.
//
// The model predicts the next character from the previous 8: an embedding looks the 8
// characters up, a hidden layer mixes them, and the output projection is the embedding's
// own table, transposed (xq::tied_projection): one weight, used twice. The text is the
// GNU GPL version 3, which every Debian system ships (/usr/share/common-licenses/GPL-3).
//
//   1. train the float model;
//   2. quantize_model with a spec that quantizes the embedding's lookup and not the
//      de-embedding (each use of the tied table has its own quantizer);
//   3. fine-tune, evaluate on the held-out last 10% of the text;
//   4. save a checkpoint (parameters, quantizer ranges, optimizer state), build a fresh
//      model, load it, evaluate again: the numbers must be identical.
//
//   tied_embedding [--epochs N] [--qat-epochs N] [--text FILE] [--checkpoint FILE]
//
// The last line is `before_save: loss=<l> accuracy=<a> after_load: loss=<l> accuracy=<a> identical=yes`.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <xquant/io/checkpoint.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/embedding.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/tied_projection.hpp>
#include <xquant/transform/quantize_model.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>

namespace {

constexpr std::size_t context = 8, width = 48;

/// ids (N, 8) -> logits (N, vocab), the projection tied to the embedding.
template <class Embed = xq::embedding, class Flat = xq::flatten, class Hidden = xq::dense, class Act = xq::relu,
          class Project = xq::tied_projection>
struct char_model {
  Embed embed;
  Flat flat;
  Hidden hidden;
  Act act;
  Project project;
  XQ_CHILDREN(embed, flat, hidden, act, project)
  char_model() = default;
  explicit char_model(std::size_t vocab) : embed(vocab, width), hidden(width) {
    embed.build();
    project = Project(embed, true);  // x · Eᵀ + b over the same table
  }
  xq::var operator()(const xq::var& ids) { return project(act(hidden(flat(embed(ids))))); }
};

struct corpus {
  std::vector<float> ids;
  std::size_t vocab = 0;
};

corpus read_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw xq::io_error(file, "cannot open the text (Debian ships it in base-files)");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<unsigned char, float> id;
  for (unsigned char c : text) id.emplace(c, 0.0f);
  float next = 0;
  for (auto& [c, v] : id) v = next++;
  corpus out;
  out.vocab = id.size();
  for (unsigned char c : text) out.ids.push_back(id[c]);
  return out;
}

/// Windows [i, i + 8) -> character i + 8, for i in [begin, end).
xq::dataset windows(const corpus& c, std::size_t begin, std::size_t end) {
  const std::size_t n = end - begin;
  xq::dataset d{xq::tensor::from_shape({n, context}), xq::tensor::from_shape({n})};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < context; ++k) d.inputs(i, k) = c.ids[begin + i + k];
    d.targets(i) = c.ids[begin + i + context];
  }
  return d;
}

template <class Model>
xq::evaluation evaluate(Model& m, const xq::dataset& d) {
  return xq::evaluate(m, xq::sparse_softmax_cross_entropy, d, 1024);
}

}  // namespace

int main(int argc, char** argv) try {
  std::size_t epochs = 6, qat_epochs = 2;
  std::string text_file = "/usr/share/common-licenses/GPL-3", checkpoint = "tied_embedding.xqc";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--epochs") epochs = std::stoul(next());
    else if (a == "--qat-epochs") qat_epochs = std::stoul(next());
    else if (a == "--text") text_file = next();
    else if (a == "--checkpoint") checkpoint = next();
    else throw std::invalid_argument("unknown option " + a);
  }
  const corpus c = read_text(text_file);
  const std::size_t windows_total = c.ids.size() - context;
  const std::size_t split = windows_total * 9 / 10;
  const xq::dataset train = windows(c, 0, split), held_out = windows(c, split, windows_total);
  std::cout << "tied_embedding: " << c.ids.size() << " characters, vocabulary " << c.vocab << ", "
            << train.size() << " training windows, " << held_out.size() << " held out\n";

  xq::set_seed(1);
  char_model<> model(c.vocab);
  xq::build(model, {1, context});
  xq::fit_options fo;
  fo.epochs = epochs;
  fo.batch_size = 128;
  fo.seed = 1;
  xq::adam float_opt(xq::trainable_parameters(model), {3e-3f});
  xq::fit(model, float_opt, xq::sparse_softmax_cross_entropy, train, fo);
  const auto float_eval = evaluate(model, held_out);
  std::printf("float: held-out loss=%.4f accuracy=%.4f\n", float_eval.loss, float_eval.metric.value_or(0));

  // The lookup quantized (8-bit per row), the de-embedding in float: one table, two uses.
  xq::quantization_spec spec;
  spec.add("embed");
  auto qat = xq::quantize_model(model, xq::quantization_mode::full, spec);
  std::printf("embed/kernel_quantizer on: %s, project/kernel_quantizer on: %s, same table: %s\n",
              qat.embed.weight_quantizer().enabled() ? "yes" : "no",
              qat.project.weight_quantizer().enabled() ? "yes" : "no",
              qat.embed.float_layer().kernel() == qat.project.float_layer().kernel() ? "yes" : "no");
  xq::adam opt(xq::trainable_parameters(qat), {5e-4f});
  fo.epochs = qat_epochs;
  xq::fit(qat, opt, xq::sparse_softmax_cross_entropy, train, fo);
  const auto before = evaluate(qat, held_out);

  xq::save_checkpoint(checkpoint, qat, opt);

  // A fresh model (other initial weights), quantized the same way, then loaded.
  xq::set_seed(99);
  char_model<> fresh_float(c.vocab);
  xq::build(fresh_float, {1, context});
  auto fresh = xq::quantize_model(fresh_float, xq::quantization_mode::full, spec);
  xq::adam fresh_opt(xq::trainable_parameters(fresh), {5e-4f});
  xq::load_checkpoint(checkpoint, fresh, fresh_opt);
  const auto after = evaluate(fresh, held_out);
  const bool identical = before.loss == after.loss && before.metric == after.metric;
  std::printf("before_save: loss=%.6f accuracy=%.4f after_load: loss=%.6f accuracy=%.4f identical=%s\n",
              before.loss, before.metric.value_or(0), after.loss, after.metric.value_or(0),
              identical ? "yes" : "no");
  return identical ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "tied_embedding: %s\n", e.what());
  return 1;
}
