#pragma once
/// \file compiled_twins.hpp
/// In separate-compilation mode (config.hpp), the default registry's twins and the walk
/// tables of the built-in layers are compiled once, in the library, instead of in every
/// translation unit that holds a quantized model.
///
/// Why: a program's twin types are mostly the registry's own (`weight_quantized<conv2d>`,
/// `input_quantized<max_pool2d>`, `quantized_batch_norm`, ...). Implicitly instantiated, each
/// translation unit compiled their constructors, calls, configuration, paths and walk tables
/// (`detail::layer_ops_for`) at -O3 again: about a fifth of the Fashion-MNIST QAT example's
/// compile (tools/README.md). registry.hpp declares them `extern template` and <xquant/src.hpp>
/// defines them (transform/impl/compiled_twins.ipp): they become ordinary library functions.
/// A user's own layers and wrappers instantiate as before; header-only mode is unchanged.
///
/// This header only defines the lists, as macros, so that the declarations and the
/// definitions cannot drift apart: `XQ_REGISTRY_INSTANTIATIONS(extern template)` declares,
/// `XQ_REGISTRY_INSTANTIATIONS(template)` defines, in namespace xq, after registry.hpp.

/// One twin's instantiations: the wrapper's bases and the walk tables of the twin and of its
/// float layer (`K` is `extern template` or `template`). The wrappers define their heavier
/// members out of their class bodies: an in-class member is implicitly inline, and GCC
/// instantiates inline members for inlining even under `extern template`.
#define XQ_INSTANTIATE_TWIN(K, Twin, L) \
  K class wrapped_layer<Twin, L>;       \
  K class qdq_wrapper<Twin, L>;         \
  K struct detail::layer_ops_for<Twin>; \
  K struct detail::layer_ops_for<L>;
#define XQ_INSTANTIATE_WRAPPER(K, Wrapper, L) \
  K class Wrapper<L>;                         \
  XQ_INSTANTIATE_TWIN(K, Wrapper<L>, L)

#define XQ_INSTANTIATE_WEIGHT_QUANTIZED(K, L) XQ_INSTANTIATE_WRAPPER(K, weight_quantized, L)
#define XQ_INSTANTIATE_INPUT_QUANTIZED(K, L) XQ_INSTANTIATE_WRAPPER(K, input_quantized, L)
#define XQ_INSTANTIATE_EACH_INPUT_QUANTIZED(K, L) XQ_INSTANTIATE_WRAPPER(K, each_input_quantized, L)

/// The registry's float layers, by their twin's family (transform/registry.hpp).
#define XQ_REGISTRY_WEIGHT_QUANTIZED(X, K) \
  X(K, conv2d) X(K, dense) X(K, depthwise_conv2d) X(K, embedding) X(K, tied_projection) X(K, tied_dense) \
  X(K, conv2d_transpose) X(K, lstm_recurrence) X(K, gru_recurrence)
#define XQ_REGISTRY_INPUT_QUANTIZED(X, K)                                                   \
  X(K, average_pool2d) X(K, global_average_pool2d) X(K, max_pool2d) X(K, global_max_pool2d) \
  X(K, relu) X(K, relu6) X(K, leaky_relu) X(K, sigmoid) X(K, tanh) X(K, swish) X(K, softmax) \
  X(K, flatten) X(K, reshape) X(K, dropout) X(K, gelu) X(K, zero_padding2d) X(K, cropping2d)      \
  X(K, upsampling2d) X(K, layer_norm) X(K, slice)
#define XQ_REGISTRY_EACH_INPUT_QUANTIZED(X, K) \
  X(K, add) X(K, concatenate) X(K, multiply) X(K, subtract) X(K, attention_scores) X(K, correlation)

/// Every instantiation of the registry, with `K` (`extern template` or `template`).
#define XQ_REGISTRY_INSTANTIATIONS(K)                                        \
  XQ_REGISTRY_WEIGHT_QUANTIZED(XQ_INSTANTIATE_WEIGHT_QUANTIZED, K)           \
  XQ_REGISTRY_INPUT_QUANTIZED(XQ_INSTANTIATE_INPUT_QUANTIZED, K)             \
  XQ_REGISTRY_EACH_INPUT_QUANTIZED(XQ_INSTANTIATE_EACH_INPUT_QUANTIZED, K)           \
  K class input_quantized<batch_norm, quantized_batch_norm>;                 \
  K struct detail::layer_ops_for<input_quantized<batch_norm, quantized_batch_norm>>; \
  XQ_INSTANTIATE_TWIN(K, quantized_batch_norm, batch_norm)
