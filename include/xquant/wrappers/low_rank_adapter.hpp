#pragma once
/// \file low_rank_adapter.hpp
/// A LoRA adapter beside a quantized twin's kernel, in the form that absorbs exactly:
///
///   K' = K + (alpha / rank) · reshape(A · B)        A (rows, rank), B (rank, cols)
///   y  = layer(x, fake_quant(K'))
///
/// with the kernel viewed as (rows, cols), cols its last axis (a dense kernel (in, units), a
/// conv2d kernel (KH·KW·Cin, F)). The adapter is added *before* the kernel quantizer, as
/// NNCF's absorbable LoRA (FQ-LoRA) does, so merging it (K ← K') changes nothing the model
/// computes: `merged_kernel` is the forward's own arithmetic, and the merged twin's
/// quantized kernel, its exported ONNX and its lowered engine are the trained model's bit for
/// bit. (torchao's QAT + LoRA adds x·A·B beside the quantized product instead: it skips the
/// kernel-sized gradient but its merged kernel quantizes differently from what was trained.)
///
/// A starts uniform in ±1/sqrt(rows) (PEFT's Kaiming-uniform bound), B at zero: training
/// starts where the quantized twin is. The base kernel is frozen (not trainable) while the
/// adapter is attached, unless the caller keeps it trainable (QAT of both).
///
/// transform/lora.hpp attaches adapters to a whole twin, lists their parameters and merges them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

struct low_rank_adapter {
  parameter_ptr down;  ///< A, (rows, rank), "lora_a"
  parameter_ptr up;    ///< B, (rank, cols), "lora_b"
  float scale = 1.0f;  ///< alpha / rank
  /// Whether attaching it made the base kernel non-trainable (merging makes it trainable again).
  bool froze_base = false;
  std::size_t rank() const noexcept { return down ? down->value.shape()[1] : 0; }
};

/// An adapter for a kernel of `kernel_shape` (rank at least 1 and at most min(rows, cols)),
/// A drawn from `rng`'s seed `seed`. argument_error naming `path` otherwise.
XQ_DECL low_rank_adapter make_low_rank_adapter(const tensor::shape_type& kernel_shape, std::size_t rank, float alpha,
                                               std::uint32_t seed, const std::string& path);

/// K + scale · A·B, on values (nothing recorded): what the forward computes, bit for bit.
XQ_DECL tensor merged_kernel(const tensor& kernel, const low_rank_adapter& adapter, const std::string& path);

namespace ops {
/// K + scale · A·B on the tape: the gradient reaches K (when it requires one), A and B.
XQ_DECL var add_low_rank(const var& kernel, const low_rank_adapter& adapter, const std::string& path);
}  // namespace ops

namespace detail {
/// `params` and the adapter's two (when there is one).
XQ_DECL std::vector<parameter_ptr> with_adapter_parameters(std::vector<parameter_ptr> params,
                                                           const low_rank_adapter* adapter);
}  // namespace detail

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/low_rank_adapter.ipp"
#endif
