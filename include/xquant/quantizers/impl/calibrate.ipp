#pragma once
/// \file calibrate.ipp
/// The calibration session (quantizers/calibrate.hpp).

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../kernels/channel_layout.hpp"
#include "../../numerics/nvidia_calibrators.hpp"
#include "../../numerics/ort_percentile_calibrator.hpp"
#include "../../numerics/torch_histogram_observer.hpp"
#include "../../core/mode.hpp"
#include "../../core/tape.hpp"
#include "../calibrate.hpp"

namespace xq {

XQ_DECL const char* to_string(calibration_method m) noexcept {
  switch (m) {
    case calibration_method::max: return "max";
    case calibration_method::nvidia_entropy: return "nvidia_entropy";
    case calibration_method::nvidia_mse: return "nvidia_mse";
    case calibration_method::nvidia_percentile: return "nvidia_percentile";
    case calibration_method::torch_histogram: return "torch_histogram";
    case calibration_method::ort_percentile: return "ort_percentile";
  }
  return "?";
}

namespace detail {

/// One quantizer's calibrator: per channel, running min/max; per tensor, the method's.
struct calibration_session::state {
  const fake_quantizer* quantizer = nullptr;
  bool per_channel = false;
  std::vector<float> lo, hi;  ///< per channel, or the observed range per tensor (max method)
  std::optional<nvidia::histogram_calibrator> nvidia;
  std::optional<torch::histogram_observer> torch;
  std::optional<ort::percentile_calibrator> ort;
};

XQ_DECL calibration_session::calibration_session(const calibration_options& o)
    : options_(o), previous_(calibration_sink::current()) {
  // 0 selects the peer's default below; anything else outside (0, 100] (NaN, a negative
  // number) used to fall back to that default silently.
  if (!(o.percentile == 0.0 || (o.percentile > 0.0 && o.percentile <= 100.0)))
    throw argument_error("xq::calibrate",
                         "a percentile in (0, 100], or 0 for the method's default (NVIDIA 99.99, onnxruntime 99.999)",
                         xq::detail::concat("percentile = ", o.percentile));
  calibration_sink::current() = this;
}

XQ_DECL calibration_session::~calibration_session() { calibration_sink::current() = previous_; }

XQ_DECL void calibration_session::collect(const fake_quantizer& q, const tensor& x) {
  state* s = nullptr;
  for (auto& st : states_)
    if (st->quantizer == &q) s = st.get();
  const quantizer_config& c = q.config();
  if (!s) {
    states_.push_back(std::make_unique<state>());
    s = states_.back().get();
    s->quantizer = &q;
    s->per_channel = c.per_channel;
    if (!c.per_channel) switch (options_.method) {
        case calibration_method::max: break;
        case calibration_method::nvidia_entropy:
        case calibration_method::nvidia_mse:
        case calibration_method::nvidia_percentile: {
          nvidia::histogram_options h;
          h.num_bits = std::min(c.num_bits, 16);
          s->nvidia.emplace(h);
          break;
        }
        case calibration_method::torch_histogram: {
          torch::histogram_observer_options h;
          h.type = c.symmetric ? torch::dtype::qint8 : torch::dtype::quint8;
          h.scheme = c.symmetric ? torch::qscheme::per_tensor_symmetric : torch::qscheme::per_tensor_affine;
          s->torch.emplace(h);
          break;
        }
        case calibration_method::ort_percentile: {
          ort::percentile_options p;
          if (options_.percentile > 0) p.percentile = options_.percentile;
          p.symmetric = c.symmetric;
          s->ort.emplace(p);
          break;
        }
      }
  }
  for (float v : x)
    if (!std::isfinite(v))
      throw argument_error(q.path(), "finite calibration inputs", xq::detail::concat(v, " in a calibration batch"));
  // Data-parallel calibration (distributed/distributed_calibration.hpp): this batch is one
  // rank's shard, and every calibrator collects the whole batch.
  sharded_batch* const shards = sharded_batch::active(batch_dependence::quantizer_range);
  if (s->per_channel || options_.method == calibration_method::max) {
    const kernels::channel_layout l = s->per_channel
                                          ? kernels::channel_layout::of(x.shape(), c.channel_axis, q.path().c_str())
                                          : kernels::channel_layout{1, 1, x.size()};
    if (s->lo.empty()) {
      s->lo.assign(l.channels, std::numeric_limits<float>::infinity());
      s->hi.assign(l.channels, -std::numeric_limits<float>::infinity());
    }
    if (s->lo.size() != l.channels)
      throw argument_error(q.path(), xq::detail::concat(s->lo.size(), " channels (as in earlier batches)"),
                           xq::detail::concat(l.channels));
    std::size_t i = 0;
    for (std::size_t o = 0; o < l.outer; ++o)
      for (std::size_t ch = 0; ch < l.channels; ++ch)
        for (std::size_t k = 0; k < l.inner; ++k, ++i) {
          s->lo[ch] = std::min(s->lo[ch], x.data()[i]);
          s->hi[ch] = std::max(s->hi[ch], x.data()[i]);
        }
    if (shards) {  // the running minimum and maximum over every rank's shards
      std::vector<float> packed(s->lo);
      for (float h : s->hi) packed.push_back(-h);
      shards->min(packed.data(), packed.size());
      const std::size_t C = s->lo.size();
      for (std::size_t ch = 0; ch < C; ++ch) {
        s->lo[ch] = packed[ch];
        s->hi[ch] = -packed[C + ch];
      }
    }
    return;
  }
  if (s->nvidia) s->nvidia->collect(x, shards);
  if (s->torch) s->torch->collect(x, shards);
  if (s->ort) s->ort->collect(x, shards);
}

XQ_DECL calibration_result calibration_session::finish(const std::vector<fake_quantizer*>& quantizers,
                                                       std::size_t samples) {
  calibration_result r;
  r.samples = samples;
  for (fake_quantizer* q : quantizers) {
    const state* s = nullptr;
    for (const auto& st : states_)
      if (st->quantizer == q) s = st.get();
    if (!s)
      throw argument_error(q->path(), "a quantizer the calibration samples reach",
                           "one no calibration pass called (is it on a branch the forward code skips?)");
    const quantizer_config& c = q->config();
    vector lo, hi;
    if (s->per_channel || options_.method == calibration_method::max) {
      lo = vector::from_shape({s->lo.size()});
      hi = vector::from_shape({s->hi.size()});
      for (std::size_t i = 0; i < s->lo.size(); ++i) {
        float a = s->lo[i], b = s->hi[i];
        if (c.symmetric) {  // NVIDIA's amax = max |x|: the range [-amax, amax]
          const float amax = std::max(std::fabs(a), std::fabs(b));
          a = -amax;
          b = amax;
        }
        lo(i) = std::min(a, 0.0f);
        hi(i) = std::max(b, 0.0f);
      }
    } else {
      float a = 0, b = 0;
      if (s->nvidia) {
        nvidia::amax_options ao;
        if (options_.percentile > 0) ao.percentile = options_.percentile;
        const nvidia::amax_method m = options_.method == calibration_method::nvidia_entropy ? nvidia::amax_method::entropy
                                      : options_.method == calibration_method::nvidia_mse
                                          ? nvidia::amax_method::mse
                                          : nvidia::amax_method::percentile;
        const float amax = s->nvidia->compute_amax(m, ao);
        a = -amax;
        b = amax;
      } else if (s->torch) {
        std::tie(a, b) = s->torch->non_linear_param_search();
      } else if (s->ort) {
        std::tie(a, b) = s->ort->compute_range();
      }
      lo = vector::from_shape({1});
      hi = vector::from_shape({1});
      lo(0) = std::min(a, 0.0f);  // every grid holds 0
      hi(0) = std::max(b, 0.0f);
    }
    calibration_result::entry e{q->path(), *std::min_element(lo.begin(), lo.end()),
                                *std::max_element(hi.begin(), hi.end()), s->per_channel, {}, {}};
    if (s->nvidia && !s->nvidia->histogram().empty()) {
      e.histogram_counts = s->nvidia->histogram();
      e.histogram_edges.assign(s->nvidia->bin_edges().begin(),
                               s->nvidia->bin_edges().begin() + static_cast<std::ptrdiff_t>(e.histogram_counts.size() + 1));
    } else if (s->torch && !s->torch->empty()) {
      // HistogramObserver's bins split [min_val, max_val] evenly.
      e.histogram_counts = s->torch->histogram();
      const std::size_t bins = e.histogram_counts.size();
      const double lo_val = s->torch->min_val(), width = (double(s->torch->max_val()) - lo_val) / double(bins);
      for (std::size_t i = 0; i <= bins; ++i) e.histogram_edges.push_back(static_cast<float>(lo_val + width * double(i)));
    } else if (s->ort && !s->ort->empty()) {
      e.histogram_edges = s->ort->bin_edges();
      for (std::int64_t c : s->ort->histogram()) e.histogram_counts.push_back(static_cast<float>(c));
    }
    r.ranges.push_back(std::move(e));
    q->set_range(std::move(lo), std::move(hi));
  }
  return r;
}

XQ_DECL calibration_result calibrate_model(layer_ref model_ref, void* model, var (*call)(void*, const var&),
                                           const tensor& samples, const calibration_options& o) {
  const std::size_t n = samples.dimension() ? samples.shape()[0] : 0;
  if (n == 0) throw argument_error("calibrate", "at least one calibration sample", "none");
  std::vector<fake_quantizer*> quantizers;
  for_each_quantizer_ref(
      model_ref,
      [](void* f, quantizer_base& q) {
        if (auto* fq = dynamic_cast<fake_quantizer*>(&q))
          if (fq->enabled()) static_cast<std::vector<fake_quantizer*>*>(f)->push_back(fq);
      },
      &quantizers);
  calibration_session session(o);
  const std::size_t per = samples.size() / n, batch = o.batch_size ? o.batch_size : n;
  {
    const no_grad nothing_recorded;
    const training_mode inference(false);
    for (std::size_t start = 0; start < n; start += batch) {
      const std::size_t count = std::min(batch, n - start);
      tensor::shape_type shape(samples.shape().begin(), samples.shape().end());
      shape[0] = count;
      tensor x = tensor::from_shape(shape);
      std::copy(samples.data() + start * per, samples.data() + (start + count) * per, x.data());
      call(model, var(std::move(x)));
    }
  }
  return session.finish(quantizers, n);
}

}  // namespace detail

}  // namespace xq
