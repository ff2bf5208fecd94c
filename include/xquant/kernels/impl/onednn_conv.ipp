#pragma once
/// \file onednn_conv.ipp
/// The code of kernels/onednn_conv.hpp: compiled by every translation unit that includes
/// it in header-only mode, once in <xquant/src.hpp> in separate mode (config.hpp).
///
/// Written on oneDNN's C API (dnnl.h): its C++ header (dnnl.hpp) took 1.5 s to parse in
/// every translation unit that includes conv2d.hpp, the C header 0.04 s.

#include <array>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <oneapi/dnnl/dnnl.h>

#include "../onednn_conv.hpp"

namespace xq::kernels::onednn {
namespace detail {

/// Throws xq::error naming what oneDNN refused.
inline void check(dnnl_status_t status, const char* what) {
  if (status != dnnl_success)
    throw xq::error("xq::kernels::onednn: " + std::string(what) + " failed (dnnl_status_t " +
                    std::to_string(static_cast<int>(status)) + ")");
}

// Owners of oneDNN's handles.
struct pd_deleter {
  void operator()(dnnl_primitive_desc_t p) const { dnnl_primitive_desc_destroy(p); }
};
struct primitive_deleter {
  void operator()(dnnl_primitive_t p) const { dnnl_primitive_destroy(p); }
};
struct memory_deleter {
  void operator()(dnnl_memory_t m) const { dnnl_memory_destroy(m); }
};
struct stream_deleter {
  void operator()(dnnl_stream_t s) const { dnnl_stream_destroy(s); }
};
using pd_ptr = std::unique_ptr<dnnl_primitive_desc, pd_deleter>;
using primitive_ptr = std::unique_ptr<dnnl_primitive, primitive_deleter>;
using memory_ptr = std::unique_ptr<dnnl_memory, memory_deleter>;
using stream_ptr = std::unique_ptr<dnnl_stream, stream_deleter>;

/// The process's CPU engine (made once, kept to the end).
inline dnnl_engine_t cpu_engine() {
  static const dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    check(dnnl_engine_create(&e, dnnl_cpu, 0), "creating the CPU engine");
    return e;
  }();
  return engine;
}

inline dnnl_memory_desc_t memory_desc(std::initializer_list<dnnl_dim_t> dims, dnnl_format_tag_t tag) {
  dnnl_memory_desc_t md;
  dnnl_dims_t shape = {};
  int n = 0;
  for (dnnl_dim_t v : dims) shape[n++] = v;
  check(dnnl_memory_desc_init_by_tag(&md, n, shape, dnnl_f32, tag), "describing a tensor");
  return md;
}

inline pd_ptr make_pd(const dnnl_convolution_desc_t& desc, const_dnnl_primitive_desc_t hint, const char* what) {
  dnnl_primitive_desc_t pd = nullptr;
  check(dnnl_primitive_desc_create(&pd, &desc, nullptr, cpu_engine(), hint), what);
  return pd_ptr(pd);
}

inline primitive_ptr make_primitive(const_dnnl_primitive_desc_t pd, const char* what) {
  dnnl_primitive_t p = nullptr;
  check(dnnl_primitive_create(&p, pd), what);
  return primitive_ptr(p);
}

/// A memory object on `data` (no copy; DNNL_MEMORY_ALLOCATE: oneDNN's own buffer).
inline memory_ptr make_memory(const dnnl_memory_desc_t& md, void* data) {
  dnnl_memory_t m = nullptr;
  check(dnnl_memory_create(&m, &md, cpu_engine(), data), "wrapping a buffer");
  return memory_ptr(m);
}

/// What a set of primitives is made for: the window, the filters, whether there is a bias,
/// and the thread count. oneDNN's kernels split their work for the thread count current
/// when the primitive is made and open their regions with that many threads whatever the
/// caller's count is later: a primitive made on two threads ran on two after
/// omp_set_num_threads(1) (kernels/thread_governor.hpp found it).
using conv_key = std::array<std::size_t, 17>;
inline conv_key key_of(const window2d& g, std::size_t f, bool bias, int threads) {
  return {g.batch,    g.in_h,  g.in_w,     g.channels, g.k_h,    g.k_w,
          g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, g.out_h, g.out_w,
          g.pad_top,  g.pad_left, f,          std::size_t(bias), std::size_t(threads)};
}

/// The threads a convolution gets: one below XQ_GEMM_PARALLEL_THRESHOLD multiply-adds (the
/// GEMM it computes: out pixels x filters x patch), as a GEMM; else max_threads(), at most
/// the idle cores (kernels/idle_cores.hpp). oneDNN threads every primitive it runs, and on
/// a small net (8 and 16 filters on 28x28 images, batch 64) two threads made predict 1.4x
/// and fit 1.2x slower than one on a quiet machine (issue 34).
inline int conv_threads(const window2d& g, std::size_t f) {
  const double macs = double(g.out_pixels()) * double(f) * double(g.patch_size());
  return macs >= double(XQ_GEMM_PARALLEL_THRESHOLD) ? max_threads() : 1;
}

/// A kernel buffer in a primitive's layout, and the reorder that fills it from HWIO (or,
/// for a gradient, empties it into HWIO).
struct kernel_buffer {
  memory_ptr blocked;
  pd_ptr move_pd;
  primitive_ptr move;
};

inline kernel_buffer make_kernel_buffer(const dnnl_memory_desc_t& blocked, const dnnl_memory_desc_t& hwio,
                                        bool to_hwio) {
  kernel_buffer k;
  k.blocked = make_memory(blocked, DNNL_MEMORY_ALLOCATE);
  dnnl_primitive_desc_t pd = nullptr;
  check(to_hwio ? dnnl_reorder_primitive_desc_create(&pd, &blocked, cpu_engine(), &hwio, cpu_engine(), nullptr)
                : dnnl_reorder_primitive_desc_create(&pd, &hwio, cpu_engine(), &blocked, cpu_engine(), nullptr),
        "making a kernel reorder");
  k.move_pd = pd_ptr(pd);
  k.move = make_primitive(pd, "making a kernel reorder");
  return k;
}

/// The primitives of one geometry: forward made at once, the two backward ones when first
/// needed (an inference never makes them).
struct conv_primitives {
  std::mutex running;  ///< held while the primitives run: the stream and kernel buffers are theirs
  stream_ptr stream;
  dnnl_memory_desc_t src, dst, hwio, any_kernel, bias;
  dnnl_dims_t strides, dilation, pad_l, pad_r;
  bool has_bias = false;
  pd_ptr forward_pd;
  primitive_ptr forward;
  kernel_buffer forward_kernel;
  pd_ptr backward_data_pd;
  primitive_ptr backward_data;
  kernel_buffer backward_data_kernel;
  pd_ptr backward_weights_pd;
  primitive_ptr backward_weights;
  kernel_buffer backward_weights_kernel;
};

inline std::unique_ptr<conv_primitives> make_primitives(const window2d& g, std::size_t f, bool bias) {
  auto p = std::make_unique<conv_primitives>();
  dnnl_stream_t stream = nullptr;
  check(dnnl_stream_create(&stream, cpu_engine(), dnnl_stream_default_flags), "creating a stream");
  p->stream.reset(stream);
  const auto d = [](std::size_t v) { return static_cast<dnnl_dim_t>(v); };
  // oneDNN's logical order is (N, C, H, W) and (O, I, H, W); the tags give the memory
  // order: nhwc and hwio are xquant's. `any` lets the primitive pick the kernel's layout.
  p->src = memory_desc({d(g.batch), d(g.channels), d(g.in_h), d(g.in_w)}, dnnl_nhwc);
  p->dst = memory_desc({d(g.batch), d(f), d(g.out_h), d(g.out_w)}, dnnl_nhwc);
  p->hwio = memory_desc({d(f), d(g.channels), d(g.k_h), d(g.k_w)}, dnnl_hwio);
  p->any_kernel = memory_desc({d(f), d(g.channels), d(g.k_h), d(g.k_w)}, dnnl_format_tag_any);
  p->has_bias = bias;
  if (bias) p->bias = memory_desc({d(f)}, dnnl_x);
  // oneDNN counts dilation from 0 (no gap) and takes the bottom / right padding that the
  // output size implies (use_onednn only sends geometries where it is not negative).
  const auto pad_r = [](std::size_t out, std::size_t stride, std::size_t k, std::size_t dil, std::size_t in,
                        std::size_t pad) {
    return static_cast<dnnl_dim_t>((out - 1) * stride + (k - 1) * dil + 1) - static_cast<dnnl_dim_t>(in + pad);
  };
  p->strides[0] = d(g.stride_h), p->strides[1] = d(g.stride_w);
  p->dilation[0] = d(g.dilation_h - 1), p->dilation[1] = d(g.dilation_w - 1);
  p->pad_l[0] = d(g.pad_top), p->pad_l[1] = d(g.pad_left);
  p->pad_r[0] = pad_r(g.out_h, g.stride_h, g.k_h, g.dilation_h, g.in_h, g.pad_top);
  p->pad_r[1] = pad_r(g.out_w, g.stride_w, g.k_w, g.dilation_w, g.in_w, g.pad_left);
  dnnl_convolution_desc_t desc;
  check(dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_training, dnnl_convolution_direct, &p->src,
                                                   &p->any_kernel, bias ? &p->bias : nullptr, &p->dst, p->strides,
                                                   p->dilation, p->pad_l, p->pad_r),
        "describing a convolution");
  p->forward_pd = make_pd(desc, nullptr, "choosing a forward convolution");
  p->forward = make_primitive(p->forward_pd.get(), "making a forward convolution");
  p->forward_kernel =
      make_kernel_buffer(*dnnl_primitive_desc_query_md(p->forward_pd.get(), dnnl_query_weights_md, 0), p->hwio, false);
  return p;
}

inline void make_backward_data(conv_primitives& p) {
  dnnl_convolution_desc_t desc;
  check(dnnl_dilated_convolution_backward_data_desc_init(&desc, dnnl_convolution_direct, &p.src, &p.any_kernel,
                                                         &p.dst, p.strides, p.dilation, p.pad_l, p.pad_r),
        "describing a convolution's input gradient");
  p.backward_data_pd = make_pd(desc, p.forward_pd.get(), "choosing a convolution's input gradient");
  p.backward_data = make_primitive(p.backward_data_pd.get(), "making a convolution's input gradient");
  p.backward_data_kernel = make_kernel_buffer(
      *dnnl_primitive_desc_query_md(p.backward_data_pd.get(), dnnl_query_weights_md, 0), p.hwio, false);
}

inline void make_backward_weights(conv_primitives& p) {
  dnnl_convolution_desc_t desc;
  check(dnnl_dilated_convolution_backward_weights_desc_init(&desc, dnnl_convolution_direct, &p.src, &p.any_kernel,
                                                            p.has_bias ? &p.bias : nullptr, &p.dst, p.strides,
                                                            p.dilation, p.pad_l, p.pad_r),
        "describing a convolution's kernel gradient");
  p.backward_weights_pd = make_pd(desc, p.forward_pd.get(), "choosing a convolution's kernel gradient");
  p.backward_weights = make_primitive(p.backward_weights_pd.get(), "making a convolution's kernel gradient");
  p.backward_weights_kernel = make_kernel_buffer(
      *dnnl_primitive_desc_query_md(p.backward_weights_pd.get(), dnnl_query_diff_weights_md, 0), p.hwio, true);
}

/// The primitives for a geometry and thread count, made on first use and kept for the
/// process. The caller has set its OpenMP count to `threads` (openmp_threads_scope): oneDNN
/// splits the work for the count current when it makes them.
inline conv_primitives& primitives(const window2d& g, std::size_t f, bool bias, int threads) {
  static std::mutex mutex;
  static std::map<conv_key, std::unique_ptr<conv_primitives>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[key_of(g, f, bias, threads)];
  if (!slot) slot = make_primitives(g, f, bias);
  return *slot;
}

/// Runs primitives on a primitive set's stream (its lock held) and waits for them.
class runner {
 public:
  explicit runner(dnnl_stream_t stream) : stream_(stream) {}
  template <std::size_t N>
  void operator()(dnnl_primitive_t p, const std::array<dnnl_exec_arg_t, N>& args, int count = int(N)) {
    check(dnnl_primitive_execute(p, stream_, count, args.data()), "running a primitive");
  }
  void reorder(const kernel_buffer& k, dnnl_memory_t from, dnnl_memory_t to) {
    (*this)(k.move.get(), std::array<dnnl_exec_arg_t, 2>{{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}});
  }
  ~runner() { dnnl_stream_wait(stream_); }

 private:
  dnnl_stream_t stream_;
};

}  // namespace detail

XQ_DECL void conv2d_forward(const window2d& g, std::size_t f, const float* x, const float* w, const float* bias,
                            float* y) {
  using namespace detail;
  const int threads = conv_threads(g, f);
  const openmp_threads_scope allowed(threads);
  auto& p = primitives(g, f, bias != nullptr, threads);
  const std::lock_guard<std::mutex> lock(p.running);
  const memory_ptr xm = make_memory(p.src, const_cast<float*>(x)), wm = make_memory(p.hwio, const_cast<float*>(w));
  const memory_ptr ym = make_memory(p.dst, y);
  const memory_ptr bm = bias ? make_memory(p.bias, const_cast<float*>(bias)) : nullptr;
  runner run(p.stream.get());
  run.reorder(p.forward_kernel, wm.get(), p.forward_kernel.blocked.get());
  run(p.forward.get(),
      std::array<dnnl_exec_arg_t, 4>{{{DNNL_ARG_SRC, xm.get()},
                                      {DNNL_ARG_WEIGHTS, p.forward_kernel.blocked.get()},
                                      {DNNL_ARG_DST, ym.get()},
                                      {DNNL_ARG_BIAS, bm.get()}}},
      bias ? 4 : 3);
}

XQ_DECL void conv2d_backward_data(const window2d& g, std::size_t f, const float* dy, const float* w, float* dx) {
  using namespace detail;
  // The bias plays no part in the input gradient: the bias-free primitives serve both.
  const int threads = conv_threads(g, f);
  const openmp_threads_scope allowed(threads);
  auto& p = primitives(g, f, false, threads);
  const std::lock_guard<std::mutex> lock(p.running);
  if (!p.backward_data) make_backward_data(p);
  const memory_ptr dym = make_memory(p.dst, const_cast<float*>(dy)), wm = make_memory(p.hwio, const_cast<float*>(w));
  const memory_ptr dxm = make_memory(p.src, dx);
  runner run(p.stream.get());
  run.reorder(p.backward_data_kernel, wm.get(), p.backward_data_kernel.blocked.get());
  run(p.backward_data.get(), std::array<dnnl_exec_arg_t, 3>{{{DNNL_ARG_DIFF_DST, dym.get()},
                                                             {DNNL_ARG_WEIGHTS, p.backward_data_kernel.blocked.get()},
                                                             {DNNL_ARG_DIFF_SRC, dxm.get()}}});
}

XQ_DECL void conv2d_backward_weights(const window2d& g, std::size_t f, const float* x, const float* dy, float* dw,
                                     float* db) {
  using namespace detail;
  const int threads = conv_threads(g, f);
  const openmp_threads_scope allowed(threads);
  auto& p = primitives(g, f, db != nullptr, threads);
  const std::lock_guard<std::mutex> lock(p.running);
  if (!p.backward_weights) make_backward_weights(p);
  const memory_ptr xm = make_memory(p.src, const_cast<float*>(x)), dym = make_memory(p.dst, const_cast<float*>(dy));
  const memory_ptr dwm = make_memory(p.hwio, dw);
  const memory_ptr dbm = db ? make_memory(p.bias, db) : nullptr;
  runner run(p.stream.get());
  run(p.backward_weights.get(),
      std::array<dnnl_exec_arg_t, 4>{{{DNNL_ARG_SRC, xm.get()},
                                      {DNNL_ARG_DIFF_DST, dym.get()},
                                      {DNNL_ARG_DIFF_WEIGHTS, p.backward_weights_kernel.blocked.get()},
                                      {DNNL_ARG_DIFF_BIAS, dbm.get()}}},
      db ? 4 : 3);
  run.reorder(p.backward_weights_kernel, p.backward_weights_kernel.blocked.get(), dwm.get());
}

XQ_DECL const char* forward_implementation(const window2d& g, std::size_t f, bool bias) {
  const char* name = nullptr;
  const int threads = detail::conv_threads(g, f);
  const openmp_threads_scope allowed(threads);
  detail::check(dnnl_primitive_desc_query(detail::primitives(g, f, bias, threads).forward_pd.get(), dnnl_query_impl_info_str,
                                          0, &name),
                "asking for the implementation's name");
  return name;
}

}  // namespace xq::kernels::onednn
