#pragma once
/// \file quantize_model.hpp
/// `quantize_model`: a float model in, its quantized twin out (NVIDIA's
/// `quantize_model(model, quantization_mode, quantization_spec, custom_qdq_cases)`).
///
///  1. The twin is built by the trait (`quantize_layer`): same structure, same paths,
///     the same parameter objects (training the twin trains the float model's weights).
///  2. If anything needs the graph (QDQ cases, batch-norm folding, per-call-site
///     ranges, a scheme's output fusion rule), the twin runs once on a sample input
///     under a `graph_trace`, in inference mode, recording nothing. The pass also checks
///     that the forward code calls no layer the model does not reach through its
///     children (core/layer_call.hpp).
///  3. Cases add spec entries; every wrapper then gets its settings:
///       - `full`: layers the spec names (by path, by an enclosing composite's path, or by
///         type) follow their entry, the others the scheme's defaults — for a type the
///         scheme does not list, its `quantize<L>` specialization's default
///         (transform/quantize.hpp);
///       - `partial`: only the layers the spec names are quantized; a composite's entry
///         quantizes the layers inside it as full mode would, or every one of them with
///         `block_placement::every_layer` (quantization_spec.hpp).
///     A spec entry whose path names nothing in the model, or whose type is neither in
///     the model nor known to xquant, is an error listing what there is.
///  4. Batch norms fed by a conv2d/depthwise_conv2d/dense (whose output goes nowhere
///     else) are folded into it when `fold_batch_norm` is on.
///  5. A function with a layer form (`xq::ops::relu`, `xq::ops::add`) called by forward
///     code is a node of the traced graph like its layer: NVIDIA's residual case sees a
///     conv -> bn -> ops::relu chain as it sees conv -> bn -> relu. Where the scheme or the
///     spec would put a quantizer on such a function (tfmot and PyTorch quantize a relu's
///     output), `quantize_model` refuses, naming the function and saying which layer to
///     use instead: a function has nowhere to keep a quantizer.
///
/// \code
///   auto qat = xq::quantize_model(model, {}, xq::tensor::shape_type{1, 28, 28, 1});
/// \endcode

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/graph_trace.hpp"
#include "../core/layer_traits.hpp"
#include "../core/mode.hpp"
#include "../core/model.hpp"
#include "../core/tape.hpp"
#include "../quantizers/model_quantizers.hpp"
#include "../wrappers/batch_norm_folding.hpp"
#include "../wrappers/quantized_batch_norm.hpp"
#include "../wrappers/weight_quantized.hpp"
#include "qdq_cases.hpp"
#include "quantization_scheme.hpp"
#include "quantization_spec.hpp"
#include "quantize.hpp"
#include "registry.hpp"

namespace xq {

enum class quantization_mode {
  full,    ///< everything the scheme quantizes, with the spec's entries on top
  partial  ///< only what the spec names
};

struct quantize_options {
  quantization_mode mode = quantization_mode::full;
  quantization_spec spec{};
  std::vector<qdq_case> cases{};
  quantization_scheme scheme = schemes::nvidia();
  /// Fold each batch_norm into the conv/dense that feeds it (PyTorch's ConvBn QAT).
  bool fold_batch_norm = false;
  /// Folded batch norms use batch statistics for this many training calls, then their
  /// moving statistics, frozen (PyTorch's freeze_bn_stats); negative: never freeze.
  long freeze_batch_norm_after = -1;
  /// One range per call site for layers called more than once (default: one shared range).
  bool per_call_site_ranges = false;
};

/// Whether `T` is an NVIDIA-style wrapper that `quantize_model` configures (has
/// `configure(wrapper_settings)`).
template <class T, class = void>
struct is_quantize_wrapper : std::false_type {};
template <class T>
struct is_quantize_wrapper<T, std::void_t<decltype(std::declval<T&>().configure(std::declval<const wrapper_settings&>()))>>
    : std::true_type {};
template <class T>
inline constexpr bool is_quantize_wrapper_v = is_quantize_wrapper<T>::value;

/// Re-aligns per-call-site quantizers after a pass that stopped half-way.
template <class Model>
void reset_call_sites(Model& model) {
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (is_quantize_wrapper_v<L>) l.reset_call_sites();
  });
}

namespace detail {

/// What the passes need of one wrapper, type-erased (valid while the model is not moved):
/// plain function pointers, so that a model's wrapper types cost a program no
/// std::function machinery (the compile budget of issue 12).
struct wrapper_handle {
  std::string path, type;
  bool has_weight = false;
  bool on_by_default = false;  ///< `quantized_by_default` of the float layer's type
  void* wrapper = nullptr;
  void (*configure_fn)(void*, const wrapper_settings&) = nullptr;
  void (*set_call_sites_fn)(void*, std::size_t) = nullptr;
  void (*reset_call_sites_fn)(void*) = nullptr;
  void (*fold_fn)(void*, std::shared_ptr<batch_norm_fold>) = nullptr;  ///< weighted layers, batch norms
  std::shared_ptr<batch_norm_fold> (*make_fold_fn)(void*) = nullptr;  ///< batch norms

  void configure(const wrapper_settings& s) const { configure_fn(wrapper, s); }
  void set_call_sites(std::size_t n) const { set_call_sites_fn(wrapper, n); }
  void reset_call_sites() const { reset_call_sites_fn(wrapper); }
  bool can_fold() const noexcept { return fold_fn != nullptr; }
  void fold(std::shared_ptr<batch_norm_fold> f) const { fold_fn(wrapper, std::move(f)); }
  bool makes_fold() const noexcept { return make_fold_fn != nullptr; }
  std::shared_ptr<batch_norm_fold> make_fold() const { return make_fold_fn(wrapper); }
};

/// The fold state a batch norm starts from (its gamma, moving variance and epsilon).
XQ_DECL std::shared_ptr<batch_norm_fold> make_batch_norm_fold(const batch_norm& bn);

template <class Model>
std::vector<wrapper_handle> wrapper_handles(Model& model) {
  std::vector<wrapper_handle> out;
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (is_quantize_wrapper_v<L>) {
      using F = typename L::float_layer_type;
      wrapper_handle h;
      h.path = l.path();
      h.type = L::layer_type();
      h.has_weight = is_weighted_layer_v<F>;
      h.on_by_default = quantized_by_default_v<F>;
      h.wrapper = &l;
      h.configure_fn = [](void* w, const wrapper_settings& s) { static_cast<L*>(w)->configure(s); };
      h.set_call_sites_fn = [](void* w, std::size_t n) { static_cast<L*>(w)->set_call_sites(n); };
      h.reset_call_sites_fn = [](void* w) { static_cast<L*>(w)->reset_call_sites(); };
      if constexpr (is_weighted_layer_v<F> || std::is_same_v<L, quantized_batch_norm>)
        h.fold_fn = [](void* w, std::shared_ptr<batch_norm_fold> f) { static_cast<L*>(w)->fold(std::move(f)); };
      if constexpr (std::is_same_v<L, quantized_batch_norm>)
        h.make_fold_fn = [](void* w) { return make_batch_norm_fold(static_cast<L*>(w)->float_layer()); };
      out.push_back(std::move(h));
    }
  });
  return out;
}

/// "a, b, c": a list for error messages.
XQ_DECL std::string layer_list(const std::vector<std::string>& items);

/// The scheme's entry for a layer type, or its placement for a type it does not list.
struct scheme_placement {
  const layer_defaults* defaults;
  bool on;  ///< quantized in full mode without a spec entry
};
XQ_DECL scheme_placement placement_for(const quantization_scheme& scheme, const std::string& type, bool has_weight,
                                       bool on_by_default);

/// The settings of wrapper `w` under options `o` and spec `spec` (the user's and the cases').
XQ_DECL wrapper_settings settings_for(const wrapper_handle& w, const quantize_options& o,
                                      const quantization_spec& spec);

/// Whether an enabled quantizer of the model learns its scales (torchao's range learning).
XQ_DECL bool learns_scales(layer_ref model);

/// Whether the options need a traced pass.
XQ_DECL bool needs_trace(const quantize_options& o);

/// Every user spec entry must name something: a path of the model (a layer, or a
/// composite enclosing some), or a layer type the model has or xquant knows.
XQ_DECL void check_spec(const quantization_spec& spec, const std::vector<std::string>& paths,
                        const std::vector<wrapper_handle>& handles, const quantization_scheme& scheme);

/// The layer a function should be replaced with, for the error message.
XQ_DECL std::string layer_for_function(const std::string& type);

/// Refuses a traced function call (xq::ops::relu(x)) on which the scheme or the spec
/// would place a quantizer: it has nowhere to keep one (see the file comment).
XQ_DECL void check_function_calls(const graph_trace& g, const quantize_options& o, const quantization_spec& spec);

/// Batch norms to fold: (weighted wrapper path, batch norm path) pairs where every call
/// of the batch norm takes the output of that layer and nothing else consumes it.
XQ_DECL std::vector<std::pair<std::string, std::string>> fold_pairs(const graph_trace& g,
                                                                    const std::vector<wrapper_handle>& handles);

/// What `configure_twin` does once it has the twin's wrappers, the paths of its layers
/// and, when it traced a pass, the trace: checks the spec, runs the cases, configures
/// every wrapper, then (traced) drops fused outputs, sets call sites and folds batch norms.
XQ_DECL void configure_wrappers(const std::vector<wrapper_handle>& handles, const std::vector<std::string>& paths,
                                const graph_trace* trace, const quantize_options& o);

template <class Twin, class SampleCall>
void configure_twin(Twin& twin, const quantize_options& o, SampleCall&& sample_call, bool have_sample) {
  xq::set_paths(twin);  // qualified: a user's twin type need not be found by ADL
  std::vector<wrapper_handle> handles = wrapper_handles(twin);
  std::unique_ptr<graph_trace> trace;
  if (have_sample) {
    trace = std::make_unique<graph_trace>();
    {
      const no_grad nothing_recorded;
      const training_mode inference(false);
      checked_calls(twin, [&] {
        sample_call(twin);
        return 0;
      });
    }
    xq::set_paths(twin);  // the pass built lazy layers: name their parameters
  } else if (!o.cases.empty() || o.fold_batch_norm || o.per_call_site_ranges) {
    throw argument_error("quantize_model",
                         "a sample input (input shape or sample call) to trace the graph, which QDQ cases, "
                         "batch-norm folding and per-call-site ranges need",
                         "none");
  }
  configure_wrappers(handles, layer_paths(as_layer_ref(twin)), trace.get(), o);
  if (have_sample && learns_scales(as_layer_ref(twin))) {
    // torchao's initialize_fake_quantizers: one pass starts the learned scales from the
    // kernels, so that an optimizer made next holds them.
    const no_grad nothing_recorded;
    const training_mode inference(false);
    sample_call(twin);
  }
  if (trace)
    for (const auto& h : handles) h.reset_call_sites();
}

}  // namespace detail

/// The quantized twin of `model`, configured by `options`; `sample_call(twin)` runs one
/// forward pass for the passes that need the graph (any callable taking the twin).
template <class Model, class SampleCall,
          class = std::enable_if_t<std::is_invocable_v<SampleCall&, quantize_t<Model>&>>>
quantize_t<Model> quantize_model(const Model& model, const quantize_options& options, SampleCall&& sample_call) {
  quantize_t<Model> twin = quantize_layer(model);
  detail::configure_twin(twin, options, sample_call, true);
  return twin;
}

/// Same, tracing with a batch of zeros of `input_shape` (batch axis included).
template <class Model>
quantize_t<Model> quantize_model(const Model& model, const quantize_options& options,
                                 const tensor::shape_type& input_shape) {
  return quantize_model(model, options, [&](auto& twin) { (void)twin(var(detail::zeros_tensor(input_shape))); });
}

/// Same for a model with several inputs: zeros of each of `shapes`, in the order the
/// model takes them (core/model_call.hpp).
template <class Model>
quantize_t<Model> quantize_model(const Model& model, const quantize_options& options, const input_shapes& shapes) {
  return quantize_model(model, options, [&](auto& twin) {
    (void)call_model(twin, detail::zero_inputs(shapes), "xq::quantize_model");
  });
}

/// Same, without a traced pass (no cases, folding or per-call-site ranges).
template <class Model>
quantize_t<Model> quantize_model(const Model& model, const quantize_options& options = {}) {
  quantize_t<Model> twin = quantize_layer(model);
  detail::configure_twin(twin, options, [](auto&) {}, false);
  return twin;
}

/// NVIDIA's signature: mode, spec and custom QDQ cases (the cases need `input_shape`).
template <class Model>
quantize_t<Model> quantize_model(const Model& model, quantization_mode mode, quantization_spec spec = {},
                                 std::vector<qdq_case> cases = {}, const tensor::shape_type& input_shape = {}) {
  quantize_options o;
  o.mode = mode;
  o.spec = std::move(spec);
  o.cases = std::move(cases);
  if (input_shape.empty()) {
    o.scheme.skip_output_before_fused_consumer = false;
    return quantize_model(model, o);
  }
  return quantize_model(model, o, input_shape);
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantize_model.ipp"
#endif
