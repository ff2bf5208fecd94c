#pragma once
/// \file float_call_scope.hpp
/// `xq::deploy::detail::float_call_scope`: while alive, the float functions of xquant that an
/// engine op calls (`xq::ops::conv2d`, `ops::softmax`, ...) record nothing: nothing on the
/// tape (no_grad), and no node in a graph trace the caller may have active (a parity pass
/// runs the engine while it traces the simulation). The engine's calls are part of its op,
/// not forward code: core/layer_call.hpp's function_body_scope says so to every function
/// with a layer form, whatever trace is active or not. Private to the engine's ops.

#include "../../../core/layer_call.hpp"
#include "../../../core/tape.hpp"

namespace xq::deploy::detail {

struct float_call_scope {
  const xq::no_grad nothing_recorded;
  const xq::detail::function_body_scope inside_the_op;
};

}  // namespace xq::deploy::detail
