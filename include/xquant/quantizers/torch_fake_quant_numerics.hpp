#pragma once
/// \file torch_fake_quant_numerics.hpp
/// `xq::torch_fake_quant_numerics`: PyTorch's operator (docs/semantics.md §5): the
/// observer's `calculate_qparams` on the range, then `fake_quantize_per_tensor_affine`
/// or `fake_quantize_per_channel_affine`; the backward is its cachemask gradient.
///
/// The grid a quantizer_config describes, as PyTorch observer options: qint8 (symmetric;
/// quant_min -127 when narrow) or quint8 (affine), int16 / uint16 beyond 8 bits, always
/// as an explicit [quant_min, quant_max] (the same as PyTorch's defaults at 8 bits,
/// reduce_range included). An unobserved range (+Inf / -Inf, or no channels yet) gives
/// PyTorch's neutral scale 1 and zero point 0.

#include <algorithm>
#include <cstdint>

#include "../numerics/torch_fake_quant.hpp"
#include "../numerics/torch_observers.hpp"
#include "quantizer_numerics.hpp"

namespace xq {

class torch_fake_quant_numerics final : public quantizer_numerics {
 public:
  static const torch_fake_quant_numerics& instance() {
    static const torch_fake_quant_numerics n;
    return n;
  }

  /// The observer options of the grid `c` describes (see the file comment).
  static torch::observer_options observer_options_for(const quantizer_config& c) {
    torch::observer_options o;
    const int b = c.num_bits;
    if (c.symmetric) {
      o.type = b <= 8 ? torch::dtype::qint8 : torch::dtype::int16;
      o.scheme = c.per_channel ? torch::qscheme::per_channel_symmetric : torch::qscheme::per_tensor_symmetric;
      o.quant_min = -(std::int64_t(1) << (b - 1)) + (c.narrow_range ? 1 : 0);
      o.quant_max = (std::int64_t(1) << (b - 1)) - 1;
    } else {
      o.type = b <= 8 ? torch::dtype::quint8 : torch::dtype::uint16;
      o.scheme = c.per_channel ? torch::qscheme::per_channel_affine : torch::qscheme::per_tensor_affine;
      o.quant_min = 0;
      o.quant_max = (std::int64_t(1) << b) - 1;
    }
    o.reduce_range = c.reduce_range;
    o.averaging_constant = float(c.averaging_constant);
    o.ch_axis = c.channel_axis;
    return o;
  }

  quantized_output apply(const quantizer_config& c, const tensor& x, const kernels::channel_layout& l, const vector& min,
                         const vector& max, bool with_gradient, const std::string& where) const override {
    const torch::observer_options o = observer_options_for(c);
    const torch::quant_range q =
        at(where, [&] { return torch::calculate_qmin_qmax(o.quant_min, o.quant_max, o.type, o.reduce_range); });
    if (!c.per_channel) {
      // Unobserved (+Inf / -Inf): calculate_qparams gives PyTorch's neutral scale 1, zero point 0.
      const torch::qparams p = at(where, [&] { return torch::calculate_qparams(min, max, o); });
      const float s = p.scale(0);
      const std::int64_t zp = p.zero_point(0);
      if (!with_gradient)
        return {at(where, [&] { return torch::fake_quantize_per_tensor_affine(x, s, zp, q.quant_min, q.quant_max); }), {}};
      auto r = at(where,
                  [&] { return torch::fake_quantize_per_tensor_affine_and_mask(x, s, zp, q.quant_min, q.quant_max); });
      return {std::move(r.y), masked_gradient(std::move(r.mask), false)};
    }
    torch::qparams p;
    if (min.size() == 0) {  // no batch yet: scale 1, zero point 0 for every channel
      p.scale = vector::from_shape({l.channels});
      std::fill(p.scale.begin(), p.scale.end(), 1.0f);
      p.zero_point = torch::index_vector::from_shape({l.channels});
      std::fill(p.zero_point.begin(), p.zero_point.end(), 0);
    } else {
      p = at(where, [&] { return torch::calculate_qparams(min, max, o); });
    }
    const long axis = c.channel_axis;
    if (!with_gradient)
      return {at(where,
                 [&] {
                   return torch::fake_quantize_per_channel_affine(x, p.scale, p.zero_point, axis, q.quant_min,
                                                                  q.quant_max);
                 }),
              {}};
    auto r = at(where, [&] {
      return torch::fake_quantize_per_channel_affine_and_mask(x, p.scale, p.zero_point, axis, q.quant_min, q.quant_max);
    });
    return {std::move(r.y), masked_gradient(std::move(r.mask), false)};
  }
};

}  // namespace xq
