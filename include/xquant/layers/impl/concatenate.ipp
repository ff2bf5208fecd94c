#pragma once
/// \file concatenate.ipp
/// concatenate's code (layers/concatenate.hpp).

#include <algorithm>

#include "../concatenate.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(concatenate)

namespace ops {

XQ_DECL var concatenate(const std::vector<var>& inputs, int axis,
                        const std::string& path) {
  if (inputs.empty()) throw argument_error(path, "at least one input", "none");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw argument_error(path, detail::concat("a defined var as input ", i), "an empty var");
  const auto& s0 = inputs[0].shape();
  const long rank = static_cast<long>(s0.size());
  if (axis >= rank || axis < -rank)
    throw shape_error(
        path,
        detail::concat("inputs of rank at least ", axis < 0 ? -static_cast<long>(axis) : axis + 1L,
                       " to concatenate along axis ", axis),
        detail::shape_string(s0));
  const std::size_t ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    const auto& sk = inputs[k].shape();
    bool ok = sk.size() == s0.size();
    for (std::size_t i = 0; ok && i < s0.size(); ++i) ok = i == ax || sk[i] == s0[i];
    if (!ok)
      throw shape_error(path,
                        detail::concat("input ", k, " of shape ", detail::shape_string_except(s0, ax),
                                       " (input 0's shape on every axis but ", ax, ")"),
                        detail::shape_string(sk));
  }

  // Each input is `outer` blocks of `width[k]` contiguous values; the output
  // interleaves them block by block.
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < ax; ++i) outer *= s0[i];
  for (std::size_t i = ax + 1; i < s0.size(); ++i) inner *= s0[i];
  std::vector<std::size_t> width(inputs.size());
  std::size_t total = 0, along = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    width[k] = inputs[k].shape()[ax] * inner;
    total += width[k];
    along += inputs[k].shape()[ax];
  }
  tensor::shape_type y_shape = s0;
  y_shape[ax] = along;
  tensor y = tensor::from_shape(y_shape);
  {
    float* yp = y.data();
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const float* src = inputs[k].value().data() + o * width[k];
        yp = std::copy(src, src + width[k], yp);
      }
  }
  var out = make_result(std::move(y), needs_grad(inputs), [inputs, width, outer, total](const tensor& dy) {
    std::size_t offset = 0;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (inputs[k].requires_grad()) {
        tensor dx = tensor::from_shape(inputs[k].shape());
        float* dxp = dx.data();
        for (std::size_t o = 0; o < outer; ++o) {
          const float* src = dy.data() + o * total + offset;
          dxp = std::copy(src, src + width[k], dxp);
        }
        add_grad(inputs[k], std::move(dx));
      }
      offset += width[k];
    }
  });
  return detail::traced_function("concatenate", layer_role::merge, inputs, std::move(out));
}

}  // namespace ops

XQ_DECL var concatenate::call(const var& a, const var& b) const { return ops::concatenate({a, b}, axis_, path()); }

XQ_DECL var concatenate::call(const std::vector<var>& inputs) const { return ops::concatenate(inputs, axis_, path()); }

}  // namespace xq
