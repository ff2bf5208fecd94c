#pragma once
/// \file low_bit_format.hpp
/// `xq::low_bit_format`: a low-bit block format (torchao's integer groups, FP8, OCP MX,
/// NVFP4; numerics/low_bit_specs.hpp) named in a `quantizer_config`, so that the quantizers
/// `quantize_model` places — a wrapper's input and weight quantizers, chosen per layer by the
/// scheme and the spec — run it in place of their integer grid:
///
/// \code
///   xq::quantizer_config w;
///   w.format = xq::low_bit::mx_spec{};           // MXFP4, torchao's RCEIL, blocks of 32
///   xq::quantization_spec spec;
///   spec.add("head", {true, true});
///   spec.entries().back().what.weight_format = xq::low_bit_format{};  // "head" back to int8
/// \endcode
///
/// A format computes its scales from each tensor it quantizes, in the pass that quantizes it,
/// as the peers' QAT does (torchao's dynamic activations and weights, TransformerEngine's
/// current scaling, ModelOpt's dynamic block quantizer): it keeps no range, so a fake
/// quantizer running one has no state parameters, and its observer switch and calibration
/// leave it as it is — except torchao's range learning (`intx_spec::range_learning`), whose
/// group scales the first call starts and the optimizer then learns (fake_quantizer.hpp). Blocks run along `axis` of the spec; a wrapper sets it
/// (`axis_from_layer`): a weight's blocks along its layer's reduction axis
/// (`kernel_block_axis<L>`: a dense kernel's input axis, a conv kernel's input channels —
/// blocks never span kernel taps), an input's along its last axis (a token's features, a
/// pixel's channels).

#include <cstddef>
#include <string>
#include <cstdint>
#include <type_traits>

#include "../config.hpp"
#include "../numerics/low_bit_specs.hpp"

namespace xq {

/// The "no format" alternative `visit_format` passes.
struct no_low_bit_format {};

/// A tagged choice of one spec (plain data: a configuration copies it everywhere).
struct low_bit_format {
  enum class kind : std::uint8_t { none, intx, fp8, mx, nvfp4 };
  /// Which spec below is the format's (none: the config's integer grid).
  kind what = kind::none;
  low_bit::intx_spec intx{};
  low_bit::fp8_spec fp8{};
  low_bit::mx_spec mx{};
  low_bit::nvfp4_spec nvfp4{};
  /// The wrapper that owns the quantizer sets the spec's axis (see the file comment); false:
  /// the spec's own axis.
  bool axis_from_layer = true;

  low_bit_format() = default;
  low_bit_format(low_bit::intx_spec s) : what(kind::intx), intx(s) {}     // NOLINT: a spec is a format
  low_bit_format(low_bit::fp8_spec s) : what(kind::fp8), fp8(s) {}        // NOLINT
  low_bit_format(low_bit::mx_spec s) : what(kind::mx), mx(s) {}           // NOLINT
  low_bit_format(low_bit::nvfp4_spec s) : what(kind::nvfp4), nvfp4(s) {}  // NOLINT

  /// Whether a format is named (false: the integer grid).
  bool has_value() const noexcept { return what != kind::none; }
  explicit operator bool() const noexcept { return has_value(); }
  /// The spec if the format is of type S, else nullptr.
  template <class S>
  const S* get_if() const noexcept {
    if constexpr (std::is_same_v<S, low_bit::intx_spec>) return what == kind::intx ? &intx : nullptr;
    else if constexpr (std::is_same_v<S, low_bit::fp8_spec>) return what == kind::fp8 ? &fp8 : nullptr;
    else if constexpr (std::is_same_v<S, low_bit::mx_spec>) return what == kind::mx ? &mx : nullptr;
    else return what == kind::nvfp4 ? &nvfp4 : nullptr;
  }
  /// The spec's axis (0 without a format).
  XQ_DECL int axis() const noexcept;
  /// The same format with its blocks along `axis`.
  XQ_DECL low_bit_format with_axis(int axis) const;
};

/// fn(spec) with the format's spec (a const reference), or fn(no_low_bit_format{}).
template <class F>
decltype(auto) visit_format(const low_bit_format& f, F&& fn) {
  using K = low_bit_format::kind;
  switch (f.what) {
    case K::intx: return fn(f.intx);
    case K::fp8: return fn(f.fp8);
    case K::mx: return fn(f.mx);
    case K::nvfp4: return fn(f.nvfp4);
    case K::none: break;
  }
  return fn(no_low_bit_format{});
}

/// "mx_quantizer(mxfp4 torchao_rceil block 32 axis 0)" style; "" without a format.
XQ_DECL std::string describe(const low_bit_format& f);
/// The element's bits (4 for int4, FP4; 8 for FP8, int8); 0 without a format.
XQ_DECL int element_bits(const low_bit_format& f);
/// Bits per value stored for a tensor whose block axis is `axis_length` long: element plus
/// scales (int4 groups of 32 with float32 scales: 5; MXFP4: 4.25; NVFP4: 4.5).
XQ_DECL double bits_per_value(const low_bit_format& f, std::size_t axis_length);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/low_bit_format.ipp"
#endif
