// The engine's kernels built for a generic x86-64 (what a user ships: no -march=native, so
// no AVX2 at compile time), run on this CPU: each kernel family must find this CPU's best
// kernel at run time (kernels/cpu_features.hpp, kernels/isa_region.hpp) and every kernel
// must still equal the plain loops.

#if defined(__AVX2__) || defined(__AVX512F__)
#error "generic_x86_64.cpp must be compiled for a generic x86-64 (tests/CMakeLists.txt)"
#endif

#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <xquant/deploy/binary_gemm.hpp>
#include <xquant/deploy/engine_kernels.hpp>
#include <xquant/deploy/integer_gemm.hpp>
#include <xquant/kernels/cpu_features.hpp>

#include "../deploy/engine_checks.hpp"

namespace {

using xq::kernels::cpu_isa;

/// The integer kernel this CPU should get: the best it runs.
cpu_isa best_integer_isa() {
  const auto& cpu = xq::kernels::cpu();
  for (cpu_isa isa : {cpu_isa::avx512_vnni, cpu_isa::avx_vnni, cpu_isa::avx512bw, cpu_isa::avx2})
    if (cpu.has(isa)) return isa;
  return cpu_isa::portable;
}

std::vector<std::int16_t> random_values(std::size_t n, int lo, int hi, std::mt19937& rng) {
  std::vector<std::int16_t> v(n);
  for (auto& x : v) x = std::int16_t(lo + int(rng() % unsigned(hi - lo + 1)));
  return v;
}

}  // namespace

TEST_CASE("a generic x86-64 build runs this CPU's best integer kernel, equal to the reference", "[dispatch]") {
  INFO("CPU: " << xq::kernels::cpu().describe());
  const cpu_isa best = best_integer_isa();
  INFO("best integer kernel here: " << xq::kernels::isa_name(best));
  CHECK(xq::deploy::integer_product_isa(true) == best);
  // The int16 form where the weights do not fit int8 (or the CPU has no VNNI).
  const cpu_isa best16 = xq::kernels::cpu().has(cpu_isa::avx512bw) ? cpu_isa::avx512bw
                         : xq::kernels::cpu().has(cpu_isa::avx2)   ? cpu_isa::avx2
                                                                   : cpu_isa::portable;
  CHECK(xq::deploy::integer_product_isa(false) == best16);

  std::mt19937 rng(5);
  const std::size_t m = 70, n = 40, k = 147;
  const auto a = random_values(m * k, -128, 127, rng), b = random_values(k * n, -128, 127, rng);
  std::vector<std::int32_t> bias(n, 7), ref(m * n), fast(m * n);
  xq::deploy::gemm_s16_reference(m, n, k, a.data(), k, b.data(), bias.data(), ref.data());
  const xq::deploy::packed_s16_matrix packed(b.data(), k, n);
  deploy_test::on_every_isa([&](cpu_isa) {
    std::fill(fast.begin(), fast.end(), -1);
    xq::deploy::gemm_s16(m, a.data(), k, packed, bias.data(), fast.data());
    CHECK(ref == fast);
  });
}

TEST_CASE("a generic x86-64 build runs this CPU's best binary kernel, equal to XNOR-popcount", "[dispatch]") {
  const auto& cpu = xq::kernels::cpu();
  const cpu_isa best = cpu.has(cpu_isa::avx512_vpopcntdq) ? cpu_isa::avx512_vpopcntdq
                       : cpu.has(cpu_isa::avx2)            ? cpu_isa::avx2
                                                           : cpu_isa::portable;
  INFO("CPU: " << cpu.describe());
  CHECK(xq::deploy::binary_gemm_isa() == best);
  std::mt19937_64 rng(9);
  const std::size_t m = 37, n = 21, words = 35;
  std::vector<std::uint64_t> a(m * words), b(n * words);
  for (auto& v : a) v = rng();
  for (auto& v : b) v = rng();
  const auto k = std::int32_t(64 * words - 5);
  std::vector<std::int32_t> ref(m * n), fast(m * n);
  xq::deploy::binary_gemm_reference(m, n, words, k, a.data(), b.data(), ref.data());
  deploy_test::on_every_isa([&](cpu_isa) {
    std::fill(fast.begin(), fast.end(), -1);
    xq::deploy::binary_gemm(m, n, words, k, a.data(), b.data(), fast.data());
    CHECK(ref == fast);
  });
}
