#pragma once
/// \file xquant.hpp
/// Umbrella header: building, quantizing, summarizing and training models on the host.
/// Opt-in, each with its own umbrella: files (<xquant/io.hpp>: datasets, .npy, weight
/// import, checkpoints; in header-only mode checkpoints bring in nlohmann::json), the peers'
/// fake-quant operators called directly on tensors (<xquant/numerics.hpp>; models use them
/// through fake_quantizer), calibration (quantizers/calibrate.hpp), choosing formats per
/// layer (train/sensitivity.hpp, train/format_budget.hpp: they calibrate) and deployment
/// (deploy/). Kept out so that what nearly every
/// program includes stays within its compile budget (tools/compile_budget.py). Each part
/// also has its own headers, which compile alone. Header-only by default;
/// XQ_SEPARATE_COMPILATION + <xquant/src.hpp> compiles the library's non-template code once
/// (config.hpp).
///
/// Rooms, in the order they may include each other (a room includes only rooms above it):
///  - core/          xq::var and the tape, parameters, the layer contract (layer.hpp,
///                   layer_traits.hpp, children.hpp; docs/layer_contract.md), model walks
///  - kernels/       the policies and the walkers behind them; GEMM, im2col, window geometry
///  - numerics/      every peer's fake-quant operator and range rule, bit for bit
///  - layers/        one float layer per header (dense, conv2d, batch_norm, ...)
///  - quantizers/    the quantizer layers: one base (quantizer_layer.hpp); fake_quantizer
///                   (a range tracker and a numerics); Larq's family; LSQ; their metrics
///  - wrappers/      quantized layers on one base (wrapped_layer.hpp): NVIDIA's wrappers
///                   and Larq's quant layers
///  - transform/     the quantize<L> trait and registry, quantize_model, schemes, specs,
///                   QDQ placement cases
///  - summary/, train/   the model summary; losses, optimizers, fit
///  - io/            IDX (MNIST format), Fashion-MNIST, .npy, weight import, checkpoints

#include "config.hpp"
#include "core/children.hpp"
#include "core/clone.hpp"
#include "core/error.hpp"
#include "core/layer.hpp"
#include "core/layer_traits.hpp"
#include "core/memory.hpp"
#include "core/mode.hpp"
#include "core/model.hpp"
#include "core/parameter.hpp"
#include "core/random.hpp"
#include "core/tape.hpp"
#include "core/var.hpp"
#include "io/checkpoint_hint.hpp"  // save_checkpoint / load_checkpoint: a static_assert naming their header
#include "kernels/policy.hpp"
#include "layers/activation.hpp"
#include "layers/add.hpp"
#include "layers/attention.hpp"
#include "layers/average_pool2d.hpp"
#include "layers/batch_norm.hpp"
#include "layers/broadcasting.hpp"
#include "layers/concatenate.hpp"
#include "layers/cropping2d.hpp"
#include "layers/conv2d.hpp"
#include "layers/conv2d_transpose.hpp"
#include "layers/correlation.hpp"
#include "layers/dense.hpp"
#include "layers/depthwise_conv2d.hpp"
#include "layers/dropout.hpp"
#include "layers/embedding.hpp"
#include "layers/flatten.hpp"
#include "layers/gelu.hpp"
#include "layers/global_average_pool2d.hpp"
#include "layers/global_max_pool2d.hpp"
#include "layers/gru.hpp"
#include "layers/layer_norm.hpp"
#include "layers/lstm.hpp"
#include "layers/matmul.hpp"
#include "layers/max_pool2d.hpp"
#include "layers/multiply.hpp"
#include "layers/recurrent.hpp"
#include "layers/reshape.hpp"
#include "layers/separable_conv2d.hpp"
#include "layers/sequential.hpp"
#include "layers/slicing.hpp"
#include "layers/tied_dense.hpp"
#include "layers/tied_projection.hpp"
#include "layers/transpose.hpp"
#include "layers/upsampling2d.hpp"
#include "layers/weight_clip.hpp"
#include "layers/zero_padding2d.hpp"
#include "quantizers/approx_sign.hpp"
#include "quantizers/dorefa.hpp"
#include "quantizers/fake_quantizer.hpp"
#include "quantizers/lsq_quantizer.hpp"
#include "quantizers/magnitude_aware_sign.hpp"
#include "quantizers/model_quantizers.hpp"
#include "quantizers/moving_average_quantizer.hpp"
#include "quantizers/no_quantizer.hpp"
#include "quantizers/noop_quantizer.hpp"
#include "quantizers/quantizer_metrics.hpp"
#include "quantizers/ste_heaviside.hpp"
#include "quantizers/ste_sign.hpp"
#include "quantizers/ste_tern.hpp"
#include "quantizers/swish_sign.hpp"
#include "summary/print_summary.hpp"
#include "summary/summarize.hpp"
#include "train/adam.hpp"
#include "train/bop.hpp"
#include "train/case_optimizer.hpp"
#include "train/dataset.hpp"
#include "train/default_metric.hpp"
#include "train/fit.hpp"
#include "train/losses.hpp"
#include "train/metrics.hpp"
#include "train/progress.hpp"
#include "train/schedule.hpp"
#include "train/sgd.hpp"
#include "transform/qdq_cases.hpp"
#include "transform/quantize.hpp"
#include "transform/quantize_model.hpp"
#include "transform/low_bit_schemes.hpp"
#include "transform/registry.hpp"
#include "wrappers/quant_conv2d.hpp"
#include "wrappers/quant_dense.hpp"
#include "wrappers/quant_depthwise_conv2d.hpp"
#include "wrappers/quant_separable_conv2d.hpp"
