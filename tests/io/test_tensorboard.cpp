// TensorBoard event files (io/summary_writer.hpp) and the fit callback (io/tensorboard.hpp):
// the CRC and framing against their definitions, histograms, the writer's files and errors,
// and what the callback writes from fit, read back by a small TFRecord reader here. The
// files are also read by TensorBoard's own reader: `tensorboard_reader_*` in CTest runs
// tools/check_tensorboard_log.py over the log the last test case writes (into
// $XQ_TENSORBOARD_FIXTURE_DIR when set), with the values fit returned in expected.json.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../test_support.hpp"

#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/io/calibration_log.hpp>
#include <xquant/io/detail/crc32c.hpp>
#include <xquant/io/summary_writer.hpp>
#include <xquant/io/tensorboard.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/quantizers/fake_quantizer.hpp>
#include <xquant/quantizers/quantizer_call_observer.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/dataset.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/schedule.hpp>

namespace fs = std::filesystem;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::uint64_t le64(const char* p) {
  std::uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= std::uint64_t(static_cast<unsigned char>(p[k])) << (8 * k);
  return v;
}
std::uint32_t le32(const char* p) { return static_cast<std::uint32_t>(le64(p) & 0xFFFFFFFFu) ; }

// The records of a TFRecord file, each checked against its CRCs; stops at a torn record.
std::vector<std::string> records_of(const std::string& bytes, bool* torn = nullptr) {
  std::vector<std::string> out;
  std::size_t at = 0;
  if (torn) *torn = false;
  while (at < bytes.size()) {
    if (bytes.size() - at < 12) break;
    const std::uint64_t n = le64(bytes.data() + at);
    if (le32(bytes.data() + at + 8) != xq::detail::mask_crc32c(xq::detail::crc32c(bytes.data() + at, 8))) break;
    if (bytes.size() - at - 12 < n + 4) break;
    const std::string r = bytes.substr(at + 12, n);
    if (le32(bytes.data() + at + 12 + n) != xq::detail::mask_crc32c(xq::detail::crc32c(r.data(), r.size()))) break;
    out.push_back(r);
    at += 12 + n + 4;
  }
  if (torn) *torn = at != bytes.size();
  return out;
}

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("crc32c and TFRecord framing follow their definitions", "[io][tensorboard]") {
  // RFC 3720's check value and its all-zero vector.
  CHECK(xq::detail::crc32c("123456789", 9) == 0xE3069283u);
  const std::vector<unsigned char> zeros(32, 0);
  CHECK(xq::detail::crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);
  CHECK(xq::detail::mask_crc32c(0) == 0xA282EAD8u);
  const std::string r = xq::detail::tfrecord("hello");
  REQUIRE(r.size() == 8 + 4 + 5 + 4);
  CHECK(le64(r.data()) == 5);
  CHECK(le32(r.data() + 8) == xq::detail::mask_crc32c(xq::detail::crc32c(r.data(), 8)));
  CHECK(r.substr(12, 5) == "hello");
  CHECK(le32(r.data() + 17) == xq::detail::mask_crc32c(xq::detail::crc32c("hello", 5)));
}

TEST_CASE("histogram_summary counts the finite values into equal buckets", "[io][tensorboard]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> v{0.0f, 1.0f, 2.0f, 3.0f, 4.0f, nan, inf, 4.0f};
  const xq::histogram_summary h = xq::histogram_summary::of(v.data(), v.size(), 4);
  CHECK(h.count == 6);
  CHECK(h.min == 0.0);
  CHECK(h.max == 4.0);
  CHECK(h.sum == 14.0);
  CHECK(h.sum_squares == 46.0);
  REQUIRE(h.limits.size() == 4);
  CHECK(h.limits.back() == 4.0);
  CHECK(h.counts == std::vector<double>{1, 1, 1, 3});  // the max falls in the last bucket
  const std::vector<float> same{2.5f, 2.5f};
  const xq::histogram_summary one = xq::histogram_summary::of(same.data(), same.size(), 30);
  CHECK(one.counts == std::vector<double>{2});
  CHECK(xq::histogram_summary::of(nullptr, 0).counts.empty());
  // The quick path (every value finite) and the careful one agree; a range past float's
  // reach stays finite.
  std::vector<float> many(1001);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = std::sin(0.37f * float(i)) * 3.0f;
  const xq::histogram_summary quick = xq::histogram_summary::of(many.data(), many.size(), 7);
  many.push_back(nan);
  const xq::histogram_summary careful = xq::histogram_summary::of(many.data(), many.size(), 7);
  CHECK(quick.counts == careful.counts);
  CHECK(quick.count == 1001);
  CHECK(quick.sum == Approx(careful.sum));
  const std::vector<float> huge{-3e38f, 3e38f, 0.0f};
  const xq::histogram_summary wide = xq::histogram_summary::of(huge.data(), huge.size(), 4);
  CHECK(wide.counts == std::vector<double>{1, 0, 1, 1});

  const xq::histogram_summary b = xq::histogram_summary::from_buckets({0.0f, 1.0f, 3.0f}, {2.0f, 1.0f});
  CHECK(b.count == 3);
  CHECK(b.sum == 2 * 0.5 + 1 * 2.0);
  CHECK(b.limits == std::vector<double>{1.0, 3.0});
  CHECK_THROWS_WITH(xq::histogram_summary::from_buckets({0.0f, 1.0f}, {1.0f, 1.0f}), Catch::Contains("one edge more"));
  CHECK_THROWS_WITH(xq::histogram_summary::from_buckets({0.0f, 0.0f}, {1.0f}), Catch::Contains("increasing"));
  CHECK_THROWS_WITH(xq::histogram_summary::from_buckets({0.0f, 1.0f}, {-1.0f}), Catch::Contains("counts >= 0"));
}

TEST_CASE("summary_writer appends whole records, the version first, and names a bad path", "[io][tensorboard]") {
  const xq::testing::temp_dir scratch("xq_tensorboard_writer_");
  const fs::path dir = scratch.path;
  std::string file;
  {
    xq::summary_writer w((dir / "a" / "b").string());
    file = w.file();
    CHECK(contains(fs::path(file).filename().string(), "events.out.tfevents."));
    w.add_scalar("loss", 0.25, 1);
    w.add_text("notes", "**x**", 1);
    // Waiting in memory until a flush: the file holds the version record alone.
    CHECK(records_of(read_all(file)).size() == 1);
    w.flush();
    CHECK(records_of(read_all(file)).size() == 3);
    w.add_histogram("h", xq::tensor(xt::xarray<float>{1.0f, 2.0f, 3.0f}), 2);
  }  // the destructor flushes
  bool torn = true;
  const std::vector<std::string> records = records_of(read_all(file), &torn);
  CHECK_FALSE(torn);
  REQUIRE(records.size() == 4);
  CHECK(contains(records[0], "brain.Event:2"));
  CHECK(contains(records[1], "loss"));
  CHECK(contains(records[2], "text"));
  // A cut anywhere in the last record leaves the others whole (TensorBoard's reader drops
  // the torn one: tools/check_tensorboard_log.py --torn checks that with its reader).
  const std::string bytes = read_all(file);
  for (std::size_t cut = 1; cut < xq::detail::tfrecord(records.back()).size(); cut += 7) {
    const std::vector<std::string> left = records_of(bytes.substr(0, bytes.size() - cut), &torn);
    CHECK(left.size() == 3);
    CHECK(torn);
  }

  // A log directory that cannot be made: the path is named.
  const fs::path blocker = dir / "file";
  std::ofstream(blocker.string()) << "x";
  CHECK_THROWS_AS(xq::summary_writer((blocker / "logs").string()), xq::io_error);
  CHECK_THROWS_WITH(xq::summary_writer((blocker / "logs").string()), Catch::Contains((blocker / "logs").string()));
  CHECK_THROWS_AS(xq::summary_writer(""), xq::argument_error);
}

namespace {

xq::dataset labelled_noise(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_int_distribution<int> label(0, 2);
  xq::dataset d{xq::tensor::from_shape({n, 4}), xq::tensor::from_shape({n})};
  for (auto& v : d.inputs) v = normal(rng);
  for (auto& v : d.targets) v = static_cast<float>(label(rng));
  return d;
}

xq::quantizer_config per_channel_config() {
  xq::quantizer_config c;
  c.per_channel = true;
  c.channel_axis = -1;
  return c;
}

}  // namespace

TEST_CASE("the tensorboard callback writes what fit measured, every quantizer's grid and the weights",
          "[io][tensorboard][fit][tensorboard_fixture]") {
  const char* fixture = std::getenv("XQ_TENSORBOARD_FIXTURE_DIR");
  const xq::testing::temp_dir scratch("xq_tensorboard_fit_");
  const fs::path dir = fixture ? fs::path(fixture) : scratch.path;
  if (fixture) fs::remove_all(dir);
  xq::set_seed(5);
  // An input fake quantizer (per tensor), a per-channel one, Larq's sign with its metrics.
  xq::sequential model(xq::fake_quantizer(xq::quantizer_config{}), xq::dense(8), xq::fake_quantizer(per_channel_config()),
                       xq::ste_sign(), xq::dense(3));
  model.get<3>().metrics(xq::quantizer_metric::flip_ratio | xq::quantizer_metric::gradient_flow);
  xq::build(model, {1, 4});
  xq::adam_options ao;
  ao.learning_rate = xq::cosine_decay{1e-2f, 12, 0.1f};
  xq::adam opt(xq::trainable_parameters(model), ao);
  const xq::dataset train = labelled_noise(32, 1), test = labelled_noise(16, 2);

  auto board = std::make_shared<xq::tensorboard>([&] {
    xq::tensorboard_options o;
    o.log_dir = (dir / "fit").string();
    o.update_freq = 2;
    return o;
  }());
  xq::fit_options fo;
  fo.epochs = 3;
  fo.batch_size = 8;
  fo.verbose = false;
  fo.validation = &test;
  fo.callbacks.push_back(board);
  std::vector<xq::fit_step> steps;
  struct recorder final : xq::fit_callback {
    std::vector<xq::fit_step>* steps;
    void on_step_end(const xq::fit_step& s) override { steps->push_back(s); }
  };
  auto rec = std::make_shared<recorder>();
  rec->steps = &steps;
  fo.callbacks.push_back(rec);
  const xq::fit_history h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, fo);
  REQUIRE(h.size() == 3);
  REQUIRE(steps.size() == 12);
  CHECK(steps[0].global_step == 1);
  CHECK(steps[11].global_step == 12);
  CHECK(steps[5].epoch == 2);
  CHECK(steps[5].step == 2);
  REQUIRE(steps[0].learning_rate);
  CHECK(*steps[0].learning_rate == Approx(1e-2));  // the cosine's start: the rate of step 1
  CHECK(*steps[11].learning_rate < *steps[0].learning_rate);
  REQUIRE(board->train_writer());

  // The train run: the version, then every scalar, histogram and text the file comment lists.
  bool torn = true;
  const std::vector<std::string> records = records_of(read_all(board->train_writer()->file()), &torn);
  CHECK_FALSE(torn);
  std::string all;
  for (const auto& r : records) all += r;
  for (const char* tag : {"batch_loss", "batch_accuracy", "batch_learning_rate", "batch_seconds", "epoch_loss",
                          "epoch_accuracy", "epoch_learning_rate", "epoch_flip_ratio/ste_sign",
                          "epoch_gradient_flow/ste_sign", "batch_flip_ratio/ste_sign", "batch_gradient_flow/ste_sign", "scale/fake_quantizer", "zero_point/fake_quantizer",
                          "range_min/fake_quantizer", "range_max/fake_quantizer", "clipped/fake_quantizer",
                          "scale/fake_quantizer_1", "clipped/fake_quantizer_1", "quantizer_input/ste_sign",
                          "quantizer_output/fake_quantizer_1", "weights/dense/kernel", "quantizers"})
    CHECK(contains(all, tag));
  CHECK_FALSE(contains(all, "range_min/ste_sign"));  // signs reach ±1 whatever the input: no range
  CHECK(contains(read_all(board->validation_writer()->file()), "epoch_loss"));
  // The observer is gone once fit returns.
  CHECK(xq::quantizer_call_observer::current() == nullptr);

  // Calibration in its own run.
  {
    xq::summary_writer w((dir / "ptq").string());
    xq::calibration_options co;
    co.method = xq::calibration_method::nvidia_percentile;
    xq::enable_fake_quant(model, true);
    const xq::calibration_result r = xq::calibrate(model, train.inputs, co);
    REQUIRE_FALSE(r.ranges.empty());
    CHECK_FALSE(r.ranges[0].histogram_counts.empty());
    CHECK(r.ranges[0].histogram_edges.size() == r.ranges[0].histogram_counts.size() + 1);
    xq::log_calibration(w, r);
    const std::string bytes = read_all(w.file());
    CHECK(contains(bytes, "calibration_histogram/fake_quantizer"));
    CHECK(contains(bytes, "calibration_max/fake_quantizer_1"));
  }

  // What TensorBoard's reader is checked against (CTest's tensorboard_reader_values).
  nlohmann::json expected;
  expected["metric_name"] = h.metric_name;
  for (const xq::epoch_record& e : h.epochs) {
    nlohmann::json j{{"epoch", e.epoch}, {"loss", e.loss}, {"metric", *e.metric}, {"val_loss", *e.val_loss},
                     {"val_metric", *e.val_metric}, {"samples_per_second", e.samples_per_second}};
    for (const auto& [name, value] : e.quantizer_metrics) j["quantizer_metrics"][name] = value;
    expected["epochs"].push_back(j);
  }
  for (const xq::fit_step& s : steps)
    if (s.global_step % 2 == 0 || s.step == 4)
      expected["steps"].push_back({{"global_step", s.global_step}, {"loss", s.loss}, {"learning_rate", *s.learning_rate}});
  // A torn copy of the train run's file: its last record cut in half.
  {
    const std::string bytes = read_all(board->train_writer()->file());
    const std::string last = xq::detail::tfrecord(records.back());
    fs::create_directories(dir / "torn");
    std::ofstream(dir / "torn" / fs::path(board->train_writer()->file()).filename(), std::ios::binary)
        << bytes.substr(0, bytes.size() - last.size() / 2);
    expected["torn_records"] = records.size() - 1;  // the version event included
  }
  std::ofstream(dir / "expected.json") << expected.dump(2);
}
