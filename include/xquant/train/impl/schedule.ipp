#pragma once
/// \file schedule.ipp
/// The learning-rate schedules' code (train/schedule.hpp).

#include <cmath>
#include <cstddef>

#include "../schedule.hpp"

namespace xq {

XQ_DECL float step_decay::operator()(std::size_t step) const {
  if (step_size == 0) throw argument_error("xq::step_decay", "step_size >= 1", "0");
  const double k = static_cast<double>(step / step_size);
  return static_cast<float>(static_cast<double>(initial) * std::pow(static_cast<double>(gamma), k));
}

XQ_DECL float cosine_decay::operator()(std::size_t step) const {
  if (decay_steps == 0) throw argument_error("xq::cosine_decay", "decay_steps >= 1", "0");
  const double pi = 3.14159265358979323846;
  const double done = static_cast<double>(step < decay_steps ? step : decay_steps) / static_cast<double>(decay_steps);
  const double cosine = 0.5 * (1.0 + std::cos(pi * done));
  const double a = alpha;
  return static_cast<float>(static_cast<double>(initial) * ((1.0 - a) * cosine + a));
}

}  // namespace xq
