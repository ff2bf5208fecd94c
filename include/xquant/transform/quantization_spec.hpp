#pragma once
/// \file quantization_spec.hpp
/// `quantization_spec`: the run-time half of quantization, NVIDIA's QuantizationSpec.
/// Entries name a layer by path ("block_1/conv"), a composite by path ("block_1": the
/// layers inside it), or a layer type ("max_pool2d", like NVIDIA's is_keras_class=True),
/// and say what to quantize there. For a layer, the entry naming its own path wins, then
/// the one naming its nearest enclosing composite, then one naming its type; among
/// entries naming the same key, the last added. `quantize_model` rejects an entry whose
/// path names nothing in the model, or whose type no layer has and xquant does not know,
/// listing what it has.
///
/// A composite's entry (`layer_quantization::block`) quantizes the layers inside it
/// `as_full_mode` by default — each as full mode would (the scheme's placement, and the
/// spec's type entries): in partial mode, "this block as the whole model would be", so
/// NVIDIA's scheme quantizes a block's convs and leaves its batch norms, relus and adds
/// alone, as TensorRT users expect. `block_placement::every_layer` applies the entry's
/// own flags to every layer inside instead, batch norms, activations and adds included.
///
/// \code
///   xq::quantization_spec spec;
///   spec.add("block_1/conv", {false, true});   // quantize_input off, quantize_weight on
///   spec.add("merge", {true, true, {1}});      // add: a QDQ on input 1 only
///   spec.add_type("max_pool2d");               // every max pool's input
///   spec.add("block_2");                       // block_2 as full mode would quantize it
///   xq::layer_quantization all;
///   all.block = xq::block_placement::every_layer;
///   spec.add("block_3", all);                  // every layer's input (and weight) in block_3
/// \endcode

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../quantizers/low_bit_format.hpp"

namespace xq {

/// How an entry naming a composite's path places quantizers on the layers inside it (an
/// entry naming a layer's own path or its type always applies to that layer as written).
enum class block_placement {
  /// Each layer inside as full mode would quantize it: by a type entry of the spec, else
  /// by the scheme (nothing where the scheme leaves the type off: NVIDIA's batch norms,
  /// activations, adds, max pools). The entry's `false` flags turn those sites off, its
  /// `num_bits` and `per_channel` apply, its `quantize_output` can only turn outputs off.
  as_full_mode,
  /// Every layer inside with the entry's own flags, as if the entry named it: the inputs
  /// (and weights) of batch norms, activations and adds too.
  every_layer
};

/// What one entry asks for.
struct layer_quantization {
  bool quantize_input = true;
  bool quantize_weight = true;  ///< ignored for layers without weights (as NVIDIA's)
  /// Merge layers: the inputs that get a QDQ; empty means all.
  std::vector<std::size_t> quantization_index{};
  std::optional<int> num_bits{};        ///< overrides the scheme's bit width
  std::optional<bool> per_channel{};    ///< weights per channel or per tensor
  std::optional<bool> quantize_output{};
  /// For an entry naming a composite: how it applies to the layers inside (see above).
  block_placement block = block_placement::as_full_mode;
  /// Overrides the scheme's low-bit format (quantizers/low_bit_format.hpp) of the weight or
  /// the input; an empty format: the scheme's integer grid. So one model mixes formats by
  /// path or type: `what.weight_format = xq::low_bit::mx_spec{}`.
  std::optional<low_bit_format> weight_format{};
  std::optional<low_bit_format> input_format{};
};

class quantization_spec {
 public:
  struct entry {
    std::string key;  ///< a path, or a type name when `by_type`
    bool by_type = false;
    layer_quantization what;
  };

  /// The layer at `path` (a later entry for the same path replaces an earlier one).
  quantization_spec& add(std::string path, layer_quantization what = {});
  /// Every layer of type `type` ("conv2d", "add", or a user layer's type name).
  quantization_spec& add_type(std::string type, layer_quantization what = {});
  /// Appends another spec's entries (custom QDQ cases add theirs this way).
  quantization_spec& append(const quantization_spec& other);

  /// The entry for a layer (see the file comment): its path, else its nearest enclosing
  /// composite's, else its type.
  const entry* find(const std::string& path, const std::string& type) const;
  /// Whether `composite` is a proper prefix of `path` at a '/' ("block" encloses "block/conv").
  static bool encloses(const std::string& composite, const std::string& path);
  /// Whether some entry names this path or a composite enclosing it.
  bool names(const std::string& path) const;
  /// Whether an entry decides this layer's placement itself: one naming its path, or an
  /// enclosing composite's with `block_placement::every_layer`. (A composite's entry
  /// `as_full_mode` leaves it to what full mode does there, QDQ cases included.)
  bool places(const std::string& path) const;

  const std::vector<entry>& entries() const noexcept { return entries_; }
  bool empty() const noexcept { return entries_.empty(); }

 private:
  std::vector<entry> entries_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantization_spec.ipp"
#endif
