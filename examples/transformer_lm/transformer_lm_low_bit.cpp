// Low-bit QAT of the tied-embedding transformer LM (issue 36): the character model of
// transformer_lm.cpp (transformer.hpp; Debian's fortunes text, lm_data.hpp) trained in
// float once, then for each format of --formats —
//
//   8da4w             torchao's Int8DynamicActivationIntxWeightConfig(int4, PerGroup(32)):
//                     int8 per-token asymmetric dynamic inputs, int4 symmetric weight groups
//   int4_weight_only  torchao's Int4WeightOnlyConfig(group_size=32) (its QAT form
//                     Int4WeightFakeQuantizer): int4 groups with a float zero point, inputs float
//   nvfp4             torchao's NVFP4 recipe (two-level: E4M3 block scales of 16 values and a
//                     float32 tensor scale), weights and inputs
//   8da4w_range_learning  8da4w with the weight groups' scales learned (torchao's
//                     IntxFakeQuantizeConfig(range_learning=True): the scheme's scales to
//                     start, then trained with the weights; xq::schemes::with_range_learning)
//   (also: intx_weight_only, nvfp4_weight_only, mxfp4, mxfp4_weight_only, fp8)
//
//   1. post-training quantization: `xq::quantize_model` on a copy of the float model with
//      the format's scheme (transform/low_bit_schemes.hpp), evaluated as it is: these
//      formats' scales follow each tensor (dynamic), so there is nothing to calibrate;
//   2. quantization-aware training: that twin fine-tuned --qat-steps steps (the rate and
//      schedule of transformer_lm's int8 variants);
//   3. the share of the PTQ loss that QAT recovered, torchao's measure in perplexity:
//      (ppl_ptq - ppl_qat) / (ppl_ptq - ppl_float) ("PTQ lost nothing" where ppl_ptq <=
//      ppl_float);
//   4. deployment: the QAT twin lowered to the integer engine (`xq::deploy::lower`; weights
//      stored as the format stores them: packed 4-bit codes and block scales), its parity
//      with the simulation on held-out windows per quantized tensor (identical share, SQNR:
//      `report.table()`), the engine's perplexity and its weight bytes against float.
//      torchao's int4 weight-only kernel, real = (q - 8)·scale + a float zero point per
//      group (two roundings), is stored as its 4-bit codes, the group scales and the zero
//      points, and decoded once; its inputs are float. A format that does not lower prints
//      the engine's reason (no engine figures for it) and the run goes on;
//   5. with --onnxruntime PYTHON: the twin exported to ONNX (deploy/export_onnx.hpp: the
//      kernels as blocked DequantizeLinear of their codes, the dynamic inputs as the
//      operators that compute them) and run by onnxruntime (tools/onnx_check.py) on the
//      engine's windows: its perplexity, and how far its logits are from the simulation's.
//
// --recipes qat,qad,lora recovers the PTQ loss three ways from the same PTQ twin (issue 38):
// qat as above; qad on a frozen float teacher's outputs (xq::distillation_loss, KL of the
// softened distributions at --distill-temperature: Model Optimizer's QAD); lora with LoRA
// adapters of --lora-rank beside the frozen dense kernels (xq::add_lora_adapters; the tied
// table keeps its one parameter), trained alone at 10x QAT's rate and merged before the
// engine and ONNX see the twin. Each prints its training throughput and the peak tensor
// memory of its training (xq::tensor_memory; the caching allocator's count).
//
// As in transformer_lm, a float copy fine-tuned the same steps at the same rate is the
// control, so that QAT compares also with a model trained as long.
//
// What gets the format. The scheme puts it on the dense layers — every attention
// projection (q, k, v, output) and both MLP layers of each block: torchao's configs apply
// to `nn.Linear`. The tied table has two uses, and a torchao user quantizing a tied
// GPT-style model gives them what torchao gives their module types:
//   - the output projection (logits = h · Eᵀ, spec type "tied_projection") is the model's
//     lm_head, a linear layer: it gets the format, inputs and weights, as every dense;
//   - the lookups (spec type "embedding": the token table and the learned positions, as
//     `filter_fn=isinstance(m, nn.Embedding)` selects both) get torchao's embedding config,
//     IntxWeightOnlyConfig(int4, PerGroup(32)) (its QAT README pairs it with 8da4w; a row's
//     groups run along d_model, the projection's reduction axis too); for every format.
// NVIDIA's placement, which xquant's schemes start from, would leave both uses float unless
// a spec names them: here the spec names them (--lookup float leaves the lookups float).
// The attention's scores and softmax, the layer norms, GELU and the residual adds stay
// float, as they do for int8. Blocks of 32 (not Int4WeightOnlyConfig's default 128): the
// model's width is 64, and a layer whose reduction axis the group does not divide keeps
// the int8 grid (--group to change it; the layer table printed per format says which grid
// each quantizer runs).
//
//   transformer_lm_low_bit            full mode (see below for its time on the 2-core machine)
//   transformer_lm_low_bit --quick    a short run (300 float + 60 steps per copy, 500 held-out windows)
//   options: --steps N (float)  --qat-steps N (per format and the control)  --batch N
//            --eval-windows N  --engine-windows N (held-out windows the engine runs)
//            --formats 8da4w,int4_weight_only,nvfp4  --group N  --lookup int4|float
//            --low-bit-product integer|simulated (the engine's product of a low-bit dense layer:
//            the block-scaled integer product, the default, whose float sum of the blocks can
//            differ from the simulation's in its last bits — the parity table shows where and
//            by how much (SQNR) — or the simulation's float product of the decoded kernel,
//            identical to the simulation)
//            --text DIR_OR_FILE  --seed N
//            --onnxruntime PYTHON (a Python with onnx and onnxruntime)  --export-dir DIR
//            --recipes qat,qad,lora  --lora-rank N  --distill-temperature T
//
// It ends with one line per format (perplexities; recovered as a fraction, 1.00 = all of
// the PTQ loss; qat_vs_control the QAT model against the float control):
// `format=<f> float=<p> control=<c> ptq=<b> qat=<q> recovered=<r> qat_vs_control=<+d%>
//  engine=<e> engine_min_identical=<share> engine_sqnr_db=<s> engine_weight_bytes=<n>
//  float_weight_bytes=<m> onnxruntime=<o> onnxruntime_sqnr_db=<d>` (onnxruntime=not_run
//  without --onnxruntime) — `engine=none (does not deploy: see above)` where the format
// does not lower (the reason printed above it), `qat=failed` where fine-tuning threw (the
// reason above); with a recipe other than qat, `recipe=<r> trained=<q>` in place of `qat=<q>`;
// each line ends `characters_per_second=<c> train_peak_mib=<m>` — then
// `transformer_lm_low_bit seconds=<t>`.
//
// recovered can exceed 1: the float model is not trained to convergence, and the
// fine-tuning's extra steps help any copy (the control shows by how much); compare the QAT
// figure with the control's too.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/memory.hpp>
#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/deploy/export_onnx.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/io/npy.hpp>
#include <xquant/quantizers/low_bit_format.hpp>
#include <xquant/summary/print_summary.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/train/distillation.hpp>
#include <xquant/transform/lora.hpp>
#include <xquant/transform/low_bit_schemes.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../common/command_line.hpp"
#include "../common/print_quantizers.hpp"
#include "lm_data.hpp"
#include "transformer.hpp"

namespace {

struct options {
  std::size_t steps = 3000, qat_steps = 600, batch = 32, eval_windows = 4000, engine_windows = 500;
  std::string formats = "8da4w,int4_weight_only,nvfp4";
  int group = 32;
  std::string lookup = "int4";
  std::string product = "integer";  // the engine's low-bit product (xq::deploy::low_bit_product)
  std::string text = "/usr/share/games/fortunes";
  std::string onnx_python;  // a Python with onnx and onnxruntime: run the exported file there
  std::string export_dir = "transformer_lm_low_bit_export";
  unsigned seed = 1;
  std::vector<std::string> recipes{"qat"};
  std::size_t lora_rank = 8;
  float distill_temperature = 2.0f;
};

options parse(int argc, char** argv) {
  options o;
  examples::for_each_option(argc, argv, [&](const std::string& a, auto next) {
    if (a == "--quick") {
      o.steps = 300;
      o.qat_steps = 60;
      o.eval_windows = 500;
      o.engine_windows = 100;
    } else if (a == "--steps") o.steps = std::stoul(next());
    else if (a == "--qat-steps") o.qat_steps = std::stoul(next());
    else if (a == "--batch") o.batch = std::stoul(next());
    else if (a == "--eval-windows") o.eval_windows = std::stoul(next());
    else if (a == "--engine-windows") o.engine_windows = std::stoul(next());
    else if (a == "--formats") o.formats = next();
    else if (a == "--group") o.group = std::stoi(next());
    else if (a == "--lookup") o.lookup = next();
    else if (a == "--low-bit-product") o.product = next();
    else if (a == "--text") o.text = next();
    else if (a == "--seed") o.seed = static_cast<unsigned>(std::stoul(next()));
    else if (a == "--onnxruntime") o.onnx_python = next();
    else if (a == "--export-dir") o.export_dir = next();
    else if (a == "--recipes") {
      o.recipes.clear();
      std::stringstream list(next());
      for (std::string r; std::getline(list, r, ',');) {
        if (r != "qat" && r != "qad" && r != "lora") throw std::invalid_argument("--recipes: expected qat, qad or lora, given " + r);
        o.recipes.push_back(r);
      }
    } else if (a == "--lora-rank") o.lora_rank = std::stoul(next());
    else if (a == "--distill-temperature") o.distill_temperature = std::stof(next());
    else return false;
    return true;
  }, " (see the comment at the top of transformer_lm_low_bit.cpp)");
  if (o.steps == 0 || o.batch == 0 || o.eval_windows == 0)
    throw std::invalid_argument("--steps, --batch and --eval-windows must be positive");
  if (o.group <= 0) throw std::invalid_argument("--group must be positive");
  if (o.product != "integer" && o.product != "simulated")
    throw std::invalid_argument("--low-bit-product: expected integer or simulated, given " + o.product);
  if (o.lookup != "int4" && o.lookup != "float")
    throw std::invalid_argument("--lookup: expected int4 or float, given " + o.lookup);
  return o;
}

struct format_choice {
  std::string name;
  xq::quantization_scheme scheme;
  bool quantizes_inputs;  // the dense layers' (and the tied projection's) inputs
};

format_choice choose(const std::string& name, int group) {
  if (name == "8da4w") return {name, xq::schemes::torchao_8da4w(group), true};
  if (name == "int4_weight_only") return {name, xq::schemes::torchao_int4_weight_only(group), false};
  if (name == "intx_weight_only") return {name, xq::schemes::torchao_intx_weight_only(4, group), false};
  if (name == "nvfp4") return {name, xq::schemes::nvfp4(), true};
  if (name == "nvfp4_weight_only") return {name, xq::schemes::nvfp4_weight_only(), false};
  if (name == "mxfp4") return {name, xq::schemes::mx(), true};
  if (name == "mxfp4_weight_only") return {name, xq::schemes::mx_weight_only(), false};
  if (name == "fp8") return {name, xq::schemes::torchao_float8_dynamic(), true};
  if (name == "8da4w_range_learning")
    return {name, xq::schemes::with_range_learning(xq::schemes::torchao_8da4w(group)), true};
  throw std::invalid_argument("--formats: expected 8da4w, int4_weight_only, intx_weight_only, nvfp4, "
                              "nvfp4_weight_only, mxfp4, mxfp4_weight_only, fp8 or 8da4w_range_learning, given " + name);
}

/// The tied table's two uses (the file comment): the projection as a dense layer (the
/// format), the lookups with torchao's embedding config (int4 symmetric groups, weight only).
xq::quantization_spec tied_table_spec(const format_choice& f, const options& o) {
  xq::quantization_spec spec;
  xq::layer_quantization projection;
  projection.quantize_input = f.quantizes_inputs;  // the lm_head's input as any dense's
  spec.add_type("tied_projection", projection);
  if (o.lookup == "int4") {
    xq::layer_quantization lookup;
    lookup.quantize_input = false;  // ids
    xq::low_bit::intx_spec w;
    w.scheme = xq::low_bit::intx_scheme::intx_symmetric;
    w.bits = 4;
    w.group_size = o.group;
    lookup.weight_format = xq::low_bit_format(w);
    spec.add_type("embedding", lookup);
  }
  return spec;
}

/// The summed cross entropy (nats) of logits (b, T, V) against the targets of windows
/// `first`.. of `d`, and how many characters it covers.
void add_cross_entropy(const xq::tensor& logits, const xq::dataset& d, std::size_t first, double& total,
                       std::size_t& count) {
  const std::size_t b = logits.shape()[0], t = logits.shape()[1], v = logits.shape()[2];
  for (std::size_t i = 0; i < b; ++i)
    for (std::size_t k = 0; k < t; ++k) {
      const float* z = logits.data() + (i * t + k) * v;
      const float top = *std::max_element(z, z + v);
      double sum = 0;
      for (std::size_t c = 0; c < v; ++c) sum += std::exp(double(z[c]) - top);
      const auto target = static_cast<std::size_t>(d.targets(first + i, k));
      total += std::log(sum) + top - double(z[target]);
      ++count;
    }
}

/// Perplexity of the engine's logits (N, T, V) on the first `n` windows of `d`.
double engine_perplexity(const xq::deploy::integer_model& engine, const xq::dataset& d, std::size_t n) {
  double total = 0;
  std::size_t count = 0;
  const std::size_t batch = 100;
  for (std::size_t at = 0; at < n; at += batch) {
    const std::size_t b = std::min(batch, n - at);
    std::vector<std::size_t> rows(b);
    for (std::size_t i = 0; i < b; ++i) rows[i] = at + i;
    add_cross_entropy(engine.run(xq::gather_rows(d.inputs, rows.data(), b)), d, at, total, count);
  }
  return std::exp(total / double(count));
}

/// SQNR (dB) of `got` against `want`: 10 log10(Σ want² / Σ (got − want)²), ∞ where equal.
double sqnr_db(const xq::tensor& want, const xq::tensor& got) {
  double signal = 0, noise = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double w = want.data()[i], e = double(got.data()[i]) - w;
    signal += w * w;
    noise += e * e;
  }
  return noise == 0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(signal / noise);
}

/// onnxruntime's figures for one format: its perplexity on the windows, and its logits'
/// SQNR against the simulation's (NaN: not run).
struct onnx_figures {
  double perplexity = std::nan(""), sqnr_db = std::nan("");
};

/// The twin exported to ONNX under `o.export_dir` as `name`.onnx, with the windows and the
/// simulation's logits beside it; then tools/onnx_check.py (ONNX's checker, onnxruntime's
/// optimized path) runs it and saves its logits, scored here. A failure is printed, and the
/// figures stay NaN.
template <class Twin>
onnx_figures run_in_onnxruntime(Twin& twin, const xq::dataset& windows, const options& o, const std::string& name,
                                std::size_t context) {
  onnx_figures f;
  if (o.onnx_python.empty()) return f;
  std::filesystem::create_directories(o.export_dir);
  const std::string base = o.export_dir + "/" + name;
  // Each use of the tied table has its own format (the lookups' groups, the projection's):
  // one initializer per use.
  xq::deploy::export_options eo;
  eo.share_reused_weights = false;
  xq::deploy::export_onnx(twin, {context}, base + ".onnx", eo);
  // One batch of every window, as onnxruntime runs the file (NVFP4's tensor scale spans the batch).
  const xq::tensor simulated = xq::predict(twin, windows.inputs, windows.size());
  xq::io::save_npy(base + ".input.npy", windows.inputs);
  xq::io::save_npy(base + ".simulated.npy", simulated);
  const std::string cmd = "'" + o.onnx_python + "' '" XQ_ONNX_CHECK "' '" + base + ".onnx' --input input='" + base +
                          ".input.npy' --expected output='" + base + ".simulated.npy' --min-share 0 --paths optimized" +
                          " --save-outputs '" + o.export_dir + "'";
  std::printf("%s onnx: wrote %s.onnx; %s\n", name.c_str(), base.c_str(), cmd.c_str());
  std::fflush(stdout);
  if (std::system(cmd.c_str()) != 0) {
    std::printf("%s onnx: the onnxruntime check failed (see above)\n", name.c_str());
    return f;
  }
  const xq::tensor logits = xq::io::load_npy(o.export_dir + "/optimized.output.npy");
  if (logits.shape() != simulated.shape()) {
    std::printf("%s onnx: onnxruntime's logits have another shape than the simulation's\n", name.c_str());
    return f;
  }
  double total = 0;
  std::size_t count = 0;
  add_cross_entropy(logits, windows, 0, total, count);
  f.perplexity = std::exp(total / double(count));
  f.sqnr_db = sqnr_db(simulated, logits);
  return f;
}

/// Fine-tunes the twin by `recipe` (the file comment); returns the windows per second. A
/// LoRA twin's adapters are merged before it returns.
template <class Twin, class Model>
double fine_tune(const std::string& recipe, Twin& twin, Model& float_model, const xq::dataset& train,
                 const options& o) {
  if (recipe == "qad") {
    auto teacher = xq::clone_model(float_model);  // frozen: nothing steps it
    xq::distillation_options d;
    d.temperature = o.distill_temperature;
    return lm::train_with(twin, xq::trainable_parameters(twin),
                          xq::distillation_loss(teacher, xq::sparse_softmax_cross_entropy, d), train, o.qat_steps,
                          o.batch, 2e-4f, o.seed + 1);
  }
  if (recipe == "lora") {
    xq::lora_options lo;
    lo.rank = o.lora_rank;
    lo.alpha = 2.0f * float(o.lora_rank);
    const std::size_t adapters = xq::add_lora_adapters(twin, lo);
    std::size_t values = 0;
    for (const auto& p : xq::lora_parameters(twin)) values += p->value.size();
    std::printf("lora: %zu adapters of rank %zu, %zu trained values\n", adapters, lo.rank, values);
    const double rate = lm::train_with(twin, xq::lora_parameters(twin), xq::sparse_softmax_cross_entropy, train,
                                       o.qat_steps, o.batch, 2e-3f, o.seed + 1);
    xq::merge_lora_adapters(twin);  // one kernel per layer again: what deployment reads
    return rate;
  }
  return lm::train(twin, train, o.qat_steps, o.batch, 2e-4f, o.seed + 1);
}

template <class Twin>
const xq::parameter_ptr& lookup_table(const Twin& q) { return q.embed.float_layer().embeddings(); }

}  // namespace

int main(int argc, char** argv) try {
  const options o = parse(argc, argv);
  std::vector<format_choice> choices;
  {
    std::stringstream list(o.formats);
    for (std::string f; std::getline(list, f, ',');) choices.push_back(choose(f, o.group));
  }
  const lm::corpus c = lm::encode(lm::read_text(o.text));
  lm::shape s;
  s.vocab = c.vocab;
  const lm::splits data = lm::make_windows(c, s.context, o.eval_windows);
  const std::size_t engine_windows = std::min(o.engine_windows, data.held_out.size());
  std::printf("transformer_lm_low_bit: %zu characters of text (%s), vocabulary %zu, %zu training windows of %zu, "
              "%zu held out (the engine runs the first %zu); %zu float steps, %zu per format and the control, "
              "batch %zu; lookups: %s\n",
              c.ids.size(), o.text.c_str(), c.vocab, data.train.size(), s.context, data.held_out.size(),
              engine_windows, o.steps, o.qat_steps, o.batch,
              o.lookup == "int4" ? "torchao's embedding config, int4 weight-only groups" : "float");

  xq::set_seed(o.seed);
  lm::transformer_lm<> model(s);
  xq::build(model, {1, s.context});
  xq::print_summary(xq::summarize(model, {1, s.context}), std::cout);

  const auto t0 = std::chrono::steady_clock::now();
  const double float_rate = lm::train(model, data.train, o.steps, o.batch, 2e-3f, o.seed);
  const double float_ppl = lm::perplexity(model, data.held_out);
  std::printf("float: held-out perplexity %.4f after %zu steps (%.0f characters/s training, %.0f s)\n", float_ppl,
              o.steps, float_rate * static_cast<double>(s.context), lm::seconds_since(t0));
  std::size_t float_bytes = 0;
  for (const auto& p : xq::trainable_parameters(model)) float_bytes += p->value.size() * 4;

  // The control: the float model trained on as the formats' twins are, without quantizers.
  double control_ppl = 0;
  {
    const auto tc = std::chrono::steady_clock::now();
    auto control = xq::clone_model(model);
    const double rate = o.qat_steps ? lm::train(control, data.train, o.qat_steps, o.batch, 2e-4f, o.seed + 1) : 0.0;
    control_ppl = lm::perplexity(control, data.held_out);
    std::printf("float continued (control): perplexity after %zu more steps %.4f (%+.2f%% vs float); %.0f "
                "characters/s, %.0f s\n",
                o.qat_steps, control_ppl, 100.0 * (control_ppl / float_ppl - 1.0),
                rate * static_cast<double>(s.context), lm::seconds_since(tc));
  }

  // The engine's windows (the first held-out ones), to score the simulation on them too.
  const xq::dataset engine_data = [&] {
    std::vector<std::size_t> rows(engine_windows);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
    return xq::dataset{xq::gather_rows(data.held_out.inputs, rows.data(), rows.size()),
                       xq::gather_rows(data.held_out.targets, rows.data(), rows.size())};
  }();
  const xq::tensor& engine_inputs = engine_data.inputs;

  std::vector<std::string> lines;
  for (const format_choice& f : choices)
  for (const std::string& recipe : o.recipes) {
    const std::string run = recipe == "qat" ? f.name : f.name + "_" + recipe;
    const auto tf = std::chrono::steady_clock::now();
    // A copy of the float model (the tie rebound inside the copy), then its twin: the
    // twin trains the copy's weights, so every format starts from the same float model.
    auto copy = xq::clone_model(model);
    xq::quantize_options qo;
    qo.scheme = f.scheme;
    qo.spec = tied_table_spec(f, o);
    auto twin = xq::quantize_model(copy, qo, {1, s.context});
    std::cout << run << ": scheme " << f.scheme.name << "; quantizers:\n";
    if (recipe == o.recipes.front()) examples::print_quantizers(twin);
    const double ptq = lm::perplexity(twin, data.held_out);
    std::printf("%s ptq: perplexity %.4f (%+.2f%% vs float)\n", f.name.c_str(), ptq, 100.0 * (ptq / float_ppl - 1.0));
    // A format whose fine-tuning fails (a non-finite gradient, say) is reported as failed,
    // with the reason, and the run goes on to the next.
    double rate = 0.0;
    std::string qat_failure;
    const std::size_t in_use = xq::tensor_memory().bytes_in_use;
    xq::reset_peak_tensor_memory();
    try {
      if (o.qat_steps) rate = fine_tune(recipe, twin, model, data.train, o);
    } catch (const std::exception& e) {
      qat_failure = e.what();
    }
    const double peak_mib = double(xq::tensor_memory().peak_bytes_in_use - in_use) / (1 << 20);  // peak >= in_use
    const double qat = qat_failure.empty() ? lm::perplexity(twin, data.held_out) : std::nan("");
    const double lost = ptq - float_ppl;
    const double recovered = lost > 0 ? (ptq - qat) / lost : 0.0;
    const bool tied = lookup_table(twin) == twin.project.float_layer().kernel() && lm::tie_holds(copy) &&
                      copy.embed.embeddings() != model.embed.embeddings();
    if (!qat_failure.empty()) {
      std::printf("%s qat: FAILED: %s; tie: one table for both uses %s (%.0f s)\n", run.c_str(),
                  qat_failure.c_str(), tied ? "yes" : "NO", lm::seconds_since(tf));
    } else {
      const std::string share =
          lost > 0 ? std::to_string(static_cast<int>(std::lround(100.0 * recovered))) + "% of the PTQ loss"
                   : std::string("nothing to recover (PTQ lost nothing)");
      std::printf("%s qat: perplexity after %zu steps %.4f (%+.2f%% vs float, %+.2f%% vs the control); recovered %s; "
                  "tie: one table for both uses %s; %.0f characters/s, %.0f s\n",
                  run.c_str(), o.qat_steps, qat, 100.0 * (qat / float_ppl - 1.0),
                  100.0 * (qat / control_ppl - 1.0), share.c_str(), tied ? "yes" : "NO",
                  rate * static_cast<double>(s.context), lm::seconds_since(tf));
    }
    if (!tied) throw std::logic_error("the tie did not survive quantizing the " + f.name + " twin");

    // Deployment: the engine, its parity with the simulation, its perplexity, its bytes.
    char engine_part[256];
    try {
      xq::deploy::lower_options lo;
      lo.low_bit = o.product == "simulated" ? xq::deploy::low_bit_product::simulated : xq::deploy::low_bit_product::integer;
      const auto engine = xq::deploy::lower(twin, {s.context}, lo);
      const auto report = xq::deploy::parity(twin, engine, engine_inputs, nullptr, 100);
      std::cout << engine.summary() << report.table();
      const double engine_ppl = engine_perplexity(engine, data.held_out, engine_windows);
      double min_share = 1.0, min_sqnr = std::numeric_limits<double>::infinity();
      for (const auto& row : report.rows) {
        min_share = std::min(min_share, row.share());
        min_sqnr = std::min(min_sqnr, row.sqnr_db());
      }
      const double simulated_ppl = lm::perplexity(twin, engine_data);
      std::printf("%s engine: perplexity %.4f on the first %zu held-out windows (the simulation: %.4f); %zu quantized "
                  "tensors, the lowest identical share %.4f, the lowest SQNR %.1f dB, output SQNR %.1f dB; %zu bytes "
                  "of weights (float model: %zu, %.2fx smaller) (%.0f s)\n",
                  run.c_str(), engine_ppl, engine_windows, simulated_ppl, report.rows.size(), min_share, min_sqnr,
                  report.output_sqnr_db(), engine.weight_bytes(), float_bytes,
                  double(float_bytes) / double(engine.weight_bytes()), lm::seconds_since(tf));
      std::snprintf(engine_part, sizeof engine_part,
                    "engine=%.4f engine_min_identical=%.4f engine_sqnr_db=%.1f engine_weight_bytes=%zu "
                    "float_weight_bytes=%zu",
                    engine_ppl, min_share, report.output_sqnr_db(), engine.weight_bytes(), float_bytes);
    } catch (const std::exception& e) {
      std::printf("%s engine: does not deploy: %s\n", run.c_str(), e.what());
      std::snprintf(engine_part, sizeof engine_part, "engine=none (does not deploy: see above) float_weight_bytes=%zu",
                    float_bytes);
    }
    char onnx_part[128] = "onnxruntime=not_run";
    if (!o.onnx_python.empty()) {
      try {
        const onnx_figures of = run_in_onnxruntime(twin, engine_data, o, run, s.context);
        std::printf("%s onnxruntime: perplexity %.4f on the first %zu held-out windows; logits' SQNR against the "
                    "simulation %.1f dB\n",
                    run.c_str(), of.perplexity, engine_windows, of.sqnr_db);
        std::snprintf(onnx_part, sizeof onnx_part, "onnxruntime=%.4f onnxruntime_sqnr_db=%.1f", of.perplexity,
                      of.sqnr_db);
      } catch (const std::exception& e) {
        std::printf("%s onnx: does not export: %s\n", run.c_str(), e.what());
        std::snprintf(onnx_part, sizeof onnx_part, "onnxruntime=none (does not export: see above)");
      }
    }
    char qat_part[128];
    if (!qat_failure.empty())
      std::snprintf(qat_part, sizeof qat_part, "qat=failed recovered=none (QAT failed: see above)");
    else
      std::snprintf(qat_part, sizeof qat_part, "%s%.4f recovered=%.2f%s qat_vs_control=%+.2f%%",
                    recipe == "qat" ? "qat=" : ("recipe=" + recipe + " trained=").c_str(), qat, recovered,
                    lost > 0 ? "" : " (PTQ lost nothing)", 100.0 * (qat / control_ppl - 1.0));
    char line[900];
    std::snprintf(line, sizeof line,
                  "format=%s float=%.4f control=%.4f ptq=%.4f %s %s %s characters_per_second=%.0f train_peak_mib=%.1f",
                  f.name.c_str(), float_ppl, control_ppl, ptq, qat_part, engine_part, onnx_part,
                  rate * static_cast<double>(s.context), peak_mib);
    lines.push_back(line);
  }
  for (const auto& l : lines) std::cout << l << "\n";
  std::printf("transformer_lm_low_bit seconds=%.0f\n", lm::seconds_since(t0));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "transformer_lm_low_bit: %s\n", e.what());
  return 1;
}
