#pragma once
/// \file op_registry.ipp
/// The registry of op decoders (deploy/engine/op_registry.hpp), starting with the engine's.

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../binary_ops.hpp"
#include "../constant_op.hpp"
#include "../correlation_op.hpp"
#include "../elementwise_ops.hpp"
#include "../float_function_ops.hpp"
#include "../gather_op.hpp"
#include "../integer_linear_op.hpp"
#include "../layout_ops.hpp"
#include "../low_bit_ops.hpp"
#include "../op_registry.hpp"
#include "../pooling_ops.hpp"
#include "../quantize_ops.hpp"
#include "../real_linear_op.hpp"

namespace xq::deploy {

namespace detail {

struct op_registry {
  std::mutex lock;
  std::map<std::string, op_decoder> decoders;

  op_registry() {
    // Each op family's kinds and its decoder (each decoder lives with its op).
    const std::pair<const char*, op_decoder> engine_ops[] = {
        {"quantize", &quantize_op::decode},
        {"dequantize", &dequantize_op::decode},
        {"conv2d", &integer_linear_op::decode},
        {"depthwise_conv2d", &integer_linear_op::decode},
        {"dense", &integer_linear_op::decode},
        {"sign", &sign_op::decode},
        {"binary_conv2d", &binary_linear_op::decode},
        {"binary_dense", &binary_linear_op::decode},
        {"real_conv2d", &real_linear_op::decode},
        {"real_dense", &real_linear_op::decode},
        {"max_pool2d", &max_pool_op::decode},
        {"integer_average_pool2d", &integer_average_pool_op::decode},
        {"relu", &relu_op::decode},
        {"clamp", &clamp_op::decode},
        {"batch_norm", &batch_norm_op::decode},
        {"integer_add", &integer_add_op::decode},
        {"integer_multiply", &integer_multiply_op::decode},
        {"rescale", &rescale_op::decode},
        {"reshape", &reshape_op::decode},
        {"concatenate", &concatenate_op::decode},
        {"gather", &gather_op::decode},
        {"constant", &constant_op::decode},
        {"correlation", &correlation_op::decode},
        {"low_bit_quantize", &low_bit_quantize_op::decode},
        {"low_bit_dense", &low_bit_linear_op::decode},
        {"low_bit_conv2d", &low_bit_linear_op::decode},
    };
    for (const auto& e : engine_ops) decoders[e.first] = e.second;
    for (const std::string& f : real_function_op::functions()) decoders[f] = &real_function_op::decode;
    for (const std::string& f : function_op::functions()) decoders[f] = &function_op::decode;
  }

  static op_registry& instance() {
    static op_registry r;
    return r;
  }
};

}  // namespace detail

XQ_DECL void register_op_decoder(const std::string& kind, op_decoder decode) {
  detail::op_registry& r = detail::op_registry::instance();
  const std::lock_guard<std::mutex> hold(r.lock);
  r.decoders[kind] = decode;
}

XQ_DECL op_decoder find_op_decoder(const std::string& kind) {
  detail::op_registry& r = detail::op_registry::instance();
  const std::lock_guard<std::mutex> hold(r.lock);
  const auto it = r.decoders.find(kind);
  return it == r.decoders.end() ? nullptr : it->second;
}

XQ_DECL std::vector<std::string> registered_op_kinds() {
  detail::op_registry& r = detail::op_registry::instance();
  const std::lock_guard<std::mutex> hold(r.lock);
  std::vector<std::string> kinds;
  for (const auto& kv : r.decoders) kinds.push_back(kv.first);
  return kinds;
}

}  // namespace xq::deploy
