#include "flow_data.hpp"

#include <cmath>
#include <random>
#include <stdexcept>

namespace flow {

namespace {

constexpr double pi = 3.14159265358979323846;

/// One random smooth field: translation + affine + a sine wave per component.
struct field {
  double tx, ty, a11, a12, a21, a22;
  double amp_x, fx_x, fy_x, phase_x, amp_y, fx_y, fy_y, phase_y;

  template <class Rng>
  static field draw(Rng& rng) {
    std::uniform_real_distribution<double> shift(-2.5, 2.5), linear(-0.08, 0.08), amp(0.0, 1.0),
        periods(0.5, 1.5), phase(0.0, 2 * pi), sign(-1.0, 1.0);
    auto frequency = [&] { return periods(rng) * (sign(rng) < 0 ? -1.0 : 1.0) / 28.0; };
    field f{};
    f.tx = shift(rng);
    f.ty = shift(rng);
    f.a11 = linear(rng);
    f.a12 = linear(rng);
    f.a21 = linear(rng);
    f.a22 = linear(rng);
    f.amp_x = amp(rng);
    f.fx_x = frequency();
    f.fy_x = frequency();
    f.phase_x = phase(rng);
    f.amp_y = amp(rng);
    f.fx_y = frequency();
    f.fy_y = frequency();
    f.phase_y = phase(rng);
    return f;
  }

  /// The flow at pixel (x, y), centred coordinates for the affine part.
  void at(double x, double y, double& u, double& v) const {
    const double cx = x - 13.5, cy = y - 13.5;
    u = tx + a11 * cx + a12 * cy + amp_x * std::sin(2 * pi * (fx_x * x + fy_x * y) + phase_x);
    v = ty + a21 * cx + a22 * cy + amp_y * std::sin(2 * pi * (fx_y * x + fy_y * y) + phase_y);
  }
};

/// Frame 1 at (x, y), bilinear, black outside.
float sample(const float* image, double x, double y) {
  const double x0 = std::floor(x), y0 = std::floor(y);
  const double wx = x - x0, wy = y - y0;
  auto pixel = [&](double px, double py) -> double {
    if (px < 0 || py < 0 || px > 27 || py > 27) return 0.0;
    return image[static_cast<std::size_t>(py) * 28 + static_cast<std::size_t>(px)];
  };
  return static_cast<float>((1 - wy) * ((1 - wx) * pixel(x0, y0) + wx * pixel(x0 + 1, y0)) +
                            wy * ((1 - wx) * pixel(x0, y0 + 1) + wx * pixel(x0 + 1, y0 + 1)));
}

}  // namespace

xq::dataset make_pairs(const xq::tensor& images, std::size_t first, std::size_t count, std::uint32_t seed) {
  if (images.dimension() != 4 || images.shape()[1] != 28 || images.shape()[2] != 28 || images.shape()[3] != 1)
    throw std::invalid_argument("make_pairs: expected images of shape (N, 28, 28, 1)");
  if (first + count > images.shape()[0])
    throw std::invalid_argument("make_pairs: asked for images past the end of the set");
  xq::tensor frame_1 = xq::tensor::from_shape({count, 28, 28, 1});
  xq::tensor frame_2 = xq::tensor::from_shape({count, 28, 28, 1});
  xq::tensor flows = xq::tensor::from_shape({count, 28, 28, 2});
  std::mt19937 rng(seed);
  for (std::size_t n = 0; n < count; ++n) {
    const float* image = images.data() + (first + n) * 28 * 28;
    const field f = field::draw(rng);
    for (std::size_t y = 0; y < 28; ++y)
      for (std::size_t x = 0; x < 28; ++x) {
        double u = 0, v = 0;
        f.at(double(x), double(y), u, v);
        frame_1(n, y, x, 0) = image[y * 28 + x];
        frame_2(n, y, x, 0) = sample(image, double(x) - u, double(y) - v);
        flows(n, y, x, 0) = static_cast<float>(u);
        flows(n, y, x, 1) = static_cast<float>(v);
      }
  }
  return xq::dataset::of({frame_1, frame_2}, {flows});
}

double end_point_error(const xq::tensor& predicted, const xq::tensor& truth) {
  if (predicted.shape() != truth.shape() || truth.shape().back() != 2)
    throw std::invalid_argument("end_point_error: expected two flow tensors of one shape (..., 2)");
  const std::size_t pixels = truth.size() / 2;
  if (pixels == 0) return 0.0;
  const float* p = predicted.data();
  const float* t = truth.data();
  double sum = 0;
  for (std::size_t i = 0; i < pixels; ++i) {
    const double du = double(p[2 * i]) - t[2 * i], dv = double(p[2 * i + 1]) - t[2 * i + 1];
    sum += std::sqrt(du * du + dv * dv);
  }
  return sum / double(pixels);
}

}  // namespace flow
