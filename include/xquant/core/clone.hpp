#pragma once
/// \file clone.hpp
/// `clone_model`: a deep copy of a model whose sharing graph matches the original's and
/// that shares nothing with it; and the parameter-slot protocol it walks.
///
/// Copying a model object copies its `parameter_ptr`s, so the copy still trains the
/// original's weights (that is what `quantize_model` wants, and what TF's `clone_model`
/// gets wrong the other way: it makes two variables out of one tied weight). A clone
/// gets new parameters instead, one per *original* parameter: where the original uses
/// one weight in two places (a tied embedding and projection, a reused block), the clone
/// uses one new weight in the same two places.
///
/// What a clone copies: every layer by its copy constructor (settings, names, paths,
/// quantizer configs and switches, a dropout's random state), and every parameter's
/// value, name and trainable flag — quantizer state (ranges, moving averages, learned
/// scales) included, since it lives in parameters. What it does not: gradients (the clone's parameters
/// start with none) and optimizer state (moments, step counts), which belongs to an
/// optimizer, not to a model: make a new optimizer over `trainable_parameters(clone)`.
///
/// \code
///   auto qat = xq::quantize_model(model, options, shape);
///   auto trial = xq::clone_model(qat);      // train `trial` without touching `qat`
/// \endcode
///
/// The protocol (what conv2d, dense, depthwise_conv2d, batch_norm, embedding,
/// tied_projection and the quantize wrappers provide; a user layer that holds a
/// `parameter_ptr` provides it too):
///   - `template <class F> void for_each_parameter_slot(F&& f)` calls `f(parameter_ptr&)`
///     on every `parameter_ptr` member the layer stores, null ones included (an absent
///     bias, an unbuilt layer), and also those it does not list in `parameters()`
///     (tied_projection's table). A pass may rebind the slots.
///   - a layer that shares a *link* object with another layer (an object that itself
///     points at parameters: `batch_norm_fold`) adds
///     `template <class F> void for_each_link_slot(F&& f)` calling
///     `f(std::shared_ptr<Link>& slot, &Link::param_a, &Link::param_b, ...)`: the slot
///     and the `parameter_ptr` members inside the link.
///   - a quantizer provides it too (quantizer_base declares it): its state parameters.
/// A layer that holds parameters and does not expose them makes `clone_model` throw
/// (rather than return a clone that silently trains the original's weights).

#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "../config.hpp"
#include "error.hpp"
#include "layer_traits.hpp"
#include "model.hpp"
#include "parameter.hpp"

namespace xq {

/// Calls `f(parameter_ptr&)` on each parameter slot of `object` (none when it has no
/// `for_each_parameter_slot`): how a wrapper forwards to the layer it holds.
template <class T, class F>
void visit_parameter_slots(T& object, F&& f) {
  if constexpr (has_parameter_slots_v<T>) object.for_each_parameter_slot(f);
}

/// Calls `f(link_slot, member pointers...)` on each link slot of `object` (none when it
/// has no `for_each_link_slot`).
template <class T, class F>
void visit_link_slots(T& object, F&& f) {
  if constexpr (has_link_slots_v<T>) object.for_each_link_slot(f);
}

namespace detail {

/// The parameters a layer shows the outside: `parameters()` and a weighted layer's
/// `kernel()` (its own or its float layer's), which is how a tied table is reached.
template <class L, class F>
void for_each_visible_parameter(L& l, F&& f) {
  if constexpr (has_parameters_v<L>)
    for (const auto& p : l.parameters()) f(p);
  if constexpr (has_kernel_v<L>) f(l.kernel());
  if constexpr (has_float_layer_v<L>) {
    using inner = std::remove_reference_t<decltype(l.float_layer())>;
    if constexpr (has_kernel_v<inner>) f(l.float_layer().kernel());
  }
}

/// One clone's map from the original's shared objects to the clone's.
class clone_map {
 public:
  /// Points `slot` at the clone of the parameter it points at (made on first sight).
  void rebind(parameter_ptr& slot);

  /// Points `slot` at the clone of the link it points at; a new link is a copy whose
  /// `members` (its parameter_ptrs) are rebound like any slot.
  template <class Link, class... Members>
  void rebind_link(std::shared_ptr<Link>& slot, Members... members) {
    static_assert((std::is_same_v<Members, parameter_ptr Link::*> && ...),
                  "xquant: for_each_link_slot must pass the link slot and then pointers to the "
                  "link's parameter_ptr members (&Link::gamma, ...)");
    if (!slot) return;
    auto found = links_.find(slot.get());
    if (found == links_.end()) {
      auto copy = std::make_shared<Link>(*slot);
      (rebind((*copy).*members), ...);
      found = links_.emplace(slot.get(), std::shared_ptr<void>(copy)).first;
    }
    slot = std::static_pointer_cast<Link>(found->second);
  }

  /// Whether `p` is one of this clone's parameters.
  bool made(const parameter* p) const { return made_.count(p) != 0; }

 private:
  std::unordered_map<const parameter*, parameter_ptr> parameters_;
  std::unordered_map<const void*, std::shared_ptr<void>> links_;
  std::unordered_set<const parameter*> made_;
};

}  // namespace detail

/// A deep copy of `model` with the same sharing graph and nothing shared with `model`:
/// each parameter (and batch-norm-fold link) of the original becomes exactly one new
/// one, used wherever the original was. Values, names, trainable flags and quantizer
/// state are copied; gradients and optimizer state are not (see the file comment).
/// Throws `xq::argument_error` naming the layer when a layer holds a parameter it does
/// not expose through `for_each_parameter_slot`.
template <class Model>
Model clone_model(const Model& model) {
  static_assert(std::is_copy_constructible_v<Model>,
                "xquant: clone_model starts from a copy of the model; make every layer of it copyable");
  Model copy(model);  // shares every parameter with `model` until rebound below
  detail::clone_map map;
  const auto rebind = [&map](parameter_ptr& slot) { map.rebind(slot); };
  const auto rebind_link = [&map](auto& slot, auto... members) { map.rebind_link(slot, members...); };
  for_each_layer(copy, [&](auto& l) {  // quantizers are children: their state is rebound too
    visit_parameter_slots(l, rebind);
    visit_link_slots(l, rebind_link);
  });
  // A layer without the protocol kept the original's parameter: refuse to return a
  // clone that would train the original's weights.
  for_each_layer(copy, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    detail::for_each_visible_parameter(l, [&](const parameter_ptr& p) {
      if (!p || map.made(p.get())) return;
      std::string where = "clone_model";
      if constexpr (has_path_v<L>) where += ": layer \"" + std::string(l.path()) + "\"";
      throw argument_error(where,
                           "every parameter_ptr the layer holds exposed by for_each_parameter_slot "
                           "(see xquant/core/clone.hpp)",
                           "parameter \"" + p->name() + "\", which the clone would share with the original");
    });
  });
  return copy;
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/clone.ipp"
#endif
