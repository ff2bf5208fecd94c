#pragma once
/// \file real_linear_op.ipp
/// The float linear op (deploy/engine/real_linear_op.hpp): xquant's own float convolution
/// and matrix products (layers/), the only thing of layers/ it uses.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../core/var.hpp"
#include "../../../kernels/padding.hpp"
#include "../../../layers/conv2d.hpp"
#include "../../../layers/dense.hpp"
#include "../../../layers/depthwise_conv2d.hpp"
#include "../../../layers/tied_projection.hpp"
#include "../detail/float_call_scope.hpp"
#include "../engine_kernels.hpp"
#include "../pooling_ops.hpp"
#include "../real_linear_op.hpp"

namespace xq::deploy {

XQ_DECL bool real_linear_op::unit_kernel() const noexcept {
  if (dense || depthwise || kernel.dimension() != 4) return false;
  for (float v : kernel)
    if (v != 1.0f && v != -1.0f && v != 0.0f) return false;
  return true;
}

XQ_DECL void real_linear_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  engine_tensor out = compute(values.at(inputs.at(0)), o);
  values[output] = std::move(out);
}

XQ_DECL engine_tensor real_linear_op::compute(const engine_tensor& x, const run_options& o) const {
  if (!o.reference_kernels && unit_kernel() && x.shape.size() == 4 && x.shape[3] == kernel.shape()[2]) {
    // A binarized stem: summed directly, the bits of the im2col + GEMM path below.
    conv2d_geometry cg;
    cg.strides = strides;
    cg.dilation = dilation;
    cg.padding = padding ? xq::padding::same : xq::padding::valid;
    const window2d w = resolve_window(path, x.shape, kernel.shape()[0], kernel.shape()[1], cg);  // checks the size
    const window_axis rows = resolve_axis(w.in_h, w.k_h, w.stride_h, w.dilation_h, cg.padding);
    const window_axis cols = resolve_axis(w.in_w, w.k_w, w.stride_w, w.dilation_w, cg.padding);
    window_geometry g;
    g.window = {w.k_h, w.k_w};
    g.strides = strides;
    g.dilation = dilation;
    g.pads = {rows.pad_before, cols.pad_before, rows.pad_after, cols.pad_after};
    const std::size_t f = kernel.shape()[3];
    engine_tensor out;
    const float* b = has_bias ? bias.data() : nullptr;
    if (pooled) {
      out.shape = {w.batch, pool.output_extent(w.out_h, 0), pool.output_extent(w.out_w, 1), f};
      out.real.resize(out.elements());
      unit_kernel_conv2d_max_pool_f32(x.real.data(), w.batch, w.in_h, w.in_w, w.channels, g, kernel.data(), f, b, pool,
                                      out.real.data());
    } else {
      out.shape = {w.batch, w.out_h, w.out_w, f};
      out.real.resize(out.elements());
      unit_kernel_conv2d_f32(x.real.data(), w.batch, w.in_h, w.in_w, w.channels, g, kernel.data(), f, b,
                             out.real.data());
    }
    return out;
  }
  tensor in = tensor::from_shape(x.shape);
  std::copy(x.real.begin(), x.real.end(), in.data());
  const detail::float_call_scope scope;
  const var xv(std::move(in)), kv(kernel), bv = has_bias ? var(bias) : var();
  const var* b = has_bias ? &bv : nullptr;
  var y;
  if (dense && transposed) {
    y = ops::matmul_transposed(xv, kv, b, path);
  } else if (dense) {
    y = ops::matmul_bias(xv, kv, b, path);
  } else {
    conv2d_geometry g;
    g.strides = strides;
    g.dilation = dilation;
    g.padding = padding ? xq::padding::same : xq::padding::valid;
    y = depthwise ? ops::depthwise_conv2d(xv, kv, b, g, path) : ops::conv2d(xv, kv, b, g, path);
  }
  engine_tensor out;
  out.shape.assign(y.value().shape().begin(), y.value().shape().end());
  out.real.assign(y.value().begin(), y.value().end());
  if (pooled && out.shape.size() == 4) {  // the fused max pool, as max_pool_op computes it
    const std::size_t oh = pool.output_extent(out.shape[1], 0), ow = pool.output_extent(out.shape[2], 1);
    engine_tensor p;
    p.shape = {out.shape[0], oh, ow, out.shape[3]};
    if (o.reference_kernels) {
      detail::max_pool_nhwc(out.real, out.shape, pool, oh, ow, p.real);  // pooling_ops.hpp
    } else {
      p.real.resize(p.elements());
      max_pool_nhwc_f32(out.real.data(), out.shape[0], out.shape[1], out.shape[2], out.shape[3], pool, p.real.data());
    }
    out = std::move(p);
  }
  return out;
}

XQ_DECL std::string real_linear_op::describe() const {
  std::ostringstream s;
  s << kind() << " kernel " << xq::detail::shape_string(kernel.shape()) << (has_bias ? " + bias" : "") << " (float32)";
  if (pooled) s << ", then max_pool2d " << deploy::describe(pool);
  return s.str();
}

XQ_DECL engine_tensor real_linear_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  const engine_tensor& x = expect_one(in, value_kind::real);
  const auto& k = kernel.shape();
  if (kernel.dimension() != (dense ? 2u : 4u))
    refuse(dense ? "a kernel of rank 2" : "a kernel of rank 4 (KH, KW, C, F)", xq::detail::shape_string(k));
  for (std::size_t d : k)
    if (!d) refuse("a kernel without zero-size axes", xq::detail::shape_string(k));
  if (dense) {
    if (depthwise || pooled) refuse("a dense op without depthwise or pooling", "either set");
    const std::size_t in_dim = transposed ? k[1] : k[0], out_dim = transposed ? k[0] : k[1];
    if (x.shape.size() < 2 || x.shape.back() != in_dim)
      refuse(xq::detail::concat("a real tensor with ", in_dim, " features on the last axis"), detail::tensor_string(x));
    if (has_bias && (bias.dimension() != 1 || bias.size() != out_dim))
      refuse(xq::detail::concat("a bias of ", out_dim, " values"), xq::detail::shape_string(bias.shape()));
    std::vector<std::size_t> shape = x.shape;
    shape.back() = out_dim;
    work = detail::saturating_product(detail::element_count(shape), in_dim);
    return detail::value_of(value_kind::real, shape);
  }
  if (transposed) refuse("a conv op without a transposed kernel", "transposed");
  if (x.shape.size() != 4 || x.shape[3] != k[2])
    refuse(xq::detail::concat("a rank-4 real tensor (N, H, W, ", k[2], ")"), detail::tensor_string(x));
  window_geometry g;
  g.window = {k[0], k[1]};
  g.strides = strides;
  g.dilation = dilation;
  check_window(g, where());
  if (padding != 0 && padding != 1) refuse("padding valid (0) or same (1)", xq::detail::concat(padding));
  const std::size_t out_c = depthwise ? k[2] * k[3] : k[3];
  if (has_bias && (bias.dimension() != 1 || bias.size() != out_c))
    refuse(xq::detail::concat("a bias of ", out_c, " values"), xq::detail::shape_string(bias.shape()));
  const xq::padding p = padding ? xq::padding::same : xq::padding::valid;
  const window_axis rows = resolve_axis(x.shape[1], k[0], strides[0], dilation[0], p);
  const window_axis cols = resolve_axis(x.shape[2], k[1], strides[1], dilation[1], p);
  if (!rows.out || !cols.out) refuse("an input at least as large as the window", detail::tensor_string(x));
  std::vector<std::size_t> shape = {x.shape[0], rows.out, cols.out, out_c};
  work = detail::saturating_product(detail::element_count(shape), depthwise ? k[0] * k[1] : k[0] * k[1] * k[2]);
  if (pooled) {
    if (depthwise) refuse("a conv op (not depthwise) before a fused max pool", "depthwise");
    check_window(pool, where() + " max pool");
    if (pool.dilation[0] != 1 || pool.dilation[1] != 1) refuse("a fused max pool without dilation", deploy::describe(pool));
    const std::size_t oh = pool.output_extent(rows.out, 0), ow = pool.output_extent(cols.out, 1);
    if (!oh || !ow) refuse("a pooling window that fits the convolution's output", deploy::describe(pool));
    shape = {x.shape[0], oh, ow, out_c};
  }
  return detail::value_of(value_kind::real, shape);
}

XQ_DECL void real_linear_op::encode(op_writer& w) const {
  w.tensor_value("kernel", kernel);
  encode_geometry(w);
}

XQ_DECL void real_linear_op::encode_geometry(op_writer& w) const {
  w.flag("depthwise", depthwise);
  w.flag("has_bias", has_bias);
  if (has_bias) w.tensor_value("bias", bias);
  w.sizes("strides", {strides[0], strides[1]});
  w.sizes("dilation", {dilation[0], dilation[1]});
  w.integer("padding", padding);
  w.number("pad_value", double(pad_value));
  w.flag("transposed", transposed);
  if (pooled) w.window("max_pool", pool);
}

XQ_DECL std::size_t real_linear_op::weight_bytes() const noexcept {
  return (kernel.size() + (has_bias ? bias.size() : 0)) * 4;
}

XQ_DECL std::unique_ptr<lowered_op> real_linear_op::decode(const std::string& kind, const op_reader& r) {
  auto op = std::make_unique<real_linear_op>();
  op->dense = kind == "real_dense";
  op->kernel = r.tensor_value("kernel", std::uint64_t(1) << 28);
  op->decode_geometry(r);
  return op;
}

XQ_DECL void real_linear_op::decode_geometry(const op_reader& r) {
  depthwise = r.flag("depthwise");
  has_bias = r.flag("has_bias");
  if (has_bias) bias = r.tensor_value("bias", std::uint64_t(1) << 28);
  const auto s = r.sizes("strides", 2, max_window_extent), d = r.sizes("dilation", 2, max_window_extent);
  if (s.size() != 2 || d.size() != 2) r.fail("expected two strides and two dilations");
  strides = {s[0], s[1]};
  dilation = {d[0], d[1]};
  padding = int(r.integer("padding", 0, 1));
  pad_value = float(r.number("pad_value"));
  transposed = r.flag("transposed");
  pooled = r.has("max_pool");
  if (pooled) pool = r.window("max_pool");
}

}  // namespace xq::deploy
