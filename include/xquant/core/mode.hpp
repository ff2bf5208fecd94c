#pragma once
/// \file mode.hpp
/// Training or inference: what batch_norm and dropout do depends on it (Keras's
/// `training` argument, PyTorch's `module.train()`), set per thread by a scope.

namespace xq {

namespace detail {
inline bool& this_thread_training() {
  thread_local bool training = false;
  return training;
}
}  // namespace detail

/// True inside a `training_mode` scope that turned training on. Inference is the
/// default: outside `fit`, batch_norm uses its moving statistics and dropout
/// passes everything.
inline bool is_training() noexcept { return detail::this_thread_training(); }

/// Sets training (or inference) mode for its scope and restores the previous one.
class training_mode {
 public:
  explicit training_mode(bool on = true) : previous_(detail::this_thread_training()) {
    detail::this_thread_training() = on;
  }
  ~training_mode() { detail::this_thread_training() = previous_; }
  training_mode(const training_mode&) = delete;
  training_mode& operator=(const training_mode&) = delete;

 private:
  bool previous_;
};

}  // namespace xq
