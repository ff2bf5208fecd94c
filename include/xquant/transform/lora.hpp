#pragma once
/// \file lora.hpp
/// QAT with LoRA adapters: low-rank float adapters beside the frozen kernels of a quantized
/// twin (wrappers/low_rank_adapter.hpp says the form: K + scale·A·B before the quantizer,
/// NNCF's absorbable one), trained alone or with the base, then merged so that export and
/// the engine see one kernel and compute what was trained.
///
/// \code
///   auto twin = xq::quantize_model(model, options, {1, 28, 28, 1});
///   xq::add_lora_adapters(twin, {/*rank=*/8, /*alpha=*/16});
///   xq::adam opt(xq::lora_parameters(twin), 1e-3f);           // the adapters alone
///   xq::fit(twin, opt, xq::sparse_softmax_cross_entropy, train, fit_options);
///   xq::merge_lora_adapters(twin);                            // before export or lowering
/// \endcode
///
/// Adapters attach to the twin's weight_quantized layers of the listed types; the base
/// kernels are the float model's parameters (a twin shares them), so freezing them freezes
/// the float model's too until the merge.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/layer_traits.hpp"
#include "../core/model.hpp"
#include "../core/parameter.hpp"
#include "../wrappers/low_rank_adapter.hpp"

namespace xq {

struct lora_options {
  std::size_t rank = 8;
  /// The adapter's product is scaled by alpha / rank (PEFT's lora_alpha).
  float alpha = 16.0f;
  /// The float layer types that get adapters ("dense", "conv2d", "depthwise_conv2d", ...).
  std::vector<std::string> layer_types{"dense", "conv2d"};
  /// Only these layers (paths); empty: every layer of the listed types.
  std::vector<std::string> layers{};
  /// Freeze the base kernels (LoRA); false trains both (QAT with adapters).
  bool freeze_base = true;
  std::uint32_t seed = 0;
};

namespace detail {
template <class L>
using attach_adapter_op = decltype(std::declval<L&>().attach_adapter(std::declval<low_rank_adapter>()));
template <class L>
inline constexpr bool takes_adapter_v = detect<L, attach_adapter_op>::value;

XQ_DECL bool listed(const std::vector<std::string>& names, const std::string& name);
}  // namespace detail

/// Attaches an adapter to every chosen layer of `twin` (a built quantized twin); returns how
/// many. A layer's rank is min(rank, rows, cols) of its kernel. argument_error for a listed
/// path that has no adapter-taking layer, or an unbuilt one.
template <class Model>
std::size_t add_lora_adapters(Model& twin, const lora_options& o = {}) {
  set_paths(twin);
  std::size_t count = 0;
  std::vector<std::string> attached;
  for_each_layer(twin, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (detail::takes_adapter_v<L>) {
      const bool chosen = o.layers.empty() ? detail::listed(o.layer_types, L::layer_type()) : detail::listed(o.layers, l.path());
      if (!chosen) return;
      const parameter_ptr& k = l.kernel();
      if (!k) throw argument_error(l.path(), "a built layer (quantize_model with an input shape, or one call)", "no kernel yet");
      const auto& shape = k->value.shape();
      std::size_t rows = 1;
      for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
      const std::size_t rank = std::min({o.rank, rows, std::size_t(shape.empty() ? 0 : shape.back())});
      // The scale stays alpha / o.rank where a small kernel clips the rank: every adapter's
      // product weighs the same.
      low_rank_adapter a =
          make_low_rank_adapter({shape.begin(), shape.end()}, rank, o.alpha * float(rank) / float(o.rank ? o.rank : 1),
                                o.seed + std::uint32_t(count), l.path());
      if (o.freeze_base && k->trainable()) {
        k->set_trainable(false);
        a.froze_base = true;
      }
      l.attach_adapter(std::move(a));
      attached.push_back(l.path());
      ++count;
    }
  });
  for (const std::string& p : o.layers)
    if (!detail::listed(attached, p)) throw argument_error("xq::add_lora_adapters", "a weighted twin layer at " + p, "none");
  return count;
}

/// Every adapter's parameters (A then B, per layer in model order): what a LoRA optimizer steps.
template <class Model>
std::vector<parameter_ptr> lora_parameters(Model& twin) {
  std::vector<parameter_ptr> out;
  for_each_layer(twin, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (detail::takes_adapter_v<L>)
      if (const low_rank_adapter* a = l.adapter()) {
        out.push_back(a->down);
        out.push_back(a->up);
      }
  });
  return out;
}

/// Merges every adapter into its kernel (the forward's arithmetic: the twin computes what
/// it computed) and drops it; kernels frozen by add_lora_adapters are trainable again.
/// Returns how many were merged.
template <class Model>
std::size_t merge_lora_adapters(Model& twin) {
  std::size_t count = 0;
  for_each_layer(twin, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (detail::takes_adapter_v<L>) count += l.merge_adapter() ? 1 : 0;
  });
  return count;
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/lora.ipp"
#endif
