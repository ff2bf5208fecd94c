#pragma once
/// \file distillation.hpp
/// Distillation in QAT (Model Optimizer's QAD, Brevitas's KL loss): the quantized student
/// learns the float teacher's outputs on the same batch, alone or beside the task's loss.
///
///   loss = weight · D(student, teacher) + task_weight · task(student, targets)
///
/// D is the KL divergence of the softened distributions, KL(softmax(t/T) ‖ softmax(s/T)) · T²
/// per row, averaged over rows (Hinton et al.; the T² keeps the gradient's scale as T
/// changes), or the mean squared error of the logits. The teacher is a frozen clone of the
/// float model (`xq::clone_model`: tied weights stay tied in it), run in inference mode
/// without a tape on the batch's inputs: `fit` hands a loss that takes them the inputs
/// (fit.hpp). It must not share parameters with the student: a quantized twin shares the
/// float model's, so the teacher is the clone, never the model itself.
///
/// \code
///   auto teacher = xq::clone_model(model);                  // before training the twin
///   auto twin = xq::quantize_model(model, options, {1, 28, 28, 1});
///   xq::distillation_loss distill(teacher, xq::sparse_softmax_cross_entropy, {/*temperature=*/2.0f});
///   xq::fit(twin, opt, distill, train, fit_options);
/// \endcode

#include <cstddef>
#include <string>
#include <utility>

#include "../config.hpp"
#include "../core/model_call.hpp"
#include "../core/mode.hpp"
#include "../core/tape.hpp"
#include "../core/var.hpp"
#include "default_metric.hpp"
#include "fit.hpp"
#include "losses.hpp"

namespace xq {

enum class distillation_kind {
  kl,   ///< KL divergence of the softened distributions, times T² (logits in, classes on the last axis)
  mse,  ///< mean squared error of the outputs
};

struct distillation_options {
  float temperature = 1.0f;
  /// The weight of the teacher's term.
  float weight = 1.0f;
  /// The weight of the task's loss against the targets (0: the teacher alone).
  float task_weight = 0.0f;
  distillation_kind kind = distillation_kind::kl;
};

/// Mean over rows of T² · KL(softmax(teacher / T) ‖ softmax(student / T)), the last axis the
/// classes; the gradient reaches the student only (T · (softmax(s/T) − softmax(t/T)) / rows).
/// Shapes must match; argument_error for a temperature that is not positive.
XQ_DECL var softened_kl_divergence(const var& student_logits, const tensor& teacher_logits, float temperature);

namespace detail {
/// wa · a + wb · b for scalar losses (b may be undefined: wa · a).
XQ_DECL var weighted_loss_sum(const var& a, float wa, const var& b, float wb);
/// The teacher's term for one output.
XQ_DECL var distillation_term(const var& student, const tensor& teacher, const distillation_options& o);
}  // namespace detail

/// A loss `fit` and `evaluate` call with the batch's inputs: the teacher's term on the first
/// output (the file comment), plus the task's loss when `task_weight` is not 0. The teacher
/// is held by reference: it must outlive the loss.
template <class Teacher, class TaskLoss>
class distillation_loss {
 public:
  distillation_loss(Teacher& teacher, TaskLoss task, distillation_options o = {})
      : teacher_(&teacher), task_(std::move(task)), o_(o) {}

  var operator()(const var_list& outputs, const var_list& targets, const var_list& inputs) {
    var_list taught;
    {
      const no_grad nothing_recorded;
      const training_mode inference(false);
      taught = call_model(*teacher_, inputs, "xq::distillation_loss (the teacher)");
    }
    if (outputs.empty() || taught.empty())
      throw argument_error("xq::distillation_loss", "a student and a teacher with an output", "none");
    const var term = detail::distillation_term(outputs[0], taught[0].value(), o_);
    if (o_.task_weight == 0.0f) return detail::weighted_loss_sum(term, o_.weight, var(), 0.0f);
    return detail::weighted_loss_sum(term, o_.weight, detail::apply_loss(task_, outputs, targets, inputs, "xq::distillation_loss"),
                                     o_.task_weight);
  }

  const distillation_options& options() const noexcept { return o_; }

 private:
  Teacher* teacher_;
  TaskLoss task_;
  distillation_options o_;
};

/// fit's default metric: the task loss's (accuracy for a classifier's cross-entropy).
template <class Teacher, class TaskLoss>
struct default_metric<distillation_loss<Teacher, TaskLoss>> : default_metric<TaskLoss> {};

template <class Teacher, class TaskLoss>
distillation_loss(Teacher&, TaskLoss, distillation_options) -> distillation_loss<Teacher, TaskLoss>;
template <class Teacher, class TaskLoss>
distillation_loss(Teacher&, TaskLoss) -> distillation_loss<Teacher, TaskLoss>;

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/distillation.ipp"
#endif
