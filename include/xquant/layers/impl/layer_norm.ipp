#pragma once
/// \file layer_norm.ipp
/// layer_norm's code (layers/layer_norm.hpp).

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <utility>

#include <xtensor/xmanipulation.hpp>

#include "../../core/error.hpp"
#include "../layer_norm.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(layer_norm)

namespace detail {

/// x's axes sorted so that the normalized ones come last, each group in increasing order.
struct layer_norm_axes {
  std::vector<std::size_t> normalized;   // increasing
  std::vector<std::size_t> permutation;  // kept axes, then normalized ones
  bool is_suffix = true;                 // the permutation is the identity
};

inline layer_norm_axes resolve_layer_norm_axes(const std::string& path, std::size_t rank, const std::vector<int>& axes) {
  if (axes.empty()) throw argument_error(path, "at least one axis to normalize over", "none");
  layer_norm_axes r;
  std::vector<bool> chosen(rank, false);
  for (int a : axes) {
    const long long resolved = a < 0 ? static_cast<long long>(rank) + a : a;
    if (resolved < 0 || resolved >= static_cast<long long>(rank))
      throw shape_error(path, concat("an input with axis ", a, " (rank above ", a < 0 ? -a - 1 : a, ")"),
                        concat("rank ", rank));
    if (chosen[std::size_t(resolved)]) throw argument_error(path, "axes without repeats", concat("axis ", a, " twice"));
    chosen[std::size_t(resolved)] = true;
  }
  for (std::size_t i = 0; i < rank; ++i)
    if (!chosen[i]) r.permutation.push_back(i);
  for (std::size_t i = 0; i < rank; ++i)
    if (chosen[i]) r.normalized.push_back(i);
  r.permutation.insert(r.permutation.end(), r.normalized.begin(), r.normalized.end());
  for (std::size_t i = 0; i < rank; ++i) r.is_suffix = r.is_suffix && r.permutation[i] == i;
  return r;
}

inline std::vector<std::size_t> inverse_permutation(const std::vector<std::size_t>& p) {
  std::vector<std::size_t> inv(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) inv[p[i]] = i;
  return inv;
}

}  // namespace detail

namespace ops {

XQ_DECL var layer_norm(const var& x, const var& gamma, const var& beta, const std::vector<int>& axes, float epsilon,
                       const std::string& path) {
  if (!(epsilon >= 0.0f)) throw argument_error(path, "epsilon >= 0", detail::concat(epsilon));
  const auto ax = detail::resolve_layer_norm_axes(path, x.dimension(), axes);
  tensor::shape_type param_shape;
  for (std::size_t a : ax.normalized) param_shape.push_back(x.shape()[a]);
  for (const var* p : {&gamma, &beta})
    if (p->defined() && p->shape() != param_shape)
      throw shape_error(path,
                        detail::concat(p == &gamma ? "gamma" : "beta", " of shape ", detail::shape_string(param_shape)),
                        detail::shape_string(p->shape()));
  std::size_t n = 1;
  for (auto d : param_shape) n *= d;
  const std::size_t groups = n ? x.size() / n : 0;

  // Normalized axes last and contiguous: a transpose unless they already are.
  tensor xp;
  if (!ax.is_suffix) xp = xt::transpose(x.value(), ax.permutation);
  const float* xs = ax.is_suffix ? x.value().data() : xp.data();
  const float* g = gamma.defined() ? gamma.value().data() : nullptr;
  const float* b = beta.defined() ? beta.value().data() : nullptr;

  tensor yp = tensor::from_shape(ax.is_suffix ? x.shape() : xp.shape());
  auto mean = std::make_shared<std::vector<float>>(groups), rstd = std::make_shared<std::vector<float>>(groups);
  for (std::size_t k = 0; k < groups; ++k) {
    const float* row = xs + k * n;
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += row[i];
    const double m = sum / double(n);
    double squares = 0;
    for (std::size_t i = 0; i < n; ++i) squares += (row[i] - m) * (row[i] - m);
    const float mu = static_cast<float>(m), r = static_cast<float>(1.0 / std::sqrt(squares / double(n) + epsilon));
    (*mean)[k] = mu;
    (*rstd)[k] = r;
    float* out = yp.data() + k * n;
    for (std::size_t i = 0; i < n; ++i) {
      const float normalized = (row[i] - mu) * r;
      out[i] = (g ? normalized * g[i] : normalized) + (b ? b[i] : 0.0f);
    }
  }
  tensor y;
  if (ax.is_suffix) y = std::move(yp);
  else y = xt::transpose(yp, detail::inverse_permutation(ax.permutation));

  return make_result(std::move(y), needs_grad(x, gamma, beta),
                     [x, gamma, beta, ax, n, groups, mean, rstd, xp = std::move(xp)](const tensor& dy) {
    tensor dyp;
    if (!ax.is_suffix) dyp = xt::transpose(dy, ax.permutation);
    const float* d = ax.is_suffix ? dy.data() : dyp.data();
    const float* xs = ax.is_suffix ? x.value().data() : xp.data();
    const float* g = gamma.defined() ? gamma.value().data() : nullptr;
    std::vector<double> dgamma(gamma.requires_grad() ? n : 0), dbeta(beta.requires_grad() ? n : 0);
    tensor dxp = tensor::from_shape(ax.is_suffix ? x.shape() : xp.shape());
    std::vector<float> scaled(n);
    for (std::size_t k = 0; k < groups; ++k) {
      const float* row = xs + k * n;
      const float* drow = d + k * n;
      const float mu = (*mean)[k], r = (*rstd)[k];
      double mean_g = 0, mean_gx = 0;  // mean of dy * gamma, and of dy * gamma * x_hat
      for (std::size_t i = 0; i < n; ++i) {
        const float xhat = (row[i] - mu) * r;
        scaled[i] = g ? drow[i] * g[i] : drow[i];
        mean_g += scaled[i];
        mean_gx += double(scaled[i]) * xhat;
        if (!dgamma.empty()) dgamma[i] += double(drow[i]) * xhat;
        if (!dbeta.empty()) dbeta[i] += drow[i];
      }
      const float a = static_cast<float>(mean_g / double(n)), c = static_cast<float>(mean_gx / double(n));
      float* out = dxp.data() + k * n;
      for (std::size_t i = 0; i < n; ++i) out[i] = r * (scaled[i] - a - (row[i] - mu) * r * c);
    }
    if (x.requires_grad()) {
      if (ax.is_suffix) add_grad(x, std::move(dxp));
      else add_grad(x, tensor(xt::transpose(dxp, detail::inverse_permutation(ax.permutation))));
    }
    auto to_tensor = [](const std::vector<double>& v, const tensor::shape_type& shape) {
      tensor t = tensor::from_shape(shape);
      std::transform(v.begin(), v.end(), t.begin(), [](double e) { return static_cast<float>(e); });
      return t;
    };
    if (!dgamma.empty()) add_grad(gamma, to_tensor(dgamma, gamma.shape()));
    if (!dbeta.empty()) add_grad(beta, to_tensor(dbeta, beta.shape()));
  });
}

}  // namespace ops

XQ_DECL layer_norm::layer_norm(std::vector<int> axes, bool center, bool scale)
    : layer<layer_norm>("layer_normalization"), axes_(std::move(axes)), center_(center), scale_(scale) {
  if (axes_.empty()) throw argument_error("layer_normalization", "at least one axis to normalize over", "none");
}

XQ_DECL void layer_norm::build(const tensor::shape_type& input_shape) {
  const auto ax = detail::resolve_layer_norm_axes(path(), input_shape.size(), axes_);
  tensor::shape_type shape;
  for (std::size_t a : ax.normalized) shape.push_back(input_shape[a]);
  if (scale_) {
    tensor ones = tensor::from_shape(shape);
    std::fill(ones.begin(), ones.end(), 1.0f);
    gamma_ = make_parameter("gamma", std::move(ones));
  }
  if (center_) beta_ = make_parameter("beta", detail::zeros_tensor(shape));
  name_parameters();
}

XQ_DECL var layer_norm::call(const var& x) {
  if (!gamma_ && !beta_ && (scale_ || center_)) build(x.shape());
  return ops::layer_norm(x, gamma_ ? var(gamma_) : var(), beta_ ? var(beta_) : var(), axes_, epsilon_, path());
}

XQ_DECL layer_norm& layer_norm::epsilon(float e) {
  if (!(e >= 0.0f)) throw argument_error(path(), "epsilon >= 0", detail::concat(e));
  epsilon_ = e;
  return *this;
}

}  // namespace xq
