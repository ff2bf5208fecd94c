#pragma once
/// \file checkpoint_hint.hpp
/// A compile-time pointer to where checkpoints are, for <xquant/xquant.hpp> (private).
///
/// Checkpoints are declared in <xquant/io/checkpoint.hpp> (also in <xquant/io.hpp>); the
/// umbrella leaves them out to stay within its compile budget (in header-only mode they
/// bring in nlohmann::json; in separate-compilation mode they added about 15% to the
/// umbrella, whose ratio is 1.36 of a 1.5 budget: tools/README.md). Code written when they
/// were reachable from the umbrella failed with "'save_checkpoint' is not a member of 'xq'"
/// and no hint. These overloads make such a call a static_assert that says which header to
/// include. They take the model by forwarding reference where the real functions take
/// `Model&`, so with <xquant/io/checkpoint.hpp> included the real ones are more specialized
/// and win (partial ordering prefers T& to T&&), and these are never instantiated.

#include <string>

namespace xq {

namespace detail {
template <class...>
inline constexpr bool checkpoint_hint_false = false;
}  // namespace detail

/// Not here: #include <xquant/io/checkpoint.hpp> (see the file comment).
template <class Model, class... Optimizer>
void save_checkpoint(const std::string&, Model&&, const Optimizer&...) {
  static_assert(detail::checkpoint_hint_false<Model, Optimizer...>,
                "xquant: save_checkpoint is declared in <xquant/io/checkpoint.hpp> (also in <xquant/io.hpp>), which "
                "<xquant/xquant.hpp> does not include: add #include <xquant/io/checkpoint.hpp> (it takes the model "
                "as a non-const lvalue)");
}

/// Not here: #include <xquant/io/checkpoint.hpp> (see the file comment).
template <class Model, class... Optimizer>
void load_checkpoint(const std::string&, Model&&, Optimizer&&...) {
  static_assert(detail::checkpoint_hint_false<Model, Optimizer...>,
                "xquant: load_checkpoint is declared in <xquant/io/checkpoint.hpp> (also in <xquant/io.hpp>), which "
                "<xquant/xquant.hpp> does not include: add #include <xquant/io/checkpoint.hpp> (it takes the model "
                "and the optimizers as non-const lvalues)");
}

}  // namespace xq
