#pragma once
/// \file onednn_conv.ipp
/// The code of kernels/onednn_conv.hpp: compiled by every translation unit that includes
/// it in header-only mode, once in <xquant/src.hpp> in separate mode (config.hpp).

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "../onednn_conv.hpp"

namespace xq::kernels::onednn {
namespace detail {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
constexpr auto f32 = dnnl::memory::data_type::f32;

/// The process's CPU engine (oneDNN's engines are cheap handles; one is enough).
inline const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// What a set of primitives is made for: the window, the filters, whether there is a bias,
/// and the thread count. oneDNN's kernels split their work for the thread count current
/// when the primitive is made and open their regions with that many threads whatever the
/// caller's count is later: a primitive made on two threads ran on two after
/// omp_set_num_threads(1) (kernels/thread_governor.hpp found it).
using conv_key = std::array<std::size_t, 17>;
inline conv_key key_of(const window2d& g, std::size_t f, bool bias) {
  return {g.batch,    g.in_h,  g.in_w,     g.channels, g.k_h,    g.k_w,
          g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, g.out_h, g.out_w,
          g.pad_top,  g.pad_left, f,          std::size_t(bias), std::size_t(max_threads())};
}

/// A kernel buffer in a primitive's layout, and the reorder that fills it from HWIO (or,
/// for a gradient, empties it into HWIO).
struct kernel_buffer {
  dnnl::memory blocked;
  dnnl::memory::desc hwio;
  dnnl::reorder move;
};

inline kernel_buffer make_kernel_buffer(const dnnl::memory::desc& blocked, const dnnl::memory::desc& hwio,
                                        bool to_hwio) {
  kernel_buffer k{dnnl::memory(blocked, cpu_engine()), hwio, {}};
  const dnnl::memory hwio_view(hwio, cpu_engine(), DNNL_MEMORY_NONE);
  k.move = to_hwio ? dnnl::reorder(k.blocked, hwio_view) : dnnl::reorder(hwio_view, k.blocked);
  return k;
}

/// The primitives of one geometry: forward made at once, the two backward ones when first
/// needed (an inference never makes them).
struct conv_primitives {
  std::mutex running;
  dnnl::memory::desc src, dst, hwio, bias;
  dims strides, dilation, pad_l, pad_r;
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_forward forward;
  kernel_buffer forward_kernel;
  std::optional<dnnl::convolution_backward_data> backward_data;
  std::optional<kernel_buffer> backward_data_kernel;
  std::optional<dnnl::convolution_backward_weights> backward_weights;
  std::optional<kernel_buffer> backward_weights_kernel;
  bool has_bias = false;
};

inline std::unique_ptr<conv_primitives> make_primitives(const window2d& g, std::size_t f, bool bias) {
  auto p = std::make_unique<conv_primitives>();
  const auto d = [](std::size_t v) { return static_cast<dnnl::memory::dim>(v); };
  // oneDNN's logical order is (N, C, H, W) and (O, I, H, W); the tags give the memory
  // order: nhwc and hwio are xquant's.
  p->src = dnnl::memory::desc({d(g.batch), d(g.channels), d(g.in_h), d(g.in_w)}, f32, tag::nhwc);
  p->dst = dnnl::memory::desc({d(g.batch), d(f), d(g.out_h), d(g.out_w)}, f32, tag::nhwc);
  p->hwio = dnnl::memory::desc({d(f), d(g.channels), d(g.k_h), d(g.k_w)}, f32, tag::hwio);
  const dnnl::memory::desc any_kernel({d(f), d(g.channels), d(g.k_h), d(g.k_w)}, f32, tag::any);
  p->has_bias = bias;
  if (bias) p->bias = dnnl::memory::desc({d(f)}, f32, tag::x);
  // oneDNN counts dilation from 0 (no gap) and takes the bottom / right padding that the
  // output size implies (use_onednn only sends geometries where it is not negative).
  p->strides = {d(g.stride_h), d(g.stride_w)};
  p->dilation = {d(g.dilation_h - 1), d(g.dilation_w - 1)};
  p->pad_l = {d(g.pad_top), d(g.pad_left)};
  const auto pad_r = [](std::size_t out, std::size_t stride, std::size_t k, std::size_t dil, std::size_t in,
                        std::size_t pad) {
    return static_cast<dnnl::memory::dim>((out - 1) * stride + (k - 1) * dil + 1) -
           static_cast<dnnl::memory::dim>(in + pad);
  };
  p->pad_r = {pad_r(g.out_h, g.stride_h, g.k_h, g.dilation_h, g.in_h, g.pad_top),
              pad_r(g.out_w, g.stride_w, g.k_w, g.dilation_w, g.in_w, g.pad_left)};
  const auto desc = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                           dnnl::algorithm::convolution_direct, p->src, any_kernel,
                                                           p->bias, p->dst, p->strides, p->dilation, p->pad_l,
                                                           p->pad_r)
                         : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                           dnnl::algorithm::convolution_direct, p->src, any_kernel,
                                                           p->dst, p->strides, p->dilation, p->pad_l, p->pad_r);
  p->forward_pd = dnnl::convolution_forward::primitive_desc(desc, cpu_engine());
  p->forward = dnnl::convolution_forward(p->forward_pd);
  p->forward_kernel = make_kernel_buffer(p->forward_pd.weights_desc(), p->hwio, false);
  return p;
}

inline void make_backward_data(conv_primitives& p) {
  const dnnl::memory::desc any_kernel(p.hwio.dims(), f32, tag::any);
  const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, p.src, any_kernel, p.dst,
                                                   p.strides, p.dilation, p.pad_l, p.pad_r);
  const dnnl::convolution_backward_data::primitive_desc pd(desc, cpu_engine(), p.forward_pd);
  p.backward_data.emplace(pd);
  p.backward_data_kernel.emplace(make_kernel_buffer(pd.weights_desc(), p.hwio, false));
}

inline void make_backward_weights(conv_primitives& p) {
  const dnnl::memory::desc any_kernel(p.hwio.dims(), f32, tag::any);
  const auto desc = p.has_bias ? dnnl::convolution_backward_weights::desc(
                                     dnnl::algorithm::convolution_direct, p.src, any_kernel, p.bias, p.dst,
                                     p.strides, p.dilation, p.pad_l, p.pad_r)
                               : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, p.src,
                                                                          any_kernel, p.dst, p.strides, p.dilation,
                                                                          p.pad_l, p.pad_r);
  const dnnl::convolution_backward_weights::primitive_desc pd(desc, cpu_engine(), p.forward_pd);
  p.backward_weights.emplace(pd);
  p.backward_weights_kernel.emplace(make_kernel_buffer(pd.diff_weights_desc(), p.hwio, true));
}

/// The primitives for a geometry, made on first use and kept for the process.
inline conv_primitives& primitives(const window2d& g, std::size_t f, bool bias) {
  static std::mutex mutex;
  static std::map<conv_key, std::unique_ptr<conv_primitives>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[key_of(g, f, bias)];
  if (!slot) slot = make_primitives(g, f, bias);
  return *slot;
}

/// A user buffer as oneDNN memory (no copy; oneDNN's handles are non-const).
inline dnnl::memory view(const dnnl::memory::desc& d, const float* p) {
  return dnnl::memory(d, cpu_engine(), const_cast<float*>(p));
}

}  // namespace detail

XQ_DECL void conv2d_forward(const window2d& g, std::size_t f, const float* x, const float* w, const float* bias,
                            float* y) {
  auto& p = detail::primitives(g, f, bias != nullptr);
  const std::lock_guard<std::mutex> lock(p.running);
  dnnl::stream s(detail::cpu_engine());
  dnnl::memory kernel = detail::view(p.hwio, w);
  p.forward_kernel.move.execute(s, kernel, p.forward_kernel.blocked);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, detail::view(p.src, x)},
                                             {DNNL_ARG_WEIGHTS, p.forward_kernel.blocked},
                                             {DNNL_ARG_DST, detail::view(p.dst, y)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, detail::view(p.bias, bias));
  p.forward.execute(s, args);
  s.wait();
}

XQ_DECL void conv2d_backward_data(const window2d& g, std::size_t f, const float* dy, const float* w, float* dx) {
  // The bias plays no part in the input gradient: the bias-free primitives serve both.
  auto& p = detail::primitives(g, f, false);
  const std::lock_guard<std::mutex> lock(p.running);
  if (!p.backward_data) detail::make_backward_data(p);
  dnnl::stream s(detail::cpu_engine());
  dnnl::memory kernel = detail::view(p.hwio, w);
  p.backward_data_kernel->move.execute(s, kernel, p.backward_data_kernel->blocked);
  p.backward_data->execute(s, {{DNNL_ARG_DIFF_DST, detail::view(p.dst, dy)},
                               {DNNL_ARG_WEIGHTS, p.backward_data_kernel->blocked},
                               {DNNL_ARG_DIFF_SRC, detail::view(p.src, dx)}});
  s.wait();
}

XQ_DECL void conv2d_backward_weights(const window2d& g, std::size_t f, const float* x, const float* dy, float* dw,
                                     float* db) {
  auto& p = detail::primitives(g, f, db != nullptr);
  const std::lock_guard<std::mutex> lock(p.running);
  if (!p.backward_weights) detail::make_backward_weights(p);
  dnnl::stream s(detail::cpu_engine());
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, detail::view(p.src, x)},
                                             {DNNL_ARG_DIFF_DST, detail::view(p.dst, dy)},
                                             {DNNL_ARG_DIFF_WEIGHTS, p.backward_weights_kernel->blocked}};
  if (db) args.emplace(DNNL_ARG_DIFF_BIAS, detail::view(p.bias, db));
  p.backward_weights->execute(s, args);
  dnnl::memory kernel_gradient = detail::view(p.hwio, dw);
  p.backward_weights_kernel->move.execute(s, p.backward_weights_kernel->blocked, kernel_gradient);
  s.wait();
}

XQ_DECL const char* forward_implementation(const window2d& g, std::size_t f, bool bias) {
  return detail::primitives(g, f, bias).forward_pd.impl_info_str();
}

}  // namespace xq::kernels::onednn
