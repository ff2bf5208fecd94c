#pragma once
/// \file summarize.hpp
/// `xq::summarize(model, input_shape)`: `larq.models.summary`'s figures for any
/// xquant model and any bit widths.
///
/// \code
///   xq::sequential model(xq::quant_conv2d<xq::no_quantizer, xq::ste_sign>(32, 3), xq::flatten(), xq::dense(10));
///   xq::model_summary s = xq::summarize(model, {1, 28, 28, 1});   // batch axis included, as xq::build
///   xq::print_summary(s, std::cout);                               // Larq's two tables
/// \endcode
///
/// How it works: one inference forward pass on zeros (no tape, no statistics
/// updated; it builds an unbuilt model) with an op observer (core/op_observer.hpp)
/// installed, which hears every matmul, conv2d and depthwise conv2d with its caller's
/// path, the shape its MACs are counted over and its weight shape, and a graph trace
/// (core/graph_trace.hpp), which records every leaf call with its inputs and output.
///
/// Rows (what the user composed, as Larq's rows are a Keras model's layers):
///  - a `sequential`: one row per element, called one after the other, so each row's
///    input and output shapes are its element's; a nested `sequential` is expanded
///    into its elements, named by path ("sequential_1/dense");
///  - any other element (a composite with XQ_CHILDREN): one row summing its leaves,
///    as Larq shows a nested Keras model; input precision of its first leaf;
///  - a model that is not a `sequential`: one row per child (nested sequentials
///    expanded), its shapes as traced: a leaf's, its first call's input and its last
///    call's output; a composite's, from the calls of the leaves inside it — the input
///    of the first, the output of the last — widened by the functions (`xq::ops::relu`,
///    which carry no path) that only its own values feed at its end, or that feed only
///    it at its start (a composite's own forward code cannot be told from its caller's
///    there). A child the pass never called shows "?";
///  - a model that is a single leaf: one row.
///  - A standalone quantizer (`xq::ste_sign()` as a sequential element) is a row of
///    its own with its parameters, if any, and "-" as input precision (Larq has no
///    such rows: its quantizers live inside layers).
///
/// Weights: a layer with `weight_precisions()` (Larq's quant layers and the quantized
/// twins of weighted layers: a kernel at its quantizer's precision while it is on) gives
/// its weights' bit widths; every other parameter (quantizers' own state included) is
/// 32-bit, Larq's `getattr(weight, "precision", 32)`. A weight is counted once, in the first row
/// that uses it (tied weights), and as non-trainable when `set_trainable(false)`.
/// Larq's batch-norm rule: a layer with both `beta` and `moving_mean` drops `beta`,
/// one with `gamma` and `moving_variance` drops `gamma` (they fold into the moving
/// statistics at inference).
///
/// MACs (one sample): a layer counts MACs when `counts_macs<L>` says so (a layer with a
/// kernel or with weight precisions, unless it declares otherwise; core/layer_traits.hpp). Each reported op of a MAC layer counts Larq's
/// `count × output_pixels` for the layer's non-bias weight of the op's weight shape
/// (output_pixels: H·W of a 4-D output, the length of a 3-D one, 1 for 2-D, the
/// product of the inner axes beyond), at precision max(input precision or 32, weight
/// bits). Because ops are observed:
///  - MACs of layers inside composites are exact, and a layer called twice counts
///    the MACs of every call (Larq, which reads one output shape per layer, cannot);
///  - a MAC layer whose op reports nothing gets Larq's rule from its row's output
///    shape, or "?" when that is unknown; an op whose weight shape matches none of the
///    layer's weights counts its weight's size at max(input precision or 32, 32).
/// Layers that are not MAC layers have no MAC entries (printed 0; Larq prints "?"
/// for layer types it does not know, 0 for pooling, flatten and batch norm).
/// `tied_dense`/`tied_projection` declare no MACs (their matrix belongs to another layer).
/// The input precision of a quantized twin is its input quantizer's while that is on.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/children.hpp"
#include "../core/error.hpp"
#include "../core/graph_trace.hpp"
#include "../core/layer_traits.hpp"
#include "../core/model.hpp"
#include "../core/mode.hpp"
#include "../core/op_observer.hpp"
#include "../core/tape.hpp"
#include "../core/type_name.hpp"
#include "../layers/sequential.hpp"
#include "model_summary.hpp"

namespace xq {

namespace detail {

template <class T>
struct is_sequential : std::false_type {};
template <class... L>
struct is_sequential<sequential<L...>> : std::true_type {};

/// A composite seen only through its children (no parameters of its own).
template <class T>
inline constexpr bool is_pure_composite_v = has_children_v<T> && !has_parameters_v<T>;

/// Larq's `output_pixels`: H·W (4-D), length (3-D), 1 (2-D); inner axes' product beyond.
XQ_DECL std::uint64_t output_pixels(const tensor::shape_type& shape);

/// The shape with -1 as its batch axis (Larq's output shapes).
XQ_DECL std::vector<std::ptrdiff_t> batch_free_shape(const tensor::shape_type& shape);

/// The number of elements of a tensor of `shape`.
XQ_DECL std::size_t element_count(const tensor::shape_type& shape);

/// A row's input (its first) and output shapes as a traced pass saw them; nullopt when
/// nothing at `path` was called.
struct traced_shapes {
  std::optional<tensor::shape_type> input, output;
};
/// The shapes of the layer or composite at `path` in the trace `g` (see the file comment).
XQ_DECL traced_shapes traced_row_shapes(const graph_trace& g, const std::string& path);

/// Builds the rows: weights (deduplicated over the model), MACs from the observed ops.
class summary_builder {
 public:
  /// Every op event of the forward pass, by caller path.
  std::unordered_map<std::string, std::vector<op_event>> events;

  /// Fills `row` from the layer `obj` (a leaf, or a composite summed over its leaves);
  /// `shape` is its output shape when the walk saw it.
  template <class L>
  void fill_row(L& obj, layer_profile& row, const std::optional<tensor::shape_type>& shape,
                const std::optional<tensor::shape_type>& input_shape = std::nullopt) {
    row.input_precision = first_input_precision(obj);
    if (shape) row.output_shape = batch_free_shape(*shape);
    if (input_shape) row.input_shape = batch_free_shape(*input_shape);
    for_each_layer(obj, [&](auto& l) {
      using T = std::remove_const_t<std::remove_reference_t<decltype(l)>>;
      add_weights(l, row);
      if constexpr (counts_macs_v<T>) {
        // The row's own layer (a first member shares its composite's address: types too).
        const bool is_row = std::is_same_v<T, L> && static_cast<const void*>(&l) == &obj;
        add_macs(l, row, is_row, shape);
      }
    });
  }

 private:
  std::unordered_set<const parameter*> seen_;

  template <class L>
  static std::optional<int> first_input_precision(L& obj) {
    if constexpr (has_input_precision_v<L>) {
      return obj.input_precision();
    } else if constexpr (is_pure_composite_v<L>) {
      auto kids = children(obj);
      if constexpr (std::tuple_size_v<decltype(kids)> == 0) return std::nullopt;
      else return first_input_precision(std::get<0>(kids));
    } else {
      (void)obj;
      return std::nullopt;
    }
  }

  /// The layer's own parameters with bit widths (not its children's), Larq's
  /// batch-norm rule applied.
  template <class L>
  static std::vector<std::pair<parameter_ptr, int>> own_weights(const L& l, bool batch_norm_rule) {
    std::vector<std::pair<parameter_ptr, int>> out;
    auto listed = [&](const parameter_ptr& p) {
      for (const auto& e : out)
        if (e.first == p) return true;
      return false;
    };
    if constexpr (has_weight_precisions_v<L>)
      for (const auto& [p, bits] : l.weight_precisions())
        if (p && !listed(p)) out.emplace_back(p, bits);
    if constexpr (has_parameters_v<L>)
      for (const auto& p : l.parameters())
        if (p && !listed(p)) out.emplace_back(p, 32);  // no quantizer: 32-bit, as Larq
    if (batch_norm_rule) apply_batch_norm_rule(out);
    return out;
  }

  /// Larq's batch-norm rule on a layer's weights: `beta` goes when `moving_mean` is
  /// there, `gamma` when `moving_variance` is.
  static void apply_batch_norm_rule(std::vector<std::pair<parameter_ptr, int>>& weights);

  template <class L>
  void add_weights(const L& l, layer_profile& row) {
    if constexpr (has_parameters_v<L> || has_weight_precisions_v<L>) {
      const auto counted = own_weights(l, true);
      add_counted_weights(row, own_weights(l, false), counted);
    } else {
      (void)l;
      (void)row;
    }
  }

  /// Adds to `row` the weights of `all` not seen in an earlier row that are among
  /// `counted` (the batch-norm rule applied), marking all of them seen.
  void add_counted_weights(layer_profile& row, const std::vector<std::pair<parameter_ptr, int>>& all,
                           const std::vector<std::pair<parameter_ptr, int>>& counted);

  template <class L>
  void add_macs(const L& l, layer_profile& row, bool is_row, const std::optional<tensor::shape_type>& shape) {
    std::optional<int> in;
    if constexpr (has_input_precision_v<L>) in = l.input_precision();
    const int in_bits = in.value_or(32);
    std::vector<std::pair<parameter_ptr, int>> kernels;  // MACs come from non-bias weights only
    for (const auto& w : own_weights(l, false))
      if (w.first->short_name() != "bias") kernels.push_back(w);

    const std::string path = [&] {
      if constexpr (has_path_v<L>) return std::string(l.path());
      else return std::string();
    }();
    count_macs(row, kernels, in_bits, path, is_row, shape);
  }

  /// The MACs of the layer at `path` (its non-bias weights `kernels`, its input
  /// precision `in_bits`) into `row`: from its observed ops, else (the row's own layer)
  /// Larq's rule on the row's output shape `shape`.
  void count_macs(layer_profile& row, const std::vector<std::pair<parameter_ptr, int>>& kernels, int in_bits,
                  const std::string& path, bool is_row, const std::optional<tensor::shape_type>& shape) const;
};

/// Appends the rows of a sequential's elements, calling them one after another.
template <class Seq>
var summarize_sequential(Seq& seq, var x, const std::string& prefix, summary_builder& b,
                         std::vector<layer_profile>& rows) {
  for_each_child(seq, [&](auto& child, const std::string& name) {
    using C = std::remove_reference_t<decltype(child)>;
    const std::string path = join_path(prefix, name);
    if constexpr (is_sequential<C>::value) {
      x = summarize_sequential(child, x, path, b, rows);
    } else {
      var y = child(x);
      layer_profile row;
      row.name = path;
      b.fill_row(child, row, y.shape(), x.shape());  // its ops have run: its events are in
      rows.push_back(std::move(row));
      x = y;
    }
  });
  return x;
}

/// Appends one row per child of a composite that already ran under the trace `g` (nested
/// sequentials expanded), with the shapes `g` saw.
template <class Composite>
void summarize_children(Composite& c, const std::string& prefix, const graph_trace& g, summary_builder& b,
                        std::vector<layer_profile>& rows) {
  for_each_child(c, [&](auto& child, const std::string& name) {
    using C = std::remove_reference_t<decltype(child)>;
    const std::string path = join_path(prefix, name);
    if constexpr (is_sequential<C>::value) {
      summarize_children(child, path, g, b, rows);
    } else {
      layer_profile row;
      row.name = path;
      const traced_shapes shapes = traced_row_shapes(g, path);
      b.fill_row(child, row, shapes.output, shapes.input);
      rows.push_back(std::move(row));
    }
  });
}

template <class Model>
std::string model_name(const Model& model) {
  if constexpr (has_name_v<Model>) return std::string(model.name());
  else return type_short_name<Model>();
}

}  // namespace detail

/// The summary of `model` (Larq's `ModelProfile`) for inputs of `shapes` (one per input,
/// in the order the model takes them, batch axis included, as `xq::build`; the batch
/// size changes no figure: MACs are per sample). Runs one inference forward pass on
/// zeros without recording, which also builds an unbuilt model, and gives the model its
/// paths (`set_paths`). A model with several outputs shows the first one's shape.
template <class Model>
model_summary summarize(Model& model, const input_shapes& shapes) {
  if (shapes.empty())
    throw argument_error("xq::summarize", "at least one input shape, e.g. {1, 28, 28, 1}", "none");
  for (const auto& shape : shapes)
    if (shape.empty() || shape[0] == 0)
      throw argument_error("xq::summarize", "an input shape with a batch axis of at least 1, e.g. {1, 28, 28, 1}",
                           detail::shape_string(shape));
  set_paths(model);  // the ops report their callers' paths: final before the pass
  detail::summary_builder b;
  observe_ops watch([&](const op_event& e) { b.events[e.path].push_back(e); });
  no_grad off;
  training_mode inference(false);

  model_summary s;
  s.name = detail::model_name(model);
  const var_list inputs = detail::zero_inputs(shapes);
  checked_calls(model, [&] {
    if constexpr (detail::is_sequential<Model>::value) {
      if (inputs.size() != 1) throw argument_error("xq::summarize", "one input shape for a sequential model",
                                                   detail::concat(inputs.size(), " shapes"));
      detail::summarize_sequential(model, inputs[0], "", b, s.layers);
    } else if constexpr (detail::is_pure_composite_v<Model>) {
      graph_trace trace;  // the children's shapes
      (void)call_model(model, inputs, "xq::summarize");
      detail::summarize_children(model, "", trace, b, s.layers);
    } else {
      const var_list y = call_model(model, inputs, "xq::summarize");
      layer_profile row;
      row.name = s.name;
      b.fill_row(model, row, y.at(0).shape(), inputs.at(0).shape());
      s.layers.push_back(std::move(row));
    }
    return 0;
  });
  set_paths(model);  // parameters built by the pass get their full names
  return s;
}

/// `summarize` for a model with one input of `input_shape`.
template <class Model>
model_summary summarize(Model& model, const tensor::shape_type& input_shape) {
  return summarize(model, input_shapes(std::vector<tensor::shape_type>{input_shape}));
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/summarize.ipp"
#endif
