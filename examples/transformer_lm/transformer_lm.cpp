// A tied-embedding transformer language model, float and quantization-aware: the second
// request's network (transformer.hpp). It reads real English text that Debian ships (the
// `fortunes` package: about 2.6 MB of quotations, poems and definitions in
// /usr/share/games/fortunes), trains a character-level model in float, then fine-tunes
// three quantized copies of it, each from the same float weights:
//
//   lookup      the embedding's lookup quantized (int8 per row), the tied projection float
//   projection  the tied projection quantized (input and table, int8), the lookup float
//   both        both uses quantized, and the attention scores' inputs (q, k) too
//
// and, as a control, fine-tunes a float copy the same number of steps at the same rate (so
// that the int8 variants' figures compare with a model trained as long).
//
// In every variant NVIDIA's scheme quantizes the inputs and kernels of every dense layer
// (the attention projections and the MLPs) to int8. The tie survives: each copy holds one
// table, reached by the lookup and the projection, trained by both. It prints perplexity
// (exp of the mean cross-entropy per character) on held-out windows for each.
//
//   transformer_lm              full mode (12 min 15 s on the project's 2-core machine)
//   transformer_lm --quick      a short run (300 + 60 steps per copy, 500 held-out windows)
//   options: --steps N (float steps)  --qat-steps N (per variant)  --batch N
//            --eval-windows N  --text DIR_OR_FILE  --seed N
//
// It ends with one line:
//   transformer_lm float_perplexity=<p> float_continued_perplexity=<c> <variant>_perplexity=<q> ...
//                  worst_int8_vs_float=<+r%>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/summary/print_summary.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/dataset.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/schedule.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../common/command_line.hpp"
#include "lm_data.hpp"
#include "transformer.hpp"

namespace {

struct options {
  std::size_t steps = 3600, qat_steps = 800, batch = 32, eval_windows = 4000;
  std::string text = "/usr/share/games/fortunes";
  unsigned seed = 1;
};

options parse(int argc, char** argv) {
  options o;
  examples::for_each_option(argc, argv, [&](const std::string& a, auto next) {
    if (a == "--quick") {
      o.steps = 300;
      o.qat_steps = 60;
      o.eval_windows = 500;
    } else if (a == "--steps") o.steps = std::stoul(next());
    else if (a == "--qat-steps") o.qat_steps = std::stoul(next());
    else if (a == "--batch") o.batch = std::stoul(next());
    else if (a == "--eval-windows") o.eval_windows = std::stoul(next());
    else if (a == "--text") o.text = next();
    else if (a == "--seed") o.seed = static_cast<unsigned>(std::stoul(next()));
    else return false;
    return true;
  }, " (see the comment at the top of transformer_lm.cpp)");
  if (o.steps == 0 || o.batch == 0 || o.eval_windows == 0)
    throw std::invalid_argument("--steps, --batch and --eval-windows must be positive");
  return o;
}

using lm::corpus;
using lm::encode;
using lm::make_windows;
using lm::perplexity;
using lm::read_text;
using lm::seconds_since;
using lm::splits;
using lm::tie_holds;
using lm::train;

template <class Twin>
const xq::parameter_ptr& lookup_table(const Twin& q) { return q.embed.float_layer().embeddings(); }

struct variant {
  const char* name;
  const char* what;
  xq::quantization_spec spec;
};

}  // namespace

int main(int argc, char** argv) try {
  const options o = parse(argc, argv);
  const corpus c = encode(read_text(o.text));
  lm::shape s;
  s.vocab = c.vocab;
  const splits data = make_windows(c, s.context, o.eval_windows);
  std::printf("transformer_lm: %zu characters of text (%s), vocabulary %zu, %zu training windows of %zu, "
              "%zu held out\n",
              c.ids.size(), o.text.c_str(), c.vocab, data.train.size(), s.context, data.held_out.size());

  xq::set_seed(o.seed);
  lm::transformer_lm<> model(s);
  xq::build(model, {1, s.context});
  xq::print_summary(xq::summarize(model, {1, s.context}), std::cout);

  const auto t0 = std::chrono::steady_clock::now();
  const double float_rate = train(model, data.train, o.steps, o.batch, 2e-3f, o.seed);
  const double float_ppl = perplexity(model, data.held_out);
  std::printf("float: held-out perplexity %.4f after %zu steps (%.0f characters/s training, %.0f s)\n", float_ppl,
              o.steps, float_rate * static_cast<double>(s.context), seconds_since(t0));

  std::vector<variant> variants(3);
  variants[0] = {"lookup", "embedding lookup int8, tied projection float", {}};
  variants[0].spec.add("embed");
  variants[1] = {"projection", "tied projection int8 (input and table), embedding lookup float", {}};
  variants[1].spec.add("project");
  variants[2] = {"both", "lookup and projection int8, attention scores' inputs int8", {}};
  variants[2].spec.add("embed").add("project").add_type("attention_scores");

  // The control: the float model trained on as the variants are, without quantizers.
  double control_ppl = 0;
  {
    const auto tc = std::chrono::steady_clock::now();
    auto control = xq::clone_model(model);
    const double rate = o.qat_steps ? train(control, data.train, o.qat_steps, o.batch, 2e-4f, o.seed + 1) : 0.0;
    control_ppl = perplexity(control, data.held_out);
    std::printf("float continued (control): perplexity after %zu more steps %.4f (%+.2f%% vs float); %.0f characters/s, "
                "%.0f s\n",
                o.qat_steps, control_ppl, 100.0 * (control_ppl / float_ppl - 1.0), rate * static_cast<double>(s.context),
                seconds_since(tc));
  }

  std::vector<double> ppl;
  for (const variant& v : variants) {
    const auto tv = std::chrono::steady_clock::now();
    // A copy of the float model (the tie rebound inside the copy), then its twin: the
    // twin trains the copy's weights, so every variant starts from the same float model.
    auto copy = xq::clone_model(model);
    xq::quantize_options qo;
    qo.spec = v.spec;
    auto qat = xq::quantize_model(copy, qo, {1, s.context});
    const double before = perplexity(qat, data.held_out);
    const double rate = o.qat_steps ? train(qat, data.train, o.qat_steps, o.batch, 2e-4f, o.seed + 1) : 0.0;
    const double after = perplexity(qat, data.held_out);
    ppl.push_back(after);
    const bool tied = lookup_table(qat) == qat.project.float_layer().kernel() && tie_holds(copy) &&
                      lookup_table(qat) == copy.embed.embeddings() && copy.embed.embeddings() != model.embed.embeddings();
    std::printf("qat %-10s (%s): quantizers on: lookup %s, projection %s; perplexity before fine-tuning %.4f, after "
                "%zu steps %.4f (%+.2f%% vs float, %+.2f%% vs the control); tie: one table for both uses %s; %.0f characters/s, %.0f s\n",
                v.name, v.what, qat.embed.weight_quantizer().enabled() ? "yes" : "no",
                qat.project.weight_quantizer().enabled() ? "yes" : "no", before, o.qat_steps, after,
                100.0 * (after / float_ppl - 1.0), 100.0 * (after / control_ppl - 1.0), tied ? "yes" : "NO", rate * static_cast<double>(s.context),
                seconds_since(tv));
    if (!tied) throw std::logic_error("the tie did not survive quantizing the " + std::string(v.name) + " variant");
  }

  std::printf("float model: tie holds (the table listed once among %zu trainable parameters): %s\n",
              xq::trainable_parameters(model).size(), tie_holds(model) ? "yes" : "NO");
  double worst = -1.0;  // the largest relative change, negative when every int8 model beats float
  std::printf("transformer_lm float_perplexity=%.4f float_continued_perplexity=%.4f", float_ppl, control_ppl);
  for (std::size_t i = 0; i < variants.size(); ++i) {
    std::printf(" %s_perplexity=%.4f", variants[i].name, ppl[i]);
    worst = std::max(worst, ppl[i] / float_ppl - 1.0);
  }
  std::printf(" worst_int8_vs_float=%+.2f%% seconds=%.0f\n", 100.0 * worst, seconds_since(t0));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "transformer_lm: %s\n", e.what());
  return 1;
}
