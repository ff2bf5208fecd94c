#pragma once
// Checks every engine test makes of its model: the fast kernels against the reference
// kernels, under each instruction set this CPU has.

#include <xquant/deploy/integer_model.hpp>
#include <xquant/kernels/cpu_features.hpp>

#include <catch2/catch.hpp>

namespace deploy_test {

/// Calls f(isa) with the kernels capped at each instruction set this CPU runs, from the
/// portable loop up (kernels/cpu_features.hpp): every kernel family takes its best kernel
/// at or below the cap, so each call runs a different integer kernel where one exists.
template <class F>
void on_every_isa(F&& f) {
  using xq::kernels::cpu_isa;
  for (int i = 0; i <= int(cpu_isa::avx512_vpopcntdq); ++i) {
    const auto isa = cpu_isa(i);
    if (!xq::kernels::cpu().has(isa)) continue;
    xq::kernels::isa_cap_scope cap(isa);
    INFO("kernels capped at " << xq::kernels::isa_name(isa));
    f(isa);
  }
}

/// Whether the engine's output bits with its fast kernels, under every instruction set this
/// CPU has, are the reference kernels' (the plain loops).
inline bool fast_kernels_match_reference(const xq::deploy::integer_model& engine, const xq::tensor& inputs) {
  xq::deploy::run_options ref;
  ref.reference_kernels = true;
  const xq::tensor expected = engine.run(inputs, ref);
  bool all = true;
  on_every_isa([&](xq::kernels::cpu_isa) {
    const bool same = engine.run(inputs) == expected;
    CHECK(same);
    all = all && same;
  });
  return all;
}

}  // namespace deploy_test
