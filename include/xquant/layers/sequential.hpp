#pragma once
/// \file sequential.hpp
/// `xq::sequential<L...>`: layers called one after the other (Keras's Sequential),
/// a composite whose children are its layers, named after each layer's name (a
/// composite without one: after its type) and made unique Keras-style ("conv2d",
/// "conv2d_1", ...).

#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/children.hpp"
#include "../core/layer_traits.hpp"
#include "../core/model.hpp"
#include "../core/type_name.hpp"
#include "../core/var.hpp"

namespace xq {

template <class... Layers>
class sequential {
  static_assert(sizeof...(Layers) > 0, "xquant: a sequential needs at least one layer");

 public:
  sequential() : sequential(Layers{}...) {}
  explicit sequential(Layers... layers) : layers_(std::move(layers)...) { name_children(); }

  /// Calls each layer on the previous one's output.
  var operator()(const var& x) {
    return std::apply([&](auto&... l) { return chain(x, l...); }, layers_);
  }

  const std::string& name() const noexcept { return name_; }
  sequential& name(std::string n) {
    name_ = std::move(n);
    return *this;
  }
  /// The composite's own path (its children's paths start with it).
  void set_path(std::string p) { path_ = std::move(p); }
  const std::string& path() const noexcept { return path_; }

  auto children() noexcept {
    return std::apply([](auto&... l) { return std::tie(l...); }, layers_);
  }
  auto children() const noexcept {
    return std::apply([](const auto&... l) { return std::tie(l...); }, layers_);
  }
  std::vector<std::string> child_names() const { return names_; }

  /// The i-th layer.
  template <std::size_t I>
  auto& get() noexcept { return std::get<I>(layers_); }
  template <std::size_t I>
  const auto& get() const noexcept { return std::get<I>(layers_); }
  static constexpr std::size_t size() noexcept { return sizeof...(Layers); }

 private:
  template <class First, class... Rest>
  static var chain(const var& x, First& first, Rest&... rest) {
    if constexpr (sizeof...(Rest) == 0)
      return first(x);
    else
      return chain(first(x), rest...);
  }

  void name_children() {
    std::unordered_map<std::string, int> seen;
    names_.clear();
    std::apply(
        [&](auto&... l) {
          auto one = [&](auto& layer) {
            using child_type = std::decay_t<decltype(layer)>;
            std::string base;
            if constexpr (has_name_v<child_type>)
              base = layer.name();
            else
              base = detail::type_short_name<child_type>();
            int n = seen[base]++;
            names_.push_back(n == 0 ? base : base + "_" + std::to_string(n));
          };
          (one(l), ...);
        },
        layers_);
    set_paths(*this);
  }

  std::tuple<Layers...> layers_;
  std::vector<std::string> names_;
  std::string name_ = "sequential", path_ = "sequential";
};

template <class... Layers>
sequential(Layers...) -> sequential<Layers...>;

}  // namespace xq
