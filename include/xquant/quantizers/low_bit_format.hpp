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
/// leave it as it is. Blocks run along `axis` of the spec; a wrapper sets it
/// (`axis_from_layer`): a weight's blocks along its layer's reduction axis
/// (`kernel_block_axis<L>`: a dense kernel's input axis, a conv kernel's input channels —
/// blocks never span kernel taps), an input's along its last axis (a token's features, a
/// pixel's channels).

#include <cstddef>
#include <string>
#include <variant>

#include "../config.hpp"
#include "../numerics/low_bit_specs.hpp"

namespace xq {

struct low_bit_format {
  using spec_variant =
      std::variant<std::monostate, low_bit::intx_spec, low_bit::fp8_spec, low_bit::mx_spec, low_bit::nvfp4_spec>;

  /// None (the config's integer grid), or the spec of one format.
  spec_variant spec;
  /// The wrapper that owns the quantizer sets the spec's axis (see the file comment); false:
  /// the spec's own axis.
  bool axis_from_layer = true;

  low_bit_format() = default;
  low_bit_format(low_bit::intx_spec s) : spec(s) {}   // NOLINT: a spec is a format
  low_bit_format(low_bit::fp8_spec s) : spec(s) {}    // NOLINT
  low_bit_format(low_bit::mx_spec s) : spec(s) {}     // NOLINT
  low_bit_format(low_bit::nvfp4_spec s) : spec(s) {}  // NOLINT

  /// Whether a format is named (false: the integer grid).
  bool has_value() const noexcept { return spec.index() != 0; }
  explicit operator bool() const noexcept { return has_value(); }
  /// The spec's axis (0 without a format).
  XQ_DECL int axis() const noexcept;
  /// The same format with its blocks along `axis`.
  XQ_DECL low_bit_format with_axis(int axis) const;
};

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
