#pragma once
/// \file quantize_wrapper.hpp
/// What every quantized twin shares: it holds its float layer by value (whose
/// parameters are `shared_ptr`s, so the twin uses the float layer's weights, not a
/// copy), answers to the layer's name and path, lists the layer's parameters, owns an
/// output quantizer (off in NVIDIA's scheme; tfmot and PyTorch quantize outputs), and
/// reports each call to an active `graph_trace`.
///
/// The wrappers (input_quantized, weight_quantized, inputs_quantized) are leaves for
/// `for_each_layer`: their float layer is not a separate child, so paths and parameter
/// names stay those of the float model ("block/conv/kernel").

#include <string>
#include <utility>
#include <vector>

#include "../core/clone.hpp"
#include "../core/parameter.hpp"
#include "../core/type_name.hpp"
#include "../core/graph_trace.hpp"
#include "site_quantizers.hpp"
#include "wrapper_settings.hpp"

namespace xq {

template <class Self, class Layer>
class quantize_wrapper {
 public:
  using float_layer_type = Layer;

  /// The float layer inside (its parameters are the model's parameters).
  Layer& float_layer() noexcept { return layer_; }
  const Layer& float_layer() const noexcept { return layer_; }

  const std::string& name() const noexcept { return layer_.name(); }
  Self& name(std::string n) {
    layer_.name(std::move(n));
    self().set_path(layer_.path());
    return self();
  }
  const std::string& path() const noexcept { return layer_.path(); }
  /// Sets the layer's path (renaming its parameters) and its quantizers' paths
  /// ("block/conv/input_quantizer").
  void set_path(std::string p) {
    layer_.set_path(p);
    output_.set_path(p + "/output_quantizer");
    self().name_quantizers(p);
  }
  std::vector<parameter_ptr> parameters() const { return layer_.parameters(); }
  /// The float layer's parameter slots (core/clone.hpp's protocol): the twin holds no
  /// parameters of its own.
  template <class F>
  void for_each_parameter_slot(F&& f) {
    visit_parameter_slots(layer_, f);
  }

  /// The float layer's type, as `quantization_spec` entries by type name it ("conv2d").
  static std::string layer_type() { return detail::type_short_name<Layer>(); }

  site_quantizers& output_quantizer() noexcept { return output_; }
  const site_quantizers& output_quantizer() const noexcept { return output_; }

  /// The settings `quantize_model` gave this wrapper.
  const wrapper_settings& settings() const noexcept { return settings_; }

 protected:
  quantize_wrapper() = default;
  explicit quantize_wrapper(Layer layer) : layer_(std::move(layer)) {}

  /// The output quantizer, then the trace report (inputs as the caller passed them).
  var finish(const std::vector<var>& inputs, const var& y) {
    var out = output_(y);
    detail::trace_call(path(), layer_type(), inputs, out);
    return out;
  }
  void configure_output(const wrapper_settings& s) {
    settings_ = s;
    output_.configure(s.output, s.quantize_output);
  }

  Layer layer_;
  site_quantizers output_;
  wrapper_settings settings_;

 private:
  Self& self() noexcept { return static_cast<Self&>(*this); }
};

}  // namespace xq
