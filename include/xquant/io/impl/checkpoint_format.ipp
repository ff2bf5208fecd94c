#pragma once
/// \file checkpoint_format.ipp
/// The checkpoint file's encoding and decoding (io/checkpoint_format.hpp): its payload;
/// the envelope (format, version, CRC-32) is io/file_envelope.hpp's, the CBOR machinery
/// and the quantizer codec io/detail/cbor_codec.hpp's, shared with the integer model file.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../addressable_shape.hpp"
#include "../checkpoint_format.hpp"
#include "../detail/cbor_codec.hpp"
#include "../file_envelope.hpp"

namespace xq {

XQ_DECL const tensor* checkpoint_slot::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.first == name) return &t.second;
  return nullptr;
}

namespace detail::ckpt {

XQ_DECL const io::file_format& checkpoint_file_format() {
  static const io::file_format f{checkpoint_format_name, "checkpoint", checkpoint_format_version, 1};
  return f;
}

XQ_DECL const std::string& checkpoint_magic() {
  static const std::string magic = io::envelope_magic(checkpoint_file_format());
  return magic;
}

XQ_DECL bool host_is_little_endian() noexcept {
  const std::uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

XQ_DECL std::uint32_t checkpoint_crc32(const std::uint8_t* data, std::size_t n) { return io::crc32(data, n); }

XQ_DECL std::string hex_bytes(const std::uint8_t* data, std::size_t n) { return io::hex_bytes(data, n); }

// ---- encoding -------------------------------------------------------------------

using ordered_json = nlohmann::ordered_json;

XQ_DECL ordered_json encode_tensor(const tensor& t) {
  ordered_json shape = ordered_json::array();
  for (std::size_t d : t.shape()) shape.push_back(static_cast<std::uint64_t>(d));
  std::vector<std::uint8_t> bytes(t.size() * 4);
  if (!bytes.empty()) std::memcpy(bytes.data(), t.data(), bytes.size());
  if (!host_is_little_endian())
    for (std::size_t i = 0; i < bytes.size(); i += 4) std::reverse(bytes.begin() + i, bytes.begin() + i + 4);
  ordered_json j = ordered_json::object();
  j["shape"] = std::move(shape);
  j["data"] = ordered_json::binary(std::move(bytes));
  return j;
}

XQ_DECL ordered_json encode_strings(const std::vector<std::string>& list) {
  ordered_json j = ordered_json::array();
  for (const auto& s : list) j.push_back(s);
  return j;
}

/// One optimizer's map; a case_optimizer's adds "members", each an optimizer map.
XQ_DECL ordered_json encode_optimizer(const checkpoint_optimizer& o) {
  ordered_json j = ordered_json::object();
  j["type"] = o.type;
  j["iterations"] = static_cast<std::uint64_t>(o.iterations);
  ordered_json options = ordered_json::object();
  for (const auto& kv : o.options) options[kv.first] = kv.second;
  j["options"] = std::move(options);
  ordered_json slots = ordered_json::array();
  for (const auto& slot : o.slots) {
    ordered_json e = ordered_json::object();
    e["parameter"] = slot.parameter;
    e["step"] = static_cast<std::uint64_t>(slot.step);
    ordered_json tensors = ordered_json::object();
    for (const auto& t : slot.tensors) tensors[t.first] = encode_tensor(t.second);
    e["tensors"] = std::move(tensors);
    slots.push_back(std::move(e));
  }
  j["state"] = std::move(slots);
  // Only when there are members: files without a case_optimizer stay as they were.
  if (!o.members.empty()) {
    ordered_json members = ordered_json::array();
    for (const auto& m : o.members) members.push_back(encode_optimizer(m));
    j["members"] = std::move(members);
  }
  return j;
}

XQ_DECL std::vector<std::uint8_t> encode_payload(const checkpoint_state& s) {
  ordered_json p = ordered_json::object();
  p["writer"] = concat("xquant ", XQ_VERSION_MAJOR, ".", XQ_VERSION_MINOR, ".", XQ_VERSION_PATCH);
  ordered_json params = ordered_json::array();
  for (const auto& q : s.parameters) {
    ordered_json j = ordered_json::object();
    j["name"] = q.name;
    j["trainable"] = q.trainable;
    j["uses"] = encode_strings(q.uses);
    j["value"] = encode_tensor(q.value);
    params.push_back(std::move(j));
  }
  p["parameters"] = std::move(params);
  ordered_json quantizers = ordered_json::array();
  for (const auto& q : s.quantizers) {
    ordered_json j = ordered_json::object();
    j["path"] = q.path;
    j["kind"] = q.kind;
    j["config"] = q.config ? io::detail::encode_config(*q.config) : ordered_json(nullptr);
    if (!q.format.empty()) j["format"] = q.format;
    j["enabled"] = q.enabled;
    j["observer_enabled"] = q.observer_enabled;
    j["fake_quant_enabled"] = q.fake_quant_enabled;
    j["batches_seen"] = static_cast<std::uint64_t>(q.batches_seen);
    j["built"] = q.built;
    quantizers.push_back(std::move(j));
  }
  p["quantizers"] = std::move(quantizers);
  ordered_json folds = ordered_json::array();
  for (const auto& f : s.batch_norm_folds) {
    ordered_json j = ordered_json::object();
    j["layers"] = encode_strings(f.layers);
    j["gamma"] = f.gamma.empty() ? ordered_json(nullptr) : ordered_json(f.gamma);
    j["moving_variance"] = f.moving_variance;
    j["epsilon"] = static_cast<double>(f.epsilon);
    j["freeze_after"] = static_cast<std::int64_t>(f.freeze_after);
    j["training_calls"] = static_cast<std::int64_t>(f.training_calls);
    folds.push_back(std::move(j));
  }
  p["batch_norm_folds"] = std::move(folds);
  if (s.optimizer) {
    p["optimizer"] = encode_optimizer(*s.optimizer);
  } else {
    p["optimizer"] = nullptr;
  }
  if (s.generators) {
    ordered_json generators = ordered_json::array();
    for (const auto& g : *s.generators) {
      ordered_json j = ordered_json::object();
      j["path"] = g.path;
      j["state"] = g.state;
      generators.push_back(std::move(j));
    }
    p["generators"] = std::move(generators);
  }
  return ordered_json::to_cbor(p);
}

XQ_DECL std::vector<std::uint8_t> wrap_checkpoint_payload(std::vector<std::uint8_t> payload) {
  return io::wrap_envelope(checkpoint_file_format(), std::move(payload));
}

// ---- decoding -------------------------------------------------------------------

/// Reads the payload's json into a checkpoint_state; every mismatch with the documented
/// schema is an io_error naming the file and the place in the payload.
class payload_reader {
 public:
  using json = nlohmann::json;

  payload_reader(const std::string& source, unsigned version) : source_(source), version_(version) {}

  checkpoint_state read(json& p) {
    checkpoint_state s;
    s.version = version_;
    require_map(p, "the payload");
    json& params = field(p, "parameters", "the payload");
    require_array(params, "parameters");
    for (std::size_t i = 0; i < params.size(); ++i) s.parameters.push_back(parameter(params[i], at("parameters", i)));
    json& quantizers = field(p, "quantizers", "the payload");
    require_array(quantizers, "quantizers");
    for (std::size_t i = 0; i < quantizers.size(); ++i)
      s.quantizers.push_back(quantizer(quantizers[i], at("quantizers", i)));
    json& folds = field(p, "batch_norm_folds", "the payload");
    require_array(folds, "batch_norm_folds");
    for (std::size_t i = 0; i < folds.size(); ++i)
      s.batch_norm_folds.push_back(fold(folds[i], at("batch_norm_folds", i)));
    json& o = field(p, "optimizer", "the payload");
    if (!o.is_null()) s.optimizer = optimizer(o, "optimizer");
    if (const auto g = p.find("generators"); g != p.end()) {  // optional: older version-2 files have none
      require_array(*g, "generators");
      s.generators.emplace();
      for (std::size_t i = 0; i < g->size(); ++i) {
        json& e = (*g)[i];
        const std::string where = at("generators", i);
        require_map(e, where);
        s.generators->push_back({text(e, "path", where), text(e, "state", where)});
      }
      unique(*s.generators, [](const checkpoint_generator& e) { return e.path; }, "generators", "path");
    }
    unique(s.parameters, [](const checkpoint_parameter& q) { return q.name; }, "parameters", "name");
    unique(s.quantizers, [](const checkpoint_quantizer& q) { return q.path; }, "quantizers", "path");
    if (s.optimizer) unique_slots(*s.optimizer, "optimizer");
    return s;
  }

 private:
  [[noreturn]] void malformed(const std::string& where, const std::string& what) const {
    throw io_error(source_, concat("malformed checkpoint: ", where, ": ", what));
  }
  static std::string at(const std::string& list, std::size_t i) { return concat(list, "[", i, "]"); }
  static std::string type_of(const json& j) {
    if (j.is_binary()) return "a byte string";
    if (j.is_number_unsigned()) return "an unsigned integer";
    if (j.is_number_integer()) return "a negative integer";
    if (j.is_number_float()) return "a floating-point number";
    return concat("a ", j.type_name());
  }
  void require_map(const json& j, const std::string& where) const {
    if (!j.is_object()) malformed(where, concat("expected a map, given ", type_of(j)));
  }
  void require_array(const json& j, const std::string& where) const {
    if (!j.is_array()) malformed(where, concat("expected an array, given ", type_of(j)));
  }
  json& field(json& j, const char* key, const std::string& where) const {
    const auto it = j.find(key);
    if (it == j.end()) malformed(where, concat("no \"", key, "\" entry"));
    return *it;
  }
  static std::string sub(const std::string& where, const char* key) { return where + "." + key; }

  std::string text(json& j, const char* key, const std::string& where) const {
    json& v = field(j, key, where);
    if (!v.is_string()) malformed(sub(where, key), concat("expected a text string, given ", type_of(v)));
    return v.get<std::string>();
  }
  bool boolean(json& j, const char* key, const std::string& where) const {
    json& v = field(j, key, where);
    if (!v.is_boolean()) malformed(sub(where, key), concat("expected true or false, given ", type_of(v)));
    return v.get<bool>();
  }
  std::uint64_t count(json& j, const char* key, const std::string& where) const {
    json& v = field(j, key, where);
    if (!v.is_number_unsigned()) malformed(sub(where, key), concat("expected an unsigned integer, given ", type_of(v)));
    return v.get<std::uint64_t>();
  }
  template <class Int>
  Int integer(json& j, const char* key, const std::string& where) const {
    json& v = field(j, key, where);
    if (v.is_number_unsigned()) {
      const std::uint64_t u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<Int>::max()))
        malformed(sub(where, key),
                  concat("expected an integer of at most ", std::numeric_limits<Int>::max(), ", given ", u));
      return static_cast<Int>(u);
    }
    if (v.is_number_integer()) {
      const std::int64_t s = v.get<std::int64_t>();
      if (s < static_cast<std::int64_t>(std::numeric_limits<Int>::min()))
        malformed(sub(where, key),
                  concat("expected an integer of at least ", std::numeric_limits<Int>::min(), ", given ", s));
      return static_cast<Int>(s);
    }
    malformed(sub(where, key), concat("expected an integer, given ", type_of(v)));
  }
  double number(json& j, const char* key, const std::string& where) const {
    json& v = field(j, key, where);
    if (!v.is_number()) malformed(sub(where, key), concat("expected a number, given ", type_of(v)));
    return v.get<double>();
  }
  std::vector<std::string> strings(json& j, const char* key, const std::string& where) const {
    json& v = field(j, key, where);
    if (!v.is_array()) malformed(sub(where, key), concat("expected an array of text strings, given ", type_of(v)));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) malformed(at(sub(where, key), i), concat("expected a text string, given ", type_of(v[i])));
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

  /// {"shape": [d...], "data": 4 * prod(d) bytes of little-endian float32}.
  tensor tensor_value(json& j, const std::string& where) const {
    require_map(j, where);
    json& shape = field(j, "shape", where);
    if (!shape.is_array()) malformed(sub(where, "shape"), concat("expected an array of sizes, given ", type_of(shape)));
    std::vector<std::size_t> dims;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (!shape[i].is_number_unsigned())
        malformed(at(sub(where, "shape"), i), concat("expected an unsigned integer, given ", type_of(shape[i])));
      const std::uint64_t d = shape[i].get<std::uint64_t>();
      if (d > std::numeric_limits<std::size_t>::max()) malformed(sub(where, "shape"), "a dimension too large");
      dims.push_back(static_cast<std::size_t>(d));
    }
    const std::optional<std::uint64_t> elements = io::detail::addressable_element_count(dims);
    if (!elements) malformed(sub(where, "shape"), "a shape with too many elements");
    const std::uint64_t n = *elements;
    json& data = field(j, "data", where);
    if (!data.is_binary()) malformed(sub(where, "data"), concat("expected a byte string, given ", type_of(data)));
    const auto& bytes = data.get_binary();
    if (bytes.size() != n * 4)
      malformed(sub(where, "data"),
                concat("expected ", n * 4, " bytes (float32 of shape ", shape_string(dims), "), given ", bytes.size()));
    tensor t = tensor::from_shape(dims);
    if (n) std::memcpy(t.data(), bytes.data(), bytes.size());
    if (!host_is_little_endian()) {
      auto* b = reinterpret_cast<unsigned char*>(t.data());
      for (std::size_t i = 0; i < bytes.size(); i += 4) std::reverse(b + i, b + i + 4);
    }
    return t;
  }
  vector vector_value(json& j, const std::string& where) const {
    const tensor t = tensor_value(j, where);
    if (t.dimension() != 1) malformed(sub(where, "shape"), concat("expected rank 1, given ", shape_string(t.shape())));
    vector v = vector::from_shape({t.size()});
    std::copy(t.begin(), t.end(), v.begin());
    return v;
  }

  checkpoint_parameter parameter(json& j, const std::string& where) const {
    require_map(j, where);
    checkpoint_parameter p;
    p.name = text(j, "name", where);
    p.trainable = boolean(j, "trainable", where);
    p.uses = strings(j, "uses", where);
    p.value = tensor_value(field(j, "value", where), sub(where, "value"));
    return p;
  }

  quantizer_config config(json& j, const std::string& where) const {
    require_map(j, where);
    quantizer_config c;
    c.num_bits = integer<int>(j, "num_bits", where);
    c.symmetric = boolean(j, "symmetric", where);
    c.narrow_range = boolean(j, "narrow_range", where);
    c.per_channel = boolean(j, "per_channel", where);
    c.channel_axis = integer<int>(j, "channel_axis", where);
    const std::string numerics = text(j, "numerics", where);
    bool known = false;
    for (auto n : {quant_numerics::tf_qdq, quant_numerics::tf_fake_quant, quant_numerics::torch_fake_quant})
      if (numerics == to_string(n)) {
        c.numerics = n;
        known = true;
      }
    if (!known)
      malformed(sub(where, "numerics"),
                concat("expected tf_qdq, tf_fake_quant or torch_fake_quant, given \"", numerics, "\""));
    const std::string tracking = text(j, "tracking", where);
    known = false;
    for (auto t : {range_tracking::last_value, range_tracking::moving_average, range_tracking::all_values})
      if (tracking == to_string(t)) {
        c.tracking = t;
        known = true;
      }
    if (!known)
      malformed(sub(where, "tracking"),
                concat("expected last_value, moving_average or all_values, given \"", tracking, "\""));
    c.ema_decay = number(j, "ema_decay", where);
    c.averaging_constant = number(j, "averaging_constant", where);
    c.reduce_range = boolean(j, "reduce_range", where);
    c.init_min = static_cast<float>(number(j, "init_min", where));
    c.init_max = static_cast<float>(number(j, "init_max", where));
    return c;
  }

  checkpoint_quantizer quantizer(json& j, const std::string& where) const {
    require_map(j, where);
    checkpoint_quantizer q;
    q.path = text(j, "path", where);
    q.enabled = boolean(j, "enabled", where);
    const std::uint64_t batches = count(j, "batches_seen", where);
    if (batches > std::numeric_limits<std::size_t>::max()) malformed(sub(where, "batches_seen"), "too large");
    q.batches_seen = static_cast<std::size_t>(batches);
    if (version_ == 1) {  // a fake quantizer with its range
      q.kind = "fake_quantizer";
      q.config = config(field(j, "config", where), sub(where, "config"));
      q.min = vector_value(field(j, "min", where), sub(where, "min"));
      q.max = vector_value(field(j, "max", where), sub(where, "max"));
      return q;
    }
    q.kind = text(j, "kind", where);
    q.built = boolean(j, "built", where);
    q.observer_enabled = boolean(j, "observer_enabled", where);
    q.fake_quant_enabled = boolean(j, "fake_quant_enabled", where);
    json& c = field(j, "config", where);
    if (!c.is_null()) q.config = config(c, sub(where, "config"));
    if (j.contains("format")) q.format = text(j, "format", where);
    return q;
  }

  checkpoint_fold fold(json& j, const std::string& where) const {
    require_map(j, where);
    checkpoint_fold f;
    f.layers = strings(j, "layers", where);
    json& gamma = field(j, "gamma", where);
    if (gamma.is_string()) f.gamma = gamma.get<std::string>();
    else if (!gamma.is_null())
      malformed(sub(where, "gamma"), concat("expected a text string or null, given ", type_of(gamma)));
    f.moving_variance = text(j, "moving_variance", where);
    f.epsilon = static_cast<float>(number(j, "epsilon", where));
    f.freeze_after = integer<long>(j, "freeze_after", where);
    f.training_calls = integer<long>(j, "training_calls", where);
    return f;
  }

  checkpoint_optimizer optimizer(json& j, const std::string& where) const {
    require_map(j, where);
    checkpoint_optimizer o;
    o.type = text(j, "type", where);
    const std::uint64_t iterations = count(j, "iterations", where);
    if (iterations > std::numeric_limits<std::size_t>::max()) malformed(sub(where, "iterations"), "too large");
    o.iterations = static_cast<std::size_t>(iterations);
    json& options = field(j, "options", where);
    require_map(options, sub(where, "options"));
    for (auto it = options.begin(); it != options.end(); ++it)
      if (it.value().is_number()) o.options.emplace_back(it.key(), it.value().get<double>());
    json& state = field(j, "state", where);
    require_array(state, sub(where, "state"));
    for (std::size_t i = 0; i < state.size(); ++i) {
      const std::string w = at(sub(where, "state"), i);
      json& e = state[i];
      require_map(e, w);
      checkpoint_slot slot;
      slot.parameter = text(e, "parameter", w);
      const std::uint64_t step = count(e, "step", w);
      if (step > std::numeric_limits<std::size_t>::max()) malformed(sub(w, "step"), "too large");
      slot.step = static_cast<std::size_t>(step);
      json& tensors = field(e, "tensors", w);
      require_map(tensors, sub(w, "tensors"));
      for (auto it = tensors.begin(); it != tensors.end(); ++it)
        slot.tensors.emplace_back(it.key(), tensor_value(it.value(), sub(w, "tensors") + "." + it.key()));
      o.slots.push_back(std::move(slot));
    }
    const auto members = j.find("members");  // optional: a case_optimizer's members
    if (members != j.end()) {
      require_array(*members, sub(where, "members"));
      for (std::size_t i = 0; i < members->size(); ++i)
        o.members.push_back(optimizer((*members)[i], at(sub(where, "members"), i)));
    }
    return o;
  }

  /// No parameter twice in one optimizer's state, nor in two members of a case_optimizer.
  void unique_slots(const checkpoint_optimizer& o, const std::string& where) const {
    std::vector<std::string> names;
    collect_slot_names(o, names);
    unique(names, [](const std::string& n) { return n; }, (where + ".state").c_str(), "parameter");
  }
  static void collect_slot_names(const checkpoint_optimizer& o, std::vector<std::string>& out) {
    for (const auto& slot : o.slots) out.push_back(slot.parameter);
    for (const auto& m : o.members) collect_slot_names(m, out);
  }

  template <class T, class Key>
  void unique(const std::vector<T>& list, Key key, const char* where, const char* what) const {
    std::vector<std::string> keys;
    for (const auto& x : list) keys.push_back(key(x));
    std::sort(keys.begin(), keys.end());
    const auto dup = std::adjacent_find(keys.begin(), keys.end());
    if (dup != keys.end()) malformed(where, concat("the ", what, " \"", *dup, "\" twice"));
  }

  const std::string& source_;
  unsigned version_;
};

XQ_DECL std::vector<std::uint8_t> open_checkpoint_envelope(const std::uint8_t* data, std::size_t size,
                                                           const std::string& source, unsigned& file_version) {
  return io::open_envelope(checkpoint_file_format(), data, size, source, file_version);
}

XQ_DECL checkpoint_state read_checkpoint_payload(const std::vector<std::uint8_t>& payload,
                                                 const std::string& source, unsigned version) {
  nlohmann::json p;
  std::string error;
  if (!io::detail::parse_bounded_cbor(payload.data(), payload.size(), p, error))
    throw io_error(source, concat("malformed checkpoint: the payload is not one CBOR item: ", error));
  return payload_reader(source, version).read(p);
}

}  // namespace detail::ckpt

XQ_DECL std::vector<std::uint8_t> encode_checkpoint(const checkpoint_state& state) {
  return detail::ckpt::wrap_checkpoint_payload(detail::ckpt::encode_payload(state));
}

XQ_DECL checkpoint_state decode_checkpoint(const std::uint8_t* data, std::size_t size, const std::string& source) {
  unsigned version = 0;
  std::vector<std::uint8_t> payload = detail::ckpt::open_checkpoint_envelope(data, size, source, version);
  return detail::ckpt::read_checkpoint_payload(payload, source, version);
}

}  // namespace xq
