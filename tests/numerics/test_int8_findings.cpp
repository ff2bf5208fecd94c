// Three int8 findings of issue 35, each against the peer's own vectors
// (tests/data/golden/int8_findings.json, tools/gen_golden_int8_findings.py):
//  - PyTorch's per-channel fake quantization with int32 zero points beyond 2^24;
//  - torch.aminmax (MinMaxObserver) on batches holding both -0.0 and +0.0;
//  - onnxruntime's symmetric percentile collector growing its edges with numpy 2's
//    float64 np.arange.
// Each failed before its fix: the per-channel op returned 0 for the example, the
// observer kept the first zero it met, and the collector binned against float32 edges
// (the generator keeps only cases where that changes a count).

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <xquant/numerics/ort_percentile_calibrator.hpp>
#include <xquant/numerics/torch_cpu_kernels.hpp>
#include <xquant/numerics/torch_fake_quant.hpp>
#include <xquant/numerics/torch_observers.hpp>

#include "../golden.hpp"

namespace {

const golden::json& findings() {
  static const golden::json j = golden::load("int8_findings");
  return j;
}

std::vector<const golden::json*> cases_of(const std::string& op) {
  std::vector<const golden::json*> out;
  for (const auto& c : findings().at("cases"))
    if (c.at("op") == op) out.push_back(&c);
  return out;
}

template <class Policy>
void check_wide_per_channel(const golden::json& c) {
  const auto& t = c.at("tensors");
  const xq::tensor x = golden::tensor(t.at("x"));
  const xq::vector s = golden::vector(t.at("scale"));
  const xq::torch::index_vector zp = golden::ints(t.at("zero_point"));
  const auto& a = c.at("attrs");
  const auto r = xq::torch::fake_quantize_per_channel_affine_and_mask<Policy>(
      x, s, zp, a.at("axis").get<long>(), a.at("quant_min").get<std::int64_t>(), a.at("quant_max").get<std::int64_t>());
  const xq::tensor want = golden::tensor(t.at("y"));
  INFO(c.at("name").get<std::string>());
  CHECK(golden::bit_difference(r.y, want).empty());
  const xq::torch::index_vector mask = golden::ints(t.at("mask"));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < mask.size(); ++i) wrong += (mask(i) != 0) != r.mask.data()[i];
  CHECK(wrong == 0);
  // The gradient is dy * mask.
  xq::tensor dy = xq::tensor::from_shape(x.shape());
  for (std::size_t i = 0; i < dy.size(); ++i) dy.data()[i] = float(i % 7) - 3.0f;
  const xq::tensor dx = xq::torch::fake_quantize_per_channel_affine_gradient<Policy>(
      dy, x, s, zp, a.at("axis").get<long>(), a.at("quant_min").get<std::int64_t>(),
      a.at("quant_max").get<std::int64_t>());
  for (std::size_t i = 0; i < dx.size(); ++i)
    if (golden::to_bits(dx.data()[i]) != golden::to_bits(dy.data()[i] * (mask(i) != 0 ? 1.0f : 0.0f))) ++wrong;
  CHECK(wrong == 0);
}

xq::torch::cpu_capability capability_named(const std::string& s) {
  if (s == "default") return xq::torch::cpu_capability::scalar;
  if (s == "avx2") return xq::torch::cpu_capability::avx2;
  return xq::torch::cpu_capability::avx512;
}

}  // namespace

TEST_CASE("torch per-channel fake quant keeps int32 zero points beyond 2^24", "[int8_findings][torch_fake_quant]") {
  const auto cases = cases_of("torch.fake_quantize_per_channel_affine");
  REQUIRE(cases.size() == 2);
  for (const auto* c : cases) {
    check_wide_per_channel<xq::scalar_policy>(*c);
    check_wide_per_channel<xq::simd_policy<>>(*c);
  }
  // The example, spelled out: torch gives -37 steps (float(zp) is 37 below zp).
  const xq::tensor x = xt::xtensor<float, 2>{{0.4404f}};
  const xq::tensor y = xq::torch::fake_quantize_per_channel_affine(
      x, xq::vector{0.8808f}, xq::torch::index_vector{-2124707931}, 1, -(std::int64_t(1) << 31),
      (std::int64_t(1) << 31) - 1);
  CHECK(y(0, 0) == float(-37.0 * double(0.8808f)));
}

TEST_CASE("torch.aminmax keeps the zero its reduction order meets, per CPU build", "[int8_findings][observer]") {
  const auto cases = cases_of("torch.aminmax");
  REQUIRE(cases.size() == 3);
  const golden::json* with_batches = nullptr;
  for (const auto* c : cases)
    if (c->at("name") == "signed_zeros_default") with_batches = c;
  REQUIRE(with_batches != nullptr);
  std::vector<xq::tensor> batches;
  for (std::size_t i = 0; with_batches->at("tensors").contains("batch_" + std::to_string(i)); ++i)
    batches.push_back(golden::tensor(with_batches->at("tensors").at("batch_" + std::to_string(i))));
  REQUIRE(batches.size() > 100);
  for (const auto* c : cases) {
    const auto cap = capability_named(c->at("attrs").at("capability").get<std::string>());
    INFO(c->at("name").get<std::string>());
    const auto& results = c->at("results");
    REQUIRE(results.size() == batches.size());
    std::size_t wrong = 0;
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const auto [lo, hi] = xq::torch::cpu::aminmax(batches[b].data(), batches[b].size(),
                                                    xq::torch::aminmax_lanes(cap), cap != xq::torch::cpu_capability::scalar);
      wrong += golden::to_bits(lo) != results[b][0].get<std::uint32_t>();
      wrong += golden::to_bits(hi) != results[b][1].get<std::uint32_t>();
    }
    CHECK(wrong == 0);
    // MinMaxObserver: the stored min_val / max_val after each batch.
    xq::torch::observer_options o;
    o.capability = cap;
    xq::torch::observer obs(xq::torch::observer_kind::min_max, o);
    const auto& steps = c->at("observer_steps");
    for (std::size_t b = 0; b < steps.size(); ++b) {
      obs(batches[b]);
      INFO("observer step " << b);
      CHECK(golden::to_bits(obs.min_val()(0)) == steps[b][0].get<std::uint32_t>());
      CHECK(golden::to_bits(obs.max_val()(0)) == steps[b][1].get<std::uint32_t>());
    }
  }
}

TEST_CASE("onnxruntime's symmetric percentile collector grows its edges in float64", "[int8_findings][calibrator]") {
  const auto cases = cases_of("ort.percentile_calibrator");
  REQUIRE(cases.size() >= 10);
  for (const auto* c : cases) {
    INFO(c->at("name").get<std::string>());
    const auto& t = c->at("tensors");
    const auto& a = c->at("attrs");
    CHECK(a.at("float32_counts_differ").get<bool>());  // the case tells float32 edges apart
    xq::ort::percentile_options o;
    o.symmetric = true;
    o.num_bins = a.at("num_bins").get<std::int64_t>();
    o.percentile = a.at("percentile").get<double>();
    xq::ort::percentile_calibrator calib(o);
    calib.collect(golden::tensor(t.at("first")));
    calib.collect(golden::tensor(t.at("second")));
    const xq::torch::index_vector hist = golden::ints(t.at("hist"));
    REQUIRE(calib.histogram().size() == hist.size());
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < hist.size(); ++k) wrong += calib.histogram()[k] != hist(k);
    CHECK(wrong == 0);
    const xq::tensor edges = golden::tensor(t.at("edges"));
    REQUIRE(calib.bin_edges().size() == edges.size());
    for (std::size_t k = 0; k < edges.size(); ++k) wrong += golden::to_bits(calib.bin_edges()[k]) != golden::to_bits(edges.data()[k]);
    CHECK(wrong == 0);
    const xq::tensor range = golden::tensor(t.at("range"));
    const auto [lo, hi] = calib.compute_range();
    CHECK(golden::to_bits(lo) == golden::to_bits(range.data()[0]));
    CHECK(golden::to_bits(hi) == golden::to_bits(range.data()[1]));
  }
}
