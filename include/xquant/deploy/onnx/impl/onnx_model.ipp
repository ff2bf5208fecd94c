#pragma once
/// \file onnx_model.ipp
/// The ONNX model's checks, its protobuf writer and reader (deploy/onnx/onnx_model.hpp).
///
/// The wire format (protobuf "Encoding"): a message is a sequence of fields, each a tag
/// varint (field number << 3 | wire type) and a value: wire type 0 a varint, 1 eight
/// little-endian bytes, 2 a varint length and that many bytes (strings, bytes, nested
/// messages, packed repeated scalars), 5 four little-endian bytes. onnx.proto is proto2:
/// repeated scalars are written unpacked (as protobuf and onnx.helper write them), and
/// read packed or unpacked.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../../../io/atomic_file.hpp"
#include "../../../io/detail/protobuf_wire.hpp"
#include "../onnx_model.hpp"

namespace xq::onnx {

namespace detail {

using xq::detail::concat;
using namespace xq::detail::protobuf;

XQ_DECL std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

XQ_DECL std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string s = "(";
  for (std::size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + ")";
}

XQ_DECL std::string tensor_where(const tensor_data& t) { return "onnx tensor " + in_quotes(t.name); }

// The element count of `dims`, or -1 when a dimension is negative or the product overflows.
XQ_DECL std::int64_t checked_count(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

// The size in bytes of raw data holding `count` elements of `type`; -1 when not computable.
XQ_DECL std::int64_t raw_bytes(data_type type, std::int64_t count) {
  const std::int64_t bits = static_cast<std::int64_t>(element_bits(type));
  if (bits == 0 || count < 0 || count > std::numeric_limits<std::int64_t>::max() / 128) return -1;
  return (count * bits + 7) / 8;
}

XQ_DECL void check_shape(const std::string& name, const std::vector<std::int64_t>& dims, std::size_t count) {
  const std::int64_t n = checked_count(dims);
  if (n < 0 || static_cast<std::uint64_t>(n) != count)
    throw argument_error("onnx tensor " + in_quotes(name),
                         concat("values that fill its dims ", dims_text(dims),
                                n >= 0 ? concat(" (", n, " elements)") : std::string(" (non-negative sizes)")),
                         concat(count, " values"));
}

template <class T>
tensor_data make_tensor(std::string name, data_type type, std::vector<std::int64_t> dims,
                        const std::vector<T>& values) {
  check_shape(name, dims, values.size());
  tensor_data t;
  t.name = std::move(name);
  t.type = type;
  t.dims = std::move(dims);
  t.raw.reserve(values.size() * sizeof(T));
  for (T v : values) append_le(t.raw, v);
  return t;
}

template <class T>
tensor_data make_nibbles(std::string name, data_type type, std::vector<std::int64_t> dims, const std::vector<T>& values,
                         int lo, int hi) {
  check_shape(name, dims, values.size());
  for (std::size_t k = 0; k < values.size(); ++k)
    if (values[k] < lo || values[k] > hi)
      throw argument_error("onnx tensor " + in_quotes(name),
                           concat(data_type_name(type), " values in [", lo, ", ", hi, "]"),
                           concat(int(values[k]), " at element ", k));
  tensor_data t;
  t.name = std::move(name);
  t.type = type;
  t.dims = std::move(dims);
  t.raw.assign((values.size() + 1) / 2, '\0');
  for (std::size_t k = 0; k < values.size(); ++k) {
    const unsigned nibble = static_cast<unsigned>(values[k]) & 0x0Fu;
    t.raw[k / 2] = static_cast<char>(static_cast<unsigned char>(t.raw[k / 2]) | (k % 2 ? nibble << 4 : nibble));
  }
  return t;
}

// ---- the writer ----------------------------------------------------------------------
// Every message is written by one function template over a sink (io/detail/protobuf_wire.hpp).

template <class Sink>
void write(Sink& s, const tensor_data& t);
template <class Sink>
void write(Sink& s, const attribute& a);
template <class Sink>
void write(Sink& s, const node& n);
template <class Sink>
void write(Sink& s, const value_info& v);
template <class Sink>
void write(Sink& s, const graph& g);
template <class Sink>
void write(Sink& s, const opset_id& o);
template <class Sink>
void write(Sink& s, const std::pair<std::string, std::string>& kv);
template <class Sink>
void write(Sink& s, const model& m);

template <class Sink, class Message>
void put_message(Sink& s, unsigned field, const Message& m) {
  put_message_with(s, field, [&m](auto& sink) { write(sink, m); });
}

template <class Sink>
void write(Sink& s, const tensor_data& t) {  // TensorProto
  for (std::int64_t d : t.dims) put_int(s, 1, d);
  put_int(s, 2, static_cast<std::int32_t>(t.type));
  put_nonempty(s, 8, t.name);
  put_bytes(s, 9, t.raw);
}

template <class Sink>
void write(Sink& s, const attribute& a) {  // AttributeProto
  put_bytes(s, 1, a.name);
  switch (a.type) {
    case attribute_type::float_: put_float(s, 2, a.f); break;
    case attribute_type::int_: put_int(s, 3, a.i); break;
    case attribute_type::string: put_bytes(s, 4, a.s); break;
    case attribute_type::tensor: put_message(s, 5, a.t); break;
    case attribute_type::floats:
      for (float f : a.floats) put_float(s, 7, f);
      break;
    case attribute_type::ints:
      for (std::int64_t v : a.ints) put_int(s, 8, v);
      break;
    case attribute_type::strings:
      for (const auto& v : a.strings) put_bytes(s, 9, v);
      break;
    default: break;  // validate() rejected it
  }
  put_int(s, 20, static_cast<std::int32_t>(a.type));
}

template <class Sink>
void write(Sink& s, const node& n) {  // NodeProto
  for (const auto& v : n.inputs) put_bytes(s, 1, v);
  for (const auto& v : n.outputs) put_bytes(s, 2, v);
  put_nonempty(s, 3, n.name);
  put_bytes(s, 4, n.op_type);
  for (const auto& a : n.attributes) put_message(s, 5, a);
  put_nonempty(s, 6, n.doc_string);
  put_nonempty(s, 7, n.domain);
}

// TensorShapeProto.Dimension
struct dimension_message {
  const dimension* d;
};
template <class Sink>
void write(Sink& s, const dimension_message& m) {
  if (m.d->is_symbolic()) {
    put_bytes(s, 2, m.d->param);
  } else if (m.d->value >= 0) {
    put_int(s, 1, m.d->value);
  }
}
// TensorShapeProto
struct shape_message {
  const std::vector<dimension>* dims;
};
template <class Sink>
void write(Sink& s, const shape_message& m) {
  for (const auto& d : *m.dims) put_message(s, 1, dimension_message{&d});
}
// TypeProto.Tensor
struct tensor_type_message {
  const value_info* v;
};
template <class Sink>
void write(Sink& s, const tensor_type_message& m) {
  put_int(s, 1, static_cast<std::int32_t>(m.v->type));
  if (m.v->shape) put_message(s, 2, shape_message{&*m.v->shape});
}
// TypeProto
struct type_message {
  const value_info* v;
};
template <class Sink>
void write(Sink& s, const type_message& m) {
  put_message(s, 1, tensor_type_message{m.v});
}

template <class Sink>
void write(Sink& s, const value_info& v) {  // ValueInfoProto
  put_bytes(s, 1, v.name);
  put_message(s, 2, type_message{&v});
  put_nonempty(s, 3, v.doc_string);
}

template <class Sink>
void write(Sink& s, const graph& g) {  // GraphProto
  for (const auto& n : g.nodes) put_message(s, 1, n);
  put_bytes(s, 2, g.name);
  for (const auto& t : g.initializers) put_message(s, 5, t);
  put_nonempty(s, 10, g.doc_string);
  for (const auto& v : g.inputs) put_message(s, 11, v);
  for (const auto& v : g.outputs) put_message(s, 12, v);
  for (const auto& v : g.value_infos) put_message(s, 13, v);
}

template <class Sink>
void write(Sink& s, const opset_id& o) {  // OperatorSetIdProto
  put_bytes(s, 1, o.domain);
  put_int(s, 2, o.version);
}

template <class Sink>
void write(Sink& s, const std::pair<std::string, std::string>& kv) {  // StringStringEntryProto
  put_bytes(s, 1, kv.first);
  put_bytes(s, 2, kv.second);
}

template <class Sink>
void write(Sink& s, const model& m) {  // ModelProto
  put_int(s, 1, m.ir_version);
  put_nonempty(s, 2, m.producer_name);
  put_nonempty(s, 3, m.producer_version);
  put_nonempty(s, 4, m.domain);
  if (m.model_version != 0) put_int(s, 5, m.model_version);
  put_nonempty(s, 6, m.doc_string);
  for (const auto& o : m.opset_imports) put_message(s, 8, o);
  for (const auto& kv : m.metadata_props) put_message(s, 14, kv);
  // The graph last: a file cut anywhere then ends inside the graph's announced length, so
  // that parse() finds every truncation (protobuf alone cannot tell a message that ends
  // early at a field boundary).
  put_message(s, 7, m.graph);
}

// ---- the reader ----------------------------------------------------------------------
// A bounded view of the bytes; every read checks what is left and throws with the byte
// offset and the message being read.

XQ_DECL std::string wire_name(unsigned w) {
  switch (w) {
    case 0: return "varint";
    case 1: return "fixed64";
    case 2: return "length-delimited";
    case 3: return "start-group";
    case 4: return "end-group";
    case 5: return "fixed32";
    default: return concat("invalid (", w, ")");
  }
}

class wire_reader {
 public:
  wire_reader(const char* begin, const char* end, std::size_t offset, std::string where)
      : p_(begin), end_(end), base_(begin), offset_(offset), where_(std::move(where)) {}

  bool done() const { return p_ == end_; }
  std::size_t offset() const { return offset_ + static_cast<std::size_t>(p_ - base_); }
  const std::string& where() const { return where_; }

  [[noreturn]] void fail(const std::string& expected, const std::string& given) const {
    throw argument_error("xq::onnx::parse", concat(expected, " in ", where_, " at byte ", offset()), given);
  }

  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) fail("a varint", "the end of the message");
      const auto b = static_cast<unsigned char>(*p_++);
      if (shift == 63 && b > 1) fail("a varint of at most 64 bits", "more");
      v |= std::uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a varint of at most 10 bytes", "more");
  }

  // Reads a tag; returns the field number, sets `w` to the wire type.
  unsigned tag(unsigned& w) {
    const std::size_t at = offset();
    const std::uint64_t t = varint();
    w = static_cast<unsigned>(t & 7);
    const std::uint64_t field = t >> 3;
    if (field == 0 || field > 536870911u)
      throw argument_error("xq::onnx::parse", concat("a field number in 1..2^29-1 in ", where_, " at byte ", at),
                           concat(field));
    if (w == 3 || w == 4 || w > 5)
      throw argument_error("xq::onnx::parse",
                           concat("a wire type of proto2 without groups in ", where_, " at byte ", at), wire_name(w));
    return static_cast<unsigned>(field);
  }

  // A length-delimited value: [begin, begin + size).
  std::pair<const char*, std::size_t> chunk() {
    const std::uint64_t n = varint();
    const auto left = static_cast<std::uint64_t>(end_ - p_);
    if (n > left) fail(concat("a length-delimited value of ", n, " bytes"), concat(left, " bytes left"));
    const char* b = p_;
    p_ += n;
    return {b, static_cast<std::size_t>(n)};
  }

  std::string bytes() {
    auto c = chunk();
    return std::string(c.first, c.second);
  }

  wire_reader sub(const std::string& where) {
    auto c = chunk();
    return wire_reader(c.first, c.first + c.second, offset_ + static_cast<std::size_t>(c.first - base_), where);
  }

  std::uint32_t fixed32() {
    if (end_ - p_ < 4) fail("4 bytes of a fixed32", concat(end_ - p_, " bytes left"));
    const auto v = load_le<std::uint32_t>(p_);
    p_ += 4;
    return v;
  }

  void skip(unsigned w) {
    switch (w) {
      case 0: varint(); break;
      case 1:
        if (end_ - p_ < 8) fail("8 bytes of a fixed64", concat(end_ - p_, " bytes left"));
        p_ += 8;
        break;
      case 2: chunk(); break;
      case 5: fixed32(); break;
      default: fail("a wire type that can be skipped", wire_name(w));
    }
  }

  void expect(unsigned field, unsigned got, unsigned want, const char* field_name) const {
    if (got != want) fail(concat("field ", field, " (", field_name, ") as ", wire_name(want)), wire_name(got));
  }

  // One element or a packed run of a repeated varint field.
  template <class F>
  void repeated_varint(unsigned field, unsigned w, const char* field_name, F&& add) {
    if (w == length_wire) {
      wire_reader packed = sub(concat(where_, ".", field_name));
      while (!packed.done()) add(packed.varint());
    } else {
      expect(field, w, varint_wire, field_name);
      add(varint());
    }
  }
  template <class F>
  void repeated_fixed32(unsigned field, unsigned w, const char* field_name, F&& add) {
    if (w == length_wire) {
      wire_reader packed = sub(concat(where_, ".", field_name));
      while (!packed.done()) add(packed.fixed32());
    } else {
      expect(field, w, fixed32_wire, field_name);
      add(fixed32());
    }
  }

  std::int64_t int64() { return static_cast<std::int64_t>(varint()); }

  // An int32 field (data_type, elem_type, attribute type): protobuf writes a negative one
  // sign-extended to 64 bits.
  std::int32_t int32(const char* field_name) {
    const std::int64_t v = int64();
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
      fail(concat(field_name, " as an int32"), concat(v));
    return static_cast<std::int32_t>(v);
  }

 private:
  const char* p_;
  const char* end_;
  const char* base_;
  std::size_t offset_;
  std::string where_;
};

[[noreturn]] XQ_DECL void unsupported(const wire_reader& r, const std::string& what) {
  throw argument_error("xq::onnx::parse", concat("what xq::onnx represents in ", r.where()), what);
}

XQ_DECL float float_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

XQ_DECL tensor_data read_tensor(wire_reader r) {
  tensor_data t;
  bool have_raw = false;
  std::string typed;  // float_data / int32_data / int64_data, converted to raw bytes
  const char* typed_field = nullptr;
  std::int64_t typed_count = 0;
  std::int32_t typed_from = 0;  // 4 float_data, 5 int32_data, 7 int64_data
  for (unsigned w; !r.done();) {
    const unsigned f = r.tag(w);
    switch (f) {
      case 1:
        r.repeated_varint(f, w, "dims", [&](std::uint64_t v) { t.dims.push_back(static_cast<std::int64_t>(v)); });
        break;
      case 2:
        r.expect(f, w, varint_wire, "data_type");
        t.type = static_cast<data_type>(r.int32("data_type"));
        break;
      case 8:
        r.expect(f, w, length_wire, "name");
        t.name = r.bytes();
        break;
      case 9:
        r.expect(f, w, length_wire, "raw_data");
        t.raw = r.bytes();
        have_raw = true;
        break;
      case 4:
        if (typed_from != 0 && typed_from != 4) unsupported(r, "a tensor with two kinds of typed data");
        typed_field = "float_data";
        typed_from = 4;
        r.repeated_fixed32(f, w, "float_data", [&](std::uint32_t v) {
          append_le(typed, v);
          ++typed_count;
        });
        break;
      case 5:
      case 7:
        if (typed_from != 0 && typed_from != static_cast<std::int32_t>(f))
          unsupported(r, "a tensor with two kinds of typed data");
        typed_field = f == 5 ? "int32_data" : "int64_data";
        typed_from = static_cast<std::int32_t>(f);
        r.repeated_varint(f, w, typed_field, [&](std::uint64_t v) {
          append_le(typed, v);  // 8 bytes each; narrowed below
          ++typed_count;
        });
        break;
      case 3: unsupported(r, "a segment (field 3) of a tensor"); break;
      case 6: unsupported(r, "string_data (field 6): xq::onnx holds numeric tensors only"); break;
      case 10: unsupported(r, "double_data (field 10)"); break;
      case 11: unsupported(r, "uint64_data (field 11)"); break;
      case 13: unsupported(r, "external_data (field 13): the tensor's data live in another file"); break;
      case 14: {
        r.expect(f, w, varint_wire, "data_location");
        if (r.int64() != 0) unsupported(r, "data_location EXTERNAL (field 14): the tensor's data live in another file");
        break;
      }
      default: r.skip(w);  // doc_string, metadata_props
    }
  }
  if (typed_field) {
    if (have_raw) unsupported(r, concat("a tensor with both raw_data and ", typed_field));
    // Typed fields hold one value per element; convert to raw little-endian bytes.
    const bool ok =
        (typed_from == 4 && t.type == data_type::float32) || (typed_from == 7 && t.type == data_type::int64) ||
        (typed_from == 5 && (t.type == data_type::int32 || t.type == data_type::int16 || t.type == data_type::uint16 ||
                             t.type == data_type::int8 || t.type == data_type::uint8 || t.type == data_type::boolean));
    if (!ok) unsupported(r, concat(typed_field, " for a tensor of type ", data_type_name(t.type)));
    if (typed_from == 4) {
      t.raw = std::move(typed);
    } else {
      const std::size_t bytes = element_bits(t.type) / 8;
      t.raw.clear();
      t.raw.reserve(static_cast<std::size_t>(typed_count) * bytes);
      for (std::int64_t k = 0; k < typed_count; ++k) {
        const auto v = load_le<std::uint64_t>(typed.data() + static_cast<std::size_t>(k) * 8);
        for (std::size_t b = 0; b < bytes; ++b) t.raw.push_back(static_cast<char>((v >> (8 * b)) & 0xFF));
      }
    }
  }
  return t;
}

XQ_DECL attribute read_attribute(wire_reader r) {
  attribute a;
  std::int32_t type = 0;
  for (unsigned w; !r.done();) {
    const unsigned f = r.tag(w);
    switch (f) {
      case 1:
        r.expect(f, w, length_wire, "name");
        a.name = r.bytes();
        break;
      case 20:
        r.expect(f, w, varint_wire, "type");
        type = r.int32("type");
        break;
      case 2:
        r.expect(f, w, fixed32_wire, "f");
        a.f = float_bits(r.fixed32());
        break;
      case 3:
        r.expect(f, w, varint_wire, "i");
        a.i = r.int64();
        break;
      case 4:
        r.expect(f, w, length_wire, "s");
        a.s = r.bytes();
        break;
      case 5:
        r.expect(f, w, length_wire, "t");
        a.t = read_tensor(r.sub(r.where() + ".t"));
        break;
      case 7: r.repeated_fixed32(f, w, "floats", [&](std::uint32_t v) { a.floats.push_back(float_bits(v)); }); break;
      case 8:
        r.repeated_varint(f, w, "ints", [&](std::uint64_t v) { a.ints.push_back(static_cast<std::int64_t>(v)); });
        break;
      case 9:
        r.expect(f, w, length_wire, "strings");
        a.strings.push_back(r.bytes());
        break;
      case 6:
      case 10:
      case 11:
      case 22:
      case 23:
      case 14:
      case 15:
        unsupported(r, concat("attribute ", in_quotes(a.name), "'s field ", f,
                              " (a graph, tensor list, sparse tensor or type)"));
        break;
      case 21: unsupported(r, "ref_attr_name (field 21): attributes of functions"); break;
      default: r.skip(w);  // doc_string
    }
  }
  // Only the member `type` names counts (as in ONNX); the others are dropped, so that the
  // model read is the model written back.
  attribute out;
  out.name = std::move(a.name);
  out.type = static_cast<attribute_type>(type);
  switch (out.type) {
    case attribute_type::float_: out.f = a.f; break;
    case attribute_type::int_: out.i = a.i; break;
    case attribute_type::string: out.s = std::move(a.s); break;
    case attribute_type::tensor: out.t = std::move(a.t); break;
    case attribute_type::floats: out.floats = std::move(a.floats); break;
    case attribute_type::ints: out.ints = std::move(a.ints); break;
    case attribute_type::strings: out.strings = std::move(a.strings); break;
    default: unsupported(r, concat("attribute ", in_quotes(out.name), " of type code ", type));
  }
  return out;
}

XQ_DECL node read_node(wire_reader r) {
  node n;
  for (unsigned w; !r.done();) {
    const unsigned f = r.tag(w);
    switch (f) {
      case 1:
        r.expect(f, w, length_wire, "input");
        n.inputs.push_back(r.bytes());
        break;
      case 2:
        r.expect(f, w, length_wire, "output");
        n.outputs.push_back(r.bytes());
        break;
      case 3:
        r.expect(f, w, length_wire, "name");
        n.name = r.bytes();
        break;
      case 4:
        r.expect(f, w, length_wire, "op_type");
        n.op_type = r.bytes();
        break;
      case 5:
        r.expect(f, w, length_wire, "attribute");
        n.attributes.push_back(read_attribute(r.sub(concat(r.where(), ".attribute[", n.attributes.size(), "]"))));
        break;
      case 6:
        r.expect(f, w, length_wire, "doc_string");
        n.doc_string = r.bytes();
        break;
      case 7:
        r.expect(f, w, length_wire, "domain");
        n.domain = r.bytes();
        break;
      case 8: {
        r.expect(f, w, length_wire, "overload");
        if (!r.bytes().empty()) unsupported(r, "an overload (field 8): functions");
        break;
      }
      default: r.skip(w);  // metadata_props, device_configurations
    }
  }
  return n;
}

XQ_DECL dimension read_dimension(wire_reader r) {
  dimension d;
  for (unsigned w; !r.done();) {
    const unsigned f = r.tag(w);
    if (f == 1) {
      r.expect(f, w, varint_wire, "dim_value");
      d.value = r.int64();
      d.param.clear();
    } else if (f == 2) {
      r.expect(f, w, length_wire, "dim_param");
      d.param = r.bytes();
      d.value = -1;
    } else {
      r.skip(w);  // denotation
    }
  }
  return d;
}

XQ_DECL void read_tensor_type(wire_reader r, value_info& v) {
  for (unsigned w; !r.done();) {
    const unsigned f = r.tag(w);
    if (f == 1) {
      r.expect(f, w, varint_wire, "elem_type");
      v.type = static_cast<data_type>(r.int32("elem_type"));
    } else if (f == 2) {
      r.expect(f, w, length_wire, "shape");
      wire_reader shape = r.sub(r.where() + ".shape");
      v.shape.emplace();
      for (unsigned sw; !shape.done();) {
        const unsigned sf = shape.tag(sw);
        if (sf == 1) {
          shape.expect(sf, sw, length_wire, "dim");
          v.shape->push_back(read_dimension(shape.sub(concat(shape.where(), ".dim[", v.shape->size(), "]"))));
        } else {
          shape.skip(sw);
        }
      }
    } else {
      r.skip(w);
    }
  }
}

XQ_DECL value_info read_value_info(wire_reader r) {
  value_info v;
  bool typed = false;
  for (unsigned w; !r.done();) {
    const unsigned f = r.tag(w);
    switch (f) {
      case 1:
        r.expect(f, w, length_wire, "name");
        v.name = r.bytes();
        break;
      case 3:
        r.expect(f, w, length_wire, "doc_string");
        v.doc_string = r.bytes();
        break;
      case 2: {
        r.expect(f, w, length_wire, "type");
        wire_reader type = r.sub(r.where() + ".type");
        for (unsigned tw; !type.done();) {
          const unsigned tf = type.tag(tw);
          if (tf == 1) {
            type.expect(tf, tw, length_wire, "tensor_type");
            read_tensor_type(type.sub(type.where() + ".tensor_type"), v);
            typed = true;
          } else if (tf == 6) {
            type.skip(tw);  // denotation
          } else {
            unsupported(
                type, concat("value ", in_quotes(v.name), " of a type other than a tensor (TypeProto field ", tf, ")"));
          }
        }
        break;
      }
      default: r.skip(w);  // metadata_props
    }
  }
  if (!typed) unsupported(r, concat("value ", in_quotes(v.name), " without a tensor type"));
  return v;
}

XQ_DECL graph read_graph(wire_reader r) {
  graph g;
  g.name.clear();
  for (unsigned w; !r.done();) {
    const unsigned f = r.tag(w);
    switch (f) {
      case 1:
        r.expect(f, w, length_wire, "node");
        g.nodes.push_back(read_node(r.sub(concat(r.where(), ".node[", g.nodes.size(), "]"))));
        break;
      case 2:
        r.expect(f, w, length_wire, "name");
        g.name = r.bytes();
        break;
      case 5:
        r.expect(f, w, length_wire, "initializer");
        g.initializers.push_back(read_tensor(r.sub(concat(r.where(), ".initializer[", g.initializers.size(), "]"))));
        break;
      case 10:
        r.expect(f, w, length_wire, "doc_string");
        g.doc_string = r.bytes();
        break;
      case 11:
        r.expect(f, w, length_wire, "input");
        g.inputs.push_back(read_value_info(r.sub(concat(r.where(), ".input[", g.inputs.size(), "]"))));
        break;
      case 12:
        r.expect(f, w, length_wire, "output");
        g.outputs.push_back(read_value_info(r.sub(concat(r.where(), ".output[", g.outputs.size(), "]"))));
        break;
      case 13:
        r.expect(f, w, length_wire, "value_info");
        g.value_infos.push_back(read_value_info(r.sub(concat(r.where(), ".value_info[", g.value_infos.size(), "]"))));
        break;
      case 15: unsupported(r, "a sparse initializer (field 15)"); break;
      default: r.skip(w);  // quantization_annotation, metadata_props
    }
  }
  return g;
}

XQ_DECL model read_model(wire_reader r) {
  model m;
  m.opset_imports.clear();
  m.producer_name.clear();
  m.producer_version.clear();
  m.ir_version = 0;
  bool have_graph = false;
  for (unsigned w; !r.done();) {
    const unsigned f = r.tag(w);
    switch (f) {
      case 1:
        r.expect(f, w, varint_wire, "ir_version");
        m.ir_version = r.int64();
        break;
      case 2:
        r.expect(f, w, length_wire, "producer_name");
        m.producer_name = r.bytes();
        break;
      case 3:
        r.expect(f, w, length_wire, "producer_version");
        m.producer_version = r.bytes();
        break;
      case 4:
        r.expect(f, w, length_wire, "domain");
        m.domain = r.bytes();
        break;
      case 5:
        r.expect(f, w, varint_wire, "model_version");
        m.model_version = r.int64();
        break;
      case 6:
        r.expect(f, w, length_wire, "doc_string");
        m.doc_string = r.bytes();
        break;
      case 7: {
        r.expect(f, w, length_wire, "graph");
        if (have_graph) unsupported(r, "a second graph (field 7)");
        m.graph = read_graph(r.sub("ModelProto.graph"));
        have_graph = true;
        break;
      }
      case 8: {
        r.expect(f, w, length_wire, "opset_import");
        wire_reader o = r.sub(concat("ModelProto.opset_import[", m.opset_imports.size(), "]"));
        opset_id id;
        for (unsigned ow; !o.done();) {
          const unsigned of = o.tag(ow);
          if (of == 1) {
            o.expect(of, ow, length_wire, "domain");
            id.domain = o.bytes();
          } else if (of == 2) {
            o.expect(of, ow, varint_wire, "version");
            id.version = o.int64();
          } else {
            o.skip(ow);
          }
        }
        m.opset_imports.push_back(std::move(id));
        break;
      }
      case 14: {
        r.expect(f, w, length_wire, "metadata_props");
        wire_reader e = r.sub(concat("ModelProto.metadata_props[", m.metadata_props.size(), "]"));
        std::pair<std::string, std::string> kv;
        for (unsigned ew; !e.done();) {
          const unsigned ef = e.tag(ew);
          if (ef == 1) {
            e.expect(ef, ew, length_wire, "key");
            kv.first = e.bytes();
          } else if (ef == 2) {
            e.expect(ef, ew, length_wire, "value");
            kv.second = e.bytes();
          } else {
            e.skip(ew);
          }
        }
        m.metadata_props.push_back(std::move(kv));
        break;
      }
      case 20: unsupported(r, "training_info (field 20)"); break;
      case 25: unsupported(r, "functions (field 25): model-local operators"); break;
      default: r.skip(w);  // configuration, and fields of later versions
    }
  }
  if (!have_graph) r.fail("a graph (ModelProto field 7)", "a model without one");
  return m;
}

// ---- validation ----------------------------------------------------------------------

XQ_DECL std::string graph_where(const graph& g) { return "onnx graph " + in_quotes(g.name); }

XQ_DECL std::string node_where(const graph& g, std::size_t k) {
  const node& n = g.nodes[k];
  return concat(graph_where(g), ", node #", k, n.name.empty() ? std::string() : " " + in_quotes(n.name), " (",
                n.op_type.empty() ? "no op_type" : n.op_type, ")");
}

XQ_DECL void check_type(const std::string& where, const std::string& what, data_type type) {
  if (!is_known(type))
    throw argument_error(where, what + " of a known ONNX data type (TensorProto.DataType codes 1-26)",
                         concat("code ", static_cast<std::int32_t>(type)));
}

XQ_DECL void check_tensor(const std::string& where, const tensor_data& t) {
  check_type(where, "data", t.type);
  if (t.type == data_type::string)
    throw argument_error(where, "a numeric data type (xq::onnx writes raw data only)", "STRING");
  const std::int64_t n = checked_count(t.dims);
  if (n < 0) throw argument_error(where, "non-negative dims whose product fits int64", dims_text(t.dims));
  const std::int64_t want = raw_bytes(t.type, n);
  if (want < 0 || static_cast<std::uint64_t>(want) != t.raw.size())
    throw argument_error(where,
                         concat(want, " bytes of raw data (", n, " ", data_type_name(t.type), " elements, dims ",
                                dims_text(t.dims), ")"),
                         concat(t.raw.size(), " bytes"));
}

XQ_DECL void check_value_info(const std::string& where, const value_info& v, bool graph_io) {
  if (v.name.empty()) throw argument_error(where, "a value name", "an empty one");
  check_type(where, "a tensor", v.type);
  if (graph_io && !v.shape)
    throw argument_error(
        where,
        "a shape, as ONNX's checker requires of graph inputs and outputs (a dimension may be symbolic or unknown)",
        "none (unknown rank)");
  if (v.shape)
    for (std::size_t k = 0; k < v.shape->size(); ++k) {
      const dimension& d = (*v.shape)[k];
      if (!d.is_symbolic() && d.value < -1)
        throw argument_error(where, concat("dimension ", k, " non-negative, symbolic or unknown (-1)"),
                             concat(d.value));
    }
}

}  // namespace detail

// ---- data types ----------------------------------------------------------------------

XQ_DECL bool is_known(data_type type) noexcept {
  const auto code = static_cast<std::int32_t>(type);
  return code >= 1 && code <= 26;
}

XQ_DECL std::string data_type_name(data_type type) {
  static const char* const names[] = {
      "UNDEFINED", "FLOAT",      "UINT8",      "INT8",         "UINT16",         "INT16",      "INT32",
      "INT64",     "STRING",     "BOOL",       "FLOAT16",      "DOUBLE",         "UINT32",     "UINT64",
      "COMPLEX64", "COMPLEX128", "BFLOAT16",   "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",     "INT4",       "FLOAT4E2M1", "FLOAT8E8M0",   "UINT2",          "INT2"};
  const auto code = static_cast<std::int32_t>(type);
  if (code >= 0 && code <= 26) return names[code];
  return "UNKNOWN(" + std::to_string(code) + ")";
}

XQ_DECL std::size_t element_bits(data_type type) noexcept {
  switch (type) {
    case data_type::uint2:
    case data_type::int2: return 2;
    case data_type::uint4:
    case data_type::int4:
    case data_type::float4e2m1: return 4;
    case data_type::uint8:
    case data_type::int8:
    case data_type::boolean:
    case data_type::float8e4m3fn:
    case data_type::float8e4m3fnuz:
    case data_type::float8e5m2:
    case data_type::float8e5m2fnuz:
    case data_type::float8e8m0: return 8;
    case data_type::uint16:
    case data_type::int16:
    case data_type::float16:
    case data_type::bfloat16: return 16;
    case data_type::float32:
    case data_type::int32:
    case data_type::uint32: return 32;
    case data_type::int64:
    case data_type::uint64:
    case data_type::float64:
    case data_type::complex64: return 64;
    case data_type::complex128: return 128;
    default: return 0;
  }
}

XQ_DECL std::int64_t ir_version_for_opset(std::int64_t opset) noexcept {
  // onnx.helper.VERSION_TABLE: (release, IR, opset); the IR version that came with each opset.
  if (opset <= 6) return 3;
  if (opset <= 8) return 3;
  if (opset == 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  if (opset == 23) return 11;
  if (opset == 24) return 12;
  if (opset <= 27) return 13;
  return 14;
}

// ---- tensor_data ---------------------------------------------------------------------

XQ_DECL std::int64_t tensor_data::element_count() const { return detail::checked_count(dims); }

XQ_DECL tensor_data tensor_data::float32(std::string name, std::vector<std::int64_t> dims,
                                         const std::vector<float>& values) {
  return detail::make_tensor(std::move(name), data_type::float32, std::move(dims), values);
}
XQ_DECL tensor_data tensor_data::int8(std::string name, std::vector<std::int64_t> dims,
                                      const std::vector<std::int8_t>& values) {
  return detail::make_tensor(std::move(name), data_type::int8, std::move(dims), values);
}
XQ_DECL tensor_data tensor_data::uint8(std::string name, std::vector<std::int64_t> dims,
                                       const std::vector<std::uint8_t>& values) {
  return detail::make_tensor(std::move(name), data_type::uint8, std::move(dims), values);
}
XQ_DECL tensor_data tensor_data::int16(std::string name, std::vector<std::int64_t> dims,
                                       const std::vector<std::int16_t>& values) {
  return detail::make_tensor(std::move(name), data_type::int16, std::move(dims), values);
}
XQ_DECL tensor_data tensor_data::uint16(std::string name, std::vector<std::int64_t> dims,
                                        const std::vector<std::uint16_t>& values) {
  return detail::make_tensor(std::move(name), data_type::uint16, std::move(dims), values);
}
XQ_DECL tensor_data tensor_data::int32(std::string name, std::vector<std::int64_t> dims,
                                       const std::vector<std::int32_t>& values) {
  return detail::make_tensor(std::move(name), data_type::int32, std::move(dims), values);
}
XQ_DECL tensor_data tensor_data::int64(std::string name, std::vector<std::int64_t> dims,
                                       const std::vector<std::int64_t>& values) {
  return detail::make_tensor(std::move(name), data_type::int64, std::move(dims), values);
}
XQ_DECL tensor_data tensor_data::int4(std::string name, std::vector<std::int64_t> dims,
                                      const std::vector<std::int8_t>& values) {
  return detail::make_nibbles(std::move(name), data_type::int4, std::move(dims), values, -8, 7);
}
XQ_DECL tensor_data tensor_data::uint4(std::string name, std::vector<std::int64_t> dims,
                                       const std::vector<std::uint8_t>& values) {
  return detail::make_nibbles(std::move(name), data_type::uint4, std::move(dims), values, 0, 15);
}

XQ_DECL tensor_data tensor_data::float32_scalar(std::string name, float value) {
  return float32(std::move(name), {}, {value});
}
XQ_DECL tensor_data tensor_data::int8_scalar(std::string name, std::int8_t value) {
  return int8(std::move(name), {}, {value});
}
XQ_DECL tensor_data tensor_data::uint8_scalar(std::string name, std::uint8_t value) {
  return uint8(std::move(name), {}, {value});
}
XQ_DECL tensor_data tensor_data::int32_scalar(std::string name, std::int32_t value) {
  return int32(std::move(name), {}, {value});
}
XQ_DECL tensor_data tensor_data::int64_scalar(std::string name, std::int64_t value) {
  return int64(std::move(name), {}, {value});
}

XQ_DECL std::vector<float> tensor_data::float32_values() const {
  if (type != data_type::float32)
    throw argument_error(detail::tensor_where(*this), "a FLOAT tensor for float32_values()", data_type_name(type));
  detail::check_tensor(detail::tensor_where(*this), *this);
  std::vector<float> v(raw.size() / 4);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = detail::load_le<float>(raw.data() + 4 * k);
  return v;
}

XQ_DECL std::vector<std::int64_t> tensor_data::integer_values() const {
  const std::string where = detail::tensor_where(*this);
  bool is_signed = true;
  switch (type) {
    case data_type::int2:
    case data_type::int4:
    case data_type::int8:
    case data_type::int16:
    case data_type::int32:
    case data_type::int64: break;
    case data_type::uint2:
    case data_type::uint4:
    case data_type::uint8:
    case data_type::uint16:
    case data_type::uint32:
    case data_type::uint64:
    case data_type::boolean: is_signed = false; break;
    default: throw argument_error(where, "an integer or BOOL tensor for integer_values()", data_type_name(type));
  }
  detail::check_tensor(where, *this);
  const std::size_t bits = element_bits(type);
  const auto n = static_cast<std::size_t>(element_count());
  std::vector<std::int64_t> v(n);
  for (std::size_t k = 0; k < n; ++k) {
    std::uint64_t u = 0;
    if (bits < 8) {  // packed: element k at bit (k * bits) % 8 of byte k * bits / 8
      const auto byte = static_cast<unsigned char>(raw[k * bits / 8]);
      u = (byte >> ((k * bits) % 8)) & ((1u << bits) - 1);
    } else {
      for (std::size_t b = 0; b < bits / 8; ++b)
        u |= std::uint64_t(static_cast<unsigned char>(raw[k * bits / 8 + b])) << (8 * b);
    }
    if (is_signed && bits < 64 && (u >> (bits - 1)) & 1) u |= ~std::uint64_t(0) << bits;  // sign-extend
    std::int64_t s;
    std::memcpy(&s, &u, sizeof s);
    v[k] = s;
  }
  return v;
}

// ---- attributes, nodes, graphs, models -----------------------------------------------

XQ_DECL attribute float_attribute(std::string name, float value) {
  attribute a;
  a.name = std::move(name);
  a.type = attribute_type::float_;
  a.f = value;
  return a;
}
XQ_DECL attribute int_attribute(std::string name, std::int64_t value) {
  attribute a;
  a.name = std::move(name);
  a.type = attribute_type::int_;
  a.i = value;
  return a;
}
XQ_DECL attribute string_attribute(std::string name, std::string value) {
  attribute a;
  a.name = std::move(name);
  a.type = attribute_type::string;
  a.s = std::move(value);
  return a;
}
XQ_DECL attribute tensor_attribute(std::string name, tensor_data value) {
  attribute a;
  a.name = std::move(name);
  a.type = attribute_type::tensor;
  a.t = std::move(value);
  return a;
}
XQ_DECL attribute floats_attribute(std::string name, std::vector<float> values) {
  attribute a;
  a.name = std::move(name);
  a.type = attribute_type::floats;
  a.floats = std::move(values);
  return a;
}
XQ_DECL attribute ints_attribute(std::string name, std::vector<std::int64_t> values) {
  attribute a;
  a.name = std::move(name);
  a.type = attribute_type::ints;
  a.ints = std::move(values);
  return a;
}
XQ_DECL attribute strings_attribute(std::string name, std::vector<std::string> values) {
  attribute a;
  a.name = std::move(name);
  a.type = attribute_type::strings;
  a.strings = std::move(values);
  return a;
}

XQ_DECL const attribute* node::find_attribute(const std::string& attribute_name) const {
  for (const auto& a : attributes)
    if (a.name == attribute_name) return &a;
  return nullptr;
}

XQ_DECL node& graph::add_node(std::string op_type, std::vector<std::string> node_inputs,
                              std::vector<std::string> node_outputs, std::vector<attribute> node_attributes,
                              std::string node_name) {
  node n;
  n.name = node_name.empty() ? unique_name(op_type.empty() ? std::string("node") : op_type) : std::move(node_name);
  n.op_type = std::move(op_type);
  n.inputs = std::move(node_inputs);
  n.outputs = std::move(node_outputs);
  n.attributes = std::move(node_attributes);
  nodes.push_back(std::move(n));
  return nodes.back();
}

XQ_DECL const std::string& graph::add_initializer(tensor_data tensor) {
  initializers.push_back(std::move(tensor));
  return initializers.back().name;
}

XQ_DECL std::string graph::unique_name(const std::string& base) const {
  std::unordered_set<std::string> used;
  for (const auto& n : nodes) {
    used.insert(n.name);
    used.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const auto& t : initializers) used.insert(t.name);
  for (const auto* list : {&inputs, &outputs, &value_infos})
    for (const auto& v : *list) used.insert(v.name);
  if (!base.empty() && !used.count(base)) return base;
  for (std::size_t k = 1;; ++k) {
    std::string candidate = base + "_" + std::to_string(k);
    if (!used.count(candidate)) return candidate;
  }
}

XQ_DECL const tensor_data* graph::find_initializer(const std::string& initializer_name) const {
  for (const auto& t : initializers)
    if (t.name == initializer_name) return &t;
  return nullptr;
}

XQ_DECL const node* graph::producer(const std::string& value_name) const {
  for (const auto& n : nodes)
    for (const auto& o : n.outputs)
      if (o == value_name) return &n;
  return nullptr;
}

XQ_DECL model::model(onnx::graph g, std::int64_t opset)
    : ir_version(ir_version_for_opset(opset)), opset_imports{{"", opset}}, graph(std::move(g)) {}

XQ_DECL std::int64_t model::opset() const noexcept {
  for (const auto& o : opset_imports)
    if (o.domain.empty() || o.domain == "ai.onnx") return o.version;
  return 0;
}

// ---- validate, serialize, save, parse, load ------------------------------------------

XQ_DECL void validate(const model& m) {
  using detail::in_quotes;
  using xq::detail::concat;
  if (m.ir_version < 3) throw argument_error("onnx model", "an IR version of at least 3", concat(m.ir_version));
  {
    std::unordered_set<std::string> domains;
    bool default_domain = false;
    for (const auto& o : m.opset_imports) {
      const std::string d = o.domain == "ai.onnx" ? std::string() : o.domain;
      if (!domains.insert(d).second)
        throw argument_error("onnx model", "each opset domain imported once",
                             concat("domain ", in_quotes(o.domain), " twice"));
      if (o.version < 1)
        throw argument_error("onnx model", concat("a positive opset version for domain ", in_quotes(o.domain)),
                             concat(o.version));
      default_domain = default_domain || d.empty();
    }
    if (!default_domain)
      throw argument_error("onnx model", "an opset import of the default domain \"\" (e.g. {\"\", 13})", "none");
  }
  const graph& g = m.graph;
  const std::string gw = detail::graph_where(g);
  if (g.name.empty()) throw argument_error("onnx graph", "a name (ONNX's checker requires one)", "an empty one");

  // Who defines each value, for the messages: "graph input", "initializer", "node #k ...".
  std::unordered_map<std::string, std::string> defined;
  for (const auto& v : g.inputs) {
    const std::string where = gw + ", input " + in_quotes(v.name);
    detail::check_value_info(where, v, true);
    if (!defined.emplace(v.name, "a graph input").second)
      throw argument_error(where, "graph input names used once", "a second input of that name");
  }
  std::unordered_set<std::string> initializer_names;
  for (const auto& t : g.initializers) {
    const std::string where = gw + ", initializer " + in_quotes(t.name);
    if (t.name.empty()) throw argument_error(gw + ", an initializer", "a name", "an empty one");
    detail::check_tensor(where, t);
    if (!initializer_names.insert(t.name).second)
      throw argument_error(where, "initializer names used once", "a second initializer of that name");
    defined.emplace(t.name, "an initializer");  // may also be a graph input: its default value
  }
  // Every node's outputs, for the message "produced later by node #k": nodes must be sorted.
  std::unordered_map<std::string, std::size_t> later;
  for (std::size_t k = g.nodes.size(); k-- > 0;)
    for (const auto& o : g.nodes[k].outputs)
      if (!o.empty()) later[o] = k;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const node& n = g.nodes[k];
    const std::string where = detail::node_where(g, k);
    if (n.op_type.empty()) throw argument_error(where, "an op_type (e.g. \"Conv\")", "an empty one");
    std::unordered_set<std::string> attribute_names;
    for (const auto& a : n.attributes) {
      if (a.name.empty()) throw argument_error(where, "attribute names", "an attribute without a name");
      if (!attribute_names.insert(a.name).second)
        throw argument_error(where, "each attribute once", concat("attribute ", in_quotes(a.name), " twice"));
      switch (a.type) {
        case attribute_type::float_:
        case attribute_type::int_:
        case attribute_type::string:
        case attribute_type::floats:
        case attribute_type::ints:
        case attribute_type::strings: break;
        case attribute_type::tensor: detail::check_tensor(concat(where, ", attribute ", in_quotes(a.name)), a.t); break;
        default:
          throw argument_error(where, concat("attribute ", in_quotes(a.name), " of a type in xq::onnx::attribute_type"),
                               concat("type code ", static_cast<std::int32_t>(a.type)));
      }
    }
    for (const auto& in : n.inputs) {
      if (in.empty() || defined.count(in)) continue;  // "": an optional input left out
      const auto at = later.find(in);
      if (at != later.end() && at->second >= k)
        throw argument_error(
            where, concat("input ", in_quotes(in), " produced by an earlier node (nodes in topological order)"),
            at->second == k ? std::string("the node's own output")
                            : concat("an output of the later ", detail::node_where(g, at->second)));
      throw argument_error(where,
                           concat("input ", in_quotes(in), " produced by a node, an initializer or a graph input"),
                           "a name that nothing in the graph produces");
    }
    for (const auto& out : n.outputs) {
      if (out.empty()) continue;  // an optional output left out
      const auto ins = defined.emplace(out, where);
      if (!ins.second)
        throw argument_error(where, concat("output ", in_quotes(out), " a name that nothing else produces"),
                             concat("a name already produced by ", ins.first->second));
    }
  }
  std::unordered_set<std::string> output_names;
  for (const auto& v : g.outputs) {
    const std::string where = gw + ", output " + in_quotes(v.name);
    detail::check_value_info(where, v, true);
    if (!defined.count(v.name))
      throw argument_error(where, "a graph output that a node, an initializer or a graph input produces",
                           "a name that nothing in the graph produces");
    if (!output_names.insert(v.name).second)
      throw argument_error(where, "graph output names used once", "a second output of that name");
  }
  for (const auto& v : g.value_infos) detail::check_value_info(gw + ", value_info " + in_quotes(v.name), v, false);
}

XQ_DECL std::string serialize(const model& m) {
  validate(m);
  detail::byte_counter counter;
  detail::write(counter, m);
  std::string out;
  out.reserve(counter.size);
  detail::byte_appender sink{&out};
  detail::write(sink, m);
  return out;
}

XQ_DECL void save(const model& m, const std::string& path) {
  const std::string bytes = serialize(m);
  io::write_file_atomically(path, [&](std::FILE* f) {
    return bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  });
}

XQ_DECL model parse(const std::string& bytes) {
  model m = detail::read_model(detail::wire_reader(bytes.data(), bytes.data() + bytes.size(), 0, "ModelProto"));
  validate(m);
  return m;
}

XQ_DECL model load(const std::string& path) {
  const std::vector<std::uint8_t> bytes = io::read_file_bytes(path);
  try {
    return parse(std::string(bytes.begin(), bytes.end()));
  } catch (const argument_error& e) {
    throw io_error(path, e.what());
  }
}

}  // namespace xq::onnx
