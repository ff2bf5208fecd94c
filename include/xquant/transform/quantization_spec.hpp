#pragma once
/// \file quantization_spec.hpp
/// `quantization_spec`: the run-time half of quantization, NVIDIA's QuantizationSpec.
/// Entries name a layer by path ("block_1/conv"), a composite by path ("block_1": every
/// layer inside it), or a layer type ("max_pool2d", like NVIDIA's is_keras_class=True),
/// and say what to quantize there. For a layer, the entry naming its own path wins, then
/// the one naming its nearest enclosing composite, then one naming its type; among
/// entries naming the same key, the last added. `quantize_model` rejects an entry whose
/// path names nothing in the model, or whose type no layer has and xquant does not know,
/// listing what it has.
///
/// \code
///   xq::quantization_spec spec;
///   spec.add("block_1/conv", {false, true});   // quantize_input off, quantize_weight on
///   spec.add("merge", {true, true, {1}});      // add: a QDQ on input 1 only
///   spec.add_type("max_pool2d");               // every max pool's input
/// \endcode

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"

namespace xq {

/// What one entry asks for.
struct layer_quantization {
  bool quantize_input = true;
  bool quantize_weight = true;  ///< ignored for layers without weights (as NVIDIA's)
  /// Merge layers: the inputs that get a QDQ; empty means all.
  std::vector<std::size_t> quantization_index{};
  std::optional<int> num_bits{};        ///< overrides the scheme's bit width
  std::optional<bool> per_channel{};    ///< weights per channel or per tensor
  std::optional<bool> quantize_output{};
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

  const std::vector<entry>& entries() const noexcept { return entries_; }
  bool empty() const noexcept { return entries_.empty(); }

 private:
  std::vector<entry> entries_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantization_spec.ipp"
#endif
