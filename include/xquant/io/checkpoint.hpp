#pragma once
/// \file checkpoint.hpp
/// Saves and loads a model's full state — every distinct parameter (batch-norm moving
/// statistics and every quantizer's state included: ranges, learned scales), every
/// quantizer's kind, configuration and switches, every folded batch norm's link, and an
/// optimizer's state — in one versioned, self-describing file (checkpoint_format.hpp,
/// docs/checkpoint_format.md). Not part of <xquant/xquant.hpp>: include it where you
/// save or load (in header-only mode it brings in nlohmann::json).
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
/// order, and loads into a case_optimizer of the same member types. Any other optimizer —
/// a user's — is stored the same way once it has the checkpoint protocol, two functions
/// found by argument-dependent lookup (docs/checkpoint_format.md, "A user's optimizer"):
///
///   xq::checkpoint_optimizer capture_optimizer(const my_optimizer& o);   // its type, slots, iterations
///   std::function<void()> plan_optimizer_state(xq::checkpoint_optimizer& saved, my_optimizer& o,
///                                              const std::string& source, const std::string& where);
///
/// the second checking everything and returning what applies it (capture_optimizer_slots,
/// plan_optimizer_slots and check_optimizer_state_type below do the common work); an
/// optional `std::string optimizer_type_of(const my_optimizer&)` names it in errors.

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

#include "../config.hpp"
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

/// A layer with a random generator that checkpoints keep (xq::dropout): it has
/// `std::string generator_state() const` and `set_generator_state(const std::string&)`.
/// A quantizer whose state takes a checkpoint's shape (`bool state_takes_saved_shape() const`:
/// low_bit_quantizer.hpp).
template <class T>
using saved_shape_op =
    std::enable_if_t<std::is_same_v<decltype(std::declval<const T&>().state_takes_saved_shape()), bool>>;

template <class T>
using generator_state_op = std::enable_if_t<
    std::is_convertible_v<decltype(std::declval<const T&>().generator_state()), std::string> &&
    std::is_void_v<decltype(std::declval<T&>().set_generator_state(std::declval<const std::string&>()))>>;

/// A layer's generator, without the layer's type.
struct generator_link {
  std::string path;
  void* layer;
  std::string (*get)(const void* layer);
  void (*set)(void* layer, const std::string& state);
};

template <class L>
generator_link link_generator(L& l, const std::string& path) {
  return {path, &l, [](const void* p) { return static_cast<const L*>(p)->generator_state(); },
          [](void* p, const std::string& state) { static_cast<L*>(p)->set_generator_state(state); }};
}

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
  /// State whose shape follows the input (the low-bit quantizers' scales): it takes the
  /// saved shape, whatever its rank.
  std::unordered_set<const parameter*> reshapeable;
  struct fold_link {
    std::shared_ptr<batch_norm_fold> link;
    std::vector<std::string> layers;
  };
  std::vector<fold_link> folds;
  std::vector<generator_link> generators;  ///< model order

  const std::vector<std::string>& uses_of(const parameter* p) const {
    static const std::vector<std::string> none;
    const auto it = uses.find(p);
    return it == uses.end() ? none : it->second;
  }
};

template <class Model>
model_state_view view_model(Model& model) {
  xq::set_paths(model);  // qualified: a plain struct model in the global namespace has no ADL to xq
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
      if (l.enabled() && !l.built() && !l.config().format) {  // a format keeps no range
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
        if (l.enabled() && !l.built() && !l.config().format) {
          use(l.min_parameter().get(), path);
          use(l.max_parameter().get(), path);
        }
        if (l.config().per_channel && !l.config().format && l.enabled() && l.min_parameter()->value.size() == 0) {
          v.unshaped.insert(l.min_parameter().get());
          v.unshaped.insert(l.max_parameter().get());
        }
      }
      if constexpr (detail::detect<L, saved_shape_op>::value)
        if (l.state_takes_saved_shape())
          for (const auto& p : l.parameters()) v.reshapeable.insert(p.get());
    }
    if constexpr (detail::detect<L, generator_state_op>::value) v.generators.push_back(link_generator(l, path));
    if constexpr (has_float_layer_v<L>) {  // a quantized twin of such a layer: its float layer's generator
      using F = std::remove_reference_t<decltype(l.float_layer())>;
      if constexpr (detail::detect<F, generator_state_op>::value)
        v.generators.push_back(link_generator(l.float_layer(), path));
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

XQ_DECL std::string path_list(const std::vector<std::string>& paths);

XQ_DECL std::string checkpoint_name_of(const parameter* p);

/// The checkpoint entry of one quantizer.
XQ_DECL checkpoint_quantizer capture_quantizer(const quantizer_base& q);

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
  s.generators.emplace();
  for (const auto& g : v.generators) s.generators->push_back({g.path, g.get(g.layer)});
  return s;
}

/// Parameter names of an optimizer's list, checked to be distinct (the state is keyed by them).
XQ_DECL std::vector<std::string> optimizer_parameter_names(const std::vector<parameter_ptr>& params,
                                                           const char* where);

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

XQ_DECL checkpoint_optimizer capture_optimizer(const adam& o);

XQ_DECL checkpoint_optimizer capture_optimizer(const sgd& o);

XQ_DECL checkpoint_optimizer capture_optimizer(const bop& o);

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
  std::vector<std::pair<generator_link, std::string>> generators;  // link, saved state

  /// Sets the generators, all or none: a state a layer refuses puts the ones already set
  /// back and throws io_error naming `source`. Runs before `apply`, which cannot fail.
  void apply_generators(const std::string& source);
  /// Moves and assignments only: nothing here throws on a sane system.
  void apply();
};

XQ_DECL bool same_set(std::vector<std::string> a, std::vector<std::string> b);

XQ_DECL std::string in_file(const std::string& source);

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

XQ_DECL void check_config(const std::string& path, const quantizer_config& m, const quantizer_config& s,
                          const std::string& source);

XQ_DECL tensor as_tensor(const vector& v);
XQ_DECL vector as_vector(const tensor& t);

/// A version-1 file keeps a fake quantizer's range in its quantizer entry; this model keeps
/// it in the quantizer's parameters. Adds those parameters to the file's list (for the
/// model's quantizers that are on), then puts the list in the model's order, which version
/// 1 could not know.
XQ_DECL void upgrade_version_1(checkpoint_state& s, const model_state_view& v);

/// Matches the checkpoint's parameters, quantizers and folds against the model, in
/// model order; the first difference throws argument_error naming its path.
XQ_DECL checkpoint_plan plan_model(checkpoint_state& s, const model_state_view& v, const std::string& source);

/// Throws io_error naming `source` unless an optimizer tensor holds what an optimizer can
/// leave: finite values, and no negative one in a second moment ("exp_avg_sq",
/// "max_exp_avg_sq"), whose square root the next step takes.
XQ_DECL void check_optimizer_values(const tensor& t, const std::string& parameter, const char* name,
                                    const std::string& source);

/// Throws io_error naming `source` unless a parameter's saved value is one training can
/// leave: finite for a trainable parameter, and a batch norm's moving variance >= 0.
/// (Quantizer ranges are checked by their quantizers: an observer's unseen range is ±inf.)
XQ_DECL void check_parameter_values(const tensor& t, const parameter& p, bool trainable, const std::string& source);

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
          check_optimizer_values(t.second, names[i], name, source);
          return std::move(t.second);
        }
      throw argument_error(names[i], concat("optimizer state '", name, "'"),
                           concat("a checkpoint without it ", in_file(source)));
    };
    fill(out[i], slot, take);
  }
  return out;
}

XQ_DECL std::string optimizer_type_of(const adam& o);
XQ_DECL std::string optimizer_type_of(const sgd&);
XQ_DECL std::string optimizer_type_of(const bop&);
template <class... O>
std::string optimizer_type_of(const case_optimizer<O...>&) {
  return "case";
}

/// Throws argument_error naming `where` unless `c` holds state of `type` (the optimizer given).
XQ_DECL void check_optimizer_kind(const checkpoint_optimizer& c, const std::string& type, const std::string& source,
                                  const std::string& where);

/// Checks `c` against `o` (type, parameter names, state shapes) and returns what applies
/// it; `where` names the optimizer in errors ("optimizer", "optimizer #1"). One overload
/// per optimizer type: the checkpoint protocol (see the file comment).
XQ_DECL std::function<void()> plan_optimizer_state(checkpoint_optimizer& c, adam& o, const std::string& source,
                                                   const std::string& where);
XQ_DECL std::function<void()> plan_optimizer_state(checkpoint_optimizer& c, sgd& o, const std::string& source,
                                                   const std::string& where);
XQ_DECL std::function<void()> plan_optimizer_state(checkpoint_optimizer& c, bop& o, const std::string& source,
                                                   const std::string& where);

/// A case_optimizer: each member's state, planned by its own protocol.
template <class... O>
std::function<void()> plan_optimizer_state(checkpoint_optimizer& c, case_optimizer<O...>& o, const std::string& source,
                                           const std::string& where) {
  check_optimizer_kind(c, "case", source, where);
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
}

/// Whether optimizer type `O` has the checkpoint protocol: capture_optimizer(const O&) and
/// plan_optimizer_state(checkpoint_optimizer&, O&, source, where), found by
/// argument-dependent lookup (in O's namespace for a user's optimizer).
template <class O, class = void>
struct has_checkpoint_protocol : std::false_type {};
template <class O>
struct has_checkpoint_protocol<
    O, std::void_t<decltype(capture_optimizer(std::declval<const O&>())),
                   decltype(plan_optimizer_state(std::declval<checkpoint_optimizer&>(), std::declval<O&>(),
                                                 std::declval<const std::string&>(), std::declval<const std::string&>()))>>
    : std::true_type {};

template <class Optimizer>
constexpr void check_optimizer_type() {
  static_assert(has_checkpoint_protocol<Optimizer>::value,
                "xquant: this optimizer has no checkpoint protocol: xq::adam, adamw, sgd, bop and case_optimizers "
                "of them have one; give yours capture_optimizer(const O&) and plan_optimizer_state(xq::"
                "checkpoint_optimizer&, O&, source, where) in its namespace (docs/checkpoint_format.md, \"A user's "
                "optimizer\"), pass it non-const when loading, or pass none");
}

/// What the error names when a checkpoint has no optimizer state: the optimizer's type
/// when it says (optimizer_type_of found by argument-dependent lookup), else "optimizer".
template <class O, class = void>
struct has_optimizer_type_of : std::false_type {};
template <class O>
struct has_optimizer_type_of<O, std::void_t<decltype(optimizer_type_of(std::declval<const O&>()))>> : std::true_type {};
template <class O>
std::string optimizer_name(const O& o) {
  if constexpr (has_optimizer_type_of<O>::value) return optimizer_type_of(o);
  else return "optimizer";
}

template <class Optimizer>
std::function<void()> plan_optimizer(checkpoint_state& s, Optimizer& o, const std::string& source) {
  if (!s.optimizer)
    throw argument_error("optimizer",
                         concat(optimizer_name(o),
                                " state in the checkpoint (saved with save_checkpoint(path, model, optimizer))"),
                         concat("a checkpoint without optimizer state ", in_file(source)));
  return plan_optimizer_state(*s.optimizer, o, source, "optimizer");
}

template <class Model, class... Optimizer>
void restore_checkpoint(checkpoint_state state, Model& model, const std::string& source, Optimizer&... optimizer) {
  static_assert(sizeof...(Optimizer) <= 1, "xquant: load_checkpoint takes a model and at most one optimizer");
  (check_optimizer_type<Optimizer>(), ...);
  const model_state_view v = view_model(model);
  checkpoint_plan plan = plan_model(state, v, source);
  std::function<void()> apply_optimizer;
  ((apply_optimizer = plan_optimizer(state, optimizer, source)), ...);
  plan.apply_generators(source);
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

// ---- the checkpoint protocol of an optimizer, for a user's --------------------------------

/// Capturing a user's optimizer (its `capture_optimizer`): one slot per parameter of `o`
/// (`o.parameters()`, `o.state()` in the same order), keyed by the parameter's name;
/// `fill(o.state()[i], slot)` adds the state's tensors by name (and its step).
template <class Optimizer, class Fill>
void capture_optimizer_slots(checkpoint_optimizer& c, const Optimizer& o, Fill&& fill) {
  detail::ckpt::capture_slots(c, o, std::forward<Fill>(fill));
}

/// Restoring a user's optimizer (its `plan_optimizer_state`): the saved slots matched to
/// `params` by name, every check done before anything changes (each parameter has a slot,
/// no slot for another, each tensor the parameter's shape and finite); `fill(state, slot,
/// take)` builds one parameter's state, `take("name")` giving a checked tensor. Returns the
/// states in `params` order, for the function the protocol returns to move them in.
template <class State, class Fill>
std::vector<State> plan_optimizer_slots(checkpoint_optimizer& c, const std::vector<parameter_ptr>& params,
                                        const std::string& source, Fill fill) {
  return detail::ckpt::plan_slots<State>(c, params, source, fill);
}

/// Throws argument_error naming `where` unless the saved state `c` is of `type`.
inline void check_optimizer_state_type(const checkpoint_optimizer& c, const std::string& type,
                                       const std::string& source, const std::string& where) {
  detail::ckpt::check_optimizer_kind(c, type, source, where);
}

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

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/checkpoint.ipp"
#endif
