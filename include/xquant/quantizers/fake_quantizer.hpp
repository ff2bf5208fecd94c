#pragma once
/// \file fake_quantizer.hpp
/// `xq::fake_quantizer`: the fake quantizer of NVIDIA's toolkit, of tfmot and of
/// PyTorch, as one quantizer layer composed the way PyTorch's `FakeQuantize` composes an
/// observer: a range tracker (range_tracker.hpp: how the stored range follows the
/// training batches) and a numerics (quantizer_numerics.hpp: whose operator rounds),
/// both picked from a `quantizer_config` (quantizer_config.hpp):
///
///  | numerics         | tracker                                   | operator |
///  |------------------|-------------------------------------------|----------|
///  | tf_qdq           | tfmot's batch rule, last value / EMA / all | TF quantize_and_dequantize_v4, half to even (NVIDIA) |
///  | tf_fake_quant    | tfmot's batch rule, last value / EMA / all | TF fake_quant_with_min_max_vars[_per_channel] (tfmot) |
///  | torch_fake_quant | PyTorch's observers                        | PyTorch fake_quantize_per_{tensor,channel}_affine |
///
/// The stored range is the quantizer's state: two non-trainable parameters named as the
/// peer names them ("<path>/min_var", "<path>/max_var"; PyTorch: "min_val", "max_val"),
/// one value per channel (per channel: none until the first training batch tells how
/// many channels there are). A training call (inside `xq::training_mode`) first updates
/// the range from the batch (observer on), then fake-quantizes with the updated range
/// (fake quant on); an inference call uses the stored range and changes nothing. The
/// backward step keeps x's shared state and the range the forward used, not a copy of x.
///
/// Before the first training batch, inference uses init_min / init_max (tf; 0 / 0 for
/// all_values, as tfmot's AllValuesQuantizer), or scale 1 and zero point 0 (torch, as
/// PyTorch's FakeQuantize buffers before any observation). A training batch with NaN or
/// ±Inf is rejected (argument_error naming the path) and the range is left as it was;
/// the peers would store it, after which every output is NaN.
///
/// A config naming a low-bit format (`quantizer_config::format`: torchao's int4 groups, FP8,
/// MX, NVFP4) runs that format instead, with the numerics and gradient of its own quantizer
/// (mx_quantizer, ...): scales from each tensor in the pass that quantizes it, no range and
/// no state parameters, `grid_of(x)` the format's blocked grid. torchao's range learning
/// (`low_bit::intx_spec::range_learning`) is the exception: the first call's group scales
/// become a trainable parameter ("<path>/scale", one per group, the blocked layout's shape)
/// that every later call quantizes with and the optimizer moves (torchao's gradient,
/// numerics/torchao_affine.hpp); its grid is then static.
///
/// \code
///   xq::quantizer_config c;  c.per_channel = true;   // NVIDIA weights: per channel, axis -1
///   xq::fake_quantizer weight_quantizer(c);
///   weight_quantizer.set_path("block/conv/weight_quantizer");
///   xq::var qw = weight_quantizer(w);                // training: range <- w, then QDQ
/// \endcode

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "../core/var.hpp"
#include "../kernels/channel_layout.hpp"
#include "quantizer_config.hpp"
#include "quantizer_layer.hpp"
#include "quantizer_numerics.hpp"
#include "range_tracker.hpp"

namespace xq {

namespace low_bit {
struct intx_state;  // numerics/torchao_affine.hpp
}

/// The tracker a config asks for: PyTorch's observers for the torch numerics, tfmot's
/// rules for the TF numerics.
XQ_DECL const range_tracker& range_tracker_for(const quantizer_config& c);

/// The numerics a config asks for.
XQ_DECL const quantizer_numerics& numerics_for(const quantizer_config& c);

class fake_quantizer : public quantizer_layer<fake_quantizer> {
 public:
  XQ_SPECIAL_MEMBERS(fake_quantizer)
  /// Off, with the default config.
  XQ_DECL fake_quantizer();
  /// Validates `config` (argument_error) and starts from the initial range.
  explicit fake_quantizer(quantizer_config config, bool enabled = true);

  /// num_bits (a format's element bits).
  int precision() const override { return config_.format ? element_bits(config_.format) : config_.num_bits; }
  /// "8-bit symmetric narrow per-channel(axis -1) tf_qdq last_value".
  XQ_DECL std::string describe() const override;

  const quantizer_config& config() const noexcept { return config_; }
  /// Validates `c` (num_bits for the numerics, the per-channel axis, decay constants,
  /// the initial range: argument_error naming path()), adopts it and resets the state.
  void configure(const quantizer_config& c);
  /// The range tracker and the numerics the config picked.
  const range_tracker& tracker() const noexcept { return *tracker_; }
  const quantizer_numerics& numerics() const noexcept { return *numerics_; }

  /// The stored range, one value per channel (size 1 when per tensor; size 0 before the
  /// first per-channel batch). torch numerics keep the observer's min_val / max_val:
  /// +Inf / -Inf per tensor before the first batch.
  vector min() const { return to_vector(min_->value); }
  vector max() const { return to_vector(max_->value); }
  /// The state parameters themselves ("min_var"/"max_var", or "min_val"/"max_val").
  const parameter_ptr& min_parameter() const noexcept { return min_; }
  const parameter_ptr& max_parameter() const noexcept { return max_; }

  /// Sets the range (calibration, checkpoints): one value per tensor, or one per channel
  /// (size 0: back to before the first batch); each pair finite with min <= max
  /// (tf_fake_quant: min < max, or both 0). Also accepts what min() / max() give for an
  /// unobserved torch quantizer (+Inf / -Inf).
  void set_range(vector lo, vector hi);
  /// Throws argument_error (naming path()) unless `set_range(lo, hi)` would accept them.
  void check_range(const vector& lo, const vector& hi) const;

  /// The integer grid of the inference call on a tensor with `channels` channels (1: per
  /// tensor), from the stored range: what deployment writes and computes with
  /// (quantization_grid.hpp).
  XQ_DECL quantization_grid grid(std::size_t channels = 1) const;
  /// grid(channels of x) while on and fake-quantizing (see quantizer_base::grid_of): the
  /// numerics' grid and rounding rule for the stored range (before the first batch: the
  /// range inference uses then).
  XQ_DECL std::optional<quantization_grid> grid_of(const tensor& x) const override;
  /// The inference call's output on `x` (the stored range, nothing updated), without a tape.
  XQ_DECL tensor fake_quantize(const tensor& x) const;
  /// The same as integers on `grid(...)`: the q with output = (q - zero_point) * scale.
  XQ_DECL std::vector<std::int32_t> integers(const tensor& x) const;

  /// The config's format (none for an integer grid, or learned scales: their grid is fixed
  /// between optimizer steps).
  low_bit_format dynamic_format() const override { return learns_scales() ? low_bit_format{} : config_.format; }
  /// Whether the format learns its scales (torchao's range learning).
  bool learns_scales() const noexcept {
    const auto* s = config_.format.get_if<low_bit::intx_spec>();
    return s && s->range_learning;
  }
  /// The learned scales (range learning): empty before the first call.
  const parameter_ptr& learned_scales() const noexcept { return learned_scale_; }
  /// A batch observed, or a range set or restored that is not the initial one.
  XQ_DECL bool has_seen_data() const override;
  /// Training batches observed since the last reset or configure.
  std::size_t batches_seen() const noexcept { return batches_; }

  /// Brings back a saved state (checkpoints): the range as `set_range` takes it (and
  /// checks it), and the number of batches seen. On an exception nothing changes.
  void restore(vector lo, vector hi, std::size_t batches_seen);
  /// Sets the number of batches seen (checkpoints; the range is in the parameters).
  void set_batches_seen(std::size_t n) noexcept { batches_ = n; }

  /// Back to the initial state: the range before any batch, no batch seen.
  void reset();

  /// The range's two parameters once the quantizer is part of the model: on, and called
  /// (or given a range) at least once — as a layer's weights appear on its first call.
  XQ_DECL std::vector<parameter_ptr> parameters() const override;

  /// Whether the state is part of the model yet (see `parameters()`).
  bool built() const noexcept { return built_; }
  /// Sets whether the state is part of the model (a checkpoint restores it).
  void set_built(bool on) noexcept { built_ = on; }

  /// Gives this quantizer state parameters of its own (copies of the current ones):
  /// a copied quantizer shares its state, as a copied layer shares its weights.
  void detach_state();

  XQ_DECL void for_each_parameter_slot(const std::function<void(parameter_ptr&)>& f) override;

 protected:
  /// For presets (moving_average_quantizer.hpp): another default name and kind.
  fake_quantizer(std::string default_name, std::string (*type_name)(), const quantizer_config& config);

  XQ_DECL void observe(const tensor& x) override;

  XQ_DECL var quantize(const var& x) override;

 private:
  static float infinity() noexcept { return std::numeric_limits<float>::infinity(); }
  static vector to_vector(const tensor& t);
  void store(const vector& lo, const vector& hi);

  /// The channel layout of `x`, checked against the channels stored so far.
  kernels::channel_layout layout_of(const tensor& x) const;

  quantizer_config config_;
  const range_tracker* tracker_ = nullptr;
  const quantizer_numerics* numerics_ = nullptr;
  /// The state the learned scales give (range learning), for a tensor like x: argument_error
  /// naming path() when they were learned on another shape.
  low_bit::intx_state learned_state(const tensor& x) const;
  var quantize_learned(const var& x);

  parameter_ptr min_, max_;
  parameter_ptr learned_scale_;  ///< range learning: one trainable scale per group
  std::size_t batches_ = 0;
  bool built_ = false;  ///< called (or given a range) at least once: its state is listed
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/fake_quantizer.ipp"
#endif
