#pragma once
/// \file integer_grids.hpp
/// What the engine's requantizing ops (elementwise_ops.hpp, correlation_op.hpp) share about
/// integer tensors on grids: reading an input on its grid, making an output on another,
/// saturating, checking an output grid, and the grid's fields in a file. Private to the
/// engine's ops.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../../../core/error.hpp"
#include "../lowered_op.hpp"
#include "../op_codec.hpp"

namespace xq::deploy::detail {

/// Input `k` of `op`: an integer tensor on a grid of scale `scale`, shaped as `like` (if given).
inline const engine_tensor& integer_input(const std::vector<engine_tensor>& values, const lowered_op& op, std::size_t k,
                                          float scale, const engine_tensor* like) {
  const engine_tensor& t = values.at(op.inputs.at(k));
  const std::string where = op.path + " (" + op.kind() + ")";
  if (t.kind != value_kind::integer)
    throw argument_error(where, xq::detail::concat("an integer input ", k), std::string("a ") + to_string(t.kind) + " one");
  if (t.scale != scale)
    throw argument_error(where, xq::detail::concat("input ", k, " on a grid of scale ", scale),
                         xq::detail::concat("scale ", t.scale));
  if (like && t.shape != like->shape)
    throw argument_error(where, "inputs of one shape " + xq::detail::shape_string(like->shape),
                         xq::detail::concat("input ", k, " of shape ", xq::detail::shape_string(t.shape)));
  return t;
}

/// An integer tensor on grid `g`, shaped as `like`, with room for its elements.
inline engine_tensor integer_output(const engine_tensor& like, const integer_grid& g) {
  engine_tensor y;
  y.kind = value_kind::integer;
  y.shape = like.shape;
  y.scale = g.scale;
  y.zero_point = g.zero_point;
  y.qmin = g.qmin;
  y.qmax = g.qmax;
  y.integer.resize(like.integer.size());
  return y;
}

inline std::int32_t saturate_int32(std::int64_t v) noexcept {
  return static_cast<std::int32_t>(std::max<std::int64_t>(std::numeric_limits<std::int32_t>::min(),
                                                          std::min<std::int64_t>(std::numeric_limits<std::int32_t>::max(), v)));
}

/// q + zero_point saturated to the grid, centred again.
inline std::int16_t saturate_centred(std::int64_t q, const integer_grid& g) noexcept {
  return static_cast<std::int16_t>(std::max<std::int64_t>(g.qmin, std::min<std::int64_t>(g.qmax, q + g.zero_point)) -
                                   g.zero_point);
}



/// Throws argument_error naming `where` unless `g` is an output grid the engine can write:
/// a finite positive scale, qmin <= qmax, its centred integers within int16.
inline void check_output_grid(const integer_grid& g, const std::string& where) {
  if (!(g.scale > 0.0f) || !std::isfinite(g.scale) || g.qmin > g.qmax || std::int64_t(g.qmax) - g.zero_point > 32767 ||
      std::int64_t(g.qmin) - g.zero_point < -32768)
    throw argument_error(where, "an output grid of finite positive scale whose centred integers fit int16", describe(g));
}

/// Inputs all integer tensors of one shape, input k on a grid of scale scales[k].
inline void check_integer_inputs(const std::vector<const engine_tensor*>& in, const std::vector<float>& scales,
                                 const std::string& where) {
  if (in.empty() || in.size() != scales.size())
    throw argument_error(where, xq::detail::concat(scales.size(), " inputs (one per input scale), at least one"),
                         xq::detail::concat(in.size()));
  for (std::size_t k = 0; k < in.size(); ++k) {
    const engine_tensor& t = *in[k];
    if (t.kind != value_kind::integer || t.shape != in[0]->shape || t.scale != scales[k])
      throw argument_error(where,
                           xq::detail::concat("integer inputs of one shape ", xq::detail::shape_string(in[0]->shape),
                                              ", input ", k, " on a grid of scale ", scales[k]),
                           xq::detail::concat("input ", k, ": ", tensor_string(t), t.kind == value_kind::integer
                                                                                          ? xq::detail::concat(" of scale ", t.scale)
                                                                                          : std::string()));
  }
}

inline integer_grid read_grid(const op_reader& r, const char* key) {
  const std::unique_ptr<op_reader> g = r.map(key);
  integer_grid out;
  out.scale = float(g->number("scale"));
  out.zero_point = std::int32_t(g->integer("zero_point", -65536, 65536));
  out.qmin = std::int32_t(g->integer("qmin", -32768, 65535));
  out.qmax = std::int32_t(g->integer("qmax", -32768, 65535));
  return out;
}

inline void write_grid(op_writer& w, const char* key, const integer_grid& g) {
  w.map(key, [&](op_writer& m) {
    m.number("scale", double(g.scale));
    m.integer("zero_point", g.zero_point);
    m.integer("qmin", g.qmin);
    m.integer("qmax", g.qmax);
  });
}


}  // namespace xq::deploy::detail
