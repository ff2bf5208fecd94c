#pragma once
/// \file cbor_codec.ipp
/// The CBOR machinery of xquant's files (io/detail/cbor_codec.hpp).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../detail/cbor_codec.hpp"

namespace xq::io::detail {

/// Builds a json value from SAX events, like nlohmann's own DOM parser, but refuses
/// nesting deeper than `max_depth` (the parser recurses once per level: a few kilobytes
/// of 0x81 bytes would otherwise exhaust the stack) and duplicate map keys.
class bounded_json_builder {
 public:
  using json = nlohmann::json;

  bounded_json_builder(json& root, std::size_t max_depth) : root_(root), max_depth_(max_depth) {}

  bool null() { return add(json(nullptr)); }
  bool boolean(bool v) { return add(json(v)); }
  bool number_integer(json::number_integer_t v) { return add(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return add(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return add(json(v)); }
  bool string(json::string_t& v) { return add(json(std::move(v))); }
  bool binary(json::binary_t& v) {
    return add(json::binary(std::move(static_cast<json::binary_t::container_type&>(v))));
  }
  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool key(json::string_t& k) {
    if (stack_.back()->contains(k)) return fail(xq::detail::concat("the key \"", k, "\" twice in one map"));
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const std::exception& e) { return fail(e.what()); }

  const std::string& error() const noexcept { return error_; }

 private:
  bool fail(std::string what) {
    if (error_.empty()) error_ = std::move(what);
    return false;
  }
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  bool add(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json::value_t t) {
    if (stack_.size() >= max_depth_) return fail(xq::detail::concat("CBOR nested deeper than ", max_depth_, " levels"));
    stack_.push_back(place(json(t)));
    return true;
  }

  json& root_;
  std::size_t max_depth_;
  std::vector<json*> stack_;
  std::string key_;
  std::string error_;
};

XQ_DECL bool parse_bounded_cbor(const std::uint8_t* data, std::size_t n, nlohmann::json& out, std::string& error,
                                std::size_t max_depth) {
  bounded_json_builder builder(out, max_depth);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(data, data + n, &builder, nlohmann::json::input_format_t::cbor, true);
  } catch (const std::exception& e) {  // nlohmann reports through the SAX, but be sure
    error = e.what();
    return false;
  }
  if (!ok) error = builder.error().empty() ? std::string("invalid CBOR") : builder.error();
  return ok;
}

XQ_DECL void cbor_fields::fail(const std::string& where, const std::string& problem) const {
  throw io_error(source_, "malformed " + what_ + ": " + where + ": " + problem);
}

XQ_DECL const nlohmann::json& cbor_fields::field(const json& j, const char* key, const std::string& where) const {
  if (!j.is_object()) fail(where, "expected a map");
  const auto it = j.find(key);
  if (it == j.end()) fail(where, std::string("missing \"") + key + "\"");
  return *it;
}

XQ_DECL std::string cbor_fields::text(const json& j, const char* key, const std::string& where) const {
  const json& f = field(j, key, where);
  if (!f.is_string()) fail(where + "." + key, "expected text");
  return f.get<std::string>();
}

XQ_DECL bool cbor_fields::flag(const json& j, const char* key, const std::string& where) const {
  const json& f = field(j, key, where);
  if (!f.is_boolean()) fail(where + "." + key, "expected true or false");
  return f.get<bool>();
}

XQ_DECL double cbor_fields::number(const json& j, const char* key, const std::string& where) const {
  const json& f = field(j, key, where);
  if (!f.is_number()) fail(where + "." + key, "expected a number");
  return f.get<double>();
}

XQ_DECL std::int64_t cbor_fields::integer(const json& j, const char* key, const std::string& where, std::int64_t lo,
                                          std::int64_t hi) const {
  const json& f = field(j, key, where);
  if (f.is_number_unsigned()) {
    const std::uint64_t u = f.get<std::uint64_t>();
    if (hi < 0 || u > std::uint64_t(hi)) fail(where + "." + key, xq::detail::concat("expected ", lo, "..", hi, ", given ", u));
    return std::int64_t(u);
  }
  if (!f.is_number_integer()) fail(where + "." + key, "expected an integer");
  const std::int64_t v = f.get<std::int64_t>();
  if (v < lo || v > hi) fail(where + "." + key, xq::detail::concat("expected ", lo, "..", hi, ", given ", v));
  return v;
}

XQ_DECL const std::vector<std::uint8_t>& cbor_fields::bytes(const json& j, const char* key, const std::string& where) const {
  const json& f = field(j, key, where);
  if (!f.is_binary()) fail(where + "." + key, "expected a byte string");
  return f.get_binary();
}

XQ_DECL nlohmann::ordered_json encode_config(const quantizer_config& c) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
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
  j["init_min"] = static_cast<double>(c.init_min);
  j["init_max"] = static_cast<double>(c.init_max);
  return j;
}

template <class T>
inline nlohmann::ordered_json byte_string(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return nlohmann::ordered_json::binary(std::move(b));
}

XQ_DECL nlohmann::ordered_json encode_grid(const quantization_grid& g) {
  using ordered_json = nlohmann::ordered_json;
  ordered_json j = ordered_json::object();
  j["element"] = to_string(g.element);
  j["num_bits"] = g.num_bits;
  j["qmin"] = g.qmin;
  j["qmax"] = g.qmax;
  j["per_channel"] = g.per_channel;
  j["channel_axis"] = g.channel_axis;
  j["block_size"] = static_cast<std::uint64_t>(g.block_size);
  j["scale_type"] = to_string(g.scale_type);
  j["scale"] = byte_string(g.scale);
  j["zero_point"] = byte_string(g.zero_point);
  j["tensor_scale"] = g.tensor_scale ? ordered_json(double(*g.tensor_scale)) : ordered_json(nullptr);
  j["dynamic"] = g.dynamic;
  if (!g.offset.empty()) j["offset"] = byte_string(g.offset);  // absent before torchao's int4 weight-only grid
  const rounding_rule& r = g.rounding;
  ordered_json rule = ordered_json::object();
  rule["operator"] = to_string(r.op);
  rule["half_to_even"] = r.half_to_even;
  rule["legacy"] = r.legacy;
  rule["product"] = r.product;
  rule["range_min"] = byte_string(r.range_min);
  rule["range_max"] = byte_string(r.range_max);
  rule["float_zero_point"] = byte_string(r.float_zero_point);
  rule["fused_multiply_add"] = r.fused_multiply_add;
  rule["threshold"] = double(r.threshold);
  rule["two_max"] = double(r.two_max);
  j["rounding"] = std::move(rule);
  return j;
}

XQ_DECL quantization_grid decode_grid(const nlohmann::json& j, const cbor_fields& r, const std::string& where,
                                      std::size_t max_scales) {
  quantization_grid g;
  const std::string element = r.text(j, "element", where);
  const auto e = grid_element_from_string(element);
  if (!e) r.fail(where + ".element", "unknown element type \"" + element + "\"");
  g.element = *e;
  g.num_bits = int(r.integer(j, "num_bits", where, 1, 32));
  g.qmin = std::int32_t(r.integer(j, "qmin", where, INT32_MIN, INT32_MAX));
  g.qmax = std::int32_t(r.integer(j, "qmax", where, INT32_MIN, INT32_MAX));
  g.per_channel = r.flag(j, "per_channel", where);
  g.channel_axis = int(r.integer(j, "channel_axis", where, -32, 31));
  g.block_size = std::size_t(r.integer(j, "block_size", where, 0, std::int64_t(1) << 20));
  const std::string scale_type = r.text(j, "scale_type", where);
  const auto st = scale_element_from_string(scale_type);
  if (!st) r.fail(where + ".scale_type", "unknown scale type \"" + scale_type + "\"");
  g.scale_type = *st;
  g.scale = r.numbers<float>(j, "scale", where);
  g.zero_point = r.numbers<std::int32_t>(j, "zero_point", where);
  if (g.scale.size() > max_scales) r.fail(where + ".scale", xq::detail::concat("expected at most ", max_scales, " scales"));
  const nlohmann::json& ts = r.field(j, "tensor_scale", where);
  if (!ts.is_null()) g.tensor_scale = float(r.number(j, "tensor_scale", where));
  g.dynamic = r.flag(j, "dynamic", where);
  if (j.contains("offset")) g.offset = r.numbers<float>(j, "offset", where);
  const nlohmann::json& rule = r.field(j, "rounding", where);
  const std::string rw = where + ".rounding";
  const std::string op = r.text(rule, "operator", rw);
  const auto o = rounding_operator_from_string(op);
  if (!o) r.fail(rw + ".operator", "unknown rounding operator \"" + op + "\"");
  rounding_rule& rr = g.rounding;
  rr.op = *o;
  rr.half_to_even = r.flag(rule, "half_to_even", rw);
  rr.legacy = r.flag(rule, "legacy", rw);
  rr.product = r.flag(rule, "product", rw);
  rr.range_min = r.numbers<float>(rule, "range_min", rw);
  rr.range_max = r.numbers<float>(rule, "range_max", rw);
  rr.float_zero_point = r.numbers<float>(rule, "float_zero_point", rw);
  rr.fused_multiply_add = r.flag(rule, "fused_multiply_add", rw);
  rr.threshold = float(r.number(rule, "threshold", rw));
  rr.two_max = float(r.number(rule, "two_max", rw));
  try {
    check_grid(g, where);
  } catch (const argument_error& err) {
    r.fail(where, err.what());
  }
  return g;
}

}  // namespace xq::io::detail
