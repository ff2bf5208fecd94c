#pragma once
/// \file checkpoint.ipp
/// The checkpoints' code that does not depend on the model's or the optimizer's type:
/// capturing quantizers and optimizers, matching a file against a model (io/checkpoint.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../checkpoint.hpp"

namespace xq {

namespace detail::ckpt {

XQ_DECL std::string path_list(const std::vector<std::string>& paths) {
  if (paths.empty()) return "no layer";
  std::string s;
  for (const auto& p : paths) s += (s.empty() ? "" : ", ") + (p.empty() ? std::string("(the model)") : p);
  return s;
}

XQ_DECL std::string checkpoint_name_of(const parameter* p) { return p ? p->name() : std::string(); }

XQ_DECL checkpoint_quantizer capture_quantizer(const quantizer_base& q) {
  checkpoint_quantizer c;
  c.path = q.path();
  c.kind = q.kind();
  c.enabled = q.enabled();
  c.observer_enabled = q.observer_enabled();
  c.fake_quant_enabled = q.fake_quant_enabled();
  if (const auto* f = dynamic_cast<const fake_quantizer*>(&q)) {
    c.config = f->config();
    c.format = describe(f->config().format);
    c.batches_seen = f->batches_seen();
    c.built = f->built();
  }
  return c;
}

XQ_DECL std::vector<std::string> optimizer_parameter_names(const std::vector<parameter_ptr>& params,
                                                           const char* where) {
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

XQ_DECL checkpoint_optimizer capture_optimizer(const adam& o) {
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

XQ_DECL checkpoint_optimizer capture_optimizer(const sgd& o) {
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

XQ_DECL checkpoint_optimizer capture_optimizer(const bop& o) {
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

XQ_DECL void checkpoint_plan::apply() {
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

XQ_DECL void checkpoint_plan::apply_generators(const std::string& source) {
  std::vector<std::string> before;
  before.reserve(generators.size());
  for (auto& [link, state] : generators) before.push_back(link.get(link.layer));
  std::size_t done = 0;
  try {
    for (; done < generators.size(); ++done) generators[done].first.set(generators[done].first.layer, generators[done].second);
  } catch (const argument_error& e) {
    for (std::size_t i = 0; i < done; ++i) generators[i].first.set(generators[i].first.layer, before[i]);
    throw io_error(source, concat("malformed checkpoint: the generator of ", generators[done].first.path,
                                  ": expected ", e.expected(), ", given ", e.given()));
  }
}

// The first element that is not finite (or, with `non_negative`, below zero), or t.size().
inline std::size_t first_bad_value(const tensor& t, bool non_negative) {
  const float* v = t.data();
  for (std::size_t i = 0, n = t.size(); i < n; ++i)
    if (!std::isfinite(v[i]) || (non_negative && v[i] < 0.0f)) return i;
  return t.size();
}

XQ_DECL void check_optimizer_values(const tensor& t, const std::string& parameter, const char* name,
                                    const std::string& source) {
  const std::string n = name;
  const bool second_moment = n.size() >= 3 && n.compare(n.size() - 3, 3, "_sq") == 0;
  const std::size_t i = first_bad_value(t, second_moment);
  if (i == t.size()) return;
  throw io_error(source, concat("malformed checkpoint: the optimizer's ", n, " of '", parameter, "' holds ",
                                t.data()[i], " at element ", i, " (expected ",
                                second_moment ? "finite values >= 0: it is a mean of squares" : "finite values",
                                ")"));
}

XQ_DECL void check_parameter_values(const tensor& t, const parameter& p, bool trainable, const std::string& source) {
  const bool variance = p.short_name() == "moving_variance";
  if (!trainable && !variance) return;
  const std::size_t i = first_bad_value(t, variance);
  if (i == t.size()) return;
  throw io_error(source, concat("malformed checkpoint: '", p.name(), "' holds ", t.data()[i], " at element ", i,
                                " (expected ", variance ? "a variance: finite values >= 0" : "finite values", ")"));
}

XQ_DECL bool same_set(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

XQ_DECL std::string in_file(const std::string& source) { return concat("in '", source, "'"); }

XQ_DECL void check_config(const std::string& path, const quantizer_config& m, const quantizer_config& s,
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

XQ_DECL tensor as_tensor(const vector& v) {
  tensor t = tensor::from_shape({v.size()});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

XQ_DECL vector as_vector(const tensor& t) {
  vector v = vector::from_shape({t.size()});
  std::copy(t.begin(), t.end(), v.begin());
  return v;
}

XQ_DECL void upgrade_version_1(checkpoint_state& s, const model_state_view& v) {
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

XQ_DECL checkpoint_plan plan_model(checkpoint_state& s, const model_state_view& v, const std::string& source) {
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
    if (f && c.format != describe(f->config().format))
      throw argument_error(q.path(), concat("the format '", describe(f->config().format), "' (the model's)"),
                           concat("'", c.format, "' ", in_file(source)));
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
    const bool takes_saved_shape =
        (v.unshaped.count(&p) != 0 && c.value.dimension() == 1) || v.reshapeable.count(&p) != 0;
    if (c.value.shape() != p.value.shape() && !takes_saved_shape)
      throw argument_error(p.name(), concat("shape ", shape_string(p.value.shape()), " (the model's)"),
                           concat("shape ", shape_string(c.value.shape()), " ", in_file(source)));
    const auto& uses = v.uses_of(&p);
    if (!same_set(uses, c.uses))
      throw argument_error(p.name(), concat("used by ", path_list(uses), " (the model's sharing)"),
                           concat("used by ", path_list(c.uses), " ", in_file(source)));
    check_parameter_values(c.value, p, c.trainable, source);
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

  // Generators: a file from before they were saved has none, and they keep their state.
  if (s.generators) {
    const auto& saved = *s.generators;
    const std::size_t k = std::max(saved.size(), v.generators.size());
    for (std::size_t i = 0; i < k; ++i) {
      if (i >= v.generators.size())
        throw argument_error(saved[i].path, "a layer of the model with a generator at that path (a dropout)",
                             concat("a generator the model does not have (it has ", v.generators.size(), "), ",
                                    in_file(source)));
      const generator_link& g = v.generators[i];
      if (i >= saved.size() || saved[i].path != g.path)
        throw argument_error(g.path, concat("its generator, #", i, " in model order, in the checkpoint"),
                             i < saved.size() ? concat("'", saved[i].path, "' at #", i, " ", in_file(source))
                                              : concat("a checkpoint with ", saved.size(), " generators"));
      plan.generators.emplace_back(g, saved[i].state);
    }
  }
  return plan;
}

XQ_DECL std::string optimizer_type_of(const adam& o) { return o.decoupled_weight_decay() ? "adamw" : "adam"; }

XQ_DECL std::string optimizer_type_of(const sgd&) { return "sgd"; }

XQ_DECL std::string optimizer_type_of(const bop&) { return "bop"; }

XQ_DECL void check_optimizer_kind(const checkpoint_optimizer& c, const std::string& type, const std::string& source,
                                  const std::string& where) {
  if (c.type != type)
    throw argument_error(where, concat(type, " state (the optimizer given)"), concat(c.type, " state ", in_file(source)));
}

XQ_DECL std::function<void()> plan_optimizer_state(checkpoint_optimizer& c, adam& o, const std::string& source,
                                                   const std::string& where) {
  check_optimizer_kind(c, optimizer_type_of(o), source, where);
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
}

XQ_DECL std::function<void()> plan_optimizer_state(checkpoint_optimizer& c, sgd& o, const std::string& source,
                                                   const std::string& where) {
  check_optimizer_kind(c, "sgd", source, where);
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

XQ_DECL std::function<void()> plan_optimizer_state(checkpoint_optimizer& c, bop& o, const std::string& source,
                                                   const std::string& where) {
  check_optimizer_kind(c, "bop", source, where);
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
}

}  // namespace detail::ckpt
}  // namespace xq
