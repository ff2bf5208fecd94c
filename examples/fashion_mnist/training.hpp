#pragma once
// The training recipe of the Fashion-MNIST examples: Adam with a cosine decay from a
// peak learning rate to 2% of it, shuffled batches (fit's defaults otherwise), on one
// process or data-parallel over ranks.

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/schedule.hpp>

#include "run_options.hpp"

namespace fashion {

/// The recipe with the parameters to step and the loss given (LoRA's adapters alone, a
/// distillation loss: examples/low_bit_qat). `distributed`: data-parallel training
/// (xq::fit_options::distributed), each rank taking its share of every batch of s.batch
/// images (which the rank count must divide). `callbacks`: fit's (TensorBoard logging).
template <class Model, class Loss>
xq::fit_history train_with(Model& model, std::vector<xq::parameter_ptr> parameters, Loss&& loss, const xq::dataset& data,
                           std::size_t epochs, float peak_learning_rate, const run_options& s,
                           xq::distributed_training* distributed = nullptr,
                           std::vector<std::shared_ptr<xq::fit_callback>> callbacks = {}) {
  const std::size_t ranks = distributed ? static_cast<std::size_t>(distributed->ranks()) : 1;
  if (s.batch % ranks != 0)
    throw std::invalid_argument("--batch " + std::to_string(s.batch) + " does not split over " + std::to_string(ranks) +
                                " ranks");
  const std::size_t steps_per_epoch = (data.size() + s.batch - 1) / s.batch;
  xq::adam_options adam;
  adam.learning_rate = xq::cosine_decay{peak_learning_rate, epochs * steps_per_epoch, 0.02f};
  xq::adam opt(std::move(parameters), adam);
  xq::fit_options fo;
  fo.epochs = epochs;
  fo.batch_size = s.batch / ranks;
  fo.seed = s.seed;
  fo.distributed = distributed;
  fo.callbacks = std::move(callbacks);
  return xq::fit(model, opt, loss, data, fo);
}

/// Every trainable parameter on the labels' cross-entropy.
template <class Model>
xq::fit_history train(Model& model, const xq::dataset& data, std::size_t epochs, float peak_learning_rate,
                      const run_options& s, xq::distributed_training* distributed = nullptr,
                      std::vector<std::shared_ptr<xq::fit_callback>> callbacks = {}) {
  return train_with(model, xq::trainable_parameters(model), xq::sparse_softmax_cross_entropy, data, epochs,
                    peak_learning_rate, s, distributed, std::move(callbacks));
}

/// Mean training throughput over the epochs.
inline double images_per_second(const xq::fit_history& h) {
  double rate = 0;
  for (const auto& e : h.epochs) rate += e.samples_per_second;
  return h.epochs.empty() ? 0.0 : rate / static_cast<double>(h.epochs.size());
}

}  // namespace fashion
