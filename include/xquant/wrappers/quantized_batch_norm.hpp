#pragma once
/// \file quantized_batch_norm.hpp
/// The quantized twin of batch_norm: NVIDIA's wrapper (a QDQ on the input, off by
/// default) plus the far end of batch-norm folding. When the preceding conv folds it,
/// both share a `batch_norm_fold`; once that is frozen, the batch norm runs with its
/// moving statistics, and does not update them, even while training (PyTorch's
/// freeze_bn_stats), so the model trains with exactly the arithmetic it deploys with.

#include <memory>
#include <utility>

#include "../config.hpp"
#include "../layers/batch_norm.hpp"
#include "batch_norm_folding.hpp"
#include "input_quantized.hpp"

namespace xq {

class quantized_batch_norm : public input_quantized<batch_norm, quantized_batch_norm> {
  using base = input_quantized<batch_norm, quantized_batch_norm>;

 public:
  XQ_SPECIAL_MEMBERS(quantized_batch_norm)
  quantized_batch_norm() : base(batch_norm{}) {}
  explicit quantized_batch_norm(batch_norm layer) : base(std::move(layer)) {}

  XQ_DECL var call(const var& x);

  /// Links this batch norm to the conv that folds it (`quantize_model` calls it).
  void fold(std::shared_ptr<batch_norm_fold> link) { fold_ = std::move(link); }
  const std::shared_ptr<batch_norm_fold>& folded() const noexcept { return fold_; }
  /// The link's slot, with the parameters inside it (core/clone.hpp's protocol): a clone
  /// gives the folded pair one new link pointing at the clone's gamma and variance.
  template <class F>
  void for_each_link_slot(F&& f) {
    f(fold_, &batch_norm_fold::gamma, &batch_norm_fold::moving_variance);
  }

 private:
  std::shared_ptr<batch_norm_fold> fold_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantized_batch_norm.ipp"
#endif
