#pragma once
/// \file layer.hpp
/// The base of xquant's leaf layers: a local name and a path.
///
/// The layer contract (what `sequential`, `set_paths`, `fit` and `quantize` rely on):
///  - a leaf layer derives from `xq::layer<Self>`, lists its parameters in
///    `parameters()` (null entries are ignored: an absent bias, an unbuilt layer),
///    and is called as `var operator()(const var&)` (merge layers: two vars or a
///    `std::vector<var>`);
///  - a composite layer lists its children with `XQ_CHILDREN(a, b, ...)` and writes
///    only its forward code; it needs no base class.
///  - a layer builds its parameters on its first call (from the input's shape, as
///    Keras layers do) or on `xq::build(model, input_shape)`.

#include <string>
#include <utility>
#include <vector>

#include "parameter.hpp"

namespace xq {

/// CRTP base of leaf layers: `Self` gets `name()`, `name("new")` (chainable),
/// `path()` and `set_path`.
template <class Self>
class layer {
 public:
  /// The layer's own name ("conv2d" until renamed).
  const std::string& name() const noexcept { return name_; }
  /// Renames the layer (chainable: `xq::conv2d(32, 3).name("stem")`).
  Self& name(std::string n) {
    name_ = std::move(n);
    path_ = name_;
    return static_cast<Self&>(*this);
  }
  /// The full path in its model ("block_1/conv"); the name until `set_paths` ran.
  const std::string& path() const noexcept { return path_; }
  /// Sets the path and renames the parameters after it.
  void set_path(std::string p) {
    path_ = std::move(p);
    for (const auto& param : static_cast<Self&>(*this).parameters())
      if (param) param->set_owner_path(path_);
  }

 protected:
  explicit layer(std::string default_name) : name_(default_name), path_(std::move(default_name)) {}
  /// Called by a layer when it creates its parameters, so they carry its path.
  void name_parameters() { set_path(path_); }

 private:
  std::string name_, path_;
};

}  // namespace xq
