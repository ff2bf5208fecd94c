// A format per layer under a budget (train/format_budget.hpp): the knapsack solver against
// brute force on random problems, and choose_formats on a report whose answer is plain.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <xquant/layers/dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/quantizers/model_quantizers.hpp>
#include <xquant/train/format_budget.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/transform/low_bit_schemes.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../gradient_check.hpp"

namespace {

/// The least damage over every choice that fits, by enumeration (+inf when none fits).
double brute_force(const std::vector<std::vector<xq::budget_option>>& groups, double budget) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::size_t> at(groups.size(), 0);
  for (;;) {
    double cost = 0, damage = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      cost += groups[g][at[g]].cost;
      damage += groups[g][at[g]].damage;
    }
    if (cost <= budget) best = std::min(best, damage);
    std::size_t g = 0;
    while (g < groups.size() && ++at[g] == groups[g].size()) at[g++] = 0;
    if (g == groups.size()) return best;
  }
}

xq::layer_sensitivity row(const std::string& layer, const std::string& format, std::size_t weights, double bits,
                          double hessian) {
  xq::layer_sensitivity r;
  r.layer = layer;
  r.candidate = format;
  r.weights = weights;
  r.bits_per_weight = bits;
  r.hessian_score = hessian;
  return r;
}

}  // namespace

TEST_CASE("the multiple-choice knapsack finds the least damage within the budget, as enumeration does",
          "[format_budget]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.0, 10.0), damage(-1.0, 5.0);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::vector<xq::budget_option>> groups(1 + trial % 6);
    for (auto& g : groups) {
      g.resize(1 + (trial / 6) % 4);
      for (auto& o : g) o = {std::round(cost(rng)), damage(rng)};  // integer costs: ties happen
    }
    const double budget = double(trial % 25);
    const auto got = xq::solve_multiple_choice_knapsack(groups, budget);
    const double want = brute_force(groups, budget);
    INFO("trial " << trial);
    REQUIRE(got.feasible == std::isfinite(want));
    if (!got.feasible) continue;
    CHECK(got.damage == Approx(want));
    // The choice it reports is the cost and damage it reports.
    double c = 0, d = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      c += groups[g].at(got.choice[g]).cost;
      d += groups[g][got.choice[g]].damage;
    }
    CHECK(c == Approx(got.cost));
    CHECK(c <= budget);
    CHECK(d == Approx(got.damage));
  }
  CHECK_THROWS_AS(xq::solve_multiple_choice_knapsack({{}}, 1.0), xq::argument_error);
  CHECK_THROWS_AS(xq::solve_multiple_choice_knapsack({{{-1.0, 0.0}}}, 1.0), xq::argument_error);
}

TEST_CASE("choose_formats: the cheap format where it does little damage, groups kept together", "[format_budget]") {
  // Two layers of 100 weights; 4 bits costs layer a little and layer b a lot.
  xq::sensitivity_report report;
  report.rows = {row("a", "int8", 100, 8, 0.01), row("b", "int8", 100, 8, 0.02),
                 row("a", "int4", 100, 4.5, 0.1), row("b", "int4", 100, 4.5, 5.0)};
  // Lists rows per layer in report order: a: int8, int4; b: int8, int4.
  auto eight = xq::choose_formats(report, 8.0);
  REQUIRE(eight.solution.feasible);
  CHECK(eight.layer_format == std::vector<std::pair<std::string, std::string>>{{"a", "int8"}, {"b", "int8"}});
  auto tight = xq::choose_formats(report, 6.25);  // (4.5 + 8) / 2: one layer must go to 4 bits
  REQUIRE(tight.solution.feasible);
  CHECK(tight.layer_format == std::vector<std::pair<std::string, std::string>>{{"a", "int4"}, {"b", "int8"}});
  CHECK(tight.bits_per_weight == Approx(6.25));
  CHECK(tight.predicted_damage == Approx(0.12));
  auto roomy = xq::choose_formats(report, 32.0);  // float everywhere fits and does no damage
  CHECK(roomy.layer_format == std::vector<std::pair<std::string, std::string>>{{"a", "float"}, {"b", "float"}});
  CHECK_FALSE(xq::choose_formats(report, 4.0).solution.feasible);  // below 4.5 nothing fits

  xq::format_choice_options together;
  together.groups = {{"a", "b"}};
  together.allow_float = false;
  auto grouped = xq::choose_formats(report, 6.25, together);  // one format for both: int4, whatever it costs b
  REQUIRE(grouped.solution.feasible);
  CHECK(grouped.layer_format == std::vector<std::pair<std::string, std::string>>{{"a", "int4"}, {"b", "int4"}});
  CHECK(grouped.predicted_damage == Approx(5.1));
  auto grouped_eight = xq::choose_formats(report, 8.0, together);
  REQUIRE(grouped_eight.solution.feasible);
  CHECK(grouped_eight.layer_format == std::vector<std::pair<std::string, std::string>>{{"a", "int8"}, {"b", "int8"}});
  together.groups = {{"a", "c"}};
  CHECK_THROWS_WITH(xq::choose_formats(report, 8.0, together), Catch::Contains("c: not in the report"));
}

TEST_CASE("to_spec: the chosen formats in one twin, each layer as its candidate quantizes it", "[format_budget]") {
  auto model = xq::sequential(xq::dense(32, false), xq::dense(4, false));
  xq::build(model, {1, 32});
  const xq::dataset data{xq::testing::uniform({64, 32}, -1.0f, 1.0f, 20), xq::testing::uniform({64, 4}, -1.0f, 1.0f, 21)};
  xq::sensitivity_options o;
  o.batch_size = 32;
  o.hutchinson_samples = 2;
  const std::vector<xq::sensitivity_candidate> formats = {{"int4", xq::schemes::torchao_intx_weight_only(4, 32)},
                                                          {"mxfp4", xq::schemes::mx()}};
  const auto report = xq::layer_sensitivities(model, xq::mean_squared_error, data, data, formats, {1, 32}, o);
  REQUIRE(report.rows.front().type == "dense");
  const auto run_twin = [&](auto& twin) {
    const xq::no_grad nothing;
    const xq::training_mode inference(false);
    return twin(xq::var(data.inputs)).value();
  };
  for (std::size_t f = 0; f < formats.size(); ++f) {
    INFO(formats[f].name);
    // The first layer in this format, the second float: the candidate's own twin with only the
    // first layer's quantizers on is the reference.
    xq::format_assignment a;
    a.layer_format = {{"dense", formats[f].name}, {"dense_1", "float"}};
    xq::quantize_options mixed;
    mixed.mode = xq::quantization_mode::partial;
    mixed.spec = xq::to_spec(a, report, formats);
    auto twin = xq::quantize_model(model, mixed, {1, 32});
    xq::quantize_options alone;
    alone.scheme = formats[f].scheme;
    auto reference = xq::quantize_model(model, alone, {1, 32});
    std::vector<std::string> on, reference_on;
    xq::for_each_quantizer(twin, [&](xq::quantizer_base& q) {
      if (q.enabled()) on.push_back(q.path() + ": " + q.describe());
    });
    xq::for_each_quantizer(reference, [&](xq::quantizer_base& q) {
      q.enable(q.enabled() && q.path().rfind("dense/", 0) == 0);
      if (q.enabled()) reference_on.push_back(q.path() + ": " + q.describe());
    });
    CHECK(on == reference_on);
    CHECK(xt::all(xt::equal(run_twin(twin), run_twin(reference))));
  }
  xq::format_assignment unknown;
  unknown.layer_format = {{"dense", "fp6"}};
  CHECK_THROWS_WITH(xq::to_spec(unknown, report, formats), Catch::Contains("fp6"));
}
