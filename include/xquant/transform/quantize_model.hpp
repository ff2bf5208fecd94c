#pragma once
/// \file quantize_model.hpp
/// `quantize_model`: a float model in, its quantized twin out (NVIDIA's
/// `quantize_model(model, quantization_mode, quantization_spec, custom_qdq_cases)`).
///
///  1. The twin is built by the trait (`quantize_layer`): same structure, same paths,
///     the same parameter objects (training the twin trains the float model's weights).
///  2. If anything needs the graph (QDQ cases, batch-norm folding, per-call-site
///     ranges, a scheme's output fusion rule), the twin runs once on a sample input
///     under a `graph_trace`, in inference mode, recording nothing.
///  3. Cases add spec entries; every wrapper then gets its settings:
///       - `full`: layers the spec names follow their entry, the others the scheme's
///         defaults (layers off by default stay off);
///       - `partial`: only the layers the spec names (by path or type) are quantized.
///     A spec entry that names no layer is an error that lists the model's layers.
///  4. Batch norms fed by a conv2d/depthwise_conv2d/dense (whose output goes nowhere
///     else) are folded into it when `fold_batch_norm` is on.
///
/// \code
///   auto qat = xq::quantize_model(model, {}, xq::tensor::shape_type{1, 28, 28, 1});
/// \endcode

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/mode.hpp"
#include "../core/model.hpp"
#include "../core/tape.hpp"
#include "../wrappers/batch_norm_folding.hpp"
#include "../core/graph_trace.hpp"
#include "qdq_cases.hpp"
#include "quantization_scheme.hpp"
#include "quantization_spec.hpp"
#include "quantize.hpp"
#include "../wrappers/quantized_batch_norm.hpp"
#include "registry.hpp"
#include "../wrappers/weight_quantized.hpp"

namespace xq {

enum class quantization_mode {
  full,    ///< everything the scheme quantizes, with the spec's entries on top
  partial  ///< only what the spec names
};

struct quantize_options {
  quantization_mode mode = quantization_mode::full;
  quantization_spec spec{};
  std::vector<qdq_case> cases{};
  quantization_scheme scheme = schemes::nvidia();
  /// Fold each batch_norm into the conv/dense that feeds it (PyTorch's ConvBn QAT).
  bool fold_batch_norm = false;
  /// Folded batch norms use batch statistics for this many training calls, then their
  /// moving statistics, frozen (PyTorch's freeze_bn_stats); negative: never freeze.
  long freeze_batch_norm_after = -1;
  /// One range per call site for layers called more than once (default: one shared range).
  bool per_call_site_ranges = false;
};

/// Whether `T` is a quantized wrapper (has `configure(wrapper_settings)`).
template <class T, class = void>
struct is_quantize_wrapper : std::false_type {};
template <class T>
struct is_quantize_wrapper<T, std::void_t<decltype(std::declval<T&>().configure(std::declval<const wrapper_settings&>()))>>
    : std::true_type {};
template <class T>
inline constexpr bool is_quantize_wrapper_v = is_quantize_wrapper<T>::value;

/// Calls `f(quantizer)` for every fake_quantizer of a quantized model.
template <class Model, class F>
void for_each_quantizer(Model& model, F&& f) {
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (is_quantize_wrapper_v<L>) l.for_each_quantizer(f);
  });
}

/// Re-aligns per-call-site quantizers after a pass that stopped half-way.
template <class Model>
void reset_call_sites(Model& model) {
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (is_quantize_wrapper_v<L>) l.reset_call_sites();
  });
}

namespace detail {

template <class T, class = void>
struct has_fold : std::false_type {};
template <class T>
struct has_fold<T, std::void_t<decltype(std::declval<T&>().fold(std::shared_ptr<batch_norm_fold>()))>>
    : std::true_type {};

template <class T, class = void>
struct has_weight_quantizer : std::false_type {};
template <class T>
struct has_weight_quantizer<T, std::void_t<decltype(std::declval<T&>().weight_quantizer())>> : std::true_type {};

/// What the passes need of one wrapper, type-erased (valid while the model is not moved).
struct wrapper_handle {
  std::string path, type;
  bool has_weight = false;
  std::function<void(const wrapper_settings&)> configure;
  std::function<void(std::size_t)> set_call_sites;
  std::function<void(std::shared_ptr<batch_norm_fold>)> fold;  // weighted layers and batch norms
  std::function<std::shared_ptr<batch_norm_fold>()> make_fold;  // batch norms
};

template <class Model>
std::vector<wrapper_handle> wrapper_handles(Model& model) {
  std::vector<wrapper_handle> out;
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (is_quantize_wrapper_v<L>) {
      wrapper_handle h;
      h.path = l.path();
      h.type = L::layer_type();
      h.configure = [&l](const wrapper_settings& s) { l.configure(s); };
      h.set_call_sites = [&l](std::size_t n) { l.set_call_sites(n); };
      if constexpr (has_fold<L>::value) h.fold = [&l](std::shared_ptr<batch_norm_fold> f) { l.fold(std::move(f)); };
      if constexpr (std::is_same_v<L, quantized_batch_norm>) {
        h.make_fold = [&l]() {
          const batch_norm& bn = l.float_layer();
          auto f = std::make_shared<batch_norm_fold>();
          f->gamma = bn.gamma();
          f->moving_variance = bn.moving_variance();
          f->epsilon = bn.epsilon();
          return f;
        };
      }
      h.has_weight = has_weight_quantizer<L>::value;
      out.push_back(std::move(h));
    }
  });
  return out;
}

inline std::string layer_list(const std::vector<std::string>& paths) {
  std::string s;
  for (const auto& p : paths) s += (s.empty() ? "" : ", ") + p;
  return s;
}

inline wrapper_settings settings_for(const wrapper_handle& w, const quantize_options& o,
                                     const quantization_spec& spec) {
  wrapper_settings s;
  s.input = o.scheme.input;
  s.weight = o.scheme.weight;
  s.output = o.scheme.output;
  const auto d = o.scheme.layers.find(w.type);
  const layer_defaults* defaults = d == o.scheme.layers.end() ? nullptr : &d->second;
  if (defaults) {
    s.weight.per_channel = defaults->per_channel_weight;
    if (defaults->weight_channel_axis) s.weight.channel_axis = *defaults->weight_channel_axis;
  }
  const quantization_spec::entry* e = spec.find(w.path, w.type);
  if (e) {
    s.quantize_input = e->what.quantize_input;
    s.quantize_weight = w.has_weight && e->what.quantize_weight;
    s.quantize_output = e->what.quantize_output.value_or(defaults && defaults->quantize_output);
    s.input_indices = e->what.quantization_index;
    if (e->what.num_bits) s.input.num_bits = s.weight.num_bits = s.output.num_bits = *e->what.num_bits;
    if (e->what.per_channel) s.weight.per_channel = *e->what.per_channel;
  } else if (o.mode == quantization_mode::full && defaults && defaults->enabled_by_default) {
    s.quantize_input = defaults->quantize_input;
    s.quantize_weight = w.has_weight && defaults->quantize_weight;
    s.quantize_output = defaults->quantize_output;
  }
  s.per_call_site = o.per_call_site_ranges;
  return s;
}

inline bool needs_trace(const quantize_options& o) {
  return !o.cases.empty() || o.fold_batch_norm || o.per_call_site_ranges || o.scheme.skip_output_before_fused_consumer;
}

/// Batch norms to fold: (weighted wrapper path, batch norm path) pairs where every call
/// of the batch norm takes the output of that layer and nothing else consumes it.
inline std::vector<std::pair<std::string, std::string>> fold_pairs(const graph_trace& g,
                                                                   const std::vector<wrapper_handle>& handles) {
  std::map<std::string, const wrapper_handle*> by_path;
  for (const auto& h : handles) by_path[h.path] = &h;
  std::map<std::string, std::set<std::string>> producers_of_bn, consumers_of_layer;
  std::set<std::string> rejected;
  for (const auto& call : g.calls()) {
    if (call.type != "batch_norm") continue;
    const traced_call* p = call.inputs.size() == 1 ? g.producer(call.inputs[0]) : nullptr;
    const auto h = p ? by_path.find(p->path) : by_path.end();
    if (!p || h == by_path.end() || !h->second->has_weight || !h->second->fold ||
        g.consumers(p->output).size() != 1) {
      rejected.insert(call.path);
      continue;
    }
    producers_of_bn[call.path].insert(p->path);
  }
  for (const auto& call : g.calls())
    for (const auto* in : call.inputs)
      if (const traced_call* p = g.producer(in)) consumers_of_layer[p->path].insert(call.path);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& [bn, producers] : producers_of_bn) {
    if (rejected.count(bn) || producers.size() != 1) continue;
    const std::string& conv = *producers.begin();
    if (consumers_of_layer[conv].size() != 1) continue;  // every call of the conv feeds this bn
    pairs.emplace_back(conv, bn);
  }
  return pairs;
}

template <class Twin, class SampleCall>
void configure_twin(Twin& twin, const quantize_options& o, SampleCall&& sample_call, bool have_sample) {
  set_paths(twin);
  std::vector<wrapper_handle> handles = wrapper_handles(twin);
  std::unique_ptr<graph_trace> trace;
  if (have_sample) {
    trace = std::make_unique<graph_trace>();
    {
      const no_grad nothing_recorded;
      const training_mode inference(false);
      sample_call(twin);
    }
    set_paths(twin);  // the pass built lazy layers: name their parameters
  } else if (!o.cases.empty() || o.fold_batch_norm || o.per_call_site_ranges) {
    throw argument_error("quantize_model",
                         "a sample input (input shape or sample call) to trace the graph, which QDQ cases, "
                         "batch-norm folding and per-call-site ranges need",
                         "none");
  }
  quantization_spec spec = o.spec;
  if (trace) {
    quantization_spec extra;
    for (const auto& c : o.cases) c(*trace, o.spec, extra);
    spec.append(extra);
  }
  if (o.mode == quantization_mode::partial && spec.empty())
    throw argument_error("quantize_model", "a quantization_spec naming the layers to quantize in partial mode",
                         "an empty spec");
  // Every named entry must name a layer.
  std::vector<std::string> paths;
  for_each_layer(twin, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (detail::has_set_path<L>::value) paths.push_back(l.path());
  });
  for (const auto& e : o.spec.entries()) {
    if (e.by_type) continue;
    if (std::find(paths.begin(), paths.end(), e.key) == paths.end())
      throw argument_error("quantize_model: quantization_spec entry \"" + e.key + "\"",
                           "the path of a layer of the model: " + layer_list(paths), "no layer with that path");
  }
  for (const auto& h : handles) {
    wrapper_settings s = settings_for(h, o, spec);
    h.configure(s);
  }
  if (!trace) return;
  if (o.scheme.skip_output_before_fused_consumer) {
    std::map<std::string, bool> keep_output;  // false once a call's single consumer fuses
    for (const auto& call : trace->calls()) {
      const auto users = trace->consumers(call.output);
      const bool fused = users.size() == 1 &&
                         (users[0]->type == "batch_norm" || detail::is_activation_type(users[0]->type));
      if (fused) keep_output[call.path] = false;
      else keep_output.emplace(call.path, true);
    }
    for (const auto& h : handles) {
      const auto k = keep_output.find(h.path);
      if (k == keep_output.end() || k->second) continue;
      wrapper_settings s = settings_for(h, o, spec);
      s.quantize_output = false;
      h.configure(s);
    }
  }
  if (o.per_call_site_ranges) {
    const auto counts = trace->call_counts();
    for (const auto& h : handles) {
      const auto n = counts.find(h.path);
      if (n != counts.end() && n->second > 1) h.set_call_sites(n->second);
    }
  }
  if (o.fold_batch_norm) {
    std::map<std::string, const wrapper_handle*> by_path;
    for (const auto& h : handles) by_path[h.path] = &h;
    for (const auto& [conv, bn] : fold_pairs(*trace, handles)) {
      const wrapper_handle& c = *by_path.at(conv);
      const wrapper_handle& b = *by_path.at(bn);
      std::shared_ptr<batch_norm_fold> link = b.make_fold();
      link->freeze_after = o.freeze_batch_norm_after;
      c.fold(link);
      b.fold(link);
    }
  }
  reset_call_sites(twin);
}

}  // namespace detail

/// The quantized twin of `model`, configured by `options`; `sample_call(twin)` runs one
/// forward pass for the passes that need the graph (any callable taking the twin).
template <class Model, class SampleCall,
          class = std::enable_if_t<std::is_invocable_v<SampleCall&, quantize_t<Model>&>>>
quantize_t<Model> quantize_model(const Model& model, const quantize_options& options, SampleCall&& sample_call) {
  quantize_t<Model> twin = quantize_layer(model);
  detail::configure_twin(twin, options, sample_call, true);
  return twin;
}

/// Same, tracing with a batch of zeros of `input_shape` (batch axis included).
template <class Model>
quantize_t<Model> quantize_model(const Model& model, const quantize_options& options,
                                 const tensor::shape_type& input_shape) {
  return quantize_model(model, options, [&](auto& twin) { (void)twin(var(xt::zeros<float>(input_shape))); });
}

/// Same, without a traced pass (no cases, folding or per-call-site ranges).
template <class Model>
quantize_t<Model> quantize_model(const Model& model, const quantize_options& options = {}) {
  quantize_t<Model> twin = quantize_layer(model);
  detail::configure_twin(twin, options, [](auto&) {}, false);
  return twin;
}

/// NVIDIA's signature: mode, spec and custom QDQ cases (the cases need `input_shape`).
template <class Model>
quantize_t<Model> quantize_model(const Model& model, quantization_mode mode, quantization_spec spec = {},
                                 std::vector<qdq_case> cases = {}, const tensor::shape_type& input_shape = {}) {
  quantize_options o;
  o.mode = mode;
  o.spec = std::move(spec);
  o.cases = std::move(cases);
  if (input_shape.empty()) {
    o.scheme.skip_output_before_fused_consumer = false;
    return quantize_model(model, o);
  }
  return quantize_model(model, o, input_shape);
}

}  // namespace xq
