#pragma once
/// \file low_bit_format_numerics.ipp
/// A low-bit format as a fake quantizer runs it (quantizers/low_bit_format_numerics.hpp).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../fp8_quantizer.hpp"
#include "../intx_quantizer.hpp"
#include "../low_bit_format_numerics.hpp"
#include "../mx_quantizer.hpp"
#include "../nvfp4_quantizer.hpp"

namespace xq {

namespace detail {

/// The quantizer class that runs a spec type.
template <class Spec> struct format_quantizer;
template <> struct format_quantizer<low_bit::intx_spec> { using type = intx_quantizer; };
template <> struct format_quantizer<low_bit::fp8_spec> { using type = fp8_quantizer; };
template <> struct format_quantizer<low_bit::mx_spec> { using type = mx_quantizer; };
template <> struct format_quantizer<low_bit::nvfp4_spec> { using type = nvfp4_quantizer; };

template <class Q>
quantized_output run_format(const typename Q::spec_type& s, const var& x, bool record, const std::string& where) {
  std::shared_ptr<std::vector<unsigned char>> mask;
  if (record && Q::uses_mask) mask = std::make_shared<std::vector<unsigned char>>(x.value().size());
  low_bit_state st;
  quantized_output out;
  out.y = Q::forward_observing(s, x.value(), st, mask ? reinterpret_cast<bool*>(mask->data()) : nullptr, where);
  if (!record) return out;
  if constexpr (Q::identity_gradient) {
    out.input_gradient = [](const tensor& dy) { return tensor(dy); };
  } else {
    out.input_gradient = [s, x, st = std::move(st), mask](const tensor& dy) {
      return Q::input_gradient(s, x.value(), dy, st, mask ? reinterpret_cast<const bool*>(mask->data()) : nullptr);
    };
  }
  return out;
}

XQ_DECL quantized_output format_forward(const low_bit_format& f, const var& x, bool record, const std::string& where) {
  return visit_format(f, [&](const auto& s) -> quantized_output {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, no_low_bit_format>) {
          throw argument_error(where, "a low-bit format", "none");
        } else {
          return run_format<typename format_quantizer<S>::type>(s, x, record, where);
        }
      });
}

XQ_DECL quantization_grid format_grid(const low_bit_format& f, const tensor& x, const std::string& where,
                                      tensor* output) {
  return visit_format(f, [&](const auto& s) -> quantization_grid {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, no_low_bit_format>) {
          throw argument_error(where, "a low-bit format", "none");
        } else {
          using Q = typename format_quantizer<S>::type;
          low_bit_state st;
          tensor y = Q::forward_observing(s, x, st, nullptr, where);
          if (output) *output = std::move(y);
          return Q::grid(s, x.shape(), st, where);
        }
      });
}

}  // namespace detail

XQ_DECL bool format_accepts(const low_bit_format& f, std::size_t axis_length) {
  if (!f || axis_length == 0) return true;
  try {
    detail::format_forward(f.with_axis(-1), var(tensor::from_shape({1, axis_length})), false, "format_accepts");
  } catch (const argument_error&) {
    return false;
  }
  return true;
}

XQ_DECL void validate(const low_bit_format& f, const std::string& where) {
  try {
    if (const auto* s = f.get_if<low_bit::intx_spec>(); s && s->range_learning) {
      if (s->scheme != low_bit::intx_scheme::intx_symmetric)
        throw argument_error(where, "range learning on intx_symmetric groups (torchao's weights)", low_bit::to_string(s->scheme));
      low_bit::intx_spec dynamic = *s;  // the rest of the spec as its quantizer checks it
      dynamic.range_learning = false;
      (void)intx_quantizer(dynamic);
      return;
    }
    visit_format(f, [](const auto& s) {
          using S = std::decay_t<decltype(s)>;
          if constexpr (!std::is_same_v<S, no_low_bit_format>) (void)typename detail::format_quantizer<S>::type(s);
        });
  } catch (const argument_error& e) {
    throw argument_error(where, e.expected(), e.given());
  }
}

}  // namespace xq
