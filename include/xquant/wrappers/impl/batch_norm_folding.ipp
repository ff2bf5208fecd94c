#pragma once
/// \file batch_norm_folding.ipp
/// Batch-norm folding's code (wrappers/batch_norm_folding.hpp).

#include <algorithm>
#include <cmath>

#include "../batch_norm_folding.hpp"

namespace xq {

namespace detail {

XQ_DECL channel_rows channel_view(const tensor& t, std::size_t channels, const char* where) {
  if (channels == 0 || t.size() % channels != 0 || t.dimension() == 0)
    throw shape_error(where, detail::concat("a tensor whose trailing axes hold ", channels, " channels"),
                      detail::shape_string(t.shape()));
  return {t.size() / channels, channels};
}

}  // namespace detail

namespace ops {

XQ_DECL var fold_scale(const batch_norm_fold& fold) {
  const tensor& variance = fold.moving_variance->value;
  const std::size_t C = variance.size();
  tensor r = tensor::from_shape({C}), s = tensor::from_shape({C});
  for (std::size_t c = 0; c < C; ++c) {
    r.data()[c] = 1.0f / std::sqrt(variance.data()[c] + fold.epsilon);
    s.data()[c] = (fold.gamma ? fold.gamma->value.data()[c] : 1.0f) * r.data()[c];
  }
  const var gamma = fold.gamma ? var(fold.gamma) : var();
  const bool record = gamma.defined() && needs_grad(gamma);
  return make_result(std::move(s), record, [gamma, r = std::move(r)](const tensor& ds) {
    tensor dg = ds * r;
    add_grad(gamma, std::move(dg));
  });
}

XQ_DECL var scale_channels(const var& w, const var& s, const std::string& path) {
  const std::size_t C = s.size();
  const detail::channel_rows v = detail::channel_view(w.value(), C, path.c_str());
  tensor y = tensor::from_shape(w.shape());
  const float* pw = w.value().data();
  const float* ps = s.value().data();
  float* py = y.data();
  for (std::size_t r = 0; r < v.rows; ++r) {
    XQ_OMP_SIMD
    for (std::size_t c = 0; c < C; ++c) py[r * C + c] = pw[r * C + c] * ps[c];
  }
  return make_result(std::move(y), needs_grad(w, s), [w, s, v](const tensor& dy) {
    const std::size_t C = v.channels;
    const float* pd = dy.data();
    if (w.requires_grad()) {
      tensor dw = tensor::from_shape(w.shape());
      const float* ps = s.value().data();
      for (std::size_t r = 0; r < v.rows; ++r) {
        XQ_OMP_SIMD
        for (std::size_t c = 0; c < C; ++c) dw.data()[r * C + c] = pd[r * C + c] * ps[c];
      }
      add_grad(w, std::move(dw));
    }
    if (s.requires_grad()) {
      tensor ds = xt::zeros<float>({C});
      const float* pw = w.value().data();
      for (std::size_t r = 0; r < v.rows; ++r) {
        XQ_OMP_SIMD
        for (std::size_t c = 0; c < C; ++c) ds.data()[c] += pd[r * C + c] * pw[r * C + c];
      }
      add_grad(s, std::move(ds));
    }
  });
}

XQ_DECL tensor divide_channels(tensor w, const std::vector<float>& s, const std::string& path) {
  if (s.empty()) return w;
  const no_grad nothing_recorded;
  tensor divisor = tensor::from_shape({s.size()});
  std::copy(s.begin(), s.end(), divisor.begin());
  return divide_channels(var(std::move(w)), var(std::move(divisor)), path).value();
}

XQ_DECL var divide_channels(const var& w, const var& s, const std::string& path) {
  const std::size_t C = s.size();
  const detail::channel_rows v = detail::channel_view(w.value(), C, path.c_str());
  tensor y = tensor::from_shape(w.shape());
  const float* pw = w.value().data();
  const float* ps = s.value().data();
  float* py = y.data();
  for (std::size_t r = 0; r < v.rows; ++r) {
    XQ_OMP_SIMD
    for (std::size_t c = 0; c < C; ++c) py[r * C + c] = pw[r * C + c] / ps[c];
  }
  return make_result(std::move(y), needs_grad(w, s), [w, s, v](const tensor& dy) {
    const std::size_t C = v.channels;
    const float* pd = dy.data();
    const float* ps = s.value().data();
    if (w.requires_grad()) {
      tensor dw = tensor::from_shape(w.shape());
      for (std::size_t r = 0; r < v.rows; ++r) {
        XQ_OMP_SIMD
        for (std::size_t c = 0; c < C; ++c) dw.data()[r * C + c] = pd[r * C + c] / ps[c];
      }
      add_grad(w, std::move(dw));
    }
    if (s.requires_grad()) {  // d(w/s)/ds = -w/s²
      tensor ds = xt::zeros<float>({C});
      const float* pw = w.value().data();
      for (std::size_t r = 0; r < v.rows; ++r) {
        XQ_OMP_SIMD
        for (std::size_t c = 0; c < C; ++c) ds.data()[c] += pd[r * C + c] * pw[r * C + c];
      }
      for (std::size_t c = 0; c < C; ++c) ds.data()[c] = -ds.data()[c] / (ps[c] * ps[c]);
      add_grad(s, std::move(ds));
    }
  });
}

}  // namespace ops

}  // namespace xq
