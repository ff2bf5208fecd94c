#pragma once
/// \file integer_model_file.ipp
/// The integer model's file (deploy/engine/integer_model_file.hpp): the envelope and the
/// CBOR machinery are io/'s (file_envelope.hpp, detail/cbor_codec.hpp); each op writes and
/// reads its own fields through op_writer / op_reader, whose CBOR form is here.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../../core/error.hpp"
#include "../../../io/atomic_file.hpp"
#include "../../../io/detail/cbor_codec.hpp"
#include "../../../io/file_envelope.hpp"
#include "../integer_model_file.hpp"
#include "../op_registry.hpp"

namespace xq::deploy {

namespace detail::imf {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

/// op_writer into a CBOR map.
class json_op_writer final : public op_writer {
 public:
  explicit json_op_writer(ordered_json& j) : j_(j) {}
  void flag(const char* key, bool v) override { j_[key] = v; }
  void integer(const char* key, std::int64_t v) override { j_[key] = v; }
  void number(const char* key, double v) override { j_[key] = v; }
  void text(const char* key, const std::string& v) override { j_[key] = v; }
  void sizes(const char* key, const std::vector<std::size_t>& v) override {
    ordered_json a = ordered_json::array();
    for (std::size_t x : v) a.push_back(static_cast<std::uint64_t>(x));
    j_[key] = std::move(a);
  }
  void integers(const char* key, const std::vector<std::int64_t>& v) override {
    ordered_json a = ordered_json::array();
    for (std::int64_t x : v) a.push_back(x);
    j_[key] = std::move(a);
  }
  void bytes(const char* key, const std::uint8_t* data, std::size_t n) override {
    j_[key] = ordered_json::binary(std::vector<std::uint8_t>(data, data + n));
  }
  void grid(const char* key, const quantization_grid& g) override { j_[key] = io::detail::encode_grid(g); }
  void map(const char* key, const std::function<void(op_writer&)>& fill) override {
    ordered_json child = ordered_json::object();
    json_op_writer w(child);
    fill(w);
    j_[key] = std::move(child);
  }
  void maps(const char* key, std::size_t count, const std::function<void(std::size_t, op_writer&)>& fill) override {
    ordered_json list = ordered_json::array();
    for (std::size_t i = 0; i < count; ++i) {
      ordered_json child = ordered_json::object();
      json_op_writer w(child);
      fill(i, w);
      list.push_back(std::move(child));
    }
    j_[key] = std::move(list);
  }

 private:
  ordered_json& j_;
};

/// op_reader of a parsed CBOR map; every failure an io_error naming the file and the place.
class json_op_reader final : public op_reader {
 public:
  json_op_reader(const json& j, const io::detail::cbor_fields& f, std::string where) : j_(j), f_(f), where_(std::move(where)) {
    if (!j_.is_object()) f_.fail(where_, "expected a map");
  }
  const std::string& where() const noexcept override { return where_; }
  [[noreturn]] void fail(const std::string& what) const override { f_.fail(where_, what); }
  bool has(const char* key) const override { return j_.contains(key); }
  bool flag(const char* key) const override { return f_.flag(j_, key, where_); }
  std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi) const override {
    return f_.integer(j_, key, where_, lo, hi);
  }
  double number(const char* key) const override { return f_.number(j_, key, where_); }
  std::string text(const char* key) const override { return f_.text(j_, key, where_); }
  std::vector<std::size_t> sizes(const char* key, std::size_t max_count, std::uint64_t hi) const override {
    const json& a = f_.field(j_, key, where_);
    if (!a.is_array() || a.size() > max_count)
      f_.fail(where_ + "." + key, xq::detail::concat("expected a list of at most ", max_count, " sizes"));
    std::vector<std::size_t> v;
    for (const json& e : a) {
      if (!e.is_number_unsigned() || e.get<std::uint64_t>() > hi)
        f_.fail(where_ + "." + key, xq::detail::concat("expected sizes up to ", hi));
      v.push_back(static_cast<std::size_t>(e.get<std::uint64_t>()));
    }
    return v;
  }
  std::vector<std::int64_t> integers(const char* key, std::size_t max_count) const override {
    const json& a = f_.field(j_, key, where_);
    if (!a.is_array() || a.size() > max_count)
      f_.fail(where_ + "." + key, xq::detail::concat("expected a list of at most ", max_count, " integers"));
    std::vector<std::int64_t> v;
    for (const json& e : a) {
      if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<std::uint64_t>() > std::uint64_t(INT64_MAX)))
        f_.fail(where_ + "." + key, "expected integers");
      v.push_back(e.get<std::int64_t>());
    }
    return v;
  }
  const std::vector<std::uint8_t>& bytes(const char* key) const override { return f_.bytes(j_, key, where_); }
  quantization_grid grid(const char* key) const override {
    return io::detail::decode_grid(f_.field(j_, key, where_), f_, where_ + "." + key);
  }
  std::unique_ptr<op_reader> map(const char* key) const override {
    return std::make_unique<json_op_reader>(f_.field(j_, key, where_), f_, where_ + "." + key);
  }
  std::vector<std::unique_ptr<op_reader>> maps(const char* key, std::size_t max_count) const override {
    const json& a = f_.field(j_, key, where_);
    if (!a.is_array() || a.size() > max_count)
      f_.fail(where_ + "." + key, xq::detail::concat("expected a list of at most ", max_count, " maps"));
    std::vector<std::unique_ptr<op_reader>> v;
    for (std::size_t i = 0; i < a.size(); ++i)
      v.push_back(std::make_unique<json_op_reader>(a[i], f_, xq::detail::concat(where_, ".", key, "[", i, "]")));
    return v;
  }

 private:
  const json& j_;
  const io::detail::cbor_fields& f_;
  std::string where_;
};

}  // namespace detail::imf

XQ_DECL const io::file_format& integer_model_file_format() {
  static const io::file_format f{integer_model_format_name,
                                 "integer model",
                                 integer_model_format_version,
                                 integer_model_format_version,
                                 "written before the engine's ops saved themselves; lower the model again and save it",
                                 true};
  return f;
}

XQ_DECL std::vector<std::uint8_t> encode_integer_model(const integer_model& m) {
  using namespace detail::imf;
  ordered_json p = ordered_json::object();
  p["writer"] = xq::detail::concat("xquant ", XQ_VERSION_MAJOR, ".", XQ_VERSION_MINOR, ".", XQ_VERSION_PATCH);
  json_op_writer w(p);
  w.sizes("input_shape", m.input_shape);
  p["requantization"] = to_string(m.scheme);
  w.size("value_count", m.value_count);
  w.size("input_value", m.input_value);
  w.size("output_value", m.output_value);
  w.sizes("other_input_values", m.other_input_values);
  w.maps("other_input_shapes", m.other_input_shapes.size(),
         [&](std::size_t k, op_writer& o) { o.sizes("shape", m.other_input_shapes[k]); });
  w.sizes("other_output_values", m.other_output_values);
  w.maps("ops", m.ops.size(), [&](std::size_t i, op_writer& o) {
    const lowered_op& op = *m.ops[i];
    o.text("kind", op.kind());
    o.text("path", op.path);
    o.sizes("inputs", op.inputs);
    o.size("output", op.output);
    op.encode(o);
  });
  w.maps("parity_points", m.parity_points.size(), [&](std::size_t i, op_writer& o) {
    const parity_point& q = m.parity_points[i];
    o.text("label", q.label);
    o.text("layer_path", q.layer_path);
    o.size("call", q.call);
    o.size("input", q.input);
    o.text("quantizer_path", q.quantizer_path);
    o.size("value", q.value);
    o.flag("binary", q.binary);
    o.flag("output", q.output);
  });
  return io::wrap_envelope(integer_model_file_format(), ordered_json::to_cbor(p));
}

XQ_DECL integer_model decode_integer_model(const std::uint8_t* data, std::size_t size, const std::string& source) {
  using namespace detail::imf;
  unsigned version = 0;
  const std::vector<std::uint8_t> payload = io::open_envelope(integer_model_file_format(), data, size, source, version);
  json p;
  std::string error;
  if (!io::detail::parse_bounded_cbor(payload.data(), payload.size(), p, error))
    throw io_error(source, "malformed integer model: the payload is not one CBOR item: " + error);
  const io::detail::cbor_fields fields(source, "integer model");
  const json_op_reader r(p, fields, "payload");
  integer_model m;
  m.input_shape = r.sizes("input_shape", engine_limits::rank - 1, std::uint64_t(1) << 31);
  try {
    m.scheme = requantization_from_string(r.text("requantization"));
  } catch (const argument_error& e) {
    r.fail(e.what());
  }
  const std::size_t value_limit = 2 * engine_limits::ops + 1;
  m.value_count = r.size("value_count", value_limit);
  m.input_value = r.size("input_value", value_limit);
  m.output_value = r.size("output_value", value_limit);
  if (r.has("other_input_values")) {  // a model of several inputs or outputs
    m.other_input_values = r.sizes("other_input_values", 64, value_limit);
    for (const std::unique_ptr<op_reader>& o : r.maps("other_input_shapes", 64))
      m.other_input_shapes.push_back(o->sizes("shape", engine_limits::rank - 1, std::uint64_t(1) << 31));
    m.other_output_values = r.sizes("other_output_values", 64, value_limit);
  }
  for (const std::unique_ptr<op_reader>& o : r.maps("ops", engine_limits::ops)) {
    const std::string kind = o->text("kind");
    const op_decoder decode = find_op_decoder(kind);
    if (!decode) o->fail("unknown kind \"" + kind + "\"");
    std::unique_ptr<lowered_op> op;
    try {
      op = decode(kind, *o);
    } catch (const argument_error& e) {
      o->fail(e.what());
    }
    op->path = o->text("path");
    op->inputs = o->sizes("inputs", 256, value_limit);
    op->output = o->size("output", value_limit);
    m.ops.push_back(std::move(op));
  }
  for (const std::unique_ptr<op_reader>& q : r.maps("parity_points", std::size_t(1) << 16)) {
    parity_point point;
    point.label = q->text("label");
    point.layer_path = q->text("layer_path");
    point.call = q->size("call", std::size_t(1) << 30);
    point.input = q->size("input", 256);
    point.quantizer_path = q->text("quantizer_path");
    point.value = q->size("value", value_limit);
    point.binary = q->flag("binary");
    point.output = q->flag("output");
    m.parity_points.push_back(std::move(point));
  }
  // The model as a whole, for a batch of one: numbering, every op's rule, the bounds.
  try {
    m.check(1);
  } catch (const argument_error& e) {
    throw io_error(source, std::string("malformed integer model: ") + e.what());
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
