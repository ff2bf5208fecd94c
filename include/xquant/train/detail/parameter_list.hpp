#pragma once
/// \file parameter_list.hpp
/// Checks shared by the optimizers (private).

#include <cmath>
#include <cstddef>
#include <vector>

#include "../../config.hpp"
#include "../../core/error.hpp"
#include "../../core/parameter.hpp"
#include "../../core/tensor.hpp"
#include "../schedule.hpp"

namespace xq::detail {

/// Rejects an empty list (PyTorch's "optimizer got an empty parameter list"), null and
/// repeated parameters: a shared weight must be stepped once.
XQ_DECL void check_parameter_list(const std::vector<parameter_ptr>& params, const char* where);

/// Throws `argument_error` naming the first parameter whose gradient holds a NaN or an
/// infinity (with its index and value), before an optimizer touches anything: a
/// non-finite gradient would make the weights and the optimizer's moments non-finite
/// for good. Parameters without a gradient are skipped, as the optimizers skip them.
XQ_DECL void check_finite_gradients(const std::vector<parameter_ptr>& params, const char* where);

/// Throws unless a state tensor (restored from a checkpoint, say) fits its parameter.
XQ_DECL void check_state_shape(const char* where, const parameter& p, const tensor& state, const char* what);

/// Throws `argument_error` unless a hyper-parameter is finite and in [low, high]: a NaN
/// passes a test such as `lr < 0` and then turns every weight into NaN at the first step.
/// The message names the optimizer (`where`), the option, the valid range and the value.
XQ_DECL void check_hyper_parameter(const char* where, const char* name, double value, double low = 0.0,
                                   double high = HUGE_VAL);

/// The value `schedule` gives for the update after `step` earlier ones, checked as
/// `check_hyper_parameter` checks a constant: a schedule is a user's function, and a NaN,
/// an infinity or a negative value from it would corrupt every weight. Throws
/// `argument_error` naming the optimizer, the option and the step, before anything moved.
XQ_DECL float checked_schedule_value(const char* where, const char* name, const learning_rate_schedule& schedule,
                                     std::size_t step, double low = 0.0, double high = HUGE_VAL);

}  // namespace xq::detail

#if !defined(XQ_SEPARATE_COMPILATION)
#include "../impl/parameter_list.ipp"
#endif
