#pragma once
/// \file layout_ops.ipp
/// The layout ops and moves (deploy/engine/layout_ops.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../layout_ops.hpp"

namespace xq::deploy {

XQ_DECL void reshape_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  engine_tensor y = values.at(inputs.at(0));
  std::size_t per_sample = 1;
  for (std::size_t d : target) per_sample *= d;
  const std::size_t n = y.shape.empty() ? 0 : y.shape[0];
  if (y.kind == value_kind::bits || per_sample * n != y.elements())
    throw argument_error(path + " (reshape)", xq::detail::concat(per_sample, " elements per sample, not bits"),
                         xq::detail::concat(y.elements() / std::max<std::size_t>(n, 1), " per sample of a ",
                                        to_string(y.kind), " tensor"));
  y.shape = {n};
  y.shape.insert(y.shape.end(), target.begin(), target.end());
  values[output] = std::move(y);
}

XQ_DECL std::string reshape_op::describe() const {
  std::ostringstream s;
  s << "reshape to (N";
  for (std::size_t d : target) s << ", " << d;
  s << ")";
  return s.str();
}

XQ_DECL engine_tensor reshape_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 1, 1);
  const engine_tensor& x = *in[0];
  if (x.kind == value_kind::bits || x.shape.empty()) refuse("a real, integer or accumulator tensor", detail::tensor_string(x));
  if (target.empty() || target.size() > 7) refuse("a target shape of 1 to 7 axes", xq::detail::shape_string(target));
  std::uint64_t per_sample = 1, given = 1;
  for (std::size_t d : target) per_sample = detail::saturating_product(per_sample, d);
  for (std::size_t a = 1; a < x.shape.size(); ++a) given = detail::saturating_product(given, x.shape[a]);
  if (per_sample != given)
    refuse(xq::detail::concat(per_sample, " elements per sample (target ", xq::detail::shape_string(target), ")"),
           detail::tensor_string(x));
  std::vector<std::size_t> shape = {x.shape[0]};
  shape.insert(shape.end(), target.begin(), target.end());
  engine_tensor y = detail::value_of(x.kind, shape);
  y.set_grid(x.grid());
  work = detail::element_count(shape);
  return y;
}

XQ_DECL void reshape_op::encode(op_writer& w) const { w.sizes("target", target); }

XQ_DECL std::unique_ptr<lowered_op> reshape_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<reshape_op>();
  op->target = r.sizes("target", 7, std::uint64_t(1) << 31);
  return op;
}

XQ_DECL void concatenate_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const std::string where = path + " (concatenate)";
  if (inputs.empty()) throw argument_error(where, "at least one input", "none");
  const engine_tensor& first = values.at(inputs[0]);
  if (first.kind != value_kind::real && first.kind != value_kind::integer)
    throw argument_error(where, "real or integer inputs", to_string(first.kind));
  if (axis >= first.shape.size())
    throw argument_error(where, xq::detail::concat("inputs of rank above ", axis), xq::detail::concat(first.shape.size()));
  std::size_t outer = 1, inner = 1, along = 0;
  for (std::size_t d = 0; d < axis; ++d) outer *= first.shape[d];
  for (std::size_t d = axis + 1; d < first.shape.size(); ++d) inner *= first.shape[d];
  for (std::size_t k : inputs) {
    const engine_tensor& t = values.at(k);
    bool ok = t.kind == first.kind && t.shape.size() == first.shape.size();
    for (std::size_t d = 0; ok && d < t.shape.size(); ++d) ok = d == axis || t.shape[d] == first.shape[d];
    if (ok && t.kind == value_kind::integer)
      ok = t.scale == first.scale && t.zero_point == first.zero_point && t.qmin == first.qmin && t.qmax == first.qmax;
    if (!ok)
      throw argument_error(where, "inputs of one kind (integers on one grid) and matching shapes",
                           std::string("a ") + to_string(t.kind) + " input of another shape or grid");
    along += t.shape[axis];
  }
  engine_tensor y = first;
  y.shape[axis] = along;
  y.real.clear();
  y.integer.clear();
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t k : inputs) {
      const engine_tensor& t = values.at(k);
      const std::size_t width = t.shape[axis] * inner;
      if (t.kind == value_kind::real)
        y.real.insert(y.real.end(), t.real.begin() + std::ptrdiff_t(o * width), t.real.begin() + std::ptrdiff_t((o + 1) * width));
      else
        y.integer.insert(y.integer.end(), t.integer.begin() + std::ptrdiff_t(o * width),
                         t.integer.begin() + std::ptrdiff_t((o + 1) * width));
    }
  values[output] = std::move(y);
}

XQ_DECL std::string concatenate_op::describe() const { return xq::detail::concat("concatenate along axis ", axis); }

XQ_DECL engine_tensor concatenate_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 1, 256);
  const engine_tensor& first = *in[0];
  if (first.kind != value_kind::real && first.kind != value_kind::integer)
    refuse("real or integer inputs", detail::tensor_string(first));
  if (axis < 1 || axis >= first.shape.size())
    refuse(xq::detail::concat("an axis from 1 to ", first.shape.size() - 1, " (not the batch)"), xq::detail::concat(axis));
  std::vector<std::size_t> shape = first.shape;
  std::uint64_t along = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const engine_tensor& t = *in[k];
    bool ok = t.kind == first.kind && t.shape.size() == first.shape.size();
    for (std::size_t d = 0; ok && d < t.shape.size(); ++d) ok = d == axis || t.shape[d] == first.shape[d];
    if (ok && t.kind == value_kind::integer) ok = same_integer_grid(t.grid(), first.grid());
    if (!ok)
      refuse("inputs of one kind (integers on one grid) and one shape but along the axis, as " + detail::tensor_string(first),
             xq::detail::concat("input ", k, ": ", detail::tensor_string(t)));
    along += t.shape[axis];
  }
  if (along > (std::uint64_t(1) << 31)) refuse("at most 2^31 along the axis", xq::detail::concat(along));
  shape[axis] = std::size_t(along);
  engine_tensor y = detail::value_of(first.kind, shape);
  y.set_grid(first.grid());
  work = detail::element_count(shape);
  return y;
}

XQ_DECL void concatenate_op::encode(op_writer& w) const { w.size("axis", axis); }

XQ_DECL std::unique_ptr<lowered_op> concatenate_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<concatenate_op>();
  op->axis = r.size("axis", 16);
  return op;
}

// --- the layout functions' moves -------------------------------------------------------

XQ_DECL bool is_layout_move(const std::string& f, const std::vector<std::int64_t>& ints) noexcept {
  if (f == "upsampling2d") return ints.size() == 3 && ints[2] == 0;  // bilinear interpolates
  return f == "zero_padding2d" || f == "cropping2d" || f == "slice" || f == "transpose";
}

XQ_DECL std::vector<std::size_t> layout_shape(const std::vector<std::size_t>& shape, const std::string& f,
                                              const std::vector<std::int64_t>& ints, const std::string& where) {
  auto refuse = [&](const std::string& expected) {
    throw argument_error(where, expected, xq::detail::concat("a tensor of shape ", xq::detail::shape_string(shape)));
  };
  auto arg = [&](std::size_t k, std::int64_t lo, std::int64_t hi) {
    if (k >= ints.size() || ints[k] < lo || ints[k] > hi)
      throw argument_error(where, xq::detail::concat("argument ", k, " of ", f, " from ", lo, " to ", hi),
                           k < ints.size() ? xq::detail::concat(ints[k]) : std::string("none"));
    return std::size_t(ints[k]);
  };
  if (f == "zero_padding2d" || f == "cropping2d" || f == "upsampling2d") {
    if (shape.size() != 4) refuse("a rank-4 tensor (N, H, W, C)");
    if (f == "upsampling2d") {
      const std::size_t sh = arg(0, 1, 4096), sw = arg(1, 1, 4096);
      arg(2, 0, 1);
      return {shape[0], shape[1] * sh, shape[2] * sw, shape[3]};
    }
    const std::size_t top = arg(0, 0, 1 << 16), bottom = arg(1, 0, 1 << 16), left = arg(2, 0, 1 << 16), right = arg(3, 0, 1 << 16);
    if (f == "zero_padding2d") return {shape[0], shape[1] + top + bottom, shape[2] + left + right, shape[3]};
    if (top + bottom >= shape[1] || left + right >= shape[2]) refuse("an image larger than the cropping");
    return {shape[0], shape[1] - top - bottom, shape[2] - left - right, shape[3]};
  }
  if (f == "slice") {
    const std::size_t a = arg(0, 1, 15);
    if (a >= shape.size()) refuse(xq::detail::concat("a tensor with an axis ", a));
    const std::size_t begin = arg(1, 0, std::int64_t(shape[a]) - 1), end = arg(2, std::int64_t(begin) + 1, std::int64_t(shape[a]));
    std::vector<std::size_t> out = shape;
    out[a] = end - begin;
    return out;
  }
  if (f == "transpose") {
    if (ints.size() != shape.size() || ints.empty() || ints[0] != 0)
      refuse(xq::detail::concat("a permutation of the ", ints.size(), " axes that keeps the batch axis first"));
    std::vector<bool> seen(shape.size(), false);
    std::vector<std::size_t> out(shape.size());
    for (std::size_t i = 0; i < ints.size(); ++i) {
      const std::size_t p = arg(i, 0, std::int64_t(shape.size()) - 1);
      if (seen[p]) throw argument_error(where, "a permutation", xq::detail::concat("axis ", p, " twice"));
      seen[p] = true;
      out[i] = shape[p];
    }
    return out;
  }
  throw argument_error(where, "a layout function", "\"" + f + "\"");
}

namespace detail {

template <class T>
std::vector<T> moved(const std::vector<T>& x, const std::vector<std::size_t>& in, const std::vector<std::size_t>& out,
                     const std::string& f, const std::vector<std::int64_t>& ints) {
  std::vector<T> y(element_count(out), T(0));  // zero padding: 0, real 0 on a centred grid
  if (f == "zero_padding2d" || f == "cropping2d") {
    const std::size_t n = in[0], h = in[1], w = in[2], c = in[3], oh = out[1], ow = out[2];
    const std::size_t top = std::size_t(ints[0]), left = std::size_t(ints[2]);
    const bool pad = f == "zero_padding2d";
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t i = 0; i < (pad ? h : oh); ++i) {
        const T* from = x.data() + ((b * h + (pad ? i : i + top)) * w + (pad ? 0 : left)) * c;
        std::copy(from, from + (pad ? w : ow) * c, y.data() + ((b * oh + (pad ? i + top : i)) * ow + (pad ? left : 0)) * c);
      }
  } else if (f == "upsampling2d") {
    const std::size_t n = in[0], h = in[1], w = in[2], c = in[3], oh = out[1], ow = out[2];
    const std::size_t sh = std::size_t(ints[0]), sw = std::size_t(ints[1]);
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j) {
          const T* from = x.data() + ((b * h + i / sh) * w + j / sw) * c;
          std::copy(from, from + c, y.data() + ((b * oh + i) * ow + j) * c);
        }
  } else if (f == "slice") {
    const std::size_t a = std::size_t(ints[0]), begin = std::size_t(ints[1]);
    std::size_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < a; ++d) outer *= in[d];
    for (std::size_t d = a + 1; d < in.size(); ++d) inner *= in[d];
    const std::size_t run = out[a] * inner, stride = in[a] * inner;
    for (std::size_t o = 0; o < outer; ++o) std::copy_n(x.data() + o * stride + begin * inner, run, y.data() + o * run);
  } else {  // transpose: y[i_0, ..., i_r] = x[j] with j[perm[k]] = i_k
    const std::size_t r = in.size();
    std::vector<std::size_t> in_stride(r, 1), step(r), index(r, 0);
    for (std::size_t d = r - 1; d > 0; --d) in_stride[d - 1] = in_stride[d] * in[d];
    for (std::size_t k = 0; k < r; ++k) step[k] = in_stride[std::size_t(ints[k])];
    std::size_t from = 0;
    for (std::size_t e = 0; e < y.size(); ++e) {
      y[e] = x[from];
      for (std::size_t k = r; k-- > 0;) {  // the next output index, the input offset with it
        if (++index[k] < out[k]) {
          from += step[k];
          break;
        }
        from -= step[k] * (out[k] - 1);
        index[k] = 0;
      }
    }
  }
  return y;
}

}  // namespace detail

XQ_DECL engine_tensor move_elements(const engine_tensor& x, const std::string& f, const std::vector<std::int64_t>& ints,
                                   const std::string& where) {
  if (x.kind != value_kind::real && x.kind != value_kind::integer)
    throw argument_error(where, "a real or integer tensor", detail::tensor_string(x));
  engine_tensor y;
  y.kind = x.kind;
  y.set_grid(x.grid());
  y.shape = layout_shape(x.shape, f, ints, where);
  if (x.kind == value_kind::real) y.real = detail::moved(x.real, x.shape, y.shape, f, ints);
  else y.integer = detail::moved(x.integer, x.shape, y.shape, f, ints);
  return y;
}

}  // namespace xq::deploy
