#pragma once
/// \file checkpoint.hpp
/// Saves and loads a model's full state — every distinct parameter (batch-norm moving
/// statistics and every quantizer's state included: ranges, learned scales), every
/// quantizer's kind, configuration and switches, every folded batch norm's link, and an
/// optimizer's state — in one versioned, self-describing file (checkpoint_format.hpp,
/// docs/checkpoint_format.md). Not part of <xquant/xquant.hpp>: include it where you
/// save or load (it brings in nlohmann::json).
///
/// \code
///   xq::save_checkpoint("run.xqc", qat, opt);     // after some training steps
///   ...
///   auto qat2 = xq::quantize_model(model2, options, shape);   // built the same way
///   xq::adam opt2(xq::trainable_parameters(qat2));
///   xq::load_checkpoint("run.xqc", qat2, opt2);   // qat2 and opt2 now continue exactly
/// \endcode
///
/// A shared parameter (a tied embedding table, a block reused in two places) is stored
/// once, with the paths of the layers that use it; loading checks that the model has the
/// same sharing, so one weight stays one weight. Loading is all or nothing: the file is
/// read, checked and matched against the model in full before anything is changed, so a
/// file that is truncated, corrupted or foreign (io_error naming the file) or that
/// belongs to a model of another structure (argument_error naming the first path that
/// differs) leaves the model and the optimizer as they were. Saving writes a temporary
/// file next to the target, flushes it to disk and renames it over the target, so a
/// failed save never destroys the previous checkpoint.
///
/// What is stored is state; what is configuration is checked. A quantizer's kind, config
/// (bits, numerics, tracking, ...) and whether it is on, and a fold's epsilon and freeze
/// schedule, must be the model's own; the model is rebuilt by the code that built it,
/// the checkpoint only brings its numbers back (and a quantizer's observer and fake-quant
/// switches). Files of format version 1 load too: their quantizer ranges go into the
/// quantizers' parameters. Optimizer options (learning rate, betas) are recorded but not
/// checked: a run may resume with another learning rate.
///
/// The optimizer may be an xq::adam, adamw, sgd or bop, or an xq::case_optimizer of them:
/// a case_optimizer is stored as type "case" with one member entry per optimizer, in
/// order, and loads into a case_optimizer of the same member types.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../core/clone.hpp"
#include "../core/error.hpp"
#include "../core/layer_traits.hpp"
#include "../core/model.hpp"
#include "../core/parameter.hpp"
#include "../quantizers/fake_quantizer.hpp"
#include "../quantizers/quantizer_layer.hpp"
#include "../wrappers/batch_norm_folding.hpp"
#include "../train/adam.hpp"
#include "../train/bop.hpp"
#include "../train/case_optimizer.hpp"
#include "../train/sgd.hpp"
#include "atomic_file.hpp"
#include "checkpoint_format.hpp"

namespace xq {

namespace detail::ckpt {

template <class T>
using folded_op = std::enable_if_t<
    std::is_convertible_v<decltype(std::declval<const T&>().folded()), const std::shared_ptr<batch_norm_fold>&>>;

/// Calls `f(layer, path)` for every layer, parents first; paths as `set_paths` gives them.
template <class Layer, class F>
void for_each_layer_path(Layer& l, const std::string& path, F& f) {
  f(l, path);
  if constexpr (has_children_v<Layer>)
    for_each_child(l, [&](auto& child, const std::string& name) {
      for_each_layer_path(child, join_path(path, name), f);
    });
}

/// What a checkpoint sees of a model: its distinct parameters with their uses (quantizer
/// state included: it is the quantizers' parameters — also the state of a fake quantizer
/// that is on but not called yet, which a load then makes part of the model), its
/// quantizers and its batch-norm fold links.
struct model_state_view {
  std::vector<parameter_ptr> parameters;  ///< first-use order
  std::vector<fake_quantizer*> uncalled;    ///< on, not called yet: their state is in `parameters` too
  std::unordered_map<const parameter*, std::vector<std::string>> uses;
  std::vector<quantizer_base*> quantizers;  ///< every quantizer, on or off, model order
  /// Per-channel range parameters that have no channels yet: they take the saved shape.
  std::unordered_set<const parameter*> unshaped;
  struct fold_link {
    std::shared_ptr<batch_norm_fold> link;
    std::vector<std::string> layers;
  };
  std::vector<fold_link> folds;

  const std::vector<std::string>& uses_of(const parameter* p) const {
    static const std::vector<std::string> none;
    const auto it = uses.find(p);
    return it == uses.end() ? none : it->second;
  }
};

template <class Model>
model_state_view view_model(Model& model) {
  set_paths(model);
  model_state_view v;
  std::unordered_set<const parameter*> listed;
  auto list = [&](const parameter_ptr& p) {
    if (p && listed.insert(p.get()).second) v.parameters.push_back(p);
  };
  // First the parameters in `xq::parameters(model)` order (with uncalled quantizers'
  // state where they sit), then those only used as a kernel (tied to a table elsewhere).
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (has_parameters_v<L>)
      for (const auto& p : l.parameters()) list(p);
    if constexpr (std::is_base_of_v<fake_quantizer, L>)
      if (l.enabled() && !l.built()) {
        v.uncalled.push_back(&l);
        list(l.min_parameter());
        list(l.max_parameter());
      }
  });
  std::vector<parameter_ptr> unlisted;
  auto use = [&](const parameter* p, const std::string& path) {
    if (!p) return;
    auto& paths = v.uses[p];
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  };
  std::string root;
  if constexpr (!has_children_v<Model> && has_set_path_v<Model>) root = model.path();
  auto visit = [&](auto& l, const std::string& path) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (has_parameters_v<L>)
      for (const auto& p : l.parameters()) use(p.get(), path);
    xq::detail::for_each_visible_parameter(l, [&](const parameter_ptr& k) {
      if (!k || listed.count(k.get())) return;
      use(k.get(), path);
      listed.insert(k.get());
      unlisted.push_back(k);
    });
    if constexpr (has_kernel_v<L>) use(l.kernel().get(), path);
    if constexpr (has_float_layer_v<L>) {
      using F = std::remove_reference_t<decltype(l.float_layer())>;
      if constexpr (has_kernel_v<F>) use(l.float_layer().kernel().get(), path);
    }
    if constexpr (is_quantizer_v<L>) {
      v.quantizers.push_back(&l);
      if constexpr (std::is_base_of_v<fake_quantizer, L>) {
        if (l.enabled() && !l.built()) {
          use(l.min_parameter().get(), path);
          use(l.max_parameter().get(), path);
        }
        if (l.config().per_channel && l.enabled() && l.min_parameter()->value.size() == 0) {
          v.unshaped.insert(l.min_parameter().get());
          v.unshaped.insert(l.max_parameter().get());
        }
      }
    }
    if constexpr (detail::detect<L, folded_op>::value) {
      if (const auto& link = l.folded()) {
        auto it = std::find_if(v.folds.begin(), v.folds.end(), [&](const auto& f) { return f.link == link; });
        if (it == v.folds.end()) v.folds.push_back({link, {path}});
        else it->layers.push_back(path);
      }
    }
  };
  for_each_layer_path(model, root, visit);
  v.parameters.insert(v.parameters.end(), unlisted.begin(), unlisted.end());
  return v;
}

inline std::string path_list(const std::vector<std::string>& paths) {
  if (paths.empty()) return "no layer";
  std::string s;
  for (const auto& p : paths) s += (s.empty() ? "" : ", ") + (p.empty() ? std::string("(the model)") : p);
  return s;
}

inline std::string checkpoint_name_of(const parameter* p) { return p ? p->name() : std::string(); }

/// The checkpoint entry of one quantizer.
inline checkpoint_quantizer capture_quantizer(const quantizer_base& q) {
  checkpoint_quantizer c;
  c.path = q.path();
  c.kind = q.kind();
  c.enabled = q.enabled();
  c.observer_enabled = q.observer_enabled();
  c.fake_quant_enabled = q.fake_quant_enabled();
  if (const auto* f = dynamic_cast<const fake_quantizer*>(&q)) {
    c.config = f->config();
    c.batches_seen = f->batches_seen();
    c.built = f->built();
  }
  return c;
}

template <class Model>
checkpoint_state capture_model(Model& model) {
  const model_state_view v = view_model(model);
  checkpoint_state s;
  std::unordered_map<std::string, const parameter*> names;
  for (const auto& p : v.parameters) {
    if (!names.emplace(p->name(), p.get()).second)
      throw argument_error("xq::save_checkpoint", "distinct names for distinct parameters (name the layers apart)",
                           concat("two parameters named '", p->name(), "'"));
    s.parameters.push_back({p->name(), p->value, p->trainable(), v.uses_of(p.get())});
  }
  std::unordered_set<std::string> paths;
  for (const quantizer_base* q : v.quantizers) {
    if (!paths.insert(q->path()).second)
      throw argument_error("xq::save_checkpoint", "distinct paths for distinct quantizers (name the layers apart)",
                           concat("two quantizers at '", q->path(), "'"));
    s.quantizers.push_back(capture_quantizer(*q));
  }
  for (const auto& f : v.folds) {
    checkpoint_fold c;
    c.layers = f.layers;
    c.gamma = checkpoint_name_of(f.link->gamma.get());
    c.moving_variance = checkpoint_name_of(f.link->moving_variance.get());
    c.epsilon = f.link->epsilon;
    c.freeze_after = f.link->freeze_after;
    c.training_calls = f.link->training_calls;
    s.batch_norm_folds.push_back(std::move(c));
  }
  return s;
}

/// Parameter names of an optimizer's list, checked to be distinct (the state is keyed by them).
inline std::vector<std::string> optimizer_parameter_names(const std::vector<parameter_ptr>& params, const char* where) {
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (const auto& p : params) {
    if (!seen.insert(p->name()).second)
      throw argument_error(where, "distinct parameter names in the optimizer (its state is stored by name)",
                           concat("two parameters named '", p->name(), "'"));
    names.push_back(p->name());
  }
  return names;
}

/// One slot per parameter of optimizer `o`, keyed by its name; `fill(state, slot)` adds
/// that optimizer's tensors (and step) for the parameter's state.
template <class Optimizer, class Fill>
void capture_slots(checkpoint_optimizer& c, const Optimizer& o, Fill&& fill) {
  const auto names = optimizer_parameter_names(o.parameters(), "xq::save_checkpoint");
  for (std::size_t i = 0; i < names.size(); ++i) {
    checkpoint_slot slot;
    slot.parameter = names[i];
    fill(o.state()[i], slot);
    c.slots.push_back(std::move(slot));
  }
}

inline checkpoint_optimizer capture_optimizer(const adam& o) {
  checkpoint_optimizer c;
  c.type = o.decoupled_weight_decay() ? "adamw" : "adam";
  c.iterations = o.iterations();
  const adam_options& opt = o.options();
  c.options = {{"learning_rate", o.learning_rate()}, {"beta1", opt.beta1},       {"beta2", opt.beta2},
               {"epsilon", opt.epsilon},             {"weight_decay", opt.weight_decay},
               {"amsgrad", opt.amsgrad ? 1.0 : 0.0}};
  capture_slots(c, o, [&](const adam_state& st, checkpoint_slot& slot) {
    slot.step = st.step;
    if (st.step > 0) {
      slot.tensors.emplace_back("exp_avg", st.exp_avg);
      slot.tensors.emplace_back("exp_avg_sq", st.exp_avg_sq);
      if (opt.amsgrad) slot.tensors.emplace_back("max_exp_avg_sq", st.max_exp_avg_sq);
    }
  });
  return c;
}

inline checkpoint_optimizer capture_optimizer(const sgd& o) {
  checkpoint_optimizer c;
  c.type = "sgd";
  c.iterations = o.iterations();
  const sgd_options& opt = o.options();
  c.options = {{"learning_rate", o.learning_rate()}, {"momentum", opt.momentum},
               {"nesterov", opt.nesterov ? 1.0 : 0.0}, {"weight_decay", opt.weight_decay},
               {"dampening", opt.dampening}};
  capture_slots(c, o, [](const sgd_state& st, checkpoint_slot& slot) {
    if (st.has_momentum_buffer) slot.tensors.emplace_back("momentum_buffer", st.momentum_buffer);
  });
  return c;
}

inline checkpoint_optimizer capture_optimizer(const bop& o) {
  checkpoint_optimizer c;
  c.type = "bop";
  c.iterations = o.iterations();
  c.options = {{"threshold", o.threshold()}, {"gamma", o.gamma()}};
  capture_slots(c, o, [](const bop_state& st, checkpoint_slot& slot) {
    slot.step = st.step;
    if (st.step > 0) slot.tensors.emplace_back("m", st.m);
  });
  return c;
}

/// A case_optimizer: type "case", no slots of its own, one member entry per optimizer.
template <class... O>
checkpoint_optimizer capture_optimizer(const case_optimizer<O...>& o) {
  checkpoint_optimizer c;
  c.type = "case";
  o.for_each_optimizer([&](const auto& m) { c.members.push_back(capture_optimizer(m)); });
  // The state is keyed by parameter name across all members.
  optimizer_parameter_names(o.parameters(), "xq::save_checkpoint");
  return c;
}

template <class Optimizer>
struct is_checkpointable_optimizer
    : std::bool_constant<std::is_base_of_v<adam, Optimizer> || std::is_same_v<sgd, Optimizer> ||
                         std::is_same_v<bop, Optimizer>> {};
template <class... O>
struct is_checkpointable_optimizer<case_optimizer<O...>>
    : std::bool_constant<(is_checkpointable_optimizer<O>::value && ...)> {};

template <class Optimizer>
constexpr void check_optimizer_type() {
  static_assert(is_checkpointable_optimizer<Optimizer>::value,
                "xquant: checkpoints hold the state of xq::adam, xq::adamw, xq::sgd, xq::bop and an "
                "xq::case_optimizer of them; pass one of them (not const, when loading) or none");
}

// ---- loading: match, then apply -------------------------------------------------

/// Everything a load will change, computed (and checked) before anything is changed.
struct checkpoint_plan {
  struct parameter_update {
    parameter* target;
    tensor value;
    bool trainable;
  };
  struct quantizer_update {
    quantizer_base* target;
    bool observer_enabled, fake_quant_enabled;
    std::size_t batches_seen;
    bool built;
  };
  std::vector<parameter_update> parameters;
  std::vector<quantizer_update> quantizers;
  std::vector<std::pair<batch_norm_fold*, long>> folds;  // link, training calls

  /// Moves and assignments only: nothing here throws on a sane system.
  void apply() {
    for (auto& u : parameters) {
      u.target->value = std::move(u.value);
      u.target->set_trainable(u.trainable);
      u.target->zero_grad();  // a gradient from before the load belongs to other values
    }
    for (auto& q : quantizers) {
      q.target->enable_observer(q.observer_enabled);
      q.target->enable_fake_quant(q.fake_quant_enabled);
      if (auto* f = dynamic_cast<fake_quantizer*>(q.target)) {
        f->set_batches_seen(q.batches_seen);
        f->set_built(q.built);
      }
    }
    for (auto& f : folds) f.first->training_calls = f.second;
  }
};

inline bool same_set(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

inline std::string in_file(const std::string& source) { return concat("in '", source, "'"); }

template <class T>
std::string config_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else return concat(v);
}

/// Compares a configuration field; throws naming the quantizer and the field.
template <class T>
void check_config_field(const std::string& path, const char* field, const T& model, const T& saved,
                        const quantizer_config& model_config, const std::string& source) {
  if (model == saved) return;
  throw argument_error(path,
                       concat(field, " = ", config_value(model), " (the model's quantizer: ", describe(model_config),
                              ")"),
                       concat(field, " = ", config_value(saved), " ", in_file(source)));
}

inline void check_config(const std::string& path, const quantizer_config& m, const quantizer_config& s,
                         const std::string& source) {
  check_config_field(path, "num_bits", m.num_bits, s.num_bits, m, source);
  check_config_field(path, "symmetric", m.symmetric, s.symmetric, m, source);
  check_config_field(path, "narrow_range", m.narrow_range, s.narrow_range, m, source);
  check_config_field(path, "per_channel", m.per_channel, s.per_channel, m, source);
  check_config_field(path, "channel_axis", m.channel_axis, s.channel_axis, m, source);
  check_config_field(path, "numerics", std::string(to_string(m.numerics)), std::string(to_string(s.numerics)), m,
                     source);
  check_config_field(path, "tracking", std::string(to_string(m.tracking)), std::string(to_string(s.tracking)), m,
                     source);
  check_config_field(path, "ema_decay", m.ema_decay, s.ema_decay, m, source);
  check_config_field(path, "averaging_constant", m.averaging_constant, s.averaging_constant, m, source);
  check_config_field(path, "reduce_range", m.reduce_range, s.reduce_range, m, source);
  check_config_field(path, "init_min", m.init_min, s.init_min, m, source);
  check_config_field(path, "init_max", m.init_max, s.init_max, m, source);
}

inline tensor as_tensor(const vector& v) {
  tensor t = tensor::from_shape({v.size()});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}
inline vector as_vector(const tensor& t) {
  vector v = vector::from_shape({t.size()});
  std::copy(t.begin(), t.end(), v.begin());
  return v;
}

/// A version-1 file keeps a fake quantizer's range in its quantizer entry; this model keeps
/// it in the quantizer's parameters. Adds those parameters to the file's list (for the
/// model's quantizers that are on), then puts the list in the model's order, which version
/// 1 could not know.
inline void upgrade_version_1(checkpoint_state& s, const model_state_view& v) {
  std::unordered_map<std::string, const quantizer_base*> by_path;
  for (const quantizer_base* q : v.quantizers) by_path.emplace(q->path(), q);
  for (auto& c : s.quantizers) {
    const auto it = by_path.find(c.path);
    const auto* f = it == by_path.end() ? nullptr : dynamic_cast<const fake_quantizer*>(it->second);
    if (!f || !f->enabled() || !c.min || !c.max) continue;
    s.parameters.push_back({f->min_parameter()->name(), as_tensor(*c.min), false, {c.path}});
    s.parameters.push_back({f->max_parameter()->name(), as_tensor(*c.max), false, {c.path}});
  }
  std::unordered_map<std::string, std::size_t> order;
  for (std::size_t i = 0; i < v.parameters.size(); ++i) order.emplace(v.parameters[i]->name(), i);
  std::stable_sort(s.parameters.begin(), s.parameters.end(), [&](const auto& a, const auto& b) {
    const auto ia = order.find(a.name), ib = order.find(b.name);
    const std::size_t ka = ia == order.end() ? order.size() : ia->second;
    const std::size_t kb = ib == order.end() ? order.size() : ib->second;
    return ka < kb;
  });
}

/// Matches the checkpoint's parameters, quantizers and folds against the model, in
/// model order; the first difference throws argument_error naming its path.
inline checkpoint_plan plan_model(checkpoint_state& s, const model_state_view& v, const std::string& source) {
  if (s.version == 1) upgrade_version_1(s, v);
  // The quantizers first: a checkpoint of another structure is named by its quantizers.
  const std::size_t m = std::max(s.quantizers.size(), v.quantizers.size());
  std::vector<const fake_quantizer*> ranges_to_check;
  checkpoint_plan plan;
  for (std::size_t i = 0; i < m; ++i) {
    if (i >= v.quantizers.size())
      throw argument_error(s.quantizers[i].path, "a quantizer of the model at that path",
                           concat("a quantizer the model does not have (it has ", v.quantizers.size(), "), ",
                                  in_file(source)));
    quantizer_base& q = *v.quantizers[i];
    const auto* f = dynamic_cast<const fake_quantizer*>(&q);
    if (s.version == 1 && !f) continue;  // version 1 recorded fake quantizers only
    if (i >= s.quantizers.size())
      throw argument_error(q.path(), concat("the quantizer in the checkpoint ", in_file(source)),
                           concat("a checkpoint with ", s.quantizers.size(), " quantizers"));
    checkpoint_quantizer& c = s.quantizers[i];
    if (c.path != q.path())
      throw argument_error(q.path(), concat("quantizer #", i, " in model order"),
                           concat("'", c.path, "' at #", i, " ", in_file(source)));
    if (c.kind != q.kind())
      throw argument_error(q.path(), concat("a ", q.kind(), " (the model's)"), concat("a ", c.kind, " ", in_file(source)));
    if (f && c.config) check_config(q.path(), f->config(), *c.config, source);
    if (c.enabled != q.enabled())
      throw argument_error(q.path(), concat("a quantizer that is ", q.enabled() ? "on" : "off", " (the model's)"),
                           concat("one that is ", c.enabled ? "on" : "off", " ", in_file(source)));
    if (f && f->enabled()) ranges_to_check.push_back(f);
    plan.quantizers.push_back({&q, c.observer_enabled, c.fake_quant_enabled, c.batches_seen, c.built});
  }

  std::unordered_map<std::string, std::size_t> saved_index, model_index;
  for (std::size_t i = 0; i < s.parameters.size(); ++i) saved_index.emplace(s.parameters[i].name, i);
  for (std::size_t i = 0; i < v.parameters.size(); ++i) model_index.emplace(v.parameters[i]->name(), i);
  const std::size_t n = std::max(s.parameters.size(), v.parameters.size());
  std::unordered_map<const parameter*, const tensor*> planned;  // into plan.parameters, which never reallocates:
  plan.parameters.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i >= v.parameters.size() || (i < s.parameters.size() && !model_index.count(s.parameters[i].name))) {
      throw argument_error(s.parameters[i].name,
                           concat("a parameter of the model of that name (the model has ", v.parameters.size(),
                                  " parameters; is it built? xq::build(model, input_shape))"),
                           concat("a parameter the model does not have, ", in_file(source)));
    }
    const parameter& p = *v.parameters[i];
    if (i >= s.parameters.size() || !saved_index.count(p.name()))
      throw argument_error(p.name(), concat("the parameter in the checkpoint ", in_file(source)),
                           concat("a checkpoint without it (", s.parameters.size(), " parameters",
                                  i < s.parameters.size() ? concat("; '", s.parameters[i].name, "' at its place") : "",
                                  ")"));
    checkpoint_parameter& c = s.parameters[i];
    if (c.name != p.name())
      throw argument_error(p.name(), concat("parameter #", i, " in model order"),
                           concat("'", c.name, "' at #", i, " ", in_file(source),
                                  " (the parameters come in another order)"));
    const bool takes_saved_shape = v.unshaped.count(&p) != 0 && c.value.dimension() == 1;
    if (c.value.shape() != p.value.shape() && !takes_saved_shape)
      throw argument_error(p.name(), concat("shape ", shape_string(p.value.shape()), " (the model's)"),
                           concat("shape ", shape_string(c.value.shape()), " ", in_file(source)));
    const auto& uses = v.uses_of(&p);
    if (!same_set(uses, c.uses))
      throw argument_error(p.name(), concat("used by ", path_list(uses), " (the model's sharing)"),
                           concat("used by ", path_list(c.uses), " ", in_file(source)));
    plan.parameters.push_back({v.parameters[i].get(), std::move(c.value), c.trainable});
    planned[v.parameters[i].get()] = &plan.parameters.back().value;
  }

  for (const fake_quantizer* f : ranges_to_check) {  // the range a load gives must be one it takes
    const auto lo = planned.find(f->min_parameter().get()), hi = planned.find(f->max_parameter().get());
    if (lo == planned.end() || hi == planned.end()) continue;
    try {
      f->check_range(as_vector(*lo->second), as_vector(*hi->second));
    } catch (const argument_error& e) {
      throw io_error(source, concat("malformed checkpoint: the range of ", f->path(), ": expected ", e.expected(),
                                    ", given ", e.given()));
    }
  }

  if (s.batch_norm_folds.size() != v.folds.size()) {
    const std::size_t k = std::min(s.batch_norm_folds.size(), v.folds.size());
    const std::string where = k < v.folds.size() ? path_list(v.folds[k].layers)
                                                 : path_list(s.batch_norm_folds[k].layers);
    throw argument_error(where, concat(v.folds.size(), " folded batch norms (the model's)"),
                         concat(s.batch_norm_folds.size(), " ", in_file(source)));
  }
  for (std::size_t i = 0; i < v.folds.size(); ++i) {
    const auto& f = v.folds[i];
    const checkpoint_fold& c = s.batch_norm_folds[i];
    const std::string where = path_list(f.layers);
    if (f.layers != c.layers)
      throw argument_error(where, concat("a batch-norm fold linking ", where, " (the model's)"),
                           concat("one linking ", path_list(c.layers), " ", in_file(source)));
    const std::string gamma = checkpoint_name_of(f.link->gamma.get());
    const std::string variance = checkpoint_name_of(f.link->moving_variance.get());
    if (gamma != c.gamma || variance != c.moving_variance)
      throw argument_error(where, concat("a fold of '", gamma, "' and '", variance, "' (the model's)"),
                           concat("'", c.gamma, "' and '", c.moving_variance, "' ", in_file(source)));
    if (f.link->epsilon != c.epsilon || f.link->freeze_after != c.freeze_after)
      throw argument_error(where,
                           concat("epsilon ", f.link->epsilon, ", freeze after ", f.link->freeze_after,
                                  " training calls (the model's)"),
                           concat("epsilon ", c.epsilon, ", freeze after ", c.freeze_after, " ", in_file(source)));
    if (c.training_calls < 0)
      throw io_error(source, concat("malformed checkpoint: ", where, ": negative training_calls ", c.training_calls));
    plan.folds.emplace_back(f.link.get(), c.training_calls);
  }
  return plan;
}

/// The optimizer's slots, matched by parameter name; throws before changing anything.
template <class State, class Fill>
std::vector<State> plan_slots(checkpoint_optimizer& c, const std::vector<parameter_ptr>& params,
                              const std::string& source, Fill fill) {
  const auto names = optimizer_parameter_names(params, "xq::load_checkpoint");
  std::unordered_map<std::string, checkpoint_slot*> by_name;
  for (auto& slot : c.slots) by_name.emplace(slot.parameter, &slot);
  for (const auto& slot : c.slots)
    if (std::find(names.begin(), names.end(), slot.parameter) == names.end())
      throw argument_error(slot.parameter, "a parameter the optimizer steps",
                           concat("optimizer state for it ", in_file(source), " (the optimizer has ",
                                  names.size(), " parameters)"));
  std::vector<State> out(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto it = by_name.find(names[i]);
    if (it == by_name.end())
      throw argument_error(names[i], concat("its optimizer state ", in_file(source)),
                           "a checkpoint whose optimizer does not step it");
    checkpoint_slot& slot = *it->second;
    auto take = [&](const char* name) -> tensor {
      for (auto& t : slot.tensors)
        if (t.first == name) {
          if (t.second.shape() != params[i]->value.shape())
            throw argument_error(names[i], concat(name, " of shape ", shape_string(params[i]->value.shape())),
                                 concat("shape ", shape_string(t.second.shape()), " ", in_file(source)));
          return std::move(t.second);
        }
      throw argument_error(names[i], concat("optimizer state '", name, "'"),
                           concat("a checkpoint without it ", in_file(source)));
    };
    fill(out[i], slot, take);
  }
  return out;
}

inline std::string optimizer_type_of(const adam& o) { return o.decoupled_weight_decay() ? "adamw" : "adam"; }
inline std::string optimizer_type_of(const sgd&) { return "sgd"; }
inline std::string optimizer_type_of(const bop&) { return "bop"; }
template <class... O>
std::string optimizer_type_of(const case_optimizer<O...>&) {
  return "case";
}

template <class Optimizer>
std::function<void()> plan_optimizer_state(checkpoint_optimizer& c, Optimizer& o, const std::string& source,
                                           const std::string& where);

template <class Optimizer>
std::function<void()> plan_optimizer(checkpoint_state& s, Optimizer& o, const std::string& source) {
  if (!s.optimizer)
    throw argument_error("optimizer",
                         concat(optimizer_type_of(o),
                                " state in the checkpoint (saved with save_checkpoint(path, model, optimizer))"),
                         concat("a checkpoint without optimizer state ", in_file(source)));
  return plan_optimizer_state(*s.optimizer, o, source, "optimizer");
}

/// Checks `c` against `o` (type, parameter names, state shapes) and returns what
/// applies it; `where` names the optimizer in errors ("optimizer", "optimizer #1").
template <class Optimizer>
std::function<void()> plan_optimizer_state(checkpoint_optimizer& c, Optimizer& o, const std::string& source,
                                           const std::string& where) {
  const std::string type = optimizer_type_of(o);
  if (c.type != type)
    throw argument_error(where, concat(type, " state (the optimizer given)"),
                         concat(c.type, " state ", in_file(source)));
  if constexpr (is_case_optimizer_v<Optimizer>) {
    if (c.members.size() != o.size())
      throw argument_error(where, concat("a case_optimizer of ", o.size(), " optimizers (the optimizer given)"),
                           concat("one of ", c.members.size(), " ", in_file(source)));
    std::vector<std::function<void()>> apply;
    std::size_t i = 0;
    o.for_each_optimizer([&](auto& m) {
      apply.push_back(plan_optimizer_state(c.members[i], m, source, concat(where, " #", i)));
      ++i;
    });
    return [apply = std::move(apply)] {
      for (const auto& f : apply) f();
    };
  } else if constexpr (std::is_same_v<bop, Optimizer>) {
    auto fill = [](bop_state& st, checkpoint_slot& slot, auto& take) {
      st.step = slot.step;
      if (slot.step > 0) st.m = take("m");
    };
    auto states = plan_slots<bop_state>(c, o.parameters(), source, fill);
    const std::size_t iterations = c.iterations;
    auto shared = std::make_shared<std::vector<bop_state>>(std::move(states));
    return [&o, shared, iterations] {
      o.state() = std::move(*shared);
      o.set_iterations(iterations);
    };
  } else if constexpr (std::is_base_of_v<adam, Optimizer>) {
    const bool amsgrad = o.options().amsgrad;
    auto fill = [&](adam_state& st, checkpoint_slot& slot, auto& take) {
      st.step = slot.step;
      if (slot.step == 0) return;
      st.exp_avg = take("exp_avg");
      st.exp_avg_sq = take("exp_avg_sq");
      if (amsgrad) st.max_exp_avg_sq = take("max_exp_avg_sq");
    };
    auto states = plan_slots<adam_state>(c, o.parameters(), source, fill);
    const std::size_t iterations = c.iterations;
    auto shared = std::make_shared<std::vector<adam_state>>(std::move(states));
    return [&o, shared, iterations] {
      o.state() = std::move(*shared);
      o.set_iterations(iterations);
    };
  } else {
    auto fill = [](sgd_state& st, checkpoint_slot& slot, auto& take) {
      if (!slot.find("momentum_buffer")) return;
      st.momentum_buffer = take("momentum_buffer");
      st.has_momentum_buffer = true;
    };
    auto states = plan_slots<sgd_state>(c, o.parameters(), source, fill);
    const std::size_t iterations = c.iterations;
    auto shared = std::make_shared<std::vector<sgd_state>>(std::move(states));
    return [&o, shared, iterations] {
      o.state() = std::move(*shared);
      o.set_iterations(iterations);
    };
  }
}

template <class Model, class... Optimizer>
void restore_checkpoint(checkpoint_state state, Model& model, const std::string& source, Optimizer&... optimizer) {
  static_assert(sizeof...(Optimizer) <= 1, "xquant: load_checkpoint takes a model and at most one optimizer");
  (check_optimizer_type<Optimizer>(), ...);
  const model_state_view v = view_model(model);
  checkpoint_plan plan = plan_model(state, v, source);
  std::function<void()> apply_optimizer;
  ((apply_optimizer = plan_optimizer(state, optimizer, source)), ...);
  plan.apply();
  if (apply_optimizer) apply_optimizer();
}

template <class Model, class... Optimizer>
checkpoint_state capture_checkpoint(Model& model, const Optimizer&... optimizer) {
  static_assert(sizeof...(Optimizer) <= 1, "xquant: save_checkpoint takes a model and at most one optimizer");
  (check_optimizer_type<Optimizer>(), ...);
  checkpoint_state s = capture_model(model);
  ((s.optimizer = capture_optimizer(optimizer)), ...);
  return s;
}

}  // namespace detail::ckpt

/// The bytes of a checkpoint of `model` (and `optimizer`: an xq::adam, adamw, sgd, bop,
/// or an xq::case_optimizer of them, whose members' states are all stored),
/// as save_checkpoint writes them. Sets the model's paths (xq::set_paths).
template <class Model, class... Optimizer>
std::vector<std::uint8_t> save_checkpoint_bytes(Model& model, const Optimizer&... optimizer) {
  return encode_checkpoint(detail::ckpt::capture_checkpoint(model, optimizer...));
}

/// Writes the full state of `model` (and `optimizer`) to `path`: through a temporary
/// file in the same directory, flushed and renamed over `path`, so a failed save leaves
/// a previous file intact. Throws io_error naming `path`; argument_error when two
/// parameters or quantizers of the model share a name.
template <class Model, class... Optimizer>
void save_checkpoint(const std::string& path, Model& model, const Optimizer&... optimizer) {
  io::write_file_atomically(path, save_checkpoint_bytes(model, optimizer...));
}

/// Restores `model` (and `optimizer`) from a checkpoint's bytes; `source` names them in
/// errors. All or nothing, as load_checkpoint.
template <class Model, class... Optimizer>
void load_checkpoint_bytes(const std::uint8_t* data, std::size_t size, const std::string& source, Model& model,
                           Optimizer&... optimizer) {
  detail::ckpt::restore_checkpoint(decode_checkpoint(data, size, source), model, source, optimizer...);
}

/// Restores the full state of `model` (and `optimizer`) saved by save_checkpoint. The
/// model must have the checkpoint's structure: the same parameters (names, shapes,
/// sharing), quantizers (paths, configs) and folded batch norms; the optimizer the
/// same type and parameter names. Throws, changing nothing:
///  - io_error naming `path`: unreadable, empty, not a checkpoint, another format
///    version, truncated, corrupted (CRC-32) or malformed;
///  - argument_error naming the first path that differs from the model.
/// Loaded parameters have no gradient.
template <class Model, class... Optimizer>
void load_checkpoint(const std::string& path, Model& model, Optimizer&... optimizer) {
  const std::vector<std::uint8_t> bytes = io::read_file_bytes(path);
  load_checkpoint_bytes(bytes.data(), bytes.size(), path, model, optimizer...);
}

}  // namespace xq
