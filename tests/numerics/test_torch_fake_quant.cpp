// PyTorch fake_quantize_per_{tensor,channel}_affine and the learnable (LSQ)
// form: docs/semantics.md §5 vectors and golden vectors produced by PyTorch.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <xquant/numerics/torch_cpu_kernels.hpp>
#include <xquant/numerics/torch_learnable_fake_quant.hpp>

#include "../golden.hpp"
#include "../index_hash.hpp"

using xq::tensor;
namespace torch = xq::torch;

TEST_CASE("torch fake quant: rounds to even, clamps the integer, masks before the clamp",
          "[torch][fake_quant]") {
  const float s = 1.0f / 127.0f;
  const tensor x = {-1, -0.5f, 0, 0.3f, 0.8f, 0.555f, 0.50390625f};
  const tensor want = tensor{-127, -64, 0, 38, 102, 70, 64} * s;
  CHECK(golden::bit_difference(torch::fake_quantize_per_tensor_affine(x, s, 0, -127, 127), want) == "");
  // Half a step past the end still gets gradient (mask on the rounded value).
  const tensor edge = {127.4f * s, 127.6f * s, -127.4f * s, -127.6f * s};
  const auto r = torch::fake_quantize_per_tensor_affine_and_mask(edge, s, 0, -127, 127);
  CHECK((r.mask == xq::mask_tensor{true, false, true, false}));
  CHECK((r.y == tensor{127 * s, 127 * s, -127 * s, -127 * s}));
  const tensor dx = torch::fake_quantize_per_tensor_affine_gradient(tensor{-2, 3, 4, -5}, edge, s, 0, -127, 127);
  CHECK(golden::bit_difference(dx, tensor{-2, 0, 4, -0.0f}) == "");
}

// Issue 14, finding 7: the int64 range at its limits. PyTorch's C++ is undefined there
// (int64_t(2^63), q - zero_point overflowing); these are the values torch 2.15 gives on
// x86 (AMD EPYC, AVX2): torch.fake_quantize_per_tensor_affine(x, 1.0, zp, -2^63, 2^63 - 1)
// for x = [3e38, -3e38, 1, 0, 1e30, -1e30, inf, -inf]. Under UBSan (.ci/run's sanitizer
// build) the old kernel's subtraction was a signed-overflow report; its int64_t(2^63) shows
// only with -fsanitize=float-cast-overflow, which GCC's -fsanitize=undefined leaves out.
TEST_CASE("torch fake quant: the int64 range at its limits gives torch's x86 values, defined",
          "[torch][fake_quant][errors]") {
  const std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  const float inf = std::numeric_limits<float>::infinity();
  const tensor x = {3e38f, -3e38f, 1, 0, 1e30f, -1e30f, inf, -inf};
  const float m = -9223372036854775808.0f;  // INT64_MIN
  CHECK(golden::bit_difference(torch::fake_quantize_per_tensor_affine(x, 1.0f, 0, lo, hi),
                               tensor{m, m, 1, 0, m, m, m, m}) == "");
  CHECK(golden::bit_difference(torch::fake_quantize_per_tensor_affine(x, 1.0f, lo, lo, hi),
                               tensor{0, 0, 0, 0, 0, 0, 0, 0}) == "");
  CHECK(golden::bit_difference(torch::fake_quantize_per_tensor_affine(x, 1.0f, hi, lo, hi),
                               tensor{1, 1, 1, 1, 1, 1, 1, 1}) == "");
  const float t40 = 1099511627776.0f;  // 2^40
  CHECK(golden::bit_difference(torch::fake_quantize_per_tensor_affine(x, 1.0f, -5, -(std::int64_t(1) << 40),
                                                                      std::int64_t(1) << 40),
                               tensor{t40, -t40, 1, 0, t40, -t40, t40, -t40}) == "");
}

TEST_CASE("torch learnable fake quant: the LSQ example of docs/semantics.md", "[torch][lsq]") {
  const tensor x = {-3, -0.6f, 0.2f, 0.75f, 2};
  CHECK((torch::fake_quantize_learnable_per_tensor_affine(x, 0.5f, 0.0f, -4, 3) ==
        tensor{-2, -0.5f, 0, 1.0f, 1.5f}));
  const auto g = torch::fake_quantize_learnable_per_tensor_affine_backward(xt::ones_like(x), x, 0.5f,
                                                                           0.0f, -4, 3);
  CHECK((g.dx == tensor{0, 1, 1, 1, 0}));
  CHECK(g.dscale == Approx(-0.7f).epsilon(1e-6));
  CHECK(g.dzero_point == -1.0f);
  // Forward rounds zp half to even, backward half up: 2.5 -> 2 and 3.
  CHECK(torch::detail::forward_zero_point(2.5f, -10, 10) == 2);
  CHECK(torch::detail::backward_zero_point(2.5f, -10, 10) == 3);
  CHECK(torch::detail::backward_zero_point(-0.7f, -10, 10) == 0);  // trunc toward zero
  CHECK(torch::lsq_grad_factor(100, 127) == float(1.0 / std::sqrt(12700.0)));
  CHECK(torch::lsq_grad_factor(1, 1) == 1.0f);
}

TEST_CASE("torch fake quant: bad input is rejected with a clear message", "[torch][errors]") {
  const tensor x = {0.0f};
  CHECK_THROWS_WITH(torch::fake_quantize_per_tensor_affine(x, 0.1f, 0, 5, 3),
                    Catch::Contains("quant_min <= quant_max") && Catch::Contains("quant_min = 5, quant_max = 3"));
  CHECK_THROWS_WITH(torch::fake_quantize_per_tensor_affine(x, 0.1f, 300, 0, 255),
                    Catch::Contains("zero_point in [quant_min, quant_max] = [0, 255]") &&
                        Catch::Contains("zero_point = 300"));
  // A scale of 0, below 0 or not finite: PyTorch computes with it, xquant refuses it on
  // purpose (torch_fake_quant.hpp says why; issue 14, finding 13).
  CHECK_THROWS_WITH(torch::fake_quantize_per_tensor_affine(x, 0.0f, 0, 0, 255),
                    Catch::Contains("scale finite and > 0") && Catch::Contains("scale = 0"));
  CHECK_THROWS_AS(torch::fake_quantize_per_tensor_affine(x, -1.0f, 0, 0, 255), xq::argument_error);
  CHECK_THROWS_AS(torch::fake_quantize_per_tensor_affine(x, INFINITY, 0, 0, 255), xq::argument_error);
  CHECK_THROWS_AS(torch::fake_quantize_per_tensor_affine(x, NAN, 0, 0, 255), xq::argument_error);
  CHECK_THROWS_WITH(torch::fake_quantize_learnable_per_tensor_affine(x, 0.0f, 0.0f, -4, 3),
                    Catch::Contains("scale finite and > 0"));
  CHECK_THROWS_AS(torch::fake_quantize_learnable_per_tensor_affine(x, -0.5f, 0.0f, -4, 3), xq::argument_error);
  const tensor w = xt::zeros<float>({3, 2});
  CHECK_THROWS_WITH(torch::fake_quantize_per_channel_affine(w, xq::vector{1, 1}, torch::index_vector{0, 0}, 0, -128, 127),
                    Catch::Contains("scale of length 3 (the axis length)") && Catch::Contains("length 2"));
  CHECK_THROWS_WITH(torch::fake_quantize_per_channel_affine(w, xq::vector{1, 1}, torch::index_vector{0, 0}, 2, -128, 127),
                    Catch::Contains("an axis in [-2, 1]"));
  CHECK_THROWS_WITH(torch::fake_quantize_per_channel_affine(w, xq::vector{1, 1, 1}, torch::index_vector{0, 0, 200}, 0, -128, 127),
                    Catch::Contains("zero_point[2] = 200"));
  CHECK_THROWS_WITH(torch::fake_quantize_learnable_per_tensor_affine_backward(x, x, 1.0f, 0.0f, 1, 10),
                    Catch::Contains("quant_min <= 0 <= quant_max"));
}

namespace {
// Per-element LSQ gradient terms, computed with the same kernel the walkers use.
void lsq_terms(const torch::learnable_fake_quantize_kernel<float>& k, const tensor& x, const tensor& dy,
               tensor& dscale, tensor& dzp) {
  dscale = xt::empty<float>(x.shape());
  dzp = xt::empty<float>(x.shape());
  for (std::size_t i = 0; i < x.size(); ++i) {
    float t[2];
    k.param_grad_terms(x.data()[i], dy.data()[i], t);
    dscale.data()[i] = t[0];
    dzp.data()[i] = t[1];
  }
}
}  // namespace

TEST_CASE("torch fake quant: golden vectors from PyTorch, bit for bit", "[torch][golden]") {
  const auto data = golden::load("torch_fake_quant");
  std::size_t checked = 0;
  for (const auto& c : data.at("cases")) {
    const std::string op = c.at("op");
    const auto& a = c.at("attrs");
    const auto& t = c.at("tensors");
    INFO(op << " / " << c.at("name").get<std::string>());
    const tensor x = golden::tensor(t.at("x")), dy = golden::tensor(t.at("dy"));
    const std::int64_t qmin = a.at("quant_min"), qmax = a.at("quant_max");
    if (op == "torch.fake_quantize_per_tensor_affine") {
      const float s = golden::scalar(t.at("scale"));
      const std::int64_t zp = a.at("zero_point");
      const tensor want = golden::tensor(t.at("y"));
      CHECK(golden::bit_difference(torch::fake_quantize_per_tensor_affine(x, s, zp, qmin, qmax), want) == "");
      CHECK(golden::bit_difference(torch::fake_quantize_per_tensor_affine_and_mask(x, s, zp, qmin, qmax).y, want) == "");
      CHECK(golden::bit_difference(torch::fake_quantize_per_tensor_affine_gradient(dy, x, s, zp, qmin, qmax),
                                   golden::tensor(t.at("dx"))) == "");
    } else if (op == "torch.fake_quantize_per_channel_affine") {
      const xq::vector s = golden::vector(t.at("scale"));
      const long axis = a.at("axis");
      if (a.at("zero_point_dtype") == "float32") {
        // tools/gen_golden.py runs torch with ATEN_CPU_CAPABILITY=avx2 (the next tests
        // cover every capability).
        const xq::vector zp = golden::vector(t.at("zero_point"));
        const auto avx2 = torch::cpu_capability::avx2;
        CHECK(golden::bit_difference(torch::fake_quantize_per_channel_affine(x, s, zp, axis, qmin, qmax, avx2),
                                     golden::tensor(t.at("y"))) == "");
        CHECK(golden::bit_difference(
                  torch::fake_quantize_per_channel_affine_gradient(dy, x, s, zp, axis, qmin, qmax, avx2),
                  golden::tensor(t.at("dx"))) == "");
      } else {
        const auto zp = golden::ints(t.at("zero_point"));
        CHECK(golden::bit_difference(torch::fake_quantize_per_channel_affine(x, s, zp, axis, qmin, qmax),
                                     golden::tensor(t.at("y"))) == "");
        CHECK(golden::bit_difference(torch::fake_quantize_per_channel_affine_gradient(dy, x, s, zp, axis, qmin, qmax),
                                     golden::tensor(t.at("dx"))) == "");
      }
    } else {
      FAIL("unknown op " << op);
    }
    ++checked;
  }
  CHECK(checked > 50);
}

// Issue 14, finding 11: with a float zero point, torch's AVX2 and AVX-512 CPU builds compute
// zp + x * inv as one FMA, in the output and in the mask; its scalar build does not.
// tools/gen_golden_torch_capability.py ran torch once per ATEN_CPU_CAPABILITY on inputs
// next to rounding ties, where the two differ.
namespace {
constexpr torch::cpu_capability all_capabilities[] = {torch::cpu_capability::scalar, torch::cpu_capability::avx2,
                                                      torch::cpu_capability::avx512};

/// Restores the process-wide default capability when a test that changes it ends.
struct default_capability_guard {
  torch::cpu_capability saved = torch::default_cpu_capability();
  ~default_capability_guard() { torch::set_default_cpu_capability(saved); }
};
}  // namespace

TEST_CASE("torch fake quant: float zero points give each CPU capability's bits, golden vectors from PyTorch",
          "[torch][golden][capability]") {
  const auto data = golden::load("torch_fake_quant_capability");
  INFO("generated on " << data.at("host").dump());
  // The scalar and AVX2 builds must both have run, or the file checks nothing of this.
  REQUIRE(data.at("capabilities").at("default").at("ran") == true);
  REQUIRE(data.at("capabilities").at("avx2").at("ran") == true);
  std::size_t checked = 0, telling_y = 0, telling_dx = 0;
  for (const auto& c : data.at("cases")) {
    const auto& a = c.at("attrs");
    const auto& t = c.at("tensors");
    const tensor x = golden::tensor(t.at("x")), dy = golden::tensor(t.at("dy"));
    const xq::vector s = golden::vector(t.at("scale")), zp = golden::vector(t.at("zero_point"));
    const long axis = a.at("axis");
    const std::int64_t qmin = a.at("quant_min"), qmax = a.at("quant_max");
    const auto& expected = c.at("expected");
    for (const auto cap : all_capabilities) {
      if (!expected.contains(torch::to_string(cap))) continue;  // not run by the generator
      INFO(c.at("name").get<std::string>() << " / ATEN_CPU_CAPABILITY=" << torch::to_string(cap));
      const auto& want = expected.at(torch::to_string(cap));
      CHECK(golden::bit_difference(torch::fake_quantize_per_channel_affine(x, s, zp, axis, qmin, qmax, cap),
                                   golden::tensor(want.at("y"))) == "");
      CHECK(golden::bit_difference(torch::fake_quantize_per_channel_affine_gradient(dy, x, s, zp, axis, qmin, qmax, cap),
                                   golden::tensor(want.at("dx"))) == "");
      ++checked;
    }
    // Cases where torch's builds disagree, so that matching one of them means something.
    const auto& scalar = expected.at("default");
    const auto& avx2 = expected.at("avx2");
    telling_y += golden::bit_difference(golden::tensor(scalar.at("y")), golden::tensor(avx2.at("y"))) != "";
    telling_dx += golden::bit_difference(golden::tensor(scalar.at("dx")), golden::tensor(avx2.at("dx"))) != "";
  }
  CHECK(checked >= 2 * 8);
  CHECK(telling_y >= 5);
  CHECK(telling_dx >= 5);
}

TEST_CASE("torch fake quant: the default CPU capability is the one torch picks here", "[torch][capability]") {
  CHECK(torch::default_cpu_capability() == torch::detect_cpu_capability());
  // Independently of the implementation: the variable, else ATen's CPU test.
  auto expected = torch::cpu_capability::scalar;
  const char* env = std::getenv("ATEN_CPU_CAPABILITY");
  const std::string var = env ? env : "";
  if (var == "default" || var == "avx2" || var == "avx512") {
    expected = var == "avx512" ? torch::cpu_capability::avx512
               : var == "avx2" ? torch::cpu_capability::avx2
                               : torch::cpu_capability::scalar;
  } else {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma"))
      expected = torch::cpu_capability::avx512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      expected = torch::cpu_capability::avx2;
#endif
  }
  INFO("ATEN_CPU_CAPABILITY=" << var);
  CHECK(torch::detect_cpu_capability() == expected);
  for (const auto cap : all_capabilities) CHECK(torch::fuses_float_zero_point(cap) == (cap != torch::cpu_capability::scalar));
  CHECK(std::string(torch::to_string(torch::cpu_capability::scalar)) == "default");
}

TEST_CASE("torch fake quant: the default CPU capability can be set, and the ops follow it", "[torch][capability]") {
  const default_capability_guard guard;
  // A golden case whose output and mask differ between torch's scalar and FMA builds.
  const auto data = golden::load("torch_fake_quant_capability");
  const auto& cases = data.at("cases");
  const auto it = std::find_if(cases.begin(), cases.end(),
                               [](const auto& k) { return k.at("name") == "ties_rank2_axis1_q0_255"; });
  REQUIRE(it != cases.end());
  const auto& c = *it;
  const auto& t = c.at("tensors");
  const tensor x = golden::tensor(t.at("x")), dy = golden::tensor(t.at("dy"));
  const xq::vector s = golden::vector(t.at("scale")), zp = golden::vector(t.at("zero_point"));
  const long axis = c.at("attrs").at("axis");
  const std::int64_t qmin = c.at("attrs").at("quant_min"), qmax = c.at("attrs").at("quant_max");
  for (const auto cap : all_capabilities) {
    INFO(torch::to_string(cap));
    torch::set_default_cpu_capability(cap);
    CHECK(torch::default_cpu_capability() == cap);
    const auto& want = c.at("expected").at(torch::to_string(cap));
    CHECK(golden::bit_difference(torch::fake_quantize_per_channel_affine(x, s, zp, axis, qmin, qmax),
                                 golden::tensor(want.at("y"))) == "");
    CHECK(golden::bit_difference(torch::fake_quantize_per_channel_affine_gradient(dy, x, s, zp, axis, qmin, qmax),
                                 golden::tensor(want.at("dx"))) == "");
  }
}

#if defined(__unix__) || defined(__APPLE__)
TEST_CASE("torch fake quant: ATEN_CPU_CAPABILITY chooses the capability as in torch", "[torch][capability]") {
  const char* old = std::getenv("ATEN_CPU_CAPABILITY");
  const std::string saved = old ? old : "";
  const torch::cpu_capability before = torch::default_cpu_capability();
  ::setenv("ATEN_CPU_CAPABILITY", "default", 1);
  CHECK(torch::detect_cpu_capability() == torch::cpu_capability::scalar);
  ::setenv("ATEN_CPU_CAPABILITY", "avx512", 1);  // not checked against the CPU, as in torch
  CHECK(torch::detect_cpu_capability() == torch::cpu_capability::avx512);
  ::setenv("ATEN_CPU_CAPABILITY", "avx2", 1);
  CHECK(torch::detect_cpu_capability() == torch::cpu_capability::avx2);
  ::setenv("ATEN_CPU_CAPABILITY", "sse4", 1);  // ignored, as in torch: the CPU decides
  const torch::cpu_capability from_cpu = torch::detect_cpu_capability();
  ::unsetenv("ATEN_CPU_CAPABILITY");
  CHECK(torch::detect_cpu_capability() == from_cpu);
  // The default was read once, like torch's choice.
  CHECK(torch::default_cpu_capability() == before);
  if (old) ::setenv("ATEN_CPU_CAPABILITY", saved.c_str(), 1);
}
#endif

TEST_CASE("torch learnable fake quant: golden vectors from PyTorch", "[torch][lsq][golden]") {
  const auto data = golden::load("torch_learnable_fake_quant");
  std::size_t checked = 0;
  for (const auto& c : data.at("cases")) {
    const std::string op = c.at("op");
    const auto& a = c.at("attrs");
    const auto& t = c.at("tensors");
    INFO(op << " / " << c.at("name").get<std::string>());
    const tensor x = golden::tensor(t.at("x")), dy = golden::tensor(t.at("dy"));
    const std::int64_t qmin = a.at("quant_min"), qmax = a.at("quant_max");
    const float gf = golden::scalar(t.at("grad_factor"));
    tensor dscale, dzp;
    if (op == "torch.fake_quantize_learnable_per_tensor_affine") {
      const float s = golden::scalar(t.at("scale")), zp = golden::scalar(t.at("zero_point"));
      CHECK(golden::bit_difference(torch::fake_quantize_learnable_per_tensor_affine(x, s, zp, qmin, qmax, gf),
                                   golden::tensor(t.at("y"))) == "");
      const auto g = torch::fake_quantize_learnable_per_tensor_affine_backward(dy, x, s, zp, qmin, qmax, gf);
      CHECK(golden::bit_difference(g.dx, golden::tensor(t.at("dx"))) == "");
      // The sums in torch's own order (torch_cpu_kernels.hpp), so bit for bit too.
      CHECK(golden::bit_difference(xq::vector{g.dscale}, golden::tensor(t.at("dscale"))) == "");
      CHECK(golden::bit_difference(xq::vector{g.dzero_point}, golden::tensor(t.at("dzero_point"))) == "");
      const float zpb = float(torch::detail::backward_zero_point(zp, qmin, qmax));
      lsq_terms({s, 1.0f / s, zpb, float(qmin), float(qmax), gf}, x, dy, dscale, dzp);
    } else if (op == "torch.fake_quantize_learnable_per_channel_affine") {
      const xq::vector s = golden::vector(t.at("scale")), zp = golden::vector(t.at("zero_point"));
      const long axis = a.at("axis");
      CHECK(golden::bit_difference(torch::fake_quantize_learnable_per_channel_affine(x, s, zp, axis, qmin, qmax, gf),
                                   golden::tensor(t.at("y"))) == "");
      const auto g = torch::fake_quantize_learnable_per_channel_affine_backward(dy, x, s, zp, axis, qmin, qmax, gf);
      CHECK(golden::bit_difference(g.dx, golden::tensor(t.at("dx"))) == "");
      CHECK(golden::bit_difference(g.dscale, golden::vector(t.at("dscale"))) == "");
      CHECK(golden::bit_difference(g.dzero_point, golden::vector(t.at("dzero_point"))) == "");
      // Per element: that element's channel parameters.
      const auto layout = xq::kernels::channel_layout::of(x.shape(), axis, "test");
      const xq::vector zr = torch::detail::rounded_zero_points(zp, qmin, qmax);
      dscale = xt::empty<float>(x.shape());
      dzp = xt::empty<float>(x.shape());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const std::size_t ch = (i / layout.inner) % layout.channels;
        const torch::learnable_fake_quantize_kernel<float> k{s(ch), 1.0f / s(ch), zr(ch), float(qmin),
                                                             float(qmax), gf};
        float terms[2];
        k.param_grad_terms(x.data()[i], dy.data()[i], terms);
        dscale.data()[i] = terms[0];
        dzp.data()[i] = terms[1];
      }
    } else {
      FAIL("unknown op " << op);
    }
    // The golden per-element values are one-element sums (0 + term): a
    // -0.0 term is +0.0 there.
    dscale += 0.0f;
    dzp += 0.0f;
    CHECK(golden::bit_difference(dscale, golden::tensor(t.at("dscale_elem"))) == "");
    CHECK(golden::bit_difference(dzp, golden::tensor(t.at("dzero_point_elem"))) == "");
    ++checked;
  }
  CHECK(checked > 20);
}

// tests/data/golden/torch_reductions.json (tools/gen_golden_torch_reductions.py): torch's sum
// orders on tensors up to 10^6 elements, with 1, 2 and 4 threads; the inputs are rebuilt
// here from their indices.
namespace {

/// The generator's inputs: float32((index_hash(i, seed) >> 8) * 2^-24) * 2 - 1, exact.
tensor hashed(const std::vector<std::size_t>& shape, std::uint32_t seed) {
  tensor t = xt::empty<float>(shape);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::uint32_t h = golden::index_hash(i, seed);
    t.data()[i] = float(h >> 8) * 0x1p-24f * 2.0f - 1.0f;
  }
  return t;
}

/// Sets torch::cpu::reduction_threads for one scope.
struct reduction_threads_scope {
  int saved = torch::cpu::reduction_threads();
  explicit reduction_threads_scope(int threads) { torch::cpu::set_reduction_threads(threads); }
  ~reduction_threads_scope() { torch::cpu::set_reduction_threads(saved); }
  reduction_threads_scope(const reduction_threads_scope&) = delete;
  reduction_threads_scope& operator=(const reduction_threads_scope&) = delete;
};

std::size_t cases_of(const golden::json& data, const std::string& op) {
  std::size_t n = 0;
  for (const auto& c : data.at("cases")) n += c.at("op") == op;
  return n;
}

}  // namespace

TEST_CASE("torch cpu sum: the inputs are the generator's", "[torch][sum]") {
  // tools/gen_golden_torch_reductions.py's hashed((5,), 1) and hashed((3,), 2).
  CHECK(golden::bit_difference(hashed({5}, 1), tensor{0.14679515f, 0.1767875f, 0.40826738f, 0.85552573f, -0.30762208f}) == "");
  CHECK(golden::bit_difference(hashed({3}, 2), tensor{-0.5246922f, -0.8536221f, -0.6703166f}) == "");
}

TEST_CASE("torch cpu sum: torch.sum with 1, 2 and 4 threads, bit for bit", "[torch][sum][golden]") {
  const auto data = golden::load("torch_reductions");
  std::size_t checked = 0, threads_matter = 0;
  for (const auto& c : data.at("cases")) {
    if (c.at("op") != "torch.sum") continue;
    INFO(c.at("name").get<std::string>());
    const auto& a = c.at("attrs");
    const tensor x = hashed(a.at("shape").get<std::vector<std::size_t>>(), a.at("seed"));
    const int threads = a.at("threads");
    const float want = golden::scalar(c.at("outputs").at("sum"));
    CHECK(golden::to_bits(torch::cpu::sum(x.data(), x.size(), threads)) == golden::to_bits(want));
    if (threads == 1) CHECK(golden::to_bits(torch::cpu::sum(x.data(), x.size())) == golden::to_bits(want));
    threads_matter += golden::to_bits(torch::cpu::sum(x.data(), x.size())) != golden::to_bits(want);
    ++checked;
  }
  CHECK(checked == cases_of(data, "torch.sum"));
  CHECK(checked >= 27);
  CHECK(threads_matter >= 5);  // the two-pass order is needed, not only tolerated
  CHECK_THROWS_WITH(torch::cpu::sum(nullptr, 0, 0), Catch::Contains("threads >= 1"));
}

TEST_CASE("torch cpu sum: x.sum(every dim but axis), bit for bit", "[torch][sum][golden]") {
  const auto data = golden::load("torch_reductions");
  std::size_t checked = 0;
  for (const auto& c : data.at("cases")) {
    if (c.at("op") != "torch.sum_except_axis") continue;
    INFO(c.at("name").get<std::string>());
    const auto& a = c.at("attrs");
    const tensor x = hashed(a.at("shape").get<std::vector<std::size_t>>(), a.at("seed"));
    const auto layout = xq::kernels::channel_layout::of(x.shape(), a.at("axis").get<long>(), "test");
    xq::vector got = xq::vector::from_shape({layout.channels});
    torch::cpu::sum_except_axis(x.data(), layout, got.data(), a.at("threads").get<int>());
    CHECK(golden::bit_difference(got, golden::vector(c.at("outputs").at("sum"))) == "");
    ++checked;
  }
  CHECK(checked == cases_of(data, "torch.sum_except_axis"));
  CHECK(checked >= 20);
}

TEST_CASE("torch learnable fake quant: d_scale and d_zero_point of large tensors in torch's order",
          "[torch][lsq][golden]") {
  const auto data = golden::load("torch_reductions");
  REQUIRE(torch::cpu::reduction_threads() == 1);  // the default: torch with one thread
  std::size_t per_tensor = 0, per_channel = 0, threads_matter = 0;
  for (const auto& c : data.at("cases")) {
    const std::string op = c.at("op");
    if (!c.contains("tensors")) continue;  // the plain sums
    const auto& a = c.at("attrs");
    const auto& t = c.at("tensors");
    const auto& want = c.at("outputs");
    INFO(op << " / " << c.at("name").get<std::string>());
    const std::int64_t qmin = a.at("quant_min"), qmax = a.at("quant_max");
    const reduction_threads_scope threads(a.at("threads").get<int>());
    if (op == "torch.fake_quantize_learnable_per_tensor_affine_backward") {
      const auto shape = a.at("shape").get<std::vector<std::size_t>>();
      const tensor x = hashed(shape, a.at("x_seed")), dy = hashed(shape, a.at("dy_seed"));
      const float s = golden::scalar(t.at("scale")), zp = golden::scalar(t.at("zero_point"));
      const float gf = golden::scalar(t.at("grad_factor"));
      const auto g = torch::fake_quantize_learnable_per_tensor_affine_backward(dy, x, s, zp, qmin, qmax, gf);
      CHECK(golden::bit_difference(xq::vector{g.dscale}, golden::tensor(want.at("dscale"))) == "");
      CHECK(golden::bit_difference(xq::vector{g.dzero_point}, golden::tensor(want.at("dzero_point"))) == "");
      const auto r = torch::fake_quantize_learnable_per_tensor_affine_backward<xq::scalar_policy>(dy, x, s, zp, qmin,
                                                                                                 qmax, gf);
      CHECK(golden::bit_difference(r.dx, g.dx) == "");
      CHECK(golden::to_bits(r.dscale) == golden::to_bits(g.dscale));
      if (a.at("threads").get<int>() > 1) {  // does torch's thread count show in the sums here?
        const reduction_threads_scope one(1);
        const auto g1 = torch::fake_quantize_learnable_per_tensor_affine_backward(dy, x, s, zp, qmin, qmax, gf);
        threads_matter += golden::to_bits(g1.dscale) != golden::to_bits(g.dscale) ||
                          golden::to_bits(g1.dzero_point) != golden::to_bits(g.dzero_point);
      }
      ++per_tensor;
    } else if (op == "torch.fake_quantize_learnable_per_channel_affine_backward") {
      const auto shape = a.at("shape").get<std::vector<std::size_t>>();
      const tensor x = hashed(shape, a.at("x_seed")), dy = hashed(shape, a.at("dy_seed"));
      const xq::vector s = golden::vector(t.at("scale")), zp = golden::vector(t.at("zero_point"));
      const float gf = golden::scalar(t.at("grad_factor"));
      const long axis = a.at("axis");
      const auto g = torch::fake_quantize_learnable_per_channel_affine_backward(dy, x, s, zp, axis, qmin, qmax, gf);
      CHECK(golden::bit_difference(g.dscale, golden::vector(want.at("dscale"))) == "");
      CHECK(golden::bit_difference(g.dzero_point, golden::vector(want.at("dzero_point"))) == "");
      const auto r = torch::fake_quantize_learnable_per_channel_affine_backward<xq::scalar_policy>(dy, x, s, zp, axis,
                                                                                                  qmin, qmax, gf);
      CHECK(golden::bit_difference(r.dx, g.dx) == "");
      CHECK(golden::bit_difference(r.dscale, g.dscale) == "");
      ++per_channel;
    }
  }
  CHECK(per_tensor == cases_of(data, "torch.fake_quantize_learnable_per_tensor_affine_backward"));
  CHECK(per_tensor >= 15);
  CHECK(threads_matter >= 4);  // 40000, 100003 and 10^6 elements with 2 and 4 threads
  CHECK(per_channel == cases_of(data, "torch.fake_quantize_learnable_per_channel_affine_backward"));
  CHECK(per_channel >= 20);
  CHECK(torch::cpu::reduction_threads() == 1);
  CHECK_THROWS_WITH(torch::cpu::set_reduction_threads(0), Catch::Contains("threads >= 1"));
}
