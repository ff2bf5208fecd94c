// cuda_policy walkers against scalar_policy, on random data with ties, range
// ends and non-finite values: elementwise results bit for bit (NaN payloads
// aside, see walkers.cuh), parameter-gradient sums to rounding. Then the
// throughput of a 16Mi-float forward.
//
// Exits with 77 (CTest: skipped) when there is no CUDA device.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <xquant/kernels/cuda/device_buffer.cuh>
#include <xquant/kernels/cuda/walkers.cuh>
#include <xquant/numerics/tf_fake_quant.hpp>
#include <xquant/numerics/tf_quantize_and_dequantize.hpp>
#include <xquant/numerics/torch_fake_quant.hpp>
#include <xquant/numerics/torch_learnable_fake_quant.hpp>

namespace {

using xq::cuda::device_buffer;
using xq::kernels::channel_layout;

int checks = 0, failures = 0;

#define XQ_CHECK(cond, ...)                                              \
  do {                                                                   \
    ++checks;                                                            \
    if (!(cond)) {                                                       \
      ++failures;                                                        \
      std::printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
      std::printf(__VA_ARGS__);                                          \
      std::printf("\n");                                                 \
    }                                                                    \
  } while (0)

std::uint32_t bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

/// Bit-identical, except that any two NaNs are equal.
bool same(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

/// Index of the first element that differs, or n.
std::size_t first_difference(const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!same(a[i], b[i])) return i;
  return n;
}
std::size_t first_difference(const bool* a, const bool* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return i;
  return n;
}

void expect_same(const char* name, const char* walker, const std::vector<float>& gpu,
                 const std::vector<float>& ref, const std::vector<float>& x) {
  const std::size_t i = first_difference(gpu.data(), ref.data(), ref.size());
  XQ_CHECK(i == ref.size(), "%s %s: element %zu of %zu: x = %.9g (0x%08x): cuda 0x%08x (%.9g), scalar 0x%08x (%.9g)",
           name, walker, i, ref.size(), i < x.size() ? x[i] : 0.0f, i < x.size() ? bits(x[i]) : 0u,
           i < gpu.size() ? bits(gpu[i]) : 0u, i < gpu.size() ? gpu[i] : 0.0f,
           i < ref.size() ? bits(ref[i]) : 0u, i < ref.size() ? ref[i] : 0.0f);
}

void expect_same_mask(const char* name, const char* walker, const bool* gpu, const bool* ref,
                      std::size_t n, const std::vector<float>& x) {
  const std::size_t i = first_difference(gpu, ref, n);
  XQ_CHECK(i == n, "%s %s: mask element %zu of %zu: x = %.9g: cuda %d, scalar %d", name, walker, i,
           n, i < n ? x[i] : 0.0f, i < n ? int(gpu[i]) : 0, i < n ? int(ref[i]) : 0);
}

/// |gpu - ref| within what two double-accumulated sums rounded to float can
/// differ by: a few ulps of the result plus 1e-6 of the sum of |terms|.
/// Returns whether it held.
bool expect_close_sum(const char* name, const char* walker, std::size_t j, float gpu, float ref,
                      double abs_sum) {
  const double tol = 1e-6 * abs_sum + 4.0 * std::ldexp(1.0, std::ilogb(std::fabs(ref) + 1e-30f) - 23);
  const bool close = std::fabs(double(gpu) - double(ref)) <= tol;
  XQ_CHECK(close, "%s %s: sum %zu: cuda %.9g, scalar %.9g (tolerance %.3g)", name, walker, j, gpu,
           ref, tol);
  return close;
}

std::unique_ptr<bool[]> host_mask(std::size_t n) {
  std::unique_ptr<bool[]> m(new bool[n ? n : 1]);
  std::fill(m.get(), m.get() + n, false);
  return m;
}

// ---- data ------------------------------------------------------------------------

std::mt19937 rng(20240611u);

/// Where a kernel's interesting inputs are: its range [lo, hi] and its grid
/// origin + k * step (so origin + (k + 1/2) * step are the ties).
struct points {
  float lo, hi, origin, step;
};

float interesting(const points& p) {
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const float span = p.hi - p.lo;
  const unsigned kind = rng() % 100;
  if (kind < 40) return p.lo - 0.25f * span + 1.5f * span * unit(rng);  // around the range
  if (kind < 65) {  // ties (and grid points) inside and just outside the range
    const float k = std::floor((p.lo - p.origin) / p.step) - 2.0f +
                    float(rng() % unsigned(std::max(4.0f, span / p.step + 5.0f)));
    const float v = p.origin + (k + (rng() % 2 ? 0.5f : 0.0f)) * p.step;
    return rng() % 4 ? v : std::nextafter(v, rng() % 2 ? INFINITY : -INFINITY);
  }
  if (kind < 80) {  // the range ends and their neighbours
    const float end = rng() % 2 ? p.lo : p.hi;
    switch (rng() % 3) {
      case 0: return end;
      case 1: return std::nextafter(end, INFINITY);
      default: return std::nextafter(end, -INFINITY);
    }
  }
  switch (rng() % 8) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return std::numeric_limits<float>::quiet_NaN();
    case 3: return INFINITY;
    case 4: return -INFINITY;
    case 5: return 3.0e38f * (rng() % 2 ? 1.0f : -1.0f);
    case 6: return 1.0e-40f;  // subnormal
    default: return (unit(rng) - 0.5f) * 1.0e6f;
  }
}

/// n inputs for one set of points (per tensor).
std::vector<float> inputs(std::size_t n, const points& p) {
  std::vector<float> x(n);
  for (auto& v : x) v = interesting(p);
  return x;
}

/// Inputs of a per-channel tensor: element i uses the points of its channel.
std::vector<float> channel_inputs(const channel_layout& l, const std::vector<points>& p) {
  std::vector<float> x(l.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = interesting(p[i / l.inner % l.channels]);
  return x;
}

/// Incoming gradients: finite, both signs, some zeros.
std::vector<float> gradients(std::size_t n) {
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> dy(n);
  for (auto& v : dy) v = rng() % 16 ? d(rng) : (rng() % 2 ? 0.0f : -0.0f);
  return dy;
}

/// Inputs for the sums: as above but finite (a NaN or Inf term makes the
/// whole sum NaN/Inf, which tells nothing about the order of additions).
std::vector<float> finite(std::vector<float> x) {
  for (auto& v : x)
    if (!std::isfinite(v) || std::fabs(v) > 1e6f) v = 0.5f;
  return x;
}

// ---- per tensor --------------------------------------------------------------------

template <class K, class = void>
struct has_param_grads : std::false_type {};
template <class K>
struct has_param_grads<K, std::void_t<decltype(K::param_grad_count)>> : std::true_type {};

template <class K>
void check_tensor(const char* name, const K& k, const points& p, std::size_t n) {
  const std::vector<float> x_host = inputs(n, p), dy_host = gradients(n);
  device_buffer<float> x(x_host), dy(dy_host), y(n), dx(n);
  device_buffer<bool> mask(n);
  std::vector<float> ref(n);
  auto ref_mask = host_mask(n), gpu_mask = host_mask(n);

  xq::kernels::forward(xq::scalar_policy{}, k, x_host.data(), ref.data(), n);
  xq::kernels::forward(xq::cuda_policy{}, k, x.data(), y.data(), n);
  expect_same(name, "forward", y.to_host(), ref, x_host);

  y.fill_bytes(0xff);
  xq::kernels::forward_with_mask(xq::scalar_policy{}, k, x_host.data(), ref.data(), ref_mask.get(), n);
  xq::kernels::forward_with_mask(xq::cuda_policy{}, k, x.data(), y.data(), mask.data(), n);
  expect_same(name, "forward_with_mask", y.to_host(), ref, x_host);
  mask.copy_to(gpu_mask.get(), n);
  expect_same_mask(name, "forward_with_mask", gpu_mask.get(), ref_mask.get(), n, x_host);

  xq::kernels::backward(xq::scalar_policy{}, k, x_host.data(), dy_host.data(), ref.data(), n);
  xq::kernels::backward(xq::cuda_policy{}, k, x.data(), dy.data(), dx.data(), n);
  expect_same(name, "backward", dx.to_host(), ref, x_host);

  dx.fill_bytes(0xff);
  xq::kernels::apply_mask(xq::scalar_policy{}, ref_mask.get(), dy_host.data(), ref.data(), n);
  xq::kernels::apply_mask(xq::cuda_policy{}, mask.data(), dy.data(), dx.data(), n);
  expect_same(name, "apply_mask", dx.to_host(), ref, x_host);

  if constexpr (has_param_grads<K>::value) {
    constexpr std::size_t terms = K::param_grad_count;
    const std::vector<float> xf_host = finite(x_host);
    device_buffer<float> xf(xf_host), sums(terms);
    float ref_sums[terms];
    double abs_sums[terms] = {};
    for (std::size_t i = 0; i < n; ++i) {
      float t[terms];
      k.param_grad_terms(xf_host[i], dy_host[i], t);
      for (std::size_t j = 0; j < terms; ++j) abs_sums[j] += std::fabs(double(t[j]));
    }
    xq::kernels::backward_with_sums(xq::scalar_policy{}, k, xf_host.data(), dy_host.data(),
                                    ref.data(), ref_sums, n);
    xq::kernels::backward_with_sums(xq::cuda_policy{}, k, xf.data(), dy.data(), dx.data(),
                                    sums.data(), n);
    expect_same(name, "backward_with_sums (dx)", dx.to_host(), ref, xf_host);
    const std::vector<float> gpu_sums = sums.to_host();
    for (std::size_t j = 0; j < terms; ++j)
      expect_close_sum(name, "backward_with_sums", j, gpu_sums[j], ref_sums[j], abs_sums[j]);
  }
}

// ---- per channel --------------------------------------------------------------------

// The device tables below are built member by member from device copies of
// the host arrays. If a table gains a member, these fail to compile rather
// than leave a null pointer for the device to read.
static_assert(sizeof(xq::tf::fake_quant_channels<xq::tf::revision::current,
                                                 xq::tf::step_form::product>) == 6 * sizeof(float*),
              "update check_tf_channels and print_timings: fake_quant_channels changed");
static_assert(sizeof(xq::tf::quantize_and_dequantize_channels<xq::tf::round_mode::half_up, false>) ==
                  6 * sizeof(float*),
              "update check_qdq_channels: quantize_and_dequantize_channels changed");
struct three_arrays_two_floats {
  const float *a, *b, *c;
  float d, e;
};
struct three_arrays_three_floats {
  const float *a, *b, *c;
  float d, e, f;
};
static_assert(sizeof(xq::torch::fake_quantize_affine_channels<true>) ==
                  sizeof(three_arrays_two_floats),
              "update check_torch_channels: fake_quantize_affine_channels changed");
static_assert(sizeof(xq::torch::learnable_fake_quantize_channels) ==
                  sizeof(three_arrays_three_floats),
              "update check_torch_channels: learnable_fake_quantize_channels changed");

/// Parameter arrays on the device, in the order they were given.
struct device_arrays {
  std::vector<device_buffer<float>> arrays;
  explicit device_arrays(const std::vector<const std::vector<float>*>& host) {
    for (const auto* h : host) arrays.emplace_back(*h);
  }
  const float* operator[](std::size_t i) const { return arrays[i].data(); }
};

template <class T>
void check_channels(const char* name, const T& host_table, const T& device_table,
                    const channel_layout& l, const std::vector<points>& p) {
  const std::size_t n = l.size();
  const std::vector<float> x_host = channel_inputs(l, p), dy_host = gradients(n);
  device_buffer<float> x(x_host), dy(dy_host), y(n), dx(n);
  device_buffer<bool> mask(n);
  std::vector<float> ref(n);
  auto ref_mask = host_mask(n), gpu_mask = host_mask(n);

  xq::kernels::forward_channels(xq::scalar_policy{}, host_table, l, x_host.data(), ref.data());
  xq::kernels::forward_channels(xq::cuda_policy{}, device_table, l, x.data(), y.data());
  expect_same(name, "forward_channels", y.to_host(), ref, x_host);

  y.fill_bytes(0xff);
  xq::kernels::forward_channels_with_mask(xq::scalar_policy{}, host_table, l, x_host.data(),
                                          ref.data(), ref_mask.get());
  xq::kernels::forward_channels_with_mask(xq::cuda_policy{}, device_table, l, x.data(), y.data(),
                                          mask.data());
  expect_same(name, "forward_channels_with_mask", y.to_host(), ref, x_host);
  mask.copy_to(gpu_mask.get(), n);
  expect_same_mask(name, "forward_channels_with_mask", gpu_mask.get(), ref_mask.get(), n, x_host);

  xq::kernels::backward_channels(xq::scalar_policy{}, host_table, l, x_host.data(), dy_host.data(),
                                 ref.data());
  xq::kernels::backward_channels(xq::cuda_policy{}, device_table, l, x.data(), dy.data(), dx.data());
  expect_same(name, "backward_channels", dx.to_host(), ref, x_host);

  using kernel = decltype(host_table.template at<float>(0));
  if constexpr (has_param_grads<kernel>::value) {
    constexpr std::size_t terms = kernel::param_grad_count;
    const std::size_t C = l.channels;
    const std::vector<float> xf_host = finite(x_host);
    device_buffer<float> xf(xf_host), sums(terms * C);
    std::vector<float> ref_sums(terms * C);
    std::vector<double> abs_sums(terms * C, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t c = i / l.inner % C;
      float t[terms];
      host_table.template at<float>(c).param_grad_terms(xf_host[i], dy_host[i], t);
      for (std::size_t j = 0; j < terms; ++j) abs_sums[j * C + c] += std::fabs(double(t[j]));
    }
    xq::kernels::backward_channels_with_sums(xq::scalar_policy{}, host_table, l, xf_host.data(),
                                             dy_host.data(), ref.data(), ref_sums.data());
    xq::kernels::backward_channels_with_sums(xq::cuda_policy{}, device_table, l, xf.data(),
                                             dy.data(), dx.data(), sums.data());
    expect_same(name, "backward_channels_with_sums (dx)", dx.to_host(), ref, xf_host);
    const std::vector<float> gpu_sums = sums.to_host();
    int wrong = 0;  // report the first few only
    for (std::size_t j = 0; j < terms * C && wrong < 5; ++j)
      wrong += !expect_close_sum(name, "backward_channels_with_sums", j, gpu_sums[j], ref_sums[j],
                                 abs_sums[j]);
  }
}

const std::vector<channel_layout>& layouts() {
  static const std::vector<channel_layout> all = {
      {37, 16, 1},      // channels last (TF, Keras)
      {4099, 64, 1},    // channels last, 262k elements
      {1, 7, 1000},     // PyTorch axis 0 of [C, ...]
      {5, 33, 17},      // a middle axis
      {2, 3, 200003},   // long runs, 1.2M elements
      {3, 5, 0},        // empty
  };
  return all;
}

void check_tf_channels() {
  using namespace xq::tf;
  for (const auto& l : layouts()) {
    const std::size_t C = l.channels;
    xq::vector mn = xq::vector::from_shape({C}), mx = xq::vector::from_shape({C});
    for (std::size_t c = 0; c < C; ++c) {
      mn(c) = -0.5f - 0.37f * float(c % 11);
      mx(c) = 0.75f + 0.21f * float(c % 13);
    }
    if (C > 2) mn(2) = mx(2) = 0.0f;  // the min = max = 0 channel
    const detail::channel_ranges<revision::current, step_form::product> ranges(
        mn, mx, fake_quant_grid(8, false, "test"), "test");
    std::vector<points> p(C);
    for (std::size_t c = 0; c < C; ++c)
      p[c] = {ranges.nudged_min[c], ranges.nudged_max[c], ranges.nudged_min[c],
              ranges.scale[c] > 0 ? ranges.scale[c] : 0.1f};
    const device_arrays d({&ranges.nudged_min, &ranges.nudged_max, &ranges.scale,
                           &ranges.inv_scale, &ranges.quant_zero, &ranges.pass_all});
    const fake_quant_channels<revision::current, step_form::product> device_table{
        d[0], d[1], d[2], d[3], d[4], d[5]};
    check_channels("tf fake_quant per channel", ranges.table(), device_table, l, p);

    const detail::channel_ranges<revision::legacy, step_form::quotient> legacy(
        mn, mx, fake_quant_grid(4, true, "test"), "test");
    const device_arrays dl({&legacy.nudged_min, &legacy.nudged_max, &legacy.scale,
                            &legacy.inv_scale, &legacy.quant_zero, &legacy.pass_all});
    const fake_quant_channels<revision::legacy, step_form::quotient> device_legacy{
        dl[0], dl[1], dl[2], dl[3], dl[4], dl[5]};
    check_channels("tf fake_quant per channel (legacy, 4 bits narrow)", legacy.table(),
                   device_legacy, l, p);
  }
}

void check_qdq_channels() {
  using namespace xq::tf;
  for (const auto& l : layouts()) {
    const std::size_t C = l.channels;
    std::vector<float> lo(C), hi(C), adj_min(C), adj_max(C), scale(C), inverse(C);
    std::vector<points> p(C);
    for (std::size_t c = 0; c < C; ++c) {
      lo[c] = -1.0f - 0.3f * float(c % 7);
      hi[c] = 0.5f + 0.45f * float(c % 5);
      const qdq_range r = compute_quantization_range(true, 8, c % 2 == 1, lo[c], hi[c]);
      adj_min[c] = r.min;
      adj_max[c] = r.max;
      scale[c] = r.scale;
      inverse[c] = r.inverse_scale;
      p[c] = {lo[c], hi[c], 0.0f, r.inverse_scale};
    }
    const quantize_and_dequantize_channels<round_mode::half_to_even, true> host_even{
        adj_min.data(), adj_max.data(), scale.data(), inverse.data(), lo.data(), hi.data()};
    const quantize_and_dequantize_channels<round_mode::half_up, false> host_up{
        adj_min.data(), adj_max.data(), scale.data(), inverse.data(), lo.data(), hi.data()};
    const device_arrays d({&adj_min, &adj_max, &scale, &inverse, &lo, &hi});
    const quantize_and_dequantize_channels<round_mode::half_to_even, true> dev_even{
        d[0], d[1], d[2], d[3], d[4], d[5]};
    const quantize_and_dequantize_channels<round_mode::half_up, false> dev_up{d[0], d[1], d[2],
                                                                              d[3], d[4], d[5]};
    check_channels("tf qdq per channel (half to even, range given)", host_even, dev_even, l, p);
    check_channels("tf qdq per channel (half up, no clamp)", host_up, dev_up, l, p);
  }
}

void check_torch_channels() {
  using namespace xq::torch;
  for (const auto& l : layouts()) {
    const std::size_t C = l.channels;
    std::vector<float> scale(C), inv(C), zp(C), lsq_zp(C);
    std::vector<points> p(C);
    for (std::size_t c = 0; c < C; ++c) {
      scale[c] = 0.01f + 0.0137f * float(c % 9);
      inv[c] = 1.0f / scale[c];
      zp[c] = float(int(c % 7) * 9 - 20);
      lsq_zp[c] = float(int(c % 5) - 2);
      p[c] = {(-128.0f - zp[c]) * scale[c], (127.0f - zp[c]) * scale[c], -zp[c] * scale[c], scale[c]};
    }
    const device_arrays d({&scale, &inv, &zp, &lsq_zp});
    const fake_quantize_affine_channels<true> host_affine{scale.data(), inv.data(), zp.data(),
                                                          -128.0f, 127.0f};
    const fake_quantize_affine_channels<true> dev_affine{d[0], d[1], d[2], -128.0f, 127.0f};
    check_channels("torch fake_quantize_per_channel_affine", host_affine, dev_affine, l, p);

    const learnable_fake_quantize_channels host_lsq{scale.data(), inv.data(), lsq_zp.data(),
                                                    -128.0f, 127.0f, 0.25f};
    const learnable_fake_quantize_channels dev_lsq{d[0], d[1], d[3], -128.0f, 127.0f, 0.25f};
    check_channels("torch learnable per channel (LSQ)", host_lsq, dev_lsq, l, p);
  }
}

void check_per_tensor() {
  using namespace xq::tf;
  const auto g8 = fake_quant_grid(8, false, "test");
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000), std::size_t(65536 + 77),
                        std::size_t(1) << 20}) {
    const auto vars = detail::make_kernel<revision::current, step_form::quotient>(-2.3f, 5.1f, g8, "test");
    const points pv{vars.nudged_min, vars.nudged_max, vars.nudged_min, vars.scale};
    check_tensor("tf fake_quant_with_min_max_vars", vars, pv, n);
    const auto args = detail::make_kernel<revision::current, step_form::product>(-6.0f, 6.0f, g8, "test");
    check_tensor("tf fake_quant_with_min_max_args", args,
                 points{args.nudged_min, args.nudged_max, args.nudged_min, args.scale}, n);
    const auto legacy = detail::make_kernel<revision::legacy, step_form::quotient>(
        -0.7f, 3.3f, fake_quant_grid(5, true, "test"), "test");
    check_tensor("tf fake_quant (legacy, 5 bits narrow)", legacy,
                 points{legacy.nudged_min, legacy.nudged_max, legacy.nudged_min, legacy.scale}, n);
    const auto zero = detail::make_kernel<revision::current, step_form::product>(0.0f, 0.0f, g8, "test");
    check_tensor("tf fake_quant min = max = 0", zero, points{-1.0f, 1.0f, 0.0f, 0.25f}, n);

    const qdq_range r = compute_quantization_range(true, 8, false, -3.0f, 7.5f);
    const quantize_and_dequantize_kernel<round_mode::half_to_even, true> qdq{
        r.min, r.max, r.scale, r.inverse_scale, -3.0f, 7.5f};
    check_tensor("tf qdq (half to even, range given)", qdq, points{-3.0f, 7.5f, 0.0f, r.inverse_scale}, n);
    const quantize_and_dequantize_kernel<round_mode::half_up, false> qdq_up{
        r.min, r.max, r.scale, r.inverse_scale, -3.0f, 7.5f};
    check_tensor("tf qdq (half up, no clamp)", qdq_up, points{-3.0f, 7.5f, 0.0f, r.inverse_scale}, n);

    const xq::torch::fake_quantize_affine_kernel<false> affine{0.0423f, 1.0f / 0.0423f, 17.0f,
                                                              -128.0f, 127.0f};
    check_tensor("torch fake_quantize_per_tensor_affine", affine,
                 points{(-128.0f - 17.0f) * 0.0423f, (127.0f - 17.0f) * 0.0423f, -17.0f * 0.0423f, 0.0423f}, n);
    const xq::torch::fake_quantize_affine_kernel<true> cast_first{0.02f, 50.0f, 3.0f, 0.0f, 255.0f};
    check_tensor("torch affine (int64 cast first)", cast_first,
                 points{-3.0f * 0.02f, 252.0f * 0.02f, -3.0f * 0.02f, 0.02f}, n);
    const xq::torch::learnable_fake_quantize_kernel<float> lsq{0.05f, 20.0f, 3.0f, -128.0f, 127.0f, 0.5f};
    check_tensor("torch learnable (LSQ)", lsq,
                 points{(-128.0f - 3.0f) * 0.05f, (127.0f - 3.0f) * 0.05f, -3.0f * 0.05f, 0.05f}, n);
  }
}

void check_errors() {
  bool thrown = false;
  try {
    xq::cuda::check(cudaErrorInvalidValue, "xquant test");
  } catch (const xq::error& e) {
    thrown = std::string(e.what()).find("xquant test") != std::string::npos &&
             std::string(e.what()).find("cudaErrorInvalidValue") != std::string::npos;
  }
  XQ_CHECK(thrown, "xq::cuda::check should throw xq::error naming the call and the CUDA error");
}

// ---- timings -------------------------------------------------------------------------

template <class Launch>
double gigabytes_per_second(Launch&& launch, double bytes) {
  cudaEvent_t start, stop;
  xq::cuda::check(cudaEventCreate(&start), "cudaEventCreate");
  xq::cuda::check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 3; ++i) launch();
  constexpr int reps = 20;
  xq::cuda::check(cudaEventRecord(start), "cudaEventRecord");
  for (int i = 0; i < reps; ++i) launch();
  xq::cuda::check(cudaEventRecord(stop), "cudaEventRecord");
  xq::cuda::check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0.0f;
  xq::cuda::check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return bytes * reps / (double(ms) * 1e-3) / 1e9;
}

void print_timings() {
  using namespace xq::tf;
  const std::size_t n = std::size_t(16) << 20;
  const std::vector<float> x_host = inputs(n, points{-6.0f, 6.0f, -6.0f, 12.0f / 255.0f});
  device_buffer<float> x(x_host), y(n), dy(x_host), dx(n);
  device_buffer<bool> mask(n);
  const double rw = 8.0 * double(n);
  const auto g8 = fake_quant_grid(8, false, "bench");
  const auto vars = detail::make_kernel<revision::current, step_form::quotient>(-6.0f, 6.0f, g8, "bench");
  const auto args = detail::make_kernel<revision::current, step_form::product>(-6.0f, 6.0f, g8, "bench");
  const xq::torch::fake_quantize_affine_kernel<false> affine{0.05f, 1.0f / 0.05f, 3.0f, -128.0f,
                                                            127.0f};
  const qdq_range r = compute_quantization_range(true, 8, false, -6.0f, 6.0f);
  const quantize_and_dequantize_kernel<round_mode::half_to_even, true> qdq{r.min, r.max, r.scale,
                                                                           r.inverse_scale, -6.0f, 6.0f};
  xq::vector mnv = xq::vector::from_shape({64}), mxv = xq::vector::from_shape({64});
  for (std::size_t c = 0; c < 64; ++c) {
    mnv(c) = -1.0f - 0.1f * float(c);
    mxv(c) = 2.0f + 0.05f * float(c);
  }
  const detail::channel_ranges<revision::current, step_form::product> ranges(mnv, mxv, g8, "bench");
  const device_arrays d({&ranges.nudged_min, &ranges.nudged_max, &ranges.scale, &ranges.inv_scale,
                         &ranges.quant_zero, &ranges.pass_all});
  const fake_quant_channels<revision::current, step_form::product> table{d[0], d[1], d[2],
                                                                         d[3], d[4], d[5]};
  const channel_layout last{n / 64, 64, 1};

  const double copy = gigabytes_per_second(
      [&] { xq::cuda::check(cudaMemcpy(y.data(), x.data(), n * sizeof(float), cudaMemcpyDeviceToDevice), "cudaMemcpy"); },
      rw);
  std::printf("timings, %zu floats (GB/s = bytes read + written per second):\n", n);
  std::printf("  cudaMemcpy device to device       %8.1f GB/s\n", copy);
  const auto report = [&](const char* name, double bytes, auto&& launch) {
    const double gbs = gigabytes_per_second(launch, bytes);
    std::printf("  %-33s %8.1f GB/s  (%.2f x copy)\n", name, gbs, gbs / copy);
  };
  report("tf forward (vars, quotient)", rw, [&] { xq::kernels::forward(xq::cuda_policy{}, vars, x.data(), y.data(), n); });
  report("tf forward (args, product)", rw, [&] { xq::kernels::forward(xq::cuda_policy{}, args, x.data(), y.data(), n); });
  report("tf forward_with_mask", 9.0 * n, [&] {
    xq::kernels::forward_with_mask(xq::cuda_policy{}, vars, x.data(), y.data(), mask.data(), n);
  });
  report("tf backward", 12.0 * n, [&] { xq::kernels::backward(xq::cuda_policy{}, args, x.data(), dy.data(), dx.data(), n); });
  report("tf forward_channels (64, last)", rw, [&] {
    xq::kernels::forward_channels(xq::cuda_policy{}, table, last, x.data(), y.data());
  });
  report("torch forward (per tensor)", rw, [&] { xq::kernels::forward(xq::cuda_policy{}, affine, x.data(), y.data(), n); });
  report("tf qdq forward", rw, [&] { xq::kernels::forward(xq::cuda_policy{}, qdq, x.data(), y.data(), n); });
  xq::cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped (%s)\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "no device");
    return 77;
  }
  cudaDeviceProp prop{};
  xq::cuda::check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("device 0: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  try {
    check_errors();
    check_per_tensor();
    check_tf_channels();
    check_qdq_channels();
    check_torch_channels();
    xq::cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    print_timings();
  } catch (const std::exception& e) {
    std::printf("FAILED: exception: %s\n", e.what());
    return 1;
  }
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
