#pragma once
/// \file fit.ipp
/// The training loop's code that does not depend on the model's type (train/fit.hpp).

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>

#include "../fit.hpp"

namespace xq {

XQ_DECL const epoch_record& fit_history::last() const {
  if (epochs.empty()) throw argument_error("xq::fit_history::last", "at least one epoch", "none");
  return epochs.back();
}

namespace detail {

XQ_DECL double loss_value(const var& loss, const char* where) {
  if (!loss.defined() || loss.size() != 1)
    throw argument_error(where, "a loss that is one number (shape ())",
                         loss.defined() ? shape_string(loss.shape()) : std::string("an empty var"));
  return static_cast<double>(loss.value().data()[0]);
}

XQ_DECL tensor slice_rows(const tensor& source, std::size_t first, std::size_t count) {
  const std::size_t row = source.shape()[0] ? source.size() / source.shape()[0] : 0;
  tensor::shape_type shape = source.shape();
  shape[0] = count;
  tensor out = tensor::from_shape(shape);
  if (row != 0 && count != 0) std::memcpy(out.data(), source.data() + first * row, row * count * sizeof(float));
  return out;
}

XQ_DECL double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

XQ_DECL void check_fit_arguments(const dataset& train, const fit_options& opts) {
  train.validate("xq::fit");
  if (opts.validation) opts.validation->validate("xq::fit (validation data)");
  if (opts.batch_size == 0) throw argument_error("xq::fit", "batch_size >= 1", "0");
  if (train.size() == 0) throw argument_error("xq::fit", "at least one training sample", "an empty dataset");
}

}  // namespace detail
}  // namespace xq
