#pragma once
/// \file integer_model_file.ipp
/// The integer model's file (deploy/integer_model_file.hpp). The CBOR (nlohmann::json)
/// machinery is private to this file.

#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../core/error.hpp"
#include "../../io/atomic_file.hpp"
#include "../../io/checkpoint_format.hpp"
#include "../function_op.hpp"
#include "../integer_model_file.hpp"

namespace xq::deploy {

namespace detail::imf {

using json = nlohmann::json;

template <class T>
json bytes_of(const std::vector<T>& v) {
  static_assert(std::is_arithmetic_v<T>, "numbers only");
  if (!xq::detail::ckpt::host_is_little_endian())
    throw io_error("integer model", "saving needs a little-endian host (the file is little-endian)");
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return json::binary(std::move(b));
}

inline json sizes(const std::vector<std::size_t>& v) {
  json j = json::array();
  for (std::size_t x : v) j.push_back(static_cast<std::uint64_t>(x));
  return j;
}

template <std::size_t N>
json sizes(const std::array<std::size_t, N>& v) {
  return sizes(std::vector<std::size_t>(v.begin(), v.end()));
}

inline json encode_config(const quantizer_config& c) {
  json j = json::object();
  j["num_bits"] = c.num_bits;
  j["symmetric"] = c.symmetric;
  j["narrow_range"] = c.narrow_range;
  j["per_channel"] = c.per_channel;
  j["channel_axis"] = c.channel_axis;
  j["numerics"] = to_string(c.numerics);
  j["tracking"] = to_string(c.tracking);
  j["ema_decay"] = c.ema_decay;
  j["averaging_constant"] = c.averaging_constant;
  j["reduce_range"] = c.reduce_range;
  j["init_min"] = double(c.init_min);
  j["init_max"] = double(c.init_max);
  return j;
}

inline json encode_window(const window_geometry& g) {
  json j = json::object();
  j["window"] = sizes(g.window);
  j["strides"] = sizes(g.strides);
  j["dilation"] = sizes(g.dilation);
  j["pads"] = sizes(g.pads);
  return j;
}

inline json encode_grid(const integer_grid& g) {
  json j = json::object();
  j["scale"] = double(g.scale);
  j["zero_point"] = g.zero_point;
  j["qmin"] = g.qmin;
  j["qmax"] = g.qmax;
  return j;
}

inline std::vector<float> floats_of(const tensor& t) { return std::vector<float>(t.begin(), t.end()); }

inline json encode_op(const lowered_op& op) {
  json j = json::object();
  j["kind"] = op.kind();
  j["path"] = op.path;
  j["inputs"] = sizes(op.inputs);
  j["output"] = static_cast<std::uint64_t>(op.output);
  if (auto* q = dynamic_cast<const quantize_op*>(&op)) {
    j["quantizer"] = q->quantizer.path();
    j["config"] = encode_config(q->quantizer.config());
    const vector lo = q->quantizer.min(), hi = q->quantizer.max();
    j["min"] = bytes_of(std::vector<float>(lo.begin(), lo.end()));
    j["max"] = bytes_of(std::vector<float>(hi.begin(), hi.end()));
  } else if (auto* l = dynamic_cast<const integer_linear_op*>(&op)) {
    j["window"] = encode_window(l->geometry);
    j["in_channels"] = static_cast<std::uint64_t>(l->in_channels);
    j["out_channels"] = static_cast<std::uint64_t>(l->out_channels);
    j["depth_multiplier"] = static_cast<std::uint64_t>(l->depth_multiplier);
    j["weights"] = bytes_of(l->weights);
    j["bias"] = bytes_of(l->bias);
    j["integer_output"] = l->integer_output;
    j["float_bias"] = l->float_bias;
    j["requantization"] = to_string(l->requant.scheme());
    j["multipliers"] = bytes_of(l->requant.real_multipliers());
    j["out_scale"] = double(l->out_scale);
    j["out_zero_point"] = l->out_zero_point;
    j["out_qmin"] = l->out_qmin;
    j["out_qmax"] = l->out_qmax;
    j["real_scale"] = bytes_of(l->real_scale);
    j["real_bias"] = bytes_of(l->real_bias);
  } else if (auto* p = dynamic_cast<const max_pool_op*>(&op)) {
    j["window"] = encode_window(p->geometry);
  } else if (auto* a = dynamic_cast<const integer_average_pool_op*>(&op)) {
    j["window"] = encode_window(a->geometry);
  } else if (auto* r = dynamic_cast<const reshape_op*>(&op)) {
    j["target"] = sizes(r->target);
  } else if (auto* b = dynamic_cast<const batch_norm_op*>(&op)) {
    j["mean"] = bytes_of(b->mean);
    j["scale"] = bytes_of(b->scale);
    j["offset"] = bytes_of(b->offset);
  } else if (auto* bl = dynamic_cast<const binary_linear_op*>(&op)) {
    j["window"] = encode_window(bl->geometry);
    j["in_channels"] = static_cast<std::uint64_t>(bl->in_channels);
    j["out_channels"] = static_cast<std::uint64_t>(bl->out_channels);
    j["words_per_row"] = static_cast<std::uint64_t>(bl->words_per_row);
    j["weights"] = bytes_of(bl->weights);
  } else if (auto* rl = dynamic_cast<const real_linear_op*>(&op)) {
    j["depthwise"] = rl->depthwise;
    j["kernel_shape"] = sizes(std::vector<std::size_t>(rl->kernel.shape().begin(), rl->kernel.shape().end()));
    j["kernel"] = bytes_of(floats_of(rl->kernel));
    j["has_bias"] = rl->has_bias;
    j["bias"] = bytes_of(rl->has_bias ? floats_of(rl->bias) : std::vector<float>{});
    j["strides"] = sizes(rl->strides);
    j["dilation"] = sizes(rl->dilation);
    j["padding"] = rl->padding;
    j["pad_value"] = double(rl->pad_value);
    j["transposed"] = rl->transposed;
    if (rl->pooled) {
      json pool = json::object();
      pool["window"] = encode_window(rl->pool);
      j["max_pool"] = std::move(pool);
    }
  } else if (auto* f = dynamic_cast<const real_function_op*>(&op)) {
    j["function"] = f->function;
    j["pool"] = sizes(f->pool);
    j["strides"] = sizes(f->strides);
    j["padding"] = f->padding;
    j["keepdims"] = f->keepdims;
    j["alpha"] = double(f->alpha);
  } else if (auto* fn = dynamic_cast<const function_op*>(&op)) {
    j["function"] = fn->function;
    json ints = json::array();
    for (std::int64_t v : fn->ints) ints.push_back(v);
    j["ints"] = std::move(ints);
    j["floats"] = bytes_of(fn->floats);
    json tensors = json::array();
    for (const tensor& t : fn->tensors) {
      json e = json::object();
      e["shape"] = sizes(std::vector<std::size_t>(t.shape().begin(), t.shape().end()));
      e["data"] = bytes_of(floats_of(t));
      tensors.push_back(std::move(e));
    }
    j["tensors"] = std::move(tensors);
  } else if (auto* k = dynamic_cast<const constant_op*>(&op)) {
    j["shape"] = sizes(std::vector<std::size_t>(k->value.shape().begin(), k->value.shape().end()));
    j["value"] = bytes_of(floats_of(k->value));
  } else if (auto* cat = dynamic_cast<const concatenate_op*>(&op)) {
    j["axis"] = static_cast<std::uint64_t>(cat->axis);
  } else if (auto* ad = dynamic_cast<const integer_add_op*>(&op)) {
    j["requantization"] = to_string(ad->scheme);
    j["left_shift"] = ad->left_shift;
    j["input_scales"] = bytes_of(ad->input_scales);
    j["out"] = encode_grid(ad->out);
  } else if (auto* mu = dynamic_cast<const integer_multiply_op*>(&op)) {
    j["requantization"] = to_string(mu->scheme);
    j["input_scales"] = bytes_of(mu->input_scales);
    j["out"] = encode_grid(mu->out);
  } else if (auto* rs = dynamic_cast<const rescale_op*>(&op)) {
    j["requantization"] = to_string(rs->scheme);
    j["in_scale"] = double(rs->in_scale);
    j["out"] = encode_grid(rs->out);
  } else if (auto* cl = dynamic_cast<const clamp_op*>(&op)) {
    j["lo"] = cl->lo;
    j["hi"] = cl->hi;
  } else if (auto* g = dynamic_cast<const gather_op*>(&op)) {
    j["rows"] = static_cast<std::uint64_t>(g->rows);
    j["dim"] = static_cast<std::uint64_t>(g->dim);
    j["quantized"] = g->quantized;
    j["integers"] = bytes_of(g->integers);
    j["row_scale"] = bytes_of(g->row_scale);
    j["table"] = bytes_of(g->table);
  }
  return j;
}

/// Reads fields with checks; every failure is an io_error naming the file and the field.
class reader {
 public:
  explicit reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw io_error(source_, "malformed integer model: " + where + ": " + what);
  }

  const json& field(const json& j, const char* name, const std::string& where) const {
    if (!j.is_object()) fail(where, "expected a map");
    const auto it = j.find(name);
    if (it == j.end()) fail(where, std::string("missing \"") + name + "\"");
    return *it;
  }
  std::string text(const json& j, const char* name, const std::string& where) const {
    const json& f = field(j, name, where);
    if (!f.is_string()) fail(where + "." + name, "expected text");
    return f.get<std::string>();
  }
  bool flag(const json& j, const char* name, const std::string& where) const {
    const json& f = field(j, name, where);
    if (!f.is_boolean()) fail(where + "." + name, "expected true or false");
    return f.get<bool>();
  }
  double number(const json& j, const char* name, const std::string& where) const {
    const json& f = field(j, name, where);
    if (!f.is_number()) fail(where + "." + name, "expected a number");
    return f.get<double>();
  }
  std::int64_t integer(const json& j, const char* name, const std::string& where, std::int64_t lo,
                       std::int64_t hi) const {
    const json& f = field(j, name, where);
    if (!f.is_number_integer()) fail(where + "." + name, "expected an integer");
    const std::int64_t v = f.get<std::int64_t>();
    if (v < lo || v > hi) fail(where + "." + name, xq::detail::concat("expected ", lo, "..", hi, ", given ", v));
    return v;
  }
  std::size_t count(const json& j, const char* name, const std::string& where, std::size_t hi = 1u << 30) const {
    return static_cast<std::size_t>(integer(j, name, where, 0, std::int64_t(hi)));
  }
  std::vector<std::size_t> sizes(const json& j, const char* name, const std::string& where, std::size_t n = 0,
                                 std::size_t hi = 1u << 30) const {
    const json& f = field(j, name, where);
    if (!f.is_array() || (n && f.size() != n))
      fail(where + "." + name, n ? xq::detail::concat("expected ", n, " sizes") : std::string("expected a list"));
    std::vector<std::size_t> v;
    for (const json& e : f) {
      if (!e.is_number_unsigned() || e.get<std::uint64_t>() > hi)
        fail(where + "." + name, xq::detail::concat("expected sizes up to ", hi));
      v.push_back(static_cast<std::size_t>(e.get<std::uint64_t>()));
    }
    return v;
  }
  template <std::size_t N>
  std::array<std::size_t, N> fixed(const json& j, const char* name, const std::string& where) const {
    const auto v = sizes(j, name, where, N);
    std::array<std::size_t, N> a{};
    std::copy(v.begin(), v.end(), a.begin());
    return a;
  }
  template <class T>
  std::vector<T> numbers(const json& j, const char* name, const std::string& where) const {
    const json& f = field(j, name, where);
    if (!f.is_binary()) fail(where + "." + name, "expected a byte string");
    const auto& b = f.get_binary();
    if (b.size() % sizeof(T)) fail(where + "." + name, xq::detail::concat(b.size(), " bytes, not a multiple of ", sizeof(T)));
    std::vector<T> v(b.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
  }
  template <class T>
  std::vector<T> numbers(const json& j, const char* name, const std::string& where, std::size_t n) const {
    auto v = numbers<T>(j, name, where);
    if (v.size() != n) fail(where + "." + name, xq::detail::concat("expected ", n, " values, given ", v.size()));
    return v;
  }
  window_geometry window(const json& j, const std::string& where) const {
    const json& w = field(j, "window", where);
    const std::string at = where + ".window";
    window_geometry g;
    g.window = fixed<2>(w, "window", at);
    g.strides = fixed<2>(w, "strides", at);
    g.dilation = fixed<2>(w, "dilation", at);
    g.pads = fixed<4>(w, "pads", at);
    for (std::size_t a = 0; a < 2; ++a)
      if (!g.window[a] || !g.strides[a] || !g.dilation[a] || g.window[a] > 4096 || g.pads[a] > 4096 || g.pads[a + 2] > 4096)
        fail(at, "expected windows, strides and dilations of at least 1 (and sizes below 4096)");
    return g;
  }
  /// An output grid whose centred integers fit int16, with a finite positive scale.
  integer_grid grid(const json& j, const std::string& where) const {
    integer_grid g;
    g.scale = float(number(j, "scale", where));
    g.zero_point = std::int32_t(integer(j, "zero_point", where, -65536, 65536));
    g.qmin = std::int32_t(integer(j, "qmin", where, -32768, 65535));
    g.qmax = std::int32_t(integer(j, "qmax", where, g.qmin, 65535));
    if (!(g.scale > 0.0f) || !std::isfinite(g.scale)) fail(where + ".scale", "expected a finite positive scale");
    if (g.qmax - g.zero_point > 32767 || g.qmin - g.zero_point < -32768)
      fail(where, "expected a grid whose centred integers fit int16");
    return g;
  }
  quantizer_config config(const json& j, const std::string& where) const {
    quantizer_config c;
    c.num_bits = int(integer(j, "num_bits", where, 1, 64));
    c.symmetric = flag(j, "symmetric", where);
    c.narrow_range = flag(j, "narrow_range", where);
    c.per_channel = flag(j, "per_channel", where);
    c.channel_axis = int(integer(j, "channel_axis", where, -64, 64));
    const std::string n = text(j, "numerics", where);
    bool known = false;
    for (auto q : {quant_numerics::tf_qdq, quant_numerics::tf_fake_quant, quant_numerics::torch_fake_quant})
      if (n == to_string(q)) c.numerics = q, known = true;
    if (!known) fail(where + ".numerics", "expected tf_qdq, tf_fake_quant or torch_fake_quant, given \"" + n + "\"");
    const std::string t = text(j, "tracking", where);
    known = false;
    for (auto r : {range_tracking::last_value, range_tracking::moving_average, range_tracking::all_values})
      if (t == to_string(r)) c.tracking = r, known = true;
    if (!known) fail(where + ".tracking", "expected last_value, moving_average or all_values, given \"" + t + "\"");
    c.ema_decay = number(j, "ema_decay", where);
    c.averaging_constant = number(j, "averaging_constant", where);
    c.reduce_range = flag(j, "reduce_range", where);
    c.init_min = float(number(j, "init_min", where));
    c.init_max = float(number(j, "init_max", where));
    return c;
  }

  const std::string& source() const noexcept { return source_; }

 private:
  std::string source_;
};

inline std::unique_ptr<lowered_op> decode_op(const reader& r, const json& j, const std::string& at) {
  const std::string kind = r.text(j, "kind", at);
  auto fail = [&](const std::string& what) { r.fail(at, what); };
  try {
    if (kind == "quantize") {
      auto op = std::make_unique<quantize_op>();
      op->quantizer = fake_quantizer(r.config(r.field(j, "config", at), at + ".config"));
      op->quantizer.set_path(r.text(j, "quantizer", at));
      const auto lo = r.numbers<float>(j, "min", at), hi = r.numbers<float>(j, "max", at);
      vector vlo = vector::from_shape({lo.size()}), vhi = vector::from_shape({hi.size()});
      std::copy(lo.begin(), lo.end(), vlo.begin());
      std::copy(hi.begin(), hi.end(), vhi.begin());
      op->quantizer.set_range(std::move(vlo), std::move(vhi));
      if (op->quantizer.config().per_channel) fail("expected a per-tensor activation quantizer");
      return op;
    }
    if (kind == "dequantize") return std::make_unique<dequantize_op>();
    if (kind == "relu") return std::make_unique<relu_op>();
    if (kind == "sign") return std::make_unique<sign_op>();
    if (kind == "max_pool2d") {
      auto op = std::make_unique<max_pool_op>();
      op->geometry = r.window(j, at);
      return op;
    }
    if (kind == "integer_average_pool2d") {
      auto op = std::make_unique<integer_average_pool_op>();
      op->geometry = r.window(j, at);
      return op;
    }
    if (kind == "reshape") {
      auto op = std::make_unique<reshape_op>();
      op->target = r.sizes(j, "target", at);
      return op;
    }
    if (kind == "batch_norm") {
      auto op = std::make_unique<batch_norm_op>();
      op->mean = r.numbers<float>(j, "mean", at);
      op->scale = r.numbers<float>(j, "scale", at, op->mean.size());
      op->offset = r.numbers<float>(j, "offset", at, op->mean.size());
      if (op->mean.empty()) fail("expected at least one channel");
      return op;
    }
    if (kind == "conv2d" || kind == "depthwise_conv2d" || kind == "dense") {
      auto op = std::make_unique<integer_linear_op>();
      op->shape_form = kind == "conv2d"             ? integer_linear_op::form::conv2d
                       : kind == "depthwise_conv2d" ? integer_linear_op::form::depthwise_conv2d
                                                    : integer_linear_op::form::dense;
      op->geometry = r.window(j, at);
      op->in_channels = r.count(j, "in_channels", at);
      op->out_channels = r.count(j, "out_channels", at);
      op->depth_multiplier = r.count(j, "depth_multiplier", at);
      const std::size_t f = op->out_channels;
      if (!f || !op->in_channels || !op->depth_multiplier) fail("expected channel counts of at least 1");
      std::size_t expected = op->in_channels * f;
      if (op->shape_form == integer_linear_op::form::conv2d)
        expected *= op->geometry.window[0] * op->geometry.window[1];
      if (op->shape_form == integer_linear_op::form::depthwise_conv2d) {
        if (f != op->in_channels * op->depth_multiplier) fail("expected out_channels = in_channels * depth_multiplier");
        expected = op->geometry.window[0] * op->geometry.window[1] * f;
      }
      op->weights = r.numbers<std::int16_t>(j, "weights", at, expected);
      op->bias = r.numbers<std::int32_t>(j, "bias", at);
      if (!op->bias.empty() && op->bias.size() != f) fail(xq::detail::concat("expected 0 or ", f, " biases"));
      op->integer_output = r.flag(j, "integer_output", at);
      op->float_bias = r.flag(j, "float_bias", at);
      const requantization scheme = requantization_from_string(r.text(j, "requantization", at));
      op->out_scale = float(r.number(j, "out_scale", at));
      op->out_zero_point = std::int32_t(r.integer(j, "out_zero_point", at, -65536, 65536));
      op->out_qmin = std::int32_t(r.integer(j, "out_qmin", at, -32768, 65535));
      op->out_qmax = std::int32_t(r.integer(j, "out_qmax", at, op->out_qmin, 65535));
      if (op->out_qmax - op->out_zero_point > 32767 || op->out_qmin - op->out_zero_point < -32768)
        fail("expected an output grid whose centred integers fit int16");
      const bool scales = !op->integer_output || op->float_bias;
      op->real_scale = r.numbers<float>(j, "real_scale", at, scales ? f : 0);
      op->real_bias = r.numbers<float>(j, "real_bias", at, scales ? f : 0);
      if (op->integer_output) {
        if (!(op->out_scale > 0)) fail("expected a positive output scale");
        auto m = r.numbers<double>(j, "multipliers", at, f);
        op->requant = requantizer(scheme, std::move(m), at);
      }
      op->prepare();
      return op;
    }
    if (kind == "binary_conv2d" || kind == "binary_dense") {
      auto op = std::make_unique<binary_linear_op>();
      op->dense = kind == "binary_dense";
      op->geometry = r.window(j, at);
      op->in_channels = r.count(j, "in_channels", at);
      op->out_channels = r.count(j, "out_channels", at);
      op->words_per_row = r.count(j, "words_per_row", at);
      const std::size_t wpp = (op->in_channels + 63) / 64;
      const std::size_t expected_words = op->dense ? wpp : op->geometry.window[0] * op->geometry.window[1] * wpp;
      if (!op->in_channels || !op->out_channels || op->words_per_row != expected_words)
        fail(xq::detail::concat("expected ", expected_words, " words per row for ", op->in_channels, " input channels"));
      op->weights = r.numbers<std::uint64_t>(j, "weights", at, op->out_channels * op->words_per_row);
      return op;
    }
    if (kind == "real_conv2d" || kind == "real_dense") {
      auto op = std::make_unique<real_linear_op>();
      op->dense = kind == "real_dense";
      op->depthwise = r.flag(j, "depthwise", at);
      const auto shape = r.sizes(j, "kernel_shape", at);
      if (shape.size() != (op->dense ? 2u : 4u)) fail("expected a kernel of rank 2 (dense) or 4 (conv)");
      std::size_t n = 1;
      for (std::size_t d : shape) n *= d;
      const auto k = r.numbers<float>(j, "kernel", at, n);
      op->kernel = tensor::from_shape(shape);
      std::copy(k.begin(), k.end(), op->kernel.begin());
      op->has_bias = r.flag(j, "has_bias", at);
      const std::size_t out = op->depthwise ? shape[2] * shape[3] : shape.back();
      const auto b = r.numbers<float>(j, "bias", at, op->has_bias ? out : 0);
      if (op->has_bias) {
        op->bias = tensor::from_shape({out});
        std::copy(b.begin(), b.end(), op->bias.begin());
      }
      op->strides = r.fixed<2>(j, "strides", at);
      op->dilation = r.fixed<2>(j, "dilation", at);
      op->padding = int(r.integer(j, "padding", at, 0, 1));
      op->pad_value = float(r.number(j, "pad_value", at));
      // Files written before tied projections had no "transposed": false.
      op->transposed = j.contains("transposed") ? r.flag(j, "transposed", at) : false;
      if (op->transposed && !op->dense) fail("expected a dense op for a transposed kernel");
      // A fused max pool, where there is one.
      op->pooled = j.contains("max_pool");
      if (op->pooled) {
        if (op->dense || op->depthwise) fail("expected a conv op before a fused max pool");
        op->pool = r.window(r.field(j, "max_pool", at), at + ".max_pool");
      }
      return op;
    }
    if (real_function_op::known(kind)) {
      auto op = std::make_unique<real_function_op>();
      op->function = r.text(j, "function", at);
      if (op->function != kind) fail("expected \"function\": \"" + kind + "\"");
      op->pool = r.fixed<2>(j, "pool", at);
      op->strides = r.fixed<2>(j, "strides", at);
      for (std::size_t a = 0; a < 2; ++a)
        if (!op->pool[a] || !op->strides[a] || op->pool[a] > 4096 || op->strides[a] > 4096)
          fail("expected pool sizes and strides from 1 to 4096");
      op->padding = int(r.integer(j, "padding", at, 0, 1));
      op->keepdims = r.flag(j, "keepdims", at);
      op->alpha = float(r.number(j, "alpha", at));
      return op;
    }
    // A tensor stored as {shape, data}: at most 2^28 elements, the data exactly that many floats.
    auto stored_tensor = [&](const json& e, const std::string& where) {
      const auto shape = r.sizes(e, "shape", where, 0, 1u << 28);
      std::size_t n = 1;
      for (std::size_t d : shape) {
        n *= d;
        if (n > (1u << 28)) r.fail(where + ".shape", "expected at most 2^28 elements");
      }
      const auto data = r.numbers<float>(e, "data", where, shape.empty() ? 1 : n);
      tensor t = tensor::from_shape(shape);
      std::copy(data.begin(), data.end(), t.begin());
      return t;
    };
    if (function_op::known(kind)) {
      auto op = std::make_unique<function_op>();
      op->function = r.text(j, "function", at);
      if (op->function != kind) fail("expected \"function\": \"" + kind + "\"");
      const json& ints = r.field(j, "ints", at);
      if (!ints.is_array() || ints.size() > 16) fail("expected a list of at most 16 integers in \"ints\"");
      for (const json& e : ints) {
        if (!e.is_number_integer()) fail("expected integers in \"ints\"");
        op->ints.push_back(e.get<std::int64_t>());
      }
      op->floats = r.numbers<float>(j, "floats", at);
      const json& tensors = r.field(j, "tensors", at);
      if (!tensors.is_array() || tensors.size() > 4) fail("expected a list of at most 4 tensors in \"tensors\"");
      for (std::size_t k = 0; k < tensors.size(); ++k)
        op->tensors.push_back(stored_tensor(tensors[k], at + ".tensors[" + std::to_string(k) + "]"));
      return op;
    }
    if (kind == "constant") {
      auto op = std::make_unique<constant_op>();
      json e = json::object();
      e["shape"] = r.field(j, "shape", at);
      e["data"] = r.field(j, "value", at);
      op->value = stored_tensor(e, at);
      return op;
    }
    if (kind == "concatenate") {
      auto op = std::make_unique<concatenate_op>();
      op->axis = r.count(j, "axis", at, 16);
      return op;
    }
    if (kind == "integer_add") {
      auto op = std::make_unique<integer_add_op>();
      op->path = at;
      op->scheme = requantization_from_string(r.text(j, "requantization", at));
      op->left_shift = int(r.integer(j, "left_shift", at, 0, 20));
      op->input_scales = r.numbers<float>(j, "input_scales", at, r.sizes(j, "inputs", at).size());
      op->out = r.grid(r.field(j, "out", at), at + ".out");
      op->prepare();
      return op;
    }
    if (kind == "integer_multiply") {
      auto op = std::make_unique<integer_multiply_op>();
      op->path = at;
      op->scheme = requantization_from_string(r.text(j, "requantization", at));
      op->input_scales = r.numbers<float>(j, "input_scales", at, 2);
      op->out = r.grid(r.field(j, "out", at), at + ".out");
      op->prepare();
      return op;
    }
    if (kind == "rescale") {
      auto op = std::make_unique<rescale_op>();
      op->path = at;
      op->scheme = requantization_from_string(r.text(j, "requantization", at));
      op->in_scale = float(r.number(j, "in_scale", at));
      op->out = r.grid(r.field(j, "out", at), at + ".out");
      op->prepare();
      return op;
    }
    if (kind == "clamp") {
      auto op = std::make_unique<clamp_op>();
      op->lo = std::int32_t(r.integer(j, "lo", at, -32768, 32767));
      op->hi = std::int32_t(r.integer(j, "hi", at, -32768, 32767));
      if (op->lo > op->hi) fail("expected lo <= hi");
      return op;
    }
    if (kind == "gather") {
      auto op = std::make_unique<gather_op>();
      op->rows = r.count(j, "rows", at);
      op->dim = r.count(j, "dim", at);
      if (!op->rows || !op->dim || op->rows * op->dim > (std::size_t(1) << 30)) fail("expected a table of 1 to 2^30 elements");
      op->quantized = r.flag(j, "quantized", at);
      const std::size_t n = op->rows * op->dim;
      op->integers = r.numbers<std::int16_t>(j, "integers", at, op->quantized ? n : 0);
      op->row_scale = r.numbers<float>(j, "row_scale", at, op->quantized ? op->rows : 0);
      op->table = r.numbers<float>(j, "table", at, op->quantized ? 0 : n);
      return op;
    }
  } catch (const argument_error& e) {
    r.fail(at, e.what());
  }
  fail("unknown kind \"" + kind + "\"");
  return nullptr;
}

}  // namespace detail::imf

XQ_DECL std::vector<std::uint8_t> encode_integer_model(const integer_model& m) {
  using namespace detail::imf;
  json p = json::object();
  p["input_shape"] = sizes(m.input_shape);
  p["requantization"] = to_string(m.scheme);
  p["value_count"] = static_cast<std::uint64_t>(m.value_count);
  p["input_value"] = static_cast<std::uint64_t>(m.input_value);
  p["output_value"] = static_cast<std::uint64_t>(m.output_value);
  json ops = json::array();
  for (const auto& op : m.ops) ops.push_back(encode_op(*op));
  p["ops"] = std::move(ops);
  json points = json::array();
  for (const parity_point& q : m.parity_points) {
    json j = json::object();
    j["label"] = q.label;
    j["layer_path"] = q.layer_path;
    j["call"] = static_cast<std::uint64_t>(q.call);
    j["input"] = static_cast<std::uint64_t>(q.input);
    j["quantizer_path"] = q.quantizer_path;
    j["value"] = static_cast<std::uint64_t>(q.value);
    j["binary"] = q.binary;
    if (q.output) j["output"] = true;
    points.push_back(std::move(j));
  }
  p["parity_points"] = std::move(points);
  std::vector<std::uint8_t> payload = json::to_cbor(p);
  json file = json::object();
  file["format"] = integer_model_format_name;
  file["version"] = integer_model_format_version;
  file["crc32"] = xq::detail::ckpt::checkpoint_crc32(payload.data(), payload.size());
  file["payload"] = json::binary(std::move(payload));
  return json::to_cbor(file);
}

XQ_DECL integer_model decode_integer_model(const std::uint8_t* data, std::size_t size, const std::string& source) {
  using namespace detail::imf;
  const reader r(source);
  json file;
  try {
    file = json::from_cbor(data, data + size);
  } catch (const json::exception& e) {
    throw io_error(source, std::string("not an xquant integer model (") + e.what() + ")");
  }
  if (!file.is_object() || !file.contains("format") || file["format"] != integer_model_format_name)
    throw io_error(source, std::string("not an xquant integer model: expected \"format\": \"") +
                               integer_model_format_name + "\"");
  const auto version = r.integer(file, "version", "file", 0, 1 << 20);
  if (version != integer_model_format_version)
    throw io_error(source, xq::detail::concat("integer model format version ", version, ", this xquant reads ",
                                              integer_model_format_version));
  const std::int64_t crc = r.integer(file, "crc32", "file", 0, 0xffffffffll);
  const json& payload_field = r.field(file, "payload", "file");
  if (!payload_field.is_binary()) r.fail("file.payload", "expected a byte string");
  const auto& payload = payload_field.get_binary();
  if (xq::detail::ckpt::checkpoint_crc32(payload.data(), payload.size()) != std::uint32_t(crc))
    throw io_error(source, "corrupted: the payload's CRC-32 does not match");
  json p;
  try {
    p = json::from_cbor(payload.begin(), payload.end());
  } catch (const json::exception& e) {
    r.fail("payload", e.what());
  }
  integer_model m;
  m.input_shape = r.sizes(p, "input_shape", "payload");
  m.scheme = requantization_from_string(r.text(p, "requantization", "payload"));
  m.value_count = r.count(p, "value_count", "payload", 1u << 24);
  m.input_value = r.count(p, "input_value", "payload", m.value_count ? m.value_count - 1 : 0);
  m.output_value = r.count(p, "output_value", "payload", m.value_count ? m.value_count - 1 : 0);
  if (!m.value_count) r.fail("payload.value_count", "expected at least one tensor");
  std::vector<bool> defined(m.value_count, false);
  defined[m.input_value] = true;
  const json& ops = r.field(p, "ops", "payload");
  if (!ops.is_array()) r.fail("payload.ops", "expected a list");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string at = "ops[" + std::to_string(i) + "]";
    std::unique_ptr<lowered_op> op = decode_op(r, ops[i], at);
    op->path = r.text(ops[i], "path", at);
    op->inputs = r.sizes(ops[i], "inputs", at);
    op->output = r.count(ops[i], "output", at, m.value_count - 1);
    const bool merge = dynamic_cast<const concatenate_op*>(op.get()) || dynamic_cast<const integer_add_op*>(op.get()) ||
                       dynamic_cast<const integer_multiply_op*>(op.get()) ||
                       (dynamic_cast<const real_function_op*>(op.get()) &&
                        (std::string(op->kind()) == "add" || std::string(op->kind()) == "multiply"));
    if (auto* fn = dynamic_cast<const function_op*>(op.get())) {
      try {
        fn->validate();  // its inputs and arguments, by function
      } catch (const argument_error& e) {
        r.fail(at, e.what());
      }
    } else if (dynamic_cast<const constant_op*>(op.get())) {
      if (!op->inputs.empty()) r.fail(at + ".inputs", "expected no inputs (a constant)");
    } else if (merge ? op->inputs.empty() : op->inputs.size() != 1) {
      r.fail(at + ".inputs", merge ? "expected at least one input" : "expected one input");
    }
    for (std::size_t v : op->inputs)
      if (v >= m.value_count || !defined[v])
        r.fail(at + ".inputs", xq::detail::concat("tensor %", v, " is not computed before this op"));
    if (defined[op->output]) r.fail(at + ".output", xq::detail::concat("tensor %", op->output, " is computed twice"));
    defined[op->output] = true;
    m.ops.push_back(std::move(op));
  }
  if (!defined[m.output_value]) r.fail("payload.output_value", "the output is never computed");
  const json& points = r.field(p, "parity_points", "payload");
  if (!points.is_array()) r.fail("payload.parity_points", "expected a list");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string at = "parity_points[" + std::to_string(i) + "]";
    parity_point q;
    q.label = r.text(points[i], "label", at);
    q.layer_path = r.text(points[i], "layer_path", at);
    q.call = r.count(points[i], "call", at);
    q.input = r.count(points[i], "input", at);
    q.quantizer_path = r.text(points[i], "quantizer_path", at);
    q.value = r.count(points[i], "value", at, m.value_count - 1);
    q.binary = r.flag(points[i], "binary", at);
    q.output = points[i].contains("output") ? r.flag(points[i], "output", at) : false;
    m.parity_points.push_back(std::move(q));
  }
  return m;
}

XQ_DECL void save_integer_model(const integer_model& m, const std::string& path) {
  xq::io::write_file_atomically(path, encode_integer_model(m));
}

XQ_DECL integer_model load_integer_model(const std::string& path) {
  const std::vector<std::uint8_t> bytes = xq::io::read_file_bytes(path);
  return decode_integer_model(bytes.data(), bytes.size(), path);
}

}  // namespace xq::deploy
