#pragma once
/// \file window_layer.hpp
/// `xq::window_layer<Self>`: the one base of the windowed weighted layers — conv2d,
/// depthwise_conv2d and conv2d_transpose. What they share is written here once: the
/// window (kernel size, strides, padding, dilation, set in Keras's chainable style and
/// checked positive), whether there is a bias (fixed once built), the kernel and bias
/// parameters with their slots (core/clone.hpp's protocol). Each layer keeps what is its
/// own: its output channels, its kernel layout and fans, its operation.

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../kernels/padding.hpp"

namespace xq {

template <class Self>
class window_layer : public layer<Self> {
 public:
  /// Window step (`2` or `{2, 1}`); default 1. (conv2d_transpose: the upsampling step.)
  Self& strides(size2 s) {
    geometry_.strides = detail::positive_size2(this->path(), "strides", s);
    return self();
  }
  /// `xq::padding::valid` (default) or `same`.
  Self& padding(xq::padding p) {
    geometry_.padding = p;
    return self();
  }
  /// Spacing between kernel taps (`2` or `{2, 1}`); default 1.
  Self& dilation(size2 d) {
    geometry_.dilation = detail::positive_size2(this->path(), "dilation", d);
    return self();
  }
  /// Whether the layer adds a bias (default true); set before the first call.
  Self& use_bias(bool on) {
    if (kernel_ && on != use_bias_)
      throw argument_error(this->path(), "use_bias set before the layer is built", "a built layer");
    use_bias_ = on;
    return self();
  }

  std::array<std::size_t, 2> kernel_size() const noexcept { return kernel_size_; }
  std::array<std::size_t, 2> strides() const noexcept { return geometry_.strides; }
  xq::padding padding() const noexcept { return geometry_.padding; }
  std::array<std::size_t, 2> dilation() const noexcept { return geometry_.dilation; }
  bool use_bias() const noexcept { return use_bias_; }
  /// Strides, padding and dilation together (what the ops take).
  const conv2d_geometry& geometry() const noexcept { return geometry_; }

  /// The kernel (null until built) and the bias (null until built, or without one).
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  std::vector<parameter_ptr> parameters() const { return {kernel_, bias_}; }
  /// Each stored parameter slot, null ones included (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(kernel_);
    f(bias_);
  }

 protected:
  /// `name`: the layer's default name (also where a bad kernel size is reported).
  window_layer(const char* name, size2 kernel_size)
      : layer<Self>(name), kernel_size_(detail::positive_size2(name, "kernel_size", kernel_size)) {}

  Self& self() noexcept { return static_cast<Self&>(*this); }

  std::array<std::size_t, 2> kernel_size_;
  conv2d_geometry geometry_;
  bool use_bias_ = true;
  parameter_ptr kernel_, bias_;
};

}  // namespace xq
