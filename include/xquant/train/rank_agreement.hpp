#pragma once
/// \file rank_agreement.hpp
/// What the ranks of a data-parallel run must agree on, checked before the first step
/// (issue 34, finding 3). Data parallelism keeps the ranks in lock step: each step they sum
/// gradients of the same parameters, each epoch they run the same number of steps over the
/// same shuffled order. A rank with another model (one more layer, another shape) used to
/// hang the job or end it with only MPI's `MPI_ERR_TRUNCATE`; a rank with another step or
/// epoch count hung the others in their next collective when it returned; another seed or
/// dataset size trained on garbage without a word. `fit` now gathers, before training,
/// every rank's
///
///  - model: its parameter count, its scalars, and a hash of each parameter's name, shape
///    and trainability (the first parameter that differs is named, with each rank's shape);
///  - data: the training set's size and its samples' shapes, the validation set's size;
///  - options: batch size, steps per epoch, initial epoch, epochs, seed, shuffle;
///
/// and throws the same `xq::argument_error` on every rank when any differ, naming each
/// rank's value. Every rank takes part in the same collectives, so none is left waiting.
///
/// \code
///   // Your own loop over a distributed_training: the same check, with your values.
///   xq::check_ranks_agree(ranks, xq::as_layer_ref(model), {{"steps per epoch", steps}, {"seed", seed}}, "my_loop");
/// \endcode

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer_ref.hpp"
#include "dataset.hpp"
#include "distributed_training.hpp"

namespace xq {

struct fit_options;

/// One value the ranks must share: what it is (for the message) and this rank's value.
struct rank_value {
  std::string what;
  std::uint64_t value = 0;
};

/// Throws `argument_error` (where: `where`) on every rank when the ranks' `values` differ
/// (all ranks must pass the same list of names), or when their models' parameters differ
/// in number, name, shape or trainability; the message names each rank's value, or the
/// first parameter that differs on each rank. Collective: every rank of `d` must call it.
XQ_DECL void check_ranks_agree(distributed_training& d, layer_ref model, const std::vector<rank_value>& values,
                               const char* where);

namespace detail {

/// `v` gathered from every rank over `d.sum` (each rank writes its slot, the sum fills
/// every slot): ranks × v.size() values, rank r's at [r · v.size(), (r + 1) · v.size()).
XQ_DECL std::vector<double> gather_over_ranks(distributed_training& d, const std::vector<double>& v);

/// What `fit` needs the ranks to share besides the model: the data's sizes and sample
/// shapes, and the options that set the steps (`steps`: per epoch, as `fit` computed it).
XQ_DECL std::vector<rank_value> fit_rank_values(const dataset& train, const fit_options& o, std::size_t steps);

}  // namespace detail
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/rank_agreement.ipp"
#endif
