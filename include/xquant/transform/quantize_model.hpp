#pragma once
/// \file quantize_model.hpp
/// `quantize_model`: a float model in, its quantized twin out (NVIDIA's
/// `quantize_model(model, quantization_mode, quantization_spec, custom_qdq_cases)`).
///
///  1. The twin is built by the trait (`quantize_layer`): same structure, same paths,
///     the same parameter objects (training the twin trains the float model's weights).
///  2. If anything needs the graph (QDQ cases, batch-norm folding, per-call-site
///     ranges, a scheme's output fusion rule), the twin runs once on a sample input
///     under a `graph_trace`, in inference mode, recording nothing. The pass also checks
///     that the forward code calls no layer the model does not reach through its
///     children (core/layer_call.hpp).
///  3. Cases add spec entries; every wrapper then gets its settings:
///       - `full`: layers the spec names (by path, by an enclosing composite's path, or by
///         type) follow their entry, the others the scheme's defaults — for a type the
///         scheme does not list, its `quantize<L>` specialization's default
///         (transform/quantize.hpp);
///       - `partial`: only the layers the spec names are quantized.
///     A spec entry whose path names nothing in the model, or whose type is neither in
///     the model nor known to xquant, is an error listing what there is.
///  4. Batch norms fed by a conv2d/depthwise_conv2d/dense (whose output goes nowhere
///     else) are folded into it when `fold_batch_norm` is on.
///  5. A function with a layer form (`xq::ops::relu`, `xq::ops::add`) called by forward
///     code is a node of the traced graph like its layer: NVIDIA's residual case sees a
///     conv -> bn -> ops::relu chain as it sees conv -> bn -> relu. Where the scheme or the
///     spec would put a quantizer on such a function (tfmot and PyTorch quantize a relu's
///     output), `quantize_model` refuses, naming the function and saying which layer to
///     use instead: a function has nowhere to keep a quantizer.
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
#include "../core/graph_trace.hpp"
#include "../core/layer_traits.hpp"
#include "../core/mode.hpp"
#include "../core/model.hpp"
#include "../core/tape.hpp"
#include "../quantizers/model_quantizers.hpp"
#include "../wrappers/batch_norm_folding.hpp"
#include "../wrappers/quantized_batch_norm.hpp"
#include "../wrappers/weight_quantized.hpp"
#include "qdq_cases.hpp"
#include "quantization_scheme.hpp"
#include "quantization_spec.hpp"
#include "quantize.hpp"
#include "registry.hpp"

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

/// Whether `T` is an NVIDIA-style wrapper that `quantize_model` configures (has
/// `configure(wrapper_settings)`).
template <class T, class = void>
struct is_quantize_wrapper : std::false_type {};
template <class T>
struct is_quantize_wrapper<T, std::void_t<decltype(std::declval<T&>().configure(std::declval<const wrapper_settings&>()))>>
    : std::true_type {};
template <class T>
inline constexpr bool is_quantize_wrapper_v = is_quantize_wrapper<T>::value;

/// Re-aligns per-call-site quantizers after a pass that stopped half-way.
template <class Model>
void reset_call_sites(Model& model) {
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (is_quantize_wrapper_v<L>) l.reset_call_sites();
  });
}

namespace detail {

/// What the passes need of one wrapper, type-erased (valid while the model is not moved).
struct wrapper_handle {
  std::string path, type;
  bool has_weight = false;
  bool on_by_default = false;  ///< `quantized_by_default` of the float layer's type
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
      using F = typename L::float_layer_type;
      wrapper_handle h;
      h.path = l.path();
      h.type = L::layer_type();
      h.has_weight = is_weighted_layer_v<F>;
      h.on_by_default = quantized_by_default_v<F>;
      h.configure = [&l](const wrapper_settings& s) { l.configure(s); };
      h.set_call_sites = [&l](std::size_t n) { l.set_call_sites(n); };
      if constexpr (is_weighted_layer_v<F> || std::is_same_v<L, quantized_batch_norm>)
        h.fold = [&l](std::shared_ptr<batch_norm_fold> f) { l.fold(std::move(f)); };
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
      out.push_back(std::move(h));
    }
  });
  return out;
}

inline std::string layer_list(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& p : items) s += (s.empty() ? "" : ", ") + p;
  return s;
}

/// The scheme's entry for a layer type, or its placement for a type it does not list.
struct scheme_placement {
  const layer_defaults* defaults;
  bool on;  ///< quantized in full mode without a spec entry
};
inline scheme_placement placement_for(const quantization_scheme& scheme, const std::string& type, bool has_weight,
                                      bool on_by_default) {
  const auto d = scheme.layers.find(type);
  if (d != scheme.layers.end()) return {&d->second, d->second.enabled_by_default};
  return {has_weight ? &scheme.unlisted_weighted : &scheme.unlisted_weightless, on_by_default};
}

inline wrapper_settings settings_for(const wrapper_handle& w, const quantize_options& o,
                                     const quantization_spec& spec) {
  wrapper_settings s;
  s.input = o.scheme.input;
  s.weight = o.scheme.weight;
  s.output = o.scheme.output;
  const scheme_placement p = placement_for(o.scheme, w.type, w.has_weight, w.on_by_default);
  s.weight.per_channel = p.defaults->per_channel_weight;
  s.weight_channel_axis = p.defaults->weight_channel_axis;
  const quantization_spec::entry* e = spec.find(w.path, w.type);
  if (e) {
    s.quantize_input = e->what.quantize_input;
    s.quantize_weight = w.has_weight && e->what.quantize_weight;
    s.quantize_output = e->what.quantize_output.value_or(p.defaults->quantize_output);
    s.input_indices = e->what.quantization_index;
    if (e->what.num_bits) s.input.num_bits = s.weight.num_bits = s.output.num_bits = *e->what.num_bits;
    if (e->what.per_channel) s.weight.per_channel = *e->what.per_channel;
  } else if (o.mode == quantization_mode::full && p.on) {
    s.quantize_input = p.defaults->quantize_input;
    s.quantize_weight = w.has_weight && p.defaults->quantize_weight;
    s.quantize_output = p.defaults->quantize_output;
  }
  s.per_call_site = o.per_call_site_ranges;
  return s;
}

inline bool needs_trace(const quantize_options& o) {
  return !o.cases.empty() || o.fold_batch_norm || o.per_call_site_ranges || o.scheme.skip_output_before_fused_consumer;
}

/// Every user spec entry must name something: a path of the model (a layer, or a
/// composite enclosing some), or a layer type the model has or xquant knows.
inline void check_spec(const quantization_spec& spec, const std::vector<std::string>& paths,
                       const std::vector<wrapper_handle>& handles, const quantization_scheme& scheme) {
  std::set<std::string> types(builtin_layer_types().begin(), builtin_layer_types().end());
  for (const auto& h : handles) types.insert(h.type);
  for (const auto& [t, d] : scheme.layers) types.insert(t);
  for (const auto& e : spec.entries()) {
    if (e.by_type) {
      if (types.count(e.key) == 0)
        throw argument_error("quantize_model: quantization_spec type entry \"" + e.key + "\"",
                             "the type name of a layer of the model or of a layer xquant knows: " +
                                 layer_list(std::vector<std::string>(types.begin(), types.end())),
                             "a type name no layer has");
      continue;
    }
    const bool found = std::any_of(paths.begin(), paths.end(), [&](const std::string& p) {
      return p == e.key || quantization_spec::encloses(e.key, p);
    });
    if (!found)
      throw argument_error("quantize_model: quantization_spec entry \"" + e.key + "\"",
                           "the path of a layer of the model, or of a composite holding some: " + layer_list(paths),
                           "no layer with that path");
  }
}

/// The layer a function should be replaced with, for the error message.
inline std::string layer_for_function(const std::string& type) { return "xq::" + type; }

/// Refuses a traced function call (xq::ops::relu(x)) on which the scheme or the spec
/// would place a quantizer: it has nowhere to keep one (see the file comment).
inline void check_function_calls(const graph_trace& g, const quantize_options& o, const quantization_spec& spec) {
  for (const auto& call : g.calls()) {
    if (!call.function) continue;
    const quantization_spec::entry* by_type = spec.find("", call.type);
    bool wanted = by_type && (by_type->what.quantize_input || by_type->what.quantize_output.value_or(false));
    std::string why = by_type ? "the spec names its type \"" + call.type + "\"" : "";
    if (!wanted && o.mode == quantization_mode::full) {
      const auto d = o.scheme.layers.find(call.type);
      if (d != o.scheme.layers.end() && d->second.enabled_by_default &&
          (d->second.quantize_input || d->second.quantize_output)) {
        wanted = true;
        why = "the " + o.scheme.name + " scheme quantizes the " + (d->second.quantize_output ? "output" : "input") +
              " of a " + call.type;
      }
    }
    if (!wanted) continue;
    std::string from = "the model's input";
    if (!call.inputs.empty())
      if (const traced_call* p = g.producer(call.inputs[0])) from = p->describe();
    throw argument_error(
        "quantize_model: " + call.describe() + " applied to the output of " + from,
        "a layer where a quantizer goes (" + why + "): call an " + layer_for_function(call.type) +
            " member listed in XQ_CHILDREN instead of xq::ops::" + call.type,
        "a function, which has nowhere to keep a quantizer");
  }
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
    if (call.role != layer_role::norm || call.function || !by_path.count(call.path)) continue;
    const traced_call* p = call.inputs.size() == 1 ? g.producer(call.inputs[0]) : nullptr;
    const auto h = p && !p->function ? by_path.find(p->path) : by_path.end();
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
    if (rejected.count(bn) || producers.size() != 1 || !by_path.at(bn)->make_fold) continue;
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
      checked_calls(twin, [&] {
        sample_call(twin);
        return 0;
      });
    }
    set_paths(twin);  // the pass built lazy layers: name their parameters
  } else if (!o.cases.empty() || o.fold_batch_norm || o.per_call_site_ranges) {
    throw argument_error("quantize_model",
                         "a sample input (input shape or sample call) to trace the graph, which QDQ cases, "
                         "batch-norm folding and per-call-site ranges need",
                         "none");
  }
  std::vector<std::string> paths;
  for_each_layer(twin, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (has_set_path_v<L> && !is_quantizer_v<L>) paths.push_back(l.path());
  });
  check_spec(o.spec, paths, handles, o.scheme);
  quantization_spec spec = o.spec;
  if (trace) {
    quantization_spec extra;
    for (const auto& c : o.cases) c(*trace, o.spec, extra);
    spec.append(extra);
    check_function_calls(*trace, o, spec);
  }
  if (o.mode == quantization_mode::partial && spec.empty())
    throw argument_error("quantize_model", "a quantization_spec naming the layers to quantize in partial mode",
                         "an empty spec");
  for (const auto& h : handles) h.configure(settings_for(h, o, spec));
  if (!trace) return;
  if (o.scheme.skip_output_before_fused_consumer) {
    std::map<std::string, bool> keep_output;  // false once a call's single consumer fuses
    for (const auto& call : trace->calls()) {
      if (call.function) continue;
      const auto users = trace->consumers(call.output);
      const bool fused =
          users.size() == 1 && (users[0]->role == layer_role::norm || users[0]->role == layer_role::activation);
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
