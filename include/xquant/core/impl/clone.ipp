#pragma once
/// \file clone.ipp
/// clone_map's code (core/clone.hpp).

#include <memory>
#include <utility>

#include "../clone.hpp"

namespace xq::detail {

XQ_DECL void clone_map::rebind(parameter_ptr& slot) {
  if (!slot) return;
  auto found = parameters_.find(slot.get());
  if (found == parameters_.end()) {
    auto copy = std::make_shared<parameter>(*slot);
    copy->zero_grad();  // gradients belong to a step of the original, not to its state
    made_.insert(copy.get());
    found = parameters_.emplace(slot.get(), std::move(copy)).first;
  }
  slot = found->second;
}

}  // namespace xq::detail
