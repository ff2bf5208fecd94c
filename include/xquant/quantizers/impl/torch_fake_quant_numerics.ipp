#pragma once
/// \file torch_fake_quant_numerics.ipp
/// torch_fake_quant_numerics' code (quantizers/torch_fake_quant_numerics.hpp).

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "../../numerics/torch_fake_quant.hpp"
#include "../../numerics/torch_observers.hpp"
#include "../torch_fake_quant_numerics.hpp"

namespace xq {

XQ_DECL const torch_fake_quant_numerics& torch_fake_quant_numerics::instance() {
  static const torch_fake_quant_numerics n;
  return n;
}

XQ_DECL torch::observer_options torch_fake_quant_numerics::observer_options_for(const quantizer_config& c) {
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

XQ_DECL quantized_output torch_fake_quant_numerics::apply(const quantizer_config& c, const tensor& x,
                                                          const kernels::channel_layout& l, const vector& min,
                                                          const vector& max, bool with_gradient,
                                                          const std::string& where) const {
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

XQ_DECL quantization_grid torch_fake_quant_numerics::grid(const quantizer_config& c, std::size_t channels,
                                                          const vector& min, const vector& max,
                                                          const std::string& where) const {
  const torch::observer_options o = observer_options_for(c);
  const torch::quant_range q =
      at(where, [&] { return torch::calculate_qmin_qmax(o.quant_min, o.quant_max, o.type, o.reduce_range); });
  quantization_grid g;
  g.num_bits = c.num_bits;
  g.per_channel = c.per_channel;
  g.channel_axis = c.channel_axis;
  g.qmin = std::int32_t(q.quant_min);
  g.qmax = std::int32_t(q.quant_max);
  g.rounding.op = rounding_operator::torch_affine;  // apply's integer zero points
  const std::size_t n = c.per_channel ? channels : 1;
  if (c.per_channel && min.size() == 0) {  // no batch yet: scale 1, zero point 0 (as apply)
    g.scale.assign(n, 1.0f);
    g.zero_point.assign(n, 0);
    return g;
  }
  const torch::qparams p = at(where, [&] { return torch::calculate_qparams(min, max, o); });
  if (p.scale.size() != n)
    throw argument_error(where, detail::concat(n, " range values"), detail::concat(p.scale.size()));
  for (std::size_t i = 0; i < n; ++i) {
    g.scale.push_back(p.scale(i));
    g.zero_point.push_back(std::int32_t(p.zero_point(i)));
  }
  return g;
}

}  // namespace xq
