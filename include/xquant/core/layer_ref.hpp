#pragma once
/// \file layer_ref.hpp
/// A layer seen without its type: its address and one table of what a model walk can do
/// with it (`layer_ops`), one table per layer type.
///
/// Why: the walks every program runs — naming paths, listing parameters, the reachability
/// check, visiting quantizers — were templates over the model, so each translation unit
/// that held a model compiled each walk once per walk and per layer type, inlined at -O3
/// (about 0.3 s of CPU per walk for the Fashion-MNIST QAT model). Over `layer_ref` they are
/// ordinary functions (core/impl/model.ipp), compiled once with the library; a program only
/// instantiates each of its layer types' table, and each composite's child list once.
///
/// \code
///   xq::layer_ref r = xq::as_layer_ref(model);
///   xq::detail::for_each_layer_ref(r, [](xq::layer_ref l) { std::cout << l.ops->type() << "\n"; });
/// \endcode

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "children.hpp"
#include "layer_traits.hpp"
#include "parameter.hpp"
#include "type_name.hpp"

namespace xq {

struct layer_ops;

/// A layer by address and operations table; valid while the layer lives and is not moved.
struct layer_ref {
  void* object;
  const layer_ops* ops;
};

/// Receives a composite's children, in their order, with their names.
class child_sink {
 public:
  virtual void operator()(layer_ref child, const std::string& name) const = 0;

 protected:
  ~child_sink() = default;
};

/// What a walk can do with a layer of some type. A null function: the layer has no such
/// member (see docs/layer_contract.md for what each member means).
struct layer_ops {
  std::string (*type)();                                  ///< the type's short name
  std::size_t size;                                       ///< sizeof the layer
  bool has_parameters;                                    ///< has `parameters()`
  std::string (*name)(const void*);                       ///< `name()`
  std::string (*path)(const void*);                       ///< `path()`
  void (*set_path)(void*, std::string);                   ///< `set_path(p)`
  std::vector<parameter_ptr> (*parameters)(const void*);  ///< `parameters()`
  quantizer_base* (*quantizer)(void*);                    ///< a quantizer: itself as one
  const void* (*float_layer)(const void*);                ///< a wrapper: its float layer
  void (*children)(void*, const child_sink&);             ///< a composite: its children
};

namespace detail {

/// A lambda `f(layer_ref, const std::string&)` as a child_sink.
template <class F>
class child_sink_of final : public child_sink {
 public:
  explicit child_sink_of(F& f) : f_(f) {}
  void operator()(layer_ref child, const std::string& name) const override { f_(child, name); }

 private:
  F& f_;
};

/// The operations table of layer type `L`. Each member's body is guarded by the trait that
/// decides whether `make()` takes it, so that an explicit instantiation of the table
/// (transform/compiled_twins.hpp) compiles for every layer type; the guarded-out bodies are
/// never called.
template <class L>
struct layer_ops_for {
  static std::string name(const void* p) {
    if constexpr (has_name_v<L>) return std::string(static_cast<const L*>(p)->name());
    else return {};
  }
  static std::string path(const void* p) {
    if constexpr (has_path_v<L>) return std::string(static_cast<const L*>(p)->path());
    else return {};
  }
  static void set_path(void* p, std::string s) {
    if constexpr (has_set_path_v<L>) static_cast<L*>(p)->set_path(std::move(s));
  }
  static std::vector<parameter_ptr> parameters(const void* p) {
    if constexpr (has_parameters_v<L>) return static_cast<const L*>(p)->parameters();
    else return {};
  }
  static quantizer_base* quantizer(void* p) {
    if constexpr (is_quantizer_v<L>) return static_cast<L*>(p);
    else return nullptr;
  }
  static const void* float_layer(const void* p) {
    if constexpr (has_float_layer_v<L>) return &const_cast<L*>(static_cast<const L*>(p))->float_layer();
    else return nullptr;
  }
  static void children(void* p, const child_sink& sink);

  static constexpr layer_ops make() {
    layer_ops o{&type_short_name<L>, sizeof(L), has_parameters_v<L>, nullptr, nullptr, nullptr,
                nullptr,              nullptr,   nullptr,            nullptr};
    if constexpr (has_name_v<L>) o.name = &name;
    if constexpr (has_path_v<L>) o.path = &path;
    if constexpr (has_set_path_v<L>) o.set_path = &set_path;
    if constexpr (has_parameters_v<L>) o.parameters = &parameters;
    if constexpr (is_quantizer_v<L>) o.quantizer = &quantizer;
    if constexpr (has_float_layer_v<L>) o.float_layer = &float_layer;
    if constexpr (has_children_v<L>) o.children = &children;
    return o;
  }
  static inline const layer_ops table = make();
};

template <class L>
void layer_ops_for<L>::children(void* p, const child_sink& sink) {
  if constexpr (has_children_v<L>)
    for_each_child(*static_cast<L*>(p), [&](auto& child, const std::string& child_name) {
      using C = std::remove_const_t<std::remove_reference_t<decltype(child)>>;
      sink(layer_ref{const_cast<C*>(&child), &layer_ops_for<C>::table}, child_name);
    });
}

/// The children of `l` (none for a leaf), each passed to `f(layer_ref, name)`.
template <class F>
void for_each_child_ref(layer_ref l, F&& f) {
  if (l.ops->children) l.ops->children(l.object, child_sink_of<std::remove_reference_t<F>>(f));
}

/// `f(l)` for `l` and every layer under it, parents before their children.
template <class F>
void for_each_layer_ref(layer_ref l, F&& f) {
  f(l);
  for_each_child_ref(l, [&](layer_ref child, const std::string&) { for_each_layer_ref(child, f); });
}

/// Gives each child of `l` that has a path the path `prefix/<child name>` (a wrapper names
/// its quantizers after itself this way).
XQ_DECL void set_child_paths(layer_ref l, const std::string& prefix);

}  // namespace detail

/// `layer` as a layer_ref. A const layer is seen through its non-const type: pass it only
/// to walks that read (`detail::parameters`, `detail::layer_paths`).
template <class L>
layer_ref as_layer_ref(L& layer) noexcept {
  using T = std::remove_const_t<L>;
  return {const_cast<T*>(&layer), &detail::layer_ops_for<T>::table};
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/layer_ref.ipp"
#endif
