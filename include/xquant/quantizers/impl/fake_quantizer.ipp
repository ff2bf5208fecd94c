#pragma once
/// \file fake_quantizer.ipp
/// fake_quantizer's code (quantizers/fake_quantizer.hpp): configuration, the range, and the
/// call that runs the tracker and the numerics the config picked.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../calibration_sink.hpp"
#include "../fake_quantizer.hpp"
#include "../../numerics/torchao_affine.hpp"
#include "../intx_quantizer.hpp"
#include "../low_bit_format_numerics.hpp"
#include "../tf_fake_quant_numerics.hpp"
#include "../tf_qdq_numerics.hpp"
#include "../tfmot_range_tracker.hpp"
#include "../torch_fake_quant_numerics.hpp"
#include "../torch_range_tracker.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(fake_quantizer)

XQ_DECL const range_tracker& range_tracker_for(const quantizer_config& c) {
  if (c.numerics == quant_numerics::torch_fake_quant) return torch_range_tracker::instance();
  return tfmot_range_tracker::instance();
}

XQ_DECL const quantizer_numerics& numerics_for(const quantizer_config& c) {
  switch (c.numerics) {
    case quant_numerics::tf_fake_quant: return tf_fake_quant_numerics::instance();
    case quant_numerics::torch_fake_quant: return torch_fake_quant_numerics::instance();
    case quant_numerics::tf_qdq: break;
  }
  return tf_qdq_numerics::instance();
}

XQ_DECL fake_quantizer::fake_quantizer(quantizer_config config, bool enabled)
    : quantizer_layer<fake_quantizer>("fake_quantizer") {
  configure(config);
  enable(enabled);
}

XQ_DECL std::string fake_quantizer::describe() const { return xq::describe(config_); }

XQ_DECL void fake_quantizer::configure(const quantizer_config& c) {
  validate(c, path());
  validate(c.format, path());
  config_ = c;
  tracker_ = &range_tracker_for(c);
  numerics_ = &numerics_for(c);
  min_ = make_parameter(tracker_->min_name(), tensor::from_shape({0}), false);
  max_ = make_parameter(tracker_->max_name(), tensor::from_shape({0}), false);
  learned_scale_ = learns_scales() ? make_parameter("scale", tensor::from_shape({0}), true) : nullptr;
  name_parameters();
  reset();
}

XQ_DECL void fake_quantizer::set_range(vector lo, vector hi) {
  check_range(lo, hi);
  store(lo, hi);
  built_ = true;
}

XQ_DECL void fake_quantizer::check_range(const vector& lo, const vector& hi) const {
  const std::string& w = path();
  if (lo.size() != hi.size())
    throw argument_error(w, "min and max of the same length", detail::concat("lengths ", lo.size(), " and ", hi.size()));
  if (!config_.per_channel && lo.size() != 1)
    throw argument_error(w, "one min and one max (per-tensor range)", detail::concat(lo.size(), " values"));
  for (std::size_t c = 0; c < lo.size(); ++c) {
    const float a = lo(c), b = hi(c);
    const bool unobserved = config_.numerics == quant_numerics::torch_fake_quant && !config_.per_channel &&
                            a == infinity() && b == -infinity();
    if (unobserved) continue;
    const std::string at_channel = config_.per_channel ? detail::concat(" at channel ", c) : "";
    if (!std::isfinite(a) || !std::isfinite(b) || a > b)
      throw argument_error(w, "finite min <= max", detail::concat("min = ", a, ", max = ", b, at_channel));
    if (config_.numerics == quant_numerics::tf_fake_quant && a == b && a != 0.0f)
      throw argument_error(w, "min < max, or min = max = 0 (tf_fake_quant divides by max - min)",
                           detail::concat("min = max = ", a, at_channel));
  }
}

XQ_DECL void fake_quantizer::restore(vector lo, vector hi, std::size_t batches_seen) {
  set_range(std::move(lo), std::move(hi));
  batches_ = batches_seen;
}

XQ_DECL void fake_quantizer::reset() {
  batches_ = 0;
  if (config_.per_channel) {
    store(vector::from_shape({0}), vector::from_shape({0}));
  } else {
    store(vector({tracker_->initial_min(config_)}), vector({tracker_->initial_max(config_)}));
  }
}

XQ_DECL std::vector<parameter_ptr> fake_quantizer::parameters() const {
  if (!enabled() || !built_) return {};
  if (learns_scales()) return learned_scale_->value.size() ? std::vector<parameter_ptr>{learned_scale_} : std::vector<parameter_ptr>{};
  if (config_.format) return {};  // a format keeps no range
  return {min_, max_};
}

XQ_DECL void fake_quantizer::detach_state() {
  min_ = std::make_shared<parameter>(*min_);
  max_ = std::make_shared<parameter>(*max_);
  if (learned_scale_) learned_scale_ = std::make_shared<parameter>(*learned_scale_);
}

XQ_DECL void fake_quantizer::for_each_parameter_slot(const std::function<void(parameter_ptr&)>& f) {
  f(min_);
  f(max_);
  if (learned_scale_) f(learned_scale_);
}

XQ_DECL low_bit::intx_state fake_quantizer::learned_state(const tensor& x) const {
  const low_bit::intx_spec& s = *config_.format.get_if<low_bit::intx_spec>();
  const kernels::block_layout bl = low_bit::intx_layout(x, s, path());
  const tensor& scale = learned_scale_->value;
  if (scale.size() != bl.block_count())
    throw argument_error(path(),
                         detail::concat(scale.size(), " learned scales (one per group of the tensor they were learned on)"),
                         detail::concat(bl.block_count(), " groups in a tensor of shape ", detail::shape_string(x.shape())));
  low_bit::intx_state st;
  st.values.assign(2 * scale.size(), 0.0f);
  for (std::size_t g = 0; g < scale.size(); ++g) st.values[2 * g] = scale.data()[g];
  return st;
}

XQ_DECL var fake_quantizer::quantize_learned(const var& x) {
  const low_bit::intx_spec& s = *config_.format.get_if<low_bit::intx_spec>();
  const tensor& xv = x.value();
  if (learned_scale_->value.size() == 0) {  // the first call: torchao's initialize_fake_quantizers
    const low_bit::intx_state init = low_bit::intx_learned_state(xv, s, path());
    tensor scale = tensor::from_shape(low_bit_state_shape(xv.shape(), s.axis, low_bit::intx_layout(xv, s, path()).blocks_per_row()));
    for (std::size_t g = 0; g < scale.size(); ++g) scale.data()[g] = init.values[2 * g];
    learned_scale_->value = std::move(scale);
  }
  low_bit::intx_state st = learned_state(xv);
  const var scale_var(learned_scale_);
  const bool record = needs_grad(x, scale_var);
  std::shared_ptr<std::vector<unsigned char>> mask;
  if (record) mask = std::make_shared<std::vector<unsigned char>>(xv.size());
  tensor y = low_bit::intx_apply<default_policy>(xv, s, st, path(), mask ? reinterpret_cast<bool*>(mask->data()) : nullptr);
  if (!record) return var(std::move(y));
  return emit_with(x, std::move(y), true, [x, s, st = std::move(st), mask, scale = learned_scale_, where = path()](const tensor& dy) {
    const std::vector<float> ds = low_bit::intx_learned_scale_gradient(x.value(), dy, s, st, where);
    tensor g = tensor::from_shape(scale->value.shape());
    std::copy(ds.begin(), ds.end(), g.begin());
    add_grad(var(scale), std::move(g));
    return low_bit::intx_backward<default_policy>(x.value(), dy, s, st, reinterpret_cast<const bool*>(mask->data()), where);
  });
}

XQ_DECL fake_quantizer::fake_quantizer(std::string default_name, std::string (*type_name)(),
                                       const quantizer_config& config)
    : quantizer_layer<fake_quantizer>(std::move(default_name)) {
  set_kind(type_name);
  configure(config);
  built_ = true;  // a standalone quantizer's state is there from the start
}

XQ_DECL void fake_quantizer::observe(const tensor& x) {
  built_ = true;
  if (x.size() != 0 && learns_scales() && learned_scale_->value.size() == 0) {  // fake quant off: the scales still start here
    const no_grad nothing_recorded;
    quantize_learned(var(x));
  }
  if (x.size() == 0 || config_.format) return;  // a format's scales come from each tensor  // nothing to learn a range from (TF's min of nothing is +Inf)
  const kernels::channel_layout l = layout_of(x);
  vector lo = min(), hi = max();
  tracker_->update(config_, x, l, lo, hi, path());
  store(lo, hi);
  ++batches_;
}

XQ_DECL var fake_quantizer::quantize(const var& x) {
  // Written only when it changes: an inference call writes nothing to the quantizer, so
  // several threads may run one model at once (issue 34).
  if (!built_) built_ = true;
  const tensor& xv = x.value();
  // Calibration (quantizers/calibrate.hpp): the quantizer observes its float input and
  // passes it on, so that every quantizer sees what the float model computes.
  if (calibration_sink* sink = calibration_sink::current()) {
    sink->collect(*this, xv);
    return x;
  }
  if (learns_scales()) return quantize_learned(x);
  const bool record = needs_grad(x);
  if (config_.format) {
    quantized_output out = detail::format_forward(config_.format, x, record, path());
    if (!record) return var(std::move(out.y));
    return emit(x, std::move(out.y), std::move(out.input_gradient));
  }
  const kernels::channel_layout l = layout_of(xv);
  vector lo = min(), hi = max();
  tracker_->current(config_, l.channels, lo, hi);
  quantized_output out = numerics_->apply(config_, xv, l, lo, hi, record, path());
  if (!record) return var(std::move(out.y));
  return emit(x, std::move(out.y), std::move(out.input_gradient));
}

XQ_DECL quantization_grid fake_quantizer::grid(std::size_t channels) const {
  if (config_.format)
    throw argument_error(path(), "an integer grid (a range kept)",
                         detail::concat("the format ", xq::describe(config_.format),
                                        ", whose grid follows each tensor: grid_of(x)"));
  vector lo = min(), hi = max();
  tracker_->current(config_, config_.per_channel ? channels : 1, lo, hi);
  return numerics_->grid(config_, config_.per_channel ? channels : 1, lo, hi, path());
}

XQ_DECL bool fake_quantizer::has_seen_data() const {
  if (learns_scales()) return learned_scale_->value.size() != 0;  // the first call starts the scales
  if (batches_ > 0 || config_.format) return true;  // a format needs no data: its scales are each tensor's
  const fake_quantizer initial(config_, true);  // the range before any batch
  const vector a = min(), b = max(), c = initial.min(), d = initial.max();
  if (a.size() != c.size() || b.size() != d.size()) return true;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a(i) == c(i)) || !(b(i) == d(i))) return true;
  return false;
}

XQ_DECL std::optional<quantization_grid> fake_quantizer::grid_of(const tensor& x) const {
  if (!enabled() || !fake_quant_enabled()) return std::nullopt;
  if (learns_scales()) {  // the learned scales, fixed between optimizer steps
    const low_bit::intx_spec& s = *config_.format.get_if<low_bit::intx_spec>();
    const low_bit::intx_state st = learned_state(x);
    // An optimizer may move a learned scale below zero (torchao lets it: nothing clamps it
    // after the start). Its values q · s are then those of |s| with the integers -q - 1 and
    // zero point -1: clamp(rint(x · (1 / |s|)) - 1, qmin, qmax) is -clamp(rint(x · (1 / s)),
    // qmin, qmax) - 1 exactly (rint is odd, and [qmin, qmax] = [-2^(b-1), 2^(b-1) - 1] maps
    // onto itself), so the grid keeps positive scales and the simulation's values.
    const std::size_t groups = st.values.size() / 2;
    low_bit_state state{tensor::from_shape({groups}), tensor::from_shape({groups})};  // scales, zero points
    for (std::size_t i = 0; i < groups; ++i) {
      const float scale = st.values[2 * i];
      state[0].data()[i] = std::fabs(scale);
      state[1].data()[i] = scale < 0.0f ? -1.0f : 0.0f;
    }
    quantization_grid g = intx_quantizer::grid(s, x.shape(), state, path());
    g.dynamic = false;
    return g;
  }
  if (config_.format) return detail::format_grid(config_.format, x, path());
  return grid(layout_of(x).channels);
}

XQ_DECL tensor fake_quantizer::fake_quantize(const tensor& x) const {
  if (learns_scales())
    return low_bit::intx_apply<default_policy>(x, *config_.format.get_if<low_bit::intx_spec>(), learned_state(x), path());
  if (config_.format) return detail::format_forward(config_.format, var(x), false, path()).y;
  const kernels::channel_layout l = layout_of(x);
  vector lo = min(), hi = max();
  tracker_->current(config_, l.channels, lo, hi);
  return numerics_->apply(config_, x, l, lo, hi, false, path()).y;
}

XQ_DECL std::vector<std::int32_t> fake_quantizer::integers(const tensor& x) const {
  if (learns_scales()) return grid_integers(*grid_of(x), fake_quantize(x), path());
  if (config_.format) return grid_integers(detail::format_grid(config_.format, x, path()), fake_quantize(x), path());
  const kernels::channel_layout l = layout_of(x);
  return grid_integers(grid(l.channels), fake_quantize(x), path());
}

XQ_DECL vector fake_quantizer::to_vector(const tensor& t) {
  vector v = vector::from_shape({t.size()});
  std::copy(t.begin(), t.end(), v.begin());
  return v;
}

XQ_DECL void fake_quantizer::store(const vector& lo, const vector& hi) {
  min_->value = tensor::from_shape({lo.size()});
  max_->value = tensor::from_shape({hi.size()});
  std::copy(lo.begin(), lo.end(), min_->value.begin());
  std::copy(hi.begin(), hi.end(), max_->value.begin());
}

XQ_DECL kernels::channel_layout fake_quantizer::layout_of(const tensor& x) const {
  if (!config_.per_channel) return kernels::channel_layout{1, 1, x.size()};
  const std::string& w = path();
  const auto l = kernels::channel_layout::of(x.shape(), config_.channel_axis, w.c_str());
  const std::size_t stored = min_->value.size();
  if (stored != 0 && stored != l.channels)
    throw argument_error(w,
                         detail::concat(stored, " channels on axis ", config_.channel_axis,
                                        " (as in the batches seen, or the range set)"),
                         detail::concat(l.channels, " channels, input of shape ", detail::shape_string(x.shape())));
  return l;
}

XQ_DECL fake_quantizer::fake_quantizer() : fake_quantizer(quantizer_config{}, false) {}

}  // namespace xq
