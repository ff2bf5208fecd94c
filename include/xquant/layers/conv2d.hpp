#pragma once
/// \file conv2d.hpp
/// `xq::conv2d`: 2-D convolution over NHWC inputs with an HWIO kernel (Keras
/// Conv2D, no activation): strides, `valid`/`same` padding (TF's rules, see
/// padding.hpp) and dilation.
///
/// \code
///   xq::conv2d conv = xq::conv2d(64, 3).strides(2).padding(xq::padding::same).name("stem");
///   xq::var y = conv(x);   // x (N, H, W, C) -> y (N, ceil(H/2), ceil(W/2), 64)
/// \endcode
///
/// Computed as im2col + GEMM: cols [N*OH*OW, KH*KW*C] x kernel [KH*KW*C, F] is the
/// NHWC output, done in blocks of images that keep the columns in cache. A 1x1,
/// stride-1 convolution without padding skips im2col (the input already is the column
/// matrix). Backward reuses the forward's column matrix: dkernel = colsᵀ·dy,
/// dx = col2im(dy·kernelᵀ) block by block, dbias = column sums of dy.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../core/layer.hpp"
#include "../core/op_observer.hpp"
#include "../core/random.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../kernels/gemm.hpp"
#include "../kernels/im2col.hpp"
#include "../kernels/padding.hpp"

/// Bytes of column matrix per block of conv2d's lowered GEMMs (detail::images_per_block).
/// Measured on 2 Zen 4 cores (1 MiB L2 each) with OpenBLAS, 3x3 32->64 conv on 64 14x14
/// images, forward + backward (min of 40): 1 MiB 10.6 ms, 2 MiB 10.0 ms, 4 MiB 9.6 ms,
/// unblocked 10.8 ms. Fewer, larger GEMM calls also suffer less when a core is busy.
#ifndef XQ_CONV_BLOCK_BYTES
#define XQ_CONV_BLOCK_BYTES (std::size_t(4) << 20)
#endif

namespace xq {

namespace detail {

/// Recycles the large scratch buffers of the lowered convolutions (column matrices).
/// Freed to the allocator, a buffer of megabytes goes back to the OS (glibc trims or
/// unmaps it), and the next call pays a page fault per 4 KiB it touches again: that
/// made an inference 3x3 32->64 conv on 64 14x14 images 9.0 ms instead of 3.1 ms.
class workspace_pool {
 public:
  /// The process-wide pool (never destroyed: buffers may be released at exit).
  static workspace_pool& instance() {
    static auto* pool = new workspace_pool;
    return *pool;
  }

  /// At least `n` uninitialized floats; back to the pool when the last owner lets go.
  std::shared_ptr<float[]> get(std::size_t n) {
    std::unique_ptr<float[]> buffer;
    std::size_t size = n;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::size_t best = free_.size();
      for (std::size_t i = 0; i < free_.size(); ++i)  // the smallest that fits
        if (free_[i].size >= n && (best == free_.size() || free_[i].size < free_[best].size)) best = i;
      if (best != free_.size()) {
        buffer = std::move(free_[best].data);
        size = free_[best].size;
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
      }
    }
    if (!buffer) buffer.reset(new float[n]);
    float* raw = buffer.release();
    return std::shared_ptr<float[]>(raw, [this, size](float* p) { put(std::unique_ptr<float[]>(p), size); });
  }

 private:
  struct entry {
    std::unique_ptr<float[]> data;
    std::size_t size;
  };
  void put(std::unique_ptr<float[]> p, std::size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back({std::move(p), size});
    if (free_.size() > max_cached) {  // keep the largest ones: they serve any request
      auto smallest = std::min_element(free_.begin(), free_.end(),
                                       [](const entry& a, const entry& b) { return a.size < b.size; });
      free_.erase(smallest);
    }
  }
  static constexpr std::size_t max_cached = 8;
  std::mutex mutex_;
  std::vector<entry> free_;
};

/// Uninitialized float storage (from the pool) a backward step can own.
inline std::shared_ptr<float[]> workspace(std::size_t n) { return workspace_pool::instance().get(n); }

/// Images per block of the lowered GEMMs: about XQ_CONV_BLOCK_BYTES of column matrix,
/// so im2col's output is still in cache when the GEMM reads it, and the input-gradient
/// columns when col2im reads them; blocks are balanced (64 images at 18 per block run as
/// 4 blocks of 16, not 3 of 18 and 1 of 10).
inline std::size_t images_per_block(const window2d& g) {
  if (g.batch == 0) return 1;
  const std::size_t bytes = g.out_h * g.out_w * g.patch_size() * sizeof(float);
  const std::size_t fit = std::max<std::size_t>(1, bytes == 0 ? g.batch : std::size_t(XQ_CONV_BLOCK_BYTES) / bytes);
  const std::size_t blocks = (g.batch + fit - 1) / fit;
  return (g.batch + blocks - 1) / blocks;
}

}  // namespace detail

namespace ops {

/// 2-D convolution of x (N, H, W, C) with kernel w (KH, KW, C, F) [+ bias b (F,)] on the
/// tape; output (N, OH, OW, F). `path` names the caller in errors. `w` may be any var
/// (a fake-quantized kernel, say): its gradient flows back through it.
inline var conv2d(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                  const std::string& path = "conv2d") {
  if (w.dimension() != 4)
    throw shape_error(path, "kernel of rank 4 (KH, KW, C, F)", detail::shape_string(w.shape()));
  const std::size_t kh = w.shape()[0], kw = w.shape()[1], c = w.shape()[2], f = w.shape()[3];
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::exactly(c)});
  if (b) detail::require_shape(path, b->shape(), {detail::exactly(f)}, "bias");
  detail::positive_size2(path, "strides", geometry.strides);
  detail::positive_size2(path, "dilation", geometry.dilation);
  const window2d g = resolve_window(path, x.shape(), kh, kw, geometry);
  const std::size_t m = g.out_pixels(), k = g.patch_size();
  const std::size_t image_in = g.in_h * g.in_w * c, rows = g.out_h * g.out_w;
  const bool record = b ? needs_grad(x, w, *b) : needs_grad(x, w);
  const bool pointwise = g.is_pointwise();
  // The kernel gradient reads the whole column matrix: kept only when it will be needed.
  const bool keep_cols = record && w.requires_grad() && !pointwise;
  const std::size_t block = detail::images_per_block(g);

  tensor y = tensor::from_shape({g.batch, g.out_h, g.out_w, f});
  // y = bias, then y += cols · w (a GEMM with beta = 1), over `count` rows from `first`.
  auto multiply = [&](const float* a, std::size_t first, std::size_t count) {
    float* yb = y.data() + first * f;
    if (b) {
      const float* bias = b->value().data();
      for (std::size_t r = 0; r < count; ++r) detail::copy_run(yb + r * f, bias, f);
    }
    kernels::gemm(false, false, count, f, k, 1.0f, a, k, w.value().data(), f, b ? 1.0f : 0.0f, yb, f);
  };
  std::shared_ptr<float[]> cols;
  if (pointwise) {
    multiply(x.value().data(), 0, m);
  } else {
    cols = detail::workspace((keep_cols ? g.batch : block) * rows * k);
    for (std::size_t n0 = 0; n0 < g.batch; n0 += block) {
      window2d part = g;
      part.batch = std::min(block, g.batch - n0);
      float* cb = cols.get() + (keep_cols ? n0 * rows * k : 0);
      kernels::im2col(x.value().data() + n0 * image_in, part, cb);
      multiply(cb, n0 * rows, part.batch * rows);
    }
  }
  if (!keep_cols) cols.reset();
  notify_op(path, "conv2d", y.shape(), w.shape());  // for xq::summarize's MAC count

  const var bias = b ? *b : var();
  return make_result(std::move(y), record, [x, w, bias, g, cols, pointwise, m, k, f](const tensor& dy) mutable {
    if (w.requires_grad()) {
      // dwᵀ = dyᵀ · cols, then transposed (F x K is small): OpenBLAS packs this operand
      // order faster than colsᵀ · dy (5-10% on the 3x3 32->64 conv).
      std::vector<float> dwt(f * k);
      kernels::gemm(true, false, f, k, m, 1.0f, dy.data(), f, pointwise ? x.value().data() : cols.get(), k, 0.0f,
                    dwt.data(), k);
      tensor dw = tensor::from_shape(w.shape());
      for (std::size_t i = 0; i < k; ++i)
        for (std::size_t j = 0; j < f; ++j) dw.data()[i * f + j] = dwt[j * k + i];
      add_grad(w, std::move(dw));
    }
    if (bias.defined() && bias.requires_grad()) {
      tensor db = xt::zeros<float>({f});
      kernels::add_column_sums(dy.data(), m, f, db.data());
      add_grad(bias, std::move(db));
    }
    if (x.requires_grad()) {
      tensor dx = tensor::from_shape(x.shape());
      if (pointwise) {  // dx = dy · wᵀ is already NHWC
        kernels::gemm(false, true, m, k, f, 1.0f, dy.data(), f, w.value().data(), f, 0.0f, dx.data(), k);
      } else {  // per block: dcols = dy · wᵀ, then col2im while dcols is in cache
        const std::size_t rows = g.out_h * g.out_w, image_in = g.in_h * g.in_w * g.channels;
        const std::size_t block = detail::images_per_block(g);
        // The kernel gradient is done with the columns: their storage holds dcols.
        std::shared_ptr<float[]> dcols = cols ? std::move(cols) : detail::workspace(block * rows * k);
        for (std::size_t n0 = 0; n0 < g.batch; n0 += block) {
          window2d part = g;
          part.batch = std::min(block, g.batch - n0);
          kernels::gemm(false, true, part.batch * rows, k, f, 1.0f, dy.data() + n0 * rows * f, f, w.value().data(),
                        f, 0.0f, dcols.get(), k);
          kernels::col2im(dcols.get(), part, dx.data() + n0 * image_in);
        }
      }
      add_grad(x, std::move(dx));
    }
    cols.reset();
  });
}

}  // namespace ops

/// 2-D convolution layer (Keras Conv2D without activation). The kernel (KH, KW, C, F),
/// "kernel", is built on the first call from the input's channels, Glorot-uniform with
/// Keras's fans (fan_in = KH*KW*C, fan_out = KH*KW*F); the bias (F,), "bias", starts at 0.
class conv2d : public layer<conv2d> {
 public:
  static constexpr layer_role role = layer_role::conv;
  /// `filters` output channels, a `kernel_size` window (`3` or `{3, 5}`).
  explicit conv2d(std::size_t filters = 1, size2 kernel_size = 1)
      : layer<conv2d>("conv2d"), filters_(filters),
        kernel_size_(detail::positive_size2("conv2d", "kernel_size", kernel_size)) {
    if (filters == 0) throw argument_error("conv2d", "filters of at least 1", "0");
  }

  /// Window step (`2` or `{2, 1}`); default 1.
  conv2d& strides(size2 s) {
    geometry_.strides = detail::positive_size2(path(), "strides", s);
    return *this;
  }
  /// `xq::padding::valid` (default) or `same`.
  conv2d& padding(xq::padding p) {
    geometry_.padding = p;
    return *this;
  }
  /// Spacing between kernel taps (`2` or `{2, 1}`); default 1.
  conv2d& dilation(size2 d) {
    geometry_.dilation = detail::positive_size2(path(), "dilation", d);
    return *this;
  }
  /// Whether the layer adds a bias (default true); set before the first call.
  conv2d& use_bias(bool on) {
    if (kernel_ && on != use_bias_)
      throw argument_error(path(), "use_bias set before the layer is built", "a built layer");
    use_bias_ = on;
    return *this;
  }

  var call(const var& x) {
    ensure_built(x);
    return call_with(x, kernel_, bias_ ? var(bias_) : var());
  }

  /// Builds the parameters from `x`'s channels unless built (what the first call does).
  void ensure_built(const var& x) {
    if (kernel_) return;
    detail::require_shape(path(), x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
    build(x.shape()[3]);
  }
  /// The layer's convolution with `kernel` and `bias` (undefined: none) in place of its
  /// own parameters: how a quantized twin runs it with a fake-quantized (or folded) kernel.
  var call_with(const var& x, const var& kernel, const var& bias) const {
    return ops::conv2d(x, kernel, bias.defined() ? &bias : nullptr, geometry_, path());
  }

  /// Creates the parameters for `in_channels` input channels (the first call does it).
  void build(std::size_t in_channels) {
    if (in_channels == 0) throw shape_error(path(), "input with at least 1 channel", "0 channels");
    const std::size_t taps = kernel_size_[0] * kernel_size_[1];
    kernel_ = make_parameter("kernel", glorot_uniform({kernel_size_[0], kernel_size_[1], in_channels, filters_},
                                                      taps * in_channels, taps * filters_));
    if (use_bias_) bias_ = make_parameter("bias", xt::zeros<float>({filters_}));
    name_parameters();
  }

  std::vector<parameter_ptr> parameters() const { return {kernel_, bias_}; }
  /// Each stored parameter slot, null ones included (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(kernel_);
    f(bias_);
  }
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  std::size_t filters() const noexcept { return filters_; }
  std::array<std::size_t, 2> kernel_size() const noexcept { return kernel_size_; }
  std::array<std::size_t, 2> strides() const noexcept { return geometry_.strides; }
  xq::padding padding() const noexcept { return geometry_.padding; }
  std::array<std::size_t, 2> dilation() const noexcept { return geometry_.dilation; }
  bool use_bias() const noexcept { return use_bias_; }
  /// Strides, padding and dilation together (what `ops::conv2d` takes).
  const conv2d_geometry& geometry() const noexcept { return geometry_; }

 private:
  std::size_t filters_;
  std::array<std::size_t, 2> kernel_size_;
  conv2d_geometry geometry_;
  bool use_bias_ = true;
  parameter_ptr kernel_, bias_;
};

}  // namespace xq
