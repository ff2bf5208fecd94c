#pragma once
/// \file low_bit_format.ipp
/// low_bit_format's code (quantizers/low_bit_format.hpp).

#include <cstddef>
#include <string>

#include "../../core/error.hpp"
#include "../../numerics/float8_scaled.hpp"
#include "../../numerics/low_bit_float.hpp"
#include "../../numerics/mx_block.hpp"
#include "../../numerics/nvfp4_block.hpp"
#include "../../numerics/torchao_affine.hpp"
#include "../low_bit_format.hpp"

namespace xq {

namespace detail {
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;
}  // namespace detail

XQ_DECL int low_bit_format::axis() const noexcept {
  return visit_format(*this, detail::overloaded{[](no_low_bit_format) { return 0; }, [](const auto& s) { return s.axis; }});
}

XQ_DECL low_bit_format low_bit_format::with_axis(int a) const {
  low_bit_format f = *this;
  f.intx.axis = f.fp8.axis = f.mx.axis = f.nvfp4.axis = a;  // the unused specs' axes mean nothing
  return f;
}

XQ_DECL std::string describe(const low_bit_format& f) {
  return visit_format(f, detail::overloaded{[](no_low_bit_format) { return std::string(); },
                                       [](const low_bit::intx_spec& s) { return low_bit::describe(s); },
                                       [](const low_bit::fp8_spec& s) { return low_bit::describe(s); },
                                       [](const low_bit::mx_spec& s) { return low_bit::describe(s); },
                                       [](const low_bit::nvfp4_spec& s) { return low_bit::describe(s); }});
}

XQ_DECL int element_bits(const low_bit_format& f) {
  return visit_format(f,
      detail::overloaded{[](no_low_bit_format) { return 0; }, [](const low_bit::intx_spec& s) { return s.bits; },
                         [](const low_bit::fp8_spec&) { return 8; },
                         [](const low_bit::mx_spec& s) { return s.element.int8 ? 8 : low_bit::info(s.element.type).bits; },
                         [](const low_bit::nvfp4_spec&) { return 4; }});
}

XQ_DECL double bits_per_value(const low_bit_format& f, std::size_t axis_length) {
  const double row = double(axis_length ? axis_length : 1);
  return visit_format(f,
      detail::overloaded{[](no_low_bit_format) { return 0.0; },
                         [&](const low_bit::intx_spec& s) { return low_bit::bits_per_value(s, axis_length); },
                         [&](const low_bit::fp8_spec& s) {
                           return s.granularity == low_bit::fp8_granularity::per_row ? 8.0 + 32.0 / row : 8.0;
                         },
                         [](const low_bit::mx_spec& s) { return low_bit::bits_per_value(s); },
                         [](const low_bit::nvfp4_spec&) { return low_bit::nvfp4_bits_per_value(); }});
}

}  // namespace xq
