#pragma once
/// \file quantize_model.ipp
/// quantize_model's code that does not depend on the model's type: spec checks,
/// placement, folding pairs (transform/quantize_model.hpp).

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../quantizers/quantizer_config.hpp"
#include "../quantize_model.hpp"

namespace xq::detail {

XQ_DECL std::string layer_list(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& p : items) s += (s.empty() ? "" : ", ") + p;
  return s;
}

XQ_DECL scheme_placement placement_for(const quantization_scheme& scheme, const std::string& type, bool has_weight,
                                       bool on_by_default) {
  const auto d = scheme.layers.find(type);
  if (d != scheme.layers.end()) return {&d->second, d->second.enabled_by_default};
  return {has_weight ? &scheme.unlisted_weighted : &scheme.unlisted_weightless, on_by_default};
}

XQ_DECL wrapper_settings settings_for(const wrapper_handle& w, const quantize_options& o,
                                      const quantization_spec& spec) {
  wrapper_settings s;
  s.input = o.scheme.input;
  s.weight = o.scheme.weight;
  s.output = o.scheme.output;
  const scheme_placement p = placement_for(o.scheme, w.type, w.has_weight, w.on_by_default);
  s.weight.per_channel = p.defaults->per_channel_weight;
  s.weight_channel_axis = p.defaults->weight_channel_axis;
  const quantization_spec::entry* e = spec.find(w.path, w.type);
  // As the entry says; with no entry, the scheme's placement.
  auto as_entry = [&](const quantization_spec::entry& entry) {
    s.quantize_input = entry.what.quantize_input;
    s.quantize_weight = w.has_weight && entry.what.quantize_weight;
    s.quantize_output = entry.what.quantize_output.value_or(p.defaults->quantize_output);
  };
  auto as_scheme = [&] {
    s.quantize_input = p.on && p.defaults->quantize_input;
    s.quantize_weight = p.on && w.has_weight && p.defaults->quantize_weight;
    s.quantize_output = p.on && p.defaults->quantize_output;
  };
  // An entry's input indices, bit width and per-channel choice, where it gives them.
  auto options_of = [&](const quantization_spec::entry& entry) {
    if (!entry.what.quantization_index.empty()) s.input_indices = entry.what.quantization_index;
    if (entry.what.num_bits) s.input.num_bits = s.weight.num_bits = s.output.num_bits = *entry.what.num_bits;
    if (entry.what.per_channel) s.weight.per_channel = *entry.what.per_channel;
    if (entry.what.weight_format) s.weight.format = *entry.what.weight_format;
    if (entry.what.input_format) s.input.format = *entry.what.input_format;
  };
  const bool through_block = e && !e->by_type && e->key != w.path;
  if (through_block && e->what.block == block_placement::as_full_mode) {
    // What full mode gives this layer (a type entry, else the scheme), which the block's
    // entry can only narrow (see block_placement).
    if (const quantization_spec::entry* by_type = spec.find("", w.type)) {
      as_entry(*by_type);
      options_of(*by_type);
    } else {
      as_scheme();
    }
    s.quantize_input = s.quantize_input && e->what.quantize_input;
    s.quantize_weight = s.quantize_weight && e->what.quantize_weight;
    s.quantize_output = s.quantize_output && e->what.quantize_output.value_or(true);
  } else if (e) {
    as_entry(*e);
  } else if (o.mode == quantization_mode::full) {
    as_scheme();
  }
  if (e) options_of(*e);
  s.per_call_site = o.per_call_site_ranges;
  if (const auto* in = s.input.format.get_if<low_bit::intx_spec>(); in && in->range_learning && s.quantize_input)
    throw argument_error(w.path,
                         "range learning on weights only (the sample pass starts learned scales from the kernels)",
                         "an input format with range learning: " + describe(s.input.format));
  return s;
}

XQ_DECL bool learns_scales(layer_ref model) {
  bool any = false;
  for_each_quantizer_ref(
      model,
      [](void* f, quantizer_base& q) {
        const auto* fq = dynamic_cast<const fake_quantizer*>(&q);
        if (fq && fq->enabled() && fq->learns_scales()) *static_cast<bool*>(f) = true;
      },
      &any);
  return any;
}

XQ_DECL bool needs_trace(const quantize_options& o) {
  return !o.cases.empty() || o.fold_batch_norm || o.per_call_site_ranges || o.scheme.skip_output_before_fused_consumer;
}

XQ_DECL void check_spec(const quantization_spec& spec, const std::vector<std::string>& paths,
                        const std::vector<wrapper_handle>& handles, const quantization_scheme& scheme) {
  std::set<std::string> types(builtin_layer_types().begin(), builtin_layer_types().end());
  for (const auto& h : handles) types.insert(h.type);
  for (const auto& [t, d] : scheme.layers) types.insert(t);
  // An entry's num_bits goes to the input, weight and output quantizers of what it names
  // (settings_for), on or off: it must suit all three of the scheme's numerics.
  int max_bits = max_num_bits(scheme.input.numerics);
  std::string numerics = to_string(scheme.input.numerics);
  for (const quantizer_config* c : {&scheme.weight, &scheme.output})
    if (max_num_bits(c->numerics) < max_bits) {
      max_bits = max_num_bits(c->numerics);
      numerics = to_string(c->numerics);
    }
  for (const auto& e : spec.entries()) {
    const std::string where =
        std::string("quantize_model: quantization_spec ") + (e.by_type ? "type entry \"" : "entry \"") + e.key + "\"";
    if (e.what.num_bits && (*e.what.num_bits < 2 || *e.what.num_bits > max_bits))
      throw argument_error(where,
                           xq::detail::concat("num_bits in [2, ", max_bits, "] (the ", scheme.name, " scheme's ",
                                              numerics, " quantizers), or no num_bits for the scheme's own"),
                           xq::detail::concat("num_bits = ", *e.what.num_bits));
    if (e.by_type) {
      if (types.count(e.key) == 0)
        throw argument_error(where,
                             "the type name of a layer of the model or of a layer xquant knows: " +
                                 layer_list(std::vector<std::string>(types.begin(), types.end())),
                             "a type name no layer has");
      continue;
    }
    const bool found = std::any_of(paths.begin(), paths.end(), [&](const std::string& p) {
      return p == e.key || quantization_spec::encloses(e.key, p);
    });
    if (!found) {
      // The composites are named by the paths inside them ("block" of "block/conv"): every
      // '/'-prefix of a layer's path that is no layer itself, in model order.
      std::vector<std::string> composites;
      std::set<std::string> seen(paths.begin(), paths.end());
      for (const std::string& p : paths)
        for (std::size_t slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1))
          if (seen.insert(p.substr(0, slash)).second) composites.push_back(p.substr(0, slash));
      throw argument_error(where,
                           "the path of a layer of the model (" + layer_list(paths) +
                               (composites.empty() ? std::string(")")
                                                   : ") or of a composite holding some (" + layer_list(composites) + ")"),
                           "no layer with that path");
    }
  }
}

XQ_DECL std::string layer_for_function(const std::string& type) { return "xq::" + type; }

XQ_DECL void check_function_calls(const graph_trace& g, const quantize_options& o, const quantization_spec& spec) {
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

XQ_DECL std::vector<std::pair<std::string, std::string>> fold_pairs(const graph_trace& g,
                                                                    const std::vector<wrapper_handle>& handles) {
  std::map<std::string, const wrapper_handle*> by_path;
  for (const auto& h : handles) by_path[h.path] = &h;
  std::map<std::string, std::set<std::string>> producers_of_bn, consumers_of_layer;
  std::set<std::string> rejected;
  for (const auto& call : g.calls()) {
    if (call.role != layer_role::norm || call.function || !by_path.count(call.path)) continue;
    const traced_call* p = call.inputs.size() == 1 ? g.producer(call.inputs[0]) : nullptr;
    const auto h = p && !p->function ? by_path.find(p->path) : by_path.end();
    if (!p || h == by_path.end() || !h->second->has_weight || !h->second->can_fold() ||
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
    if (rejected.count(bn) || producers.size() != 1 || !by_path.at(bn)->makes_fold()) continue;
    const std::string& conv = *producers.begin();
    if (consumers_of_layer[conv].size() != 1) continue;  // every call of the conv feeds this bn
    pairs.emplace_back(conv, bn);
  }
  return pairs;
}

XQ_DECL std::shared_ptr<batch_norm_fold> make_batch_norm_fold(const batch_norm& bn) {
  auto f = std::make_shared<batch_norm_fold>();
  f->gamma = bn.gamma();
  f->moving_variance = bn.moving_variance();
  f->epsilon = bn.epsilon();
  return f;
}

XQ_DECL void configure_wrappers(const std::vector<wrapper_handle>& handles, const std::vector<std::string>& paths,
                                const graph_trace* trace, const quantize_options& o) {
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
}

}  // namespace xq::detail
