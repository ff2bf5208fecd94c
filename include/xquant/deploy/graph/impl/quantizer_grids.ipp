#pragma once
/// \file quantizer_grids.ipp
/// What deployment reads of a quantizer (deploy/graph/quantizer_grids.hpp).

#include <cmath>
#include <limits>

#include "../../../core/error.hpp"
#include "../../../core/mode.hpp"
#include "../../../core/tape.hpp"
#include "../../../kernels/channel_layout.hpp"
#include "../../../quantizers/approx_sign.hpp"
#include "../../../quantizers/fake_quantizer.hpp"
#include "../../../quantizers/ste_sign.hpp"
#include "../quantizer_grids.hpp"

namespace xq::deploy {

XQ_DECL quantization_grid grid_of(const quantizer_base& q, const tensor& x, const std::string& where) {
  if (const auto* f = dynamic_cast<const fake_quantizer*>(&q)) {
    const quantizer_config& c = f->config();
    const std::size_t channels =
        c.per_channel ? kernels::channel_layout::of(x.shape(), c.channel_axis, where.c_str()).channels : 1;
    return f->grid(channels);
  }
  if (dynamic_cast<const ste_sign*>(&q) || dynamic_cast<const approx_sign*>(&q)) {
    quantization_grid g;  // ±1: Larq's sign, x >= 0 gives +1
    g.scale = {1.0f};
    g.zero_point = {0};
    g.qmin = -1;
    g.qmax = 1;
    g.num_bits = 1;
    return g;
  }
  throw argument_error(where, "a quantizer with an integer or binary grid", q.describe() + " (it has no deployed form yet)");
}

XQ_DECL bool has_seen_data(const quantizer_base& q) {
  const auto* f = dynamic_cast<const fake_quantizer*>(&q);
  if (!f) return true;
  if (f->batches_seen() > 0) return true;
  // A range set or restored differs from the initial one.
  fake_quantizer fresh(f->config(), true);
  const vector a = f->min(), b = f->max(), c = fresh.min(), d = fresh.max();
  if (a.size() != c.size() || b.size() != d.size()) return true;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a(i) == c(i)) || !(b(i) == d(i))) return true;
  return false;
}

XQ_DECL bool is_binary(const quantization_grid& g) noexcept { return g.num_bits == 1 && g.qmin == -1 && g.qmax == 1; }

namespace detail {
XQ_DECL tensor inference_output(const quantizer_base& q, const tensor& x) {
  const no_grad nothing_recorded;
  const training_mode inference(false);
  return const_cast<quantizer_base&>(q)(var(x)).value();
}
}  // namespace detail

}  // namespace xq::deploy
