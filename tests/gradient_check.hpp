#pragma once
// Numerical gradient checks: central differences against the tape.
//
// check_gradients(forward, wrt) compares, for every tensor in `wrt` (inputs made with
// requires_grad = true, and parameters), the gradient the tape computes for
// L = sum(forward() * r), r a fixed random tensor, with (L(t + eps) - L(t - eps)) / 2eps
// at up to `max_points` elements per tensor. L is summed in double.

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <xquant/core/tape.hpp>

namespace xq::testing {

struct gradient_check_options {
  float eps = 1e-2f;
  double rtol = 2e-2;
  double atol = 2e-3;
  std::size_t max_points = 64;
  unsigned seed = 7;
};

/// A tensor of uniform values in [lo, hi).
inline tensor uniform(const tensor::shape_type& shape, float lo = -1.0f, float hi = 1.0f, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  tensor t = tensor::from_shape(shape);
  for (auto& v : t) v = d(rng);
  return t;
}

/// The states checked: a var's or a parameter's.
inline std::shared_ptr<variable_state> state_of(const var& v) { return v.state(); }
inline std::shared_ptr<variable_state> state_of(const parameter_ptr& p) { return p; }

/// Runs the check; each failing element is reported through Catch2 with `name`.
inline void check_gradients(const std::function<var()>& forward,
                            const std::vector<std::shared_ptr<variable_state>>& wrt,
                            const gradient_check_options& opt = {}, const std::string& name = "") {
  // The analytic side.
  for (auto& s : wrt) s->zero_grad();
  tensor r;
  {
    tape t;
    var y = forward();
    r = uniform(y.shape(), -1.0f, 1.0f, opt.seed);
    t.backward(y, r);
  }
  auto objective = [&] {
    no_grad off;
    var y = forward();
    double sum = 0;
    for (std::size_t i = 0; i < y.size(); ++i)
      sum += static_cast<double>(y.value().data()[i]) * r.data()[i];
    return sum;
  };
  std::mt19937 pick(opt.seed + 1);
  for (std::size_t k = 0; k < wrt.size(); ++k) {
    auto& s = *wrt[k];
    REQUIRE(s.has_grad());
    const tensor analytic = s.grad;
    std::vector<std::size_t> points(s.value.size());
    for (std::size_t i = 0; i < points.size(); ++i) points[i] = i;
    if (points.size() > opt.max_points) {
      std::shuffle(points.begin(), points.end(), pick);
      points.resize(opt.max_points);
    }
    for (std::size_t i : points) {
      float& x = s.value.data()[i];
      const float saved = x;
      x = saved + opt.eps;
      const double up = objective();
      x = saved - opt.eps;
      const double down = objective();
      x = saved;
      const double numeric = (up - down) / (2.0 * static_cast<double>(opt.eps));
      const double a = analytic.data()[i];
      INFO(name << " tensor " << k << " element " << i << ": tape " << a << ", central difference " << numeric);
      CHECK(std::abs(a - numeric) <= opt.atol + opt.rtol * std::max(std::abs(a), std::abs(numeric)));
    }
  }
}

}  // namespace xq::testing
