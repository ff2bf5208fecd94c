// The post-training calibrators against the peers' own code (tests/data/golden/
// calibrators.json from tools/gen_golden_calibrators.py: ModelOpt's NVIDIA calibrators, torch
// 2.15's HistogramObserver, ONNX Runtime 1.32's PercentileCalibrater collector), bit for bit:
// every collected state (counts, edges, range) after every batch, every search's
// per-candidate values, and every calibrated range. Large arrays are stored as the FNV-1a
// hash of their bit patterns (the generator's --full stores them whole; both are read here).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <xquant/numerics/histogram_calibrators.hpp>
#include <xquant/numerics/numpy_histogram.hpp>
#include <xquant/numerics/torch_cpu_kernels.hpp>

#include "../golden.hpp"

namespace {

using json = golden::json;

std::vector<float> floats(const json& t) {
  std::vector<float> out;
  for (const auto& b : t.at("f32")) out.push_back(golden::from_bits(b.get<std::uint32_t>()));
  return out;
}

std::vector<double> doubles(const json& t) {
  std::vector<double> out;
  for (const auto& b : t.at("f64")) {
    const std::uint64_t bits = b.get<std::uint64_t>();
    double d;
    std::memcpy(&d, &bits, 8);
    out.push_back(d);
  }
  return out;
}

std::vector<std::int64_t> ints(const json& t) { return t.at("i64").get<std::vector<std::int64_t>>(); }

float scalar(const json& t) { return floats(t).at(0); }

std::uint64_t bits64(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

/// Empty when equal bit for bit; otherwise the count and the first difference.
template <class T>
std::string difference(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  std::size_t count = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    bool same;
    if constexpr (std::is_same_v<T, float>)
      same = golden::to_bits(got[i]) == golden::to_bits(want[i]);
    else if constexpr (std::is_same_v<T, double>)
      same = bits64(got[i]) == bits64(want[i]) || (std::isnan(got[i]) && std::isnan(want[i]));
    else
      same = got[i] == want[i];
    if (!same && count++ == 0) first = i;
  }
  if (count == 0) return {};
  return xq::detail::concat(count, " of ", got.size(), " differ; first at ", first, ": got ", got[first], " want ",
                            want[first]);
}

std::uint64_t fnv1a64(const void* data, std::size_t bytes) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

/// Empty when `got` is the golden array `want` bit for bit: whole ("f32", "i64", "f64") or
/// hashed ("fnv1a64_f32", ...); otherwise what differs.
template <class T>
std::string golden_difference(const std::vector<T>& got, const json& want) {
  constexpr const char* kind = std::is_same_v<T, float> ? "f32" : std::is_same_v<T, double> ? "f64" : "i64";
  if (want.contains(kind)) {
    if constexpr (std::is_same_v<T, float>) return difference(got, floats(want));
    else if constexpr (std::is_same_v<T, double>) return difference(got, doubles(want));
    else return difference(got, ints(want));
  }
  const std::size_t size = want.at("shape").at(0).get<std::size_t>();
  if (got.size() != size) return xq::detail::concat("size ", got.size(), " vs ", size);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(got.data(), got.size() * sizeof(T))));
  const std::string expected = want.at(std::string("fnv1a64_") + kind).get<std::string>();
  if (expected == hex) return {};
  return "hash " + std::string(hex) + " vs " + expected + " (rerun the generator with --full to see the values)";
}

std::string bits_difference(float got, float want) {
  if (golden::to_bits(got) == golden::to_bits(want)) return {};
  return xq::detail::concat("got ", got, " want ", want);
}

const json& document() {
  static const json doc = golden::load("calibrators");
  return doc;
}

const json& cases() { return document().at("cases"); }

/// The batches a case collects, by its "input" name.
std::vector<std::vector<float>> inputs_of(const json& c) {
  std::vector<std::vector<float>> out;
  for (const auto& t : document().at("inputs").at(c.at("input").get<std::string>())) out.push_back(floats(t));
  return out;
}

std::vector<const json*> cases_of(const std::string& op) {
  std::vector<const json*> out;
  for (const auto& c : cases())
    if (c.at("op") == op) out.push_back(&c);
  return out;
}

xq::nvidia::histogram_options nvidia_options(const json& c) {
  const json& a = c.at("attrs");
  xq::nvidia::histogram_options o;
  o.num_bits = a.at("num_bits").get<int>();
  o.is_unsigned = a.at("unsigned").get<bool>();
  o.skip_zeros = a.at("skip_zeros").get<bool>();
  o.num_bins = a.at("num_bins").get<std::int64_t>();
  return o;
}

xq::nvidia::amax_method method_of(const std::string& m) {
  if (m == "entropy") return xq::nvidia::amax_method::entropy;
  if (m == "mse") return xq::nvidia::amax_method::mse;
  return xq::nvidia::amax_method::percentile;
}

xq::nvidia::amax_options amax_options_of(const json& attrs) {
  xq::nvidia::amax_options o;
  if (attrs.contains("stride")) o.stride = attrs.at("stride").get<std::int64_t>();
  if (attrs.contains("start_bin")) o.start_bin = attrs.at("start_bin").get<std::int64_t>();
  if (attrs.contains("percentile")) o.percentile = attrs.at("percentile").get<double>();
  return o;
}

xq::torch::histogram_observer_options torch_options(const json& c) {
  const json& a = c.at("attrs");
  xq::torch::histogram_observer_options o;
  o.bins = a.at("bins").get<std::int64_t>();
  o.type = a.at("dtype") == "qint8" ? xq::torch::dtype::qint8 : xq::torch::dtype::quint8;
  o.scheme = a.at("qscheme") == "per_tensor_symmetric" ? xq::torch::qscheme::per_tensor_symmetric
                                                       : xq::torch::qscheme::per_tensor_affine;
  o.reduce_range = a.at("reduce_range").get<bool>();
  return o;
}

xq::ort::percentile_options ort_options(const json& c) {
  xq::ort::percentile_options o;
  o.symmetric = c.at("attrs").at("symmetric").get<bool>();
  o.num_bins = c.at("attrs").at("num_bins").get<std::int64_t>();
  o.percentile = doubles(c.at("tensors").at("percentile")).at(0);
  return o;
}

}  // namespace

TEST_CASE("nvidia histogram calibrator: collection and every amax method match ModelOpt bit for bit",
          "[calibrator][nvidia][golden]") {
  const auto all = cases_of("nvidia.histogram_calibrator");
  REQUIRE(all.size() >= 15);
  std::size_t results = 0;
  for (const json* c : all) {
    const std::string name = c->at("name");
    xq::nvidia::histogram_calibrator calib(nvidia_options(*c));
    const auto batches = inputs_of(*c);
    for (std::size_t step = 0; step < batches.size(); ++step) {
      INFO(name << " step " << step);
      const json& t = c->at("steps").at(step).at("tensors");
      calib.collect(batches[step].data(), batches[step].size());
      CHECK(golden_difference(calib.histogram(), t.at("hist")) == "");
      CHECK(golden_difference(calib.bin_edges(), t.at("edges")) == "");
    }
    for (const auto& r : c->at("results")) {
      const std::string method = r.at("method");
      INFO(name << " " << method << " " << r.at("attrs").dump());
      const xq::nvidia::amax_options o = amax_options_of(r.at("attrs"));
      const float want = scalar(r.at("tensors").at("amax"));
      CHECK(bits_difference(calib.compute_amax(method_of(method), o), want) == "");
      const auto& opts = calib.options();
      if (method == "entropy") {
        std::vector<double> divergences;
        xq::nvidia::compute_amax_entropy(calib.histogram(), calib.bin_edges(), opts.num_bits, opts.is_unsigned,
                                         o.stride, o.start_bin, &divergences);
        CHECK(golden_difference(divergences, r.at("tensors").at("divergences")) == "");
      } else if (method == "mse") {
        std::vector<float> mses;
        xq::nvidia::compute_amax_mse(calib.histogram(), calib.bin_edges(), opts.num_bits, opts.is_unsigned,
                                     o.stride, o.start_bin, &mses);
        CHECK(golden_difference(mses, r.at("tensors").at("mses")) == "");
      }
      ++results;
    }
  }
  CHECK(results >= 50);
}

TEST_CASE("nvidia max calibrator: the running max |x| matches ModelOpt", "[calibrator][nvidia][golden]") {
  const auto all = cases_of("nvidia.max_calibrator");
  REQUIRE(all.size() >= 4);
  for (const json* c : all) {
    xq::nvidia::max_calibrator calib(c->at("attrs").at("unsigned").get<bool>());
    const auto batches = inputs_of(*c);
    for (std::size_t step = 0; step < batches.size(); ++step) {
      INFO(c->at("name").get<std::string>() << " step " << step);
      calib.collect(batches[step].data(), batches[step].size());
      CHECK(bits_difference(calib.compute_amax(), scalar(c->at("steps").at(step).at("tensors").at("amax"))) == "");
    }
  }
}

TEST_CASE("torch histogram observer: histograms, searched range and qparams match torch 2.15 bit for bit",
          "[calibrator][torch][golden]") {
  const auto all = cases_of("torch.histogram_observer");
  REQUIRE(all.size() >= 15);
  for (const json* c : all) {
    const std::string name = c->at("name");
    xq::torch::histogram_observer obs(torch_options(*c));
    const auto batches = inputs_of(*c);
    for (std::size_t step = 0; step < batches.size(); ++step) {
      INFO(name << " step " << step);
      const json& t = c->at("steps").at(step).at("tensors");
      obs.collect(batches[step].data(), batches[step].size());
      CHECK(golden_difference(obs.histogram(), t.at("histogram")) == "");
      CHECK(bits_difference(obs.min_val(), scalar(t.at("min_val"))) == "");
      CHECK(bits_difference(obs.max_val(), scalar(t.at("max_val"))) == "");
    }
    INFO(name);
    const json& r = c->at("results").at(0).at("tensors");
    const auto range = obs.non_linear_param_search();
    CHECK(bits_difference(range.first, scalar(r.at("new_min"))) == "");
    CHECK(bits_difference(range.second, scalar(r.at("new_max"))) == "");
    const xq::torch::qparams q = obs.calculate_qparams();
    CHECK(bits_difference(q.scale(0), scalar(r.at("scale"))) == "");
    CHECK(q.zero_point(0) == ints(r.at("zero_point")).at(0));
  }
}

TEST_CASE("ort percentile calibrator: histograms and percentile range match onnxruntime bit for bit",
          "[calibrator][ort][golden]") {
  const auto all = cases_of("ort.percentile_calibrator");
  REQUIRE(all.size() >= 20);
  for (const json* c : all) {
    const std::string name = c->at("name");
    xq::ort::percentile_calibrator calib(ort_options(*c));
    const auto batches = inputs_of(*c);
    for (std::size_t step = 0; step < batches.size(); ++step) {
      INFO(name << " step " << step);
      const json& t = c->at("steps").at(step).at("tensors");
      calib.collect(batches[step].data(), batches[step].size());
      CHECK(golden_difference(calib.histogram(), t.at("hist")) == "");
      CHECK(golden_difference(calib.bin_edges(), t.at("edges")) == "");
      CHECK(bits_difference(calib.min(), scalar(t.at("min"))) == "");
      CHECK(bits_difference(calib.max(), scalar(t.at("max"))) == "");
      if (t.contains("threshold")) CHECK(bits_difference(calib.threshold(), scalar(t.at("threshold"))) == "");
    }
    INFO(name);
    const json& r = c->at("results").at(0).at("tensors");
    const auto range = calib.compute_range();
    CHECK(bits_difference(range.first, scalar(r.at("min"))) == "");
    if (scalar(r.at("min")) > scalar(r.at("max"))) {
      // The peer's min above max (both percentiles in the bin of a constant input): the
      // deliberate difference of ort_percentile_calibrator.hpp, that bin's right edge
      // clamped to the data's maximum.
      CHECK(range.second == std::min(calib.bin_edges().back(), calib.max()));
      CHECK(range.first <= range.second);
    } else {
      CHECK(bits_difference(range.second, scalar(r.at("max"))) == "");
    }
  }
}

TEST_CASE("calibrators: a restored state continues exactly like the original", "[calibrator][state]") {
  // Three batches, the last two widening the range; the state is saved after two.
  std::vector<std::vector<float>> batches(3);
  for (std::size_t b = 0; b < 3; ++b)
    for (int i = 0; i < 700; ++i)
      batches[b].push_back((1.0f + 0.4f * float(b)) * std::sin(0.37f * float(i) + float(b)) * (i % 7 == 0 ? 2.0f : 1.0f) +
                           (b == 2 ? 0.25f : 0.0f));

  SECTION("nvidia histogram") {
    xq::nvidia::histogram_calibrator a, b;
    a.collect(batches[0].data(), 700);
    a.collect(batches[1].data(), 700);
    b.restore(a.histogram(), a.bin_edges());
    a.collect(batches[2].data(), 700);
    b.collect(batches[2].data(), 700);
    CHECK(difference(a.histogram(), b.histogram()) == "");
    CHECK(difference(a.bin_edges(), b.bin_edges()) == "");
    for (auto m : {xq::nvidia::amax_method::entropy, xq::nvidia::amax_method::mse, xq::nvidia::amax_method::percentile})
      CHECK(bits_difference(a.compute_amax(m), b.compute_amax(m)) == "");
    b.reset();
    CHECK(b.empty());
    CHECK_THROWS_AS(b.compute_amax(xq::nvidia::amax_method::percentile), xq::argument_error);
  }
  SECTION("nvidia max") {
    xq::nvidia::max_calibrator a, b;
    a.collect(batches[0].data(), 700);
    b.restore(a.amax());
    a.collect(batches[1].data(), 700);
    b.collect(batches[1].data(), 700);
    CHECK(bits_difference(a.compute_amax(), b.compute_amax()) == "");
  }
  SECTION("torch histogram observer") {
    xq::torch::histogram_observer a, b;
    a.collect(batches[0].data(), 700);
    a.collect(batches[1].data(), 700);
    b.restore(a.histogram(), a.min_val(), a.max_val());
    a.collect(batches[2].data(), 700);
    b.collect(batches[2].data(), 700);
    CHECK(difference(a.histogram(), b.histogram()) == "");
    const auto qa = a.calculate_qparams(), qb = b.calculate_qparams();
    CHECK(bits_difference(qa.scale(0), qb.scale(0)) == "");
    CHECK(qa.zero_point(0) == qb.zero_point(0));
    b.reset();
    CHECK(b.empty());
  }
  SECTION("ort percentile, both flavours") {
    for (bool symmetric : {false, true}) {
      xq::ort::percentile_options o;
      o.symmetric = symmetric;
      xq::ort::percentile_calibrator a(o), b(o);
      a.collect(batches[0].data(), 700);
      a.collect(batches[1].data(), 700);
      b.restore(a.histogram(), a.bin_edges(), a.min(), a.max(), a.threshold());
      a.collect(batches[2].data(), 700);
      b.collect(batches[2].data(), 700);
      CHECK(difference(a.histogram(), b.histogram()) == "");
      CHECK(bits_difference(a.compute_range().first, b.compute_range().first) == "");
      CHECK(bits_difference(a.compute_range().second, b.compute_range().second) == "");
    }
  }
  SECTION("the golden cases' states restore into fresh calibrators") {
    for (const json* c : cases_of("nvidia.histogram_calibrator")) {
      xq::nvidia::histogram_calibrator collected(nvidia_options(*c)), calib(nvidia_options(*c));
      for (const auto& x : inputs_of(*c)) collected.collect(x.data(), x.size());
      calib.restore(collected.histogram(), collected.bin_edges());
      const json& r = c->at("results").at(0);
      INFO(c->at("name").get<std::string>());
      CHECK(bits_difference(calib.compute_amax(method_of(r.at("method")), amax_options_of(r.at("attrs"))),
                            scalar(r.at("tensors").at("amax"))) == "");
    }
    for (const json* c : cases_of("torch.histogram_observer")) {
      xq::torch::histogram_observer collected(torch_options(*c)), obs(torch_options(*c));
      for (const auto& x : inputs_of(*c)) collected.collect(x.data(), x.size());
      obs.restore(collected.histogram(), collected.min_val(), collected.max_val());
      INFO(c->at("name").get<std::string>());
      CHECK(bits_difference(obs.calculate_qparams().scale(0), scalar(c->at("results").at(0).at("tensors").at("scale"))) == "");
    }
  }
}

TEST_CASE("calibrators: bad input is refused with what was expected and what was given",
          "[calibrator][errors]") {
  const std::vector<float> finite = {0.5f, -1.0f, 2.0f};
  const std::vector<float> with_nan = {0.5f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  const std::vector<float> with_inf = {0.5f, -std::numeric_limits<float>::infinity()};

  SECTION("nvidia") {
    xq::nvidia::histogram_calibrator calib;
    CHECK_THROWS_WITH(calib.compute_amax(xq::nvidia::amax_method::entropy),
                      Catch::Contains("a collected histogram") && Catch::Contains("no data collected"));
    CHECK_THROWS_WITH(calib.collect(with_nan.data(), with_nan.size()),
                      Catch::Contains("finite values") && Catch::Contains("nan at flat index 1"));
    CHECK_THROWS_WITH(calib.collect(with_inf.data(), with_inf.size()),
                      Catch::Contains("finite values") && Catch::Contains("-inf at flat index 1"));
    CHECK(calib.empty());  // nothing recorded
    CHECK_THROWS_WITH(calib.collect(finite.data(), 0), Catch::Contains("a non-empty batch"));
    calib.collect(finite.data(), finite.size());
    xq::nvidia::amax_options o;
    o.percentile = 100.5;
    CHECK_THROWS_WITH(calib.compute_amax(xq::nvidia::amax_method::percentile, o),
                      Catch::Contains("a percentile in [0, 100]") && Catch::Contains("100.5"));
    o.percentile = std::nan("");
    CHECK_THROWS_AS(calib.compute_amax(xq::nvidia::amax_method::percentile, o), xq::argument_error);
    o = {};
    o.start_bin = 3000;
    CHECK_THROWS_WITH(calib.compute_amax(xq::nvidia::amax_method::entropy, o),
                      Catch::Contains("start_bin <= the number of bins (2048)") && Catch::Contains("start_bin = 3000"));
    o = {};
    o.stride = 0;
    CHECK_THROWS_WITH(calib.compute_amax(xq::nvidia::amax_method::mse, o), Catch::Contains("stride >= 1"));
    xq::nvidia::histogram_options bad;
    bad.num_bins = 0;
    CHECK_THROWS_WITH(xq::nvidia::histogram_calibrator(bad),
                      Catch::Contains("num_bins >= 1") && Catch::Contains("num_bins = 0"));
    bad = {};
    bad.num_bits = 0;
    CHECK_THROWS_WITH(xq::nvidia::histogram_calibrator(bad), Catch::Contains("num_bits in 1..16"));
    bad = {};
    bad.skip_zeros = true;
    xq::nvidia::histogram_calibrator skipping(bad);
    const std::vector<float> zeros = {0.0f, -0.0f};
    CHECK_THROWS_WITH(skipping.collect(zeros.data(), zeros.size()), Catch::Contains("only zeros"));
    CHECK_THROWS_WITH(calib.restore({1.0f, 2.0f}, {0.0f, 1.0f}),
                      Catch::Contains("at least one edge more than counts") && Catch::Contains("2 counts and 2 edges"));
    xq::nvidia::max_calibrator max;
    CHECK_THROWS_WITH(max.compute_amax(), Catch::Contains("at least one collected batch"));
    CHECK_THROWS_AS(max.collect(with_nan.data(), with_nan.size()), xq::argument_error);
    CHECK_FALSE(max.amax().has_value());
    // An all-zero first batch has zero-width bins: a wider batch cannot grow them (the peer
    // fails converting inf to int).
    xq::nvidia::histogram_calibrator zero_first;
    zero_first.collect(zeros.data(), zeros.size());
    CHECK_THROWS_WITH(zero_first.collect(finite.data(), finite.size()), Catch::Contains("non-zero bin width"));
  }
  SECTION("torch") {
    xq::torch::histogram_observer obs;
    CHECK_THROWS_WITH(obs.calculate_qparams(), Catch::Contains("at least one observed batch"));
    CHECK_THROWS_WITH(obs.collect(with_inf.data(), with_inf.size()),
                      Catch::Contains("finite values") && Catch::Contains("-inf at flat index 1"));
    CHECK_THROWS_AS(obs.collect(with_nan.data(), with_nan.size()), xq::argument_error);
    CHECK(obs.empty());
    obs.collect(finite.data(), 0);  // ignored, as in the peer
    CHECK(obs.empty());
    xq::torch::histogram_observer_options o;
    o.bins = 0;
    CHECK_THROWS_WITH(xq::torch::histogram_observer(o), Catch::Contains("bins >= 1") && Catch::Contains("bins = 0"));
    o = {};
    o.scheme = xq::torch::qscheme::per_channel_affine;
    CHECK_THROWS_WITH(xq::torch::histogram_observer(o), Catch::Contains("per tensor"));
    o = {};
    o.scheme = xq::torch::qscheme::per_tensor_symmetric;
    o.reduce_range = true;
    CHECK_THROWS_AS(xq::torch::histogram_observer(o), xq::argument_error);
    CHECK_THROWS_WITH(obs.restore({1.0f}, 0.0f, 1.0f), Catch::Contains("2048 counts") && Catch::Contains("1 counts"));
  }
  SECTION("ort") {
    xq::ort::percentile_calibrator calib;
    CHECK_THROWS_WITH(calib.compute_range(), Catch::Contains("run collect first"));
    CHECK_THROWS_AS(calib.collect(with_nan.data(), with_nan.size()), xq::argument_error);
    CHECK_THROWS_AS(calib.collect(with_inf.data(), with_inf.size()), xq::argument_error);
    CHECK_THROWS_WITH(calib.collect(finite.data(), 0), Catch::Contains("a non-empty batch"));
    CHECK(calib.empty());
    xq::ort::percentile_options o;
    o.percentile = -1;
    CHECK_THROWS_WITH(xq::ort::percentile_calibrator(o),
                      Catch::Contains("a percentile in [0, 100]") && Catch::Contains("-1"));
    o = {};
    o.num_bins = 0;
    CHECK_THROWS_WITH(xq::ort::percentile_calibrator(o), Catch::Contains("num_bins >= 1"));
  }
}

TEST_CASE("torch and numpy helpers: edge cases of the reproduced kernels", "[calibrator][kernels]") {
  // torch.histc widens an empty range by one on each side; the top edge belongs to the last bin.
  const std::vector<float> c = {0.5f, 0.5f};
  const std::vector<float> h = xq::torch::cpu::histc(c.data(), 2, 4, 0.5, 0.5);
  CHECK(h == std::vector<float>{0, 0, 2, 0});
  const std::vector<float> top = {1.0f};
  CHECK(xq::torch::cpu::histc(top.data(), 1, 4, 0.0, 1.0) == std::vector<float>{0, 0, 0, 1});
  CHECK_THROWS_WITH(xq::torch::cpu::histc(top.data(), 1, 4, 0.0, std::numeric_limits<double>::infinity()),
                    Catch::Contains("a finite range"));
  // torch.sum below and above one AVX2 vector, exact on small integers.
  std::vector<float> ones(37, 1.0f);
  CHECK(xq::torch::cpu::sum(ones.data(), 5) == 5.0f);
  CHECK(xq::torch::cpu::sum(ones.data(), 37) == 37.0f);
  CHECK(xq::torch::cpu::linspace(0.0f, 1.0f, 5) == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1});
  CHECK(xq::numpy::linspace(-1.0f, 1.0f, 3) == std::vector<float>{-1, 0, 1});
  const std::vector<double> d = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(xq::numpy::pairwise_sum(d.data(), d.size()) == 55.0);
  const std::vector<float> e = {0.0f, 1.0f, 2.0f};
  const std::vector<float> v = {-1.0f, 0.0f, 0.5f, 1.0f, 2.0f, 3.0f};
  CHECK(xq::numpy::histogram_edges(v.data(), v.size(), e) == std::vector<std::int64_t>{2, 2});
}
