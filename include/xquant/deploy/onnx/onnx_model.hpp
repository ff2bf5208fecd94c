#pragma once
/// \file onnx_model.hpp
/// An ONNX model in memory, written to and read from the ONNX file format (protobuf wire
/// format, onnx/onnx `onnx/onnx.proto`) without protobuf: the file layer under xquant's
/// exporter.
///
///     xq::onnx::graph g;
///     g.inputs.push_back({"x", xq::onnx::data_type::float32, {"N", 1, 8, 8}});
///     g.add_initializer(xq::onnx::tensor_data::float32_scalar("x_scale", 0.0625f));
///     g.add_initializer(xq::onnx::tensor_data::int8_scalar("x_zero_point", 0));
///     g.add_node("QuantizeLinear", {"x", "x_scale", "x_zero_point"}, {"x_q"});
///     g.outputs.push_back({"x_q", xq::onnx::data_type::int8, {"N", 1, 8, 8}});
///     xq::onnx::save(xq::onnx::model(std::move(g), /*opset=*/13), "x_q.onnx");
///
/// Why a wire writer of its own and not protozero (Debian's libprotozero-dev 1.7.1, mapbox's
/// header-only protobuf encoder/decoder). Measured on 2 Zen 3 cores, g++ 12, -O2:
///   - code: protozero is 4,399 lines of headers. Its API is field numbers, as ours is, so
///     the message code is not much shorter with it: the same writer on protozero took 70
///     lines against our 178 (about 60 of them the varint/tag/length/fixed32 primitives and
///     the size counter); our reader is 520 lines, 117 of them the bounds-checked primitives
///     that protozero's pbf_reader would replace.
///   - compile time, `/usr/bin/time g++ -std=c++17 -O2 -fsyntax-only`, best of 5: <string>,
///     <vector> and <cstring> alone 0.15 s; with <protozero/pbf_writer.hpp> and
///     <protozero/pbf_reader.hpp> 0.26 s; this header in separate-compilation mode 0.29 s,
///     header-only 1.0 s (0.6 s of it is io/atomic_file.hpp's <filesystem> and <random>).
///   - speed, a model of 40 float initializers (4 MiB) and 400 nodes: serialize() 0.72 ms
///     (validation 0.36 ms of it: each message's size is counted first, then each byte is
///     written once into a string of the final size); the same bytes through protozero's
///     nested writers 3.0 ms (it reserves 5 bytes for a length, then moves each finished
///     message down to close the gap: the raw data move once per nesting level).
///     parse() reads the 4 MiB back in 1.3 ms.
/// Protozero would save about 230 lines and cost a dependency in CMake, Conan, the package
/// config and the install script, for a slower writer: xq::onnx writes the wire format
/// itself, and no header needs a package beyond the standard library.
///
/// Everything a writer needs is public data: `model` holds a `graph` of `node`s, initializers
/// (`tensor_data`: raw little-endian bytes) and typed inputs/outputs (`value_info`).
/// `serialize`, `save` and `parse` check the model first (`validate`); a model that ONNX
/// would reject, or that xq::onnx cannot represent, is an xq::argument_error naming the
/// node or tensor, what was expected and what was given.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../config.hpp"
#include "../../core/error.hpp"

namespace xq::onnx {

/// Element types: the codes of ONNX's TensorProto.DataType (onnx.proto, onnx 1.23).
enum class data_type : std::int32_t {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  string = 8,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  complex64 = 14,
  complex128 = 15,
  bfloat16 = 16,
  float8e4m3fn = 17,
  float8e4m3fnuz = 18,
  float8e5m2 = 19,
  float8e5m2fnuz = 20,
  uint4 = 21,  // [0, 15], two per byte, the first in the low nibble
  int4 = 22,   // [-8, 7], two's complement, packed as uint4
  float4e2m1 = 23,
  float8e8m0 = 24,
  uint2 = 25,  // four per byte, the first in the lowest two bits
  int2 = 26,
};

/// True for the codes listed in data_type other than `undefined`.
XQ_DECL bool is_known(data_type type) noexcept;
/// ONNX's name of a type ("FLOAT", "INT8", "INT4", ...); "UNKNOWN(<code>)" otherwise.
XQ_DECL std::string data_type_name(data_type type);
/// Bits per element (4 for int4, 2 for int2, ...); 0 for string and unknown codes.
XQ_DECL std::size_t element_bits(data_type type) noexcept;
/// The smallest IR version that allows `opset` of the default domain (onnx.helper's
/// VERSION_TABLE): 13 -> 7, 17 -> 8, 19 -> 9, 21 -> 10, 23 -> 11. Opsets below 7 -> 3.
XQ_DECL std::int64_t ir_version_for_opset(std::int64_t opset) noexcept;

/// A tensor's value (ONNX TensorProto): initializers and tensor attributes. The data are
/// `raw`, little-endian, row-major; sub-byte types are packed (data_type). Build one with a
/// named constructor, which checks that the values fill `dims` and fit the type.
struct tensor_data {
  std::string name;
  data_type type = data_type::undefined;
  std::vector<std::int64_t> dims;  ///< empty: a scalar
  std::string raw;                 ///< ONNX raw_data

  /// The number of elements `dims` holds (1 for a scalar).
  XQ_DECL std::int64_t element_count() const;

  XQ_DECL static tensor_data float32(std::string name, std::vector<std::int64_t> dims,
                                     const std::vector<float>& values);
  XQ_DECL static tensor_data int8(std::string name, std::vector<std::int64_t> dims,
                                  const std::vector<std::int8_t>& values);
  XQ_DECL static tensor_data uint8(std::string name, std::vector<std::int64_t> dims,
                                   const std::vector<std::uint8_t>& values);
  XQ_DECL static tensor_data int16(std::string name, std::vector<std::int64_t> dims,
                                   const std::vector<std::int16_t>& values);
  XQ_DECL static tensor_data uint16(std::string name, std::vector<std::int64_t> dims,
                                    const std::vector<std::uint16_t>& values);
  XQ_DECL static tensor_data int32(std::string name, std::vector<std::int64_t> dims,
                                   const std::vector<std::int32_t>& values);
  XQ_DECL static tensor_data int64(std::string name, std::vector<std::int64_t> dims,
                                   const std::vector<std::int64_t>& values);
  /// int4 values, each in [-8, 7] (opset 21: QuantizeLinear/DequantizeLinear).
  XQ_DECL static tensor_data int4(std::string name, std::vector<std::int64_t> dims,
                                  const std::vector<std::int8_t>& values);
  /// uint4 values, each in [0, 15].
  XQ_DECL static tensor_data uint4(std::string name, std::vector<std::int64_t> dims,
                                   const std::vector<std::uint8_t>& values);

  XQ_DECL static tensor_data float32_scalar(std::string name, float value);
  XQ_DECL static tensor_data int8_scalar(std::string name, std::int8_t value);
  XQ_DECL static tensor_data uint8_scalar(std::string name, std::uint8_t value);
  XQ_DECL static tensor_data int32_scalar(std::string name, std::int32_t value);
  XQ_DECL static tensor_data int64_scalar(std::string name, std::int64_t value);

  /// The values of a float32 tensor. Throws argument_error for another type.
  XQ_DECL std::vector<float> float32_values() const;
  /// The values of an integer or boolean tensor (int2 ... int64, uint2 ... uint64, bool;
  /// uint64 above INT64_MAX wraps). Throws argument_error for another type.
  XQ_DECL std::vector<std::int64_t> integer_values() const;

  friend bool operator==(const tensor_data& a, const tensor_data& b) {
    return a.name == b.name && a.type == b.type && a.dims == b.dims && a.raw == b.raw;
  }
  friend bool operator!=(const tensor_data& a, const tensor_data& b) { return !(a == b); }
};

/// The kinds of attribute xq::onnx writes (ONNX AttributeProto.AttributeType codes).
enum class attribute_type : std::int32_t {
  undefined = 0,
  float_ = 1,
  int_ = 2,
  string = 3,
  tensor = 4,
  floats = 6,
  ints = 7,
  strings = 8,
};

/// A node's attribute (ONNX AttributeProto): `name`, `type` and the one member `type` says.
/// Build one with the functions below (int_attribute("axis", 0), ...).
struct attribute {
  std::string name;
  attribute_type type = attribute_type::undefined;
  float f = 0.0f;
  std::int64_t i = 0;
  std::string s;
  tensor_data t;
  std::vector<float> floats;
  std::vector<std::int64_t> ints;
  std::vector<std::string> strings;

  /// Floats compare by their bits: a NaN equals itself, -0 differs from 0 (what the file holds).
  friend bool operator==(const attribute& a, const attribute& b) {
    return a.name == b.name && a.type == b.type && same_bits(a.f, b.f) && a.i == b.i && a.s == b.s && a.t == b.t &&
           a.floats.size() == b.floats.size() &&
           std::equal(a.floats.begin(), a.floats.end(), b.floats.begin(), &attribute::same_bits) && a.ints == b.ints &&
           a.strings == b.strings;
  }
  friend bool operator!=(const attribute& a, const attribute& b) { return !(a == b); }

 private:
  static bool same_bits(float x, float y) noexcept { return std::memcmp(&x, &y, sizeof x) == 0; }
};

XQ_DECL attribute float_attribute(std::string name, float value);
XQ_DECL attribute int_attribute(std::string name, std::int64_t value);
XQ_DECL attribute string_attribute(std::string name, std::string value);
XQ_DECL attribute tensor_attribute(std::string name, tensor_data value);
XQ_DECL attribute floats_attribute(std::string name, std::vector<float> values);
XQ_DECL attribute ints_attribute(std::string name, std::vector<std::int64_t> values);
XQ_DECL attribute strings_attribute(std::string name, std::vector<std::string> values);

/// A node (ONNX NodeProto). An empty input name stands for an optional input left out.
struct node {
  std::string op_type;
  std::string name;
  std::string domain;  ///< "" is the default ONNX domain
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<attribute> attributes;
  std::string doc_string;

  /// The attribute called `attribute_name`, or nullptr.
  XQ_DECL const attribute* find_attribute(const std::string& attribute_name) const;

  friend bool operator==(const node& a, const node& b) {
    return a.op_type == b.op_type && a.name == b.name && a.domain == b.domain && a.inputs == b.inputs &&
           a.outputs == b.outputs && a.attributes == b.attributes && a.doc_string == b.doc_string;
  }
  friend bool operator!=(const node& a, const node& b) { return !(a == b); }
};

/// One dimension of a value's shape: a fixed size, a named symbolic size ("N"), or unknown
/// (default).
struct dimension {
  std::int64_t value = -1;  ///< the size, or -1 when symbolic or unknown
  std::string param;        ///< the symbolic name, or empty

  dimension() = default;
  dimension(int size) : value(size) {}                         // NOLINT: {"N", 1, 28, 28} reads as a shape
  dimension(std::int64_t size) : value(size) {}                // NOLINT
  dimension(std::string symbol) : param(std::move(symbol)) {}  // NOLINT
  dimension(const char* symbol) : param(symbol) {}             // NOLINT

  bool is_fixed() const noexcept { return param.empty() && value >= 0; }
  bool is_symbolic() const noexcept { return !param.empty(); }

  friend bool operator==(const dimension& a, const dimension& b) { return a.value == b.value && a.param == b.param; }
  friend bool operator!=(const dimension& a, const dimension& b) { return !(a == b); }
};

/// A typed value: a graph input or output, or an intermediate value's type (ONNX
/// ValueInfoProto with a tensor type). `shape` absent: the rank is not known, which ONNX's
/// checker accepts for graph.value_infos only (inputs and outputs need a shape, whose
/// dimensions may be symbolic or unknown).
struct value_info {
  std::string name;
  data_type type = data_type::undefined;
  std::optional<std::vector<dimension>> shape;
  std::string doc_string;

  value_info() = default;
  /// A tensor of unknown rank (for graph.value_infos).
  value_info(std::string value_name, data_type elem_type) : name(std::move(value_name)), type(elem_type) {}
  /// A tensor of rank shape.size(): {"x", data_type::float32, {"N", 1, 28, 28}}.
  value_info(std::string value_name, data_type elem_type, std::vector<dimension> dims)
      : name(std::move(value_name)), type(elem_type), shape(std::move(dims)) {}

  friend bool operator==(const value_info& a, const value_info& b) {
    return a.name == b.name && a.type == b.type && a.shape == b.shape && a.doc_string == b.doc_string;
  }
  friend bool operator!=(const value_info& a, const value_info& b) { return !(a == b); }
};

/// A graph (ONNX GraphProto). Nodes must be in topological order: each input is a graph
/// input, an initializer, or an output of an earlier node.
struct graph {
  std::string name = "main";
  std::vector<node> nodes;
  std::vector<tensor_data> initializers;
  std::vector<value_info> inputs;
  std::vector<value_info> outputs;
  std::vector<value_info> value_infos;  ///< ONNX's GraphProto.value_info: intermediate types
  std::string doc_string;

  /// Appends a node and returns it (the reference lasts until the next node is added). An
  /// empty `node_name` becomes unique_name(op_type).
  XQ_DECL node& add_node(std::string op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                         std::vector<attribute> attributes = {}, std::string node_name = {});
  /// Appends an initializer and returns its name.
  XQ_DECL const std::string& add_initializer(tensor_data tensor);
  /// `base` when no node, value or initializer of the graph has that name yet, else the
  /// first free one of base_1, base_2, ... (a scan of the graph: O(size) per call).
  XQ_DECL std::string unique_name(const std::string& base) const;
  /// The initializer called `initializer_name`, or nullptr.
  XQ_DECL const tensor_data* find_initializer(const std::string& initializer_name) const;
  /// The node that outputs `value_name`, or nullptr.
  XQ_DECL const node* producer(const std::string& value_name) const;

  friend bool operator==(const graph& a, const graph& b) {
    return a.name == b.name && a.nodes == b.nodes && a.initializers == b.initializers && a.inputs == b.inputs &&
           a.outputs == b.outputs && a.value_infos == b.value_infos && a.doc_string == b.doc_string;
  }
  friend bool operator!=(const graph& a, const graph& b) { return !(a == b); }
};

/// An operator set a model uses (ONNX OperatorSetIdProto); domain "" is ONNX's own.
struct opset_id {
  std::string domain;
  std::int64_t version = 0;

  friend bool operator==(const opset_id& a, const opset_id& b) {
    return a.domain == b.domain && a.version == b.version;
  }
  friend bool operator!=(const opset_id& a, const opset_id& b) { return !(a == b); }
};

/// A model (ONNX ModelProto).
struct model {
  std::int64_t ir_version = 7;
  std::vector<opset_id> opset_imports{{"", 13}};
  std::string producer_name = "xquant";
  std::string producer_version = std::to_string(XQ_VERSION_MAJOR) + "." + std::to_string(XQ_VERSION_MINOR) + "." +
                                 std::to_string(XQ_VERSION_PATCH);
  std::string domain;
  std::int64_t model_version = 0;
  std::string doc_string;
  /// ONNX metadata_props, in order (e.g. {"xquant.rounding", "half_to_even"}).
  std::vector<std::pair<std::string, std::string>> metadata_props;
  onnx::graph graph;

  model() = default;
  /// A model of `g` importing `opset` of the default domain, at ir_version_for_opset(opset).
  XQ_DECL model(onnx::graph g, std::int64_t opset);

  /// The version of the default domain's opset, 0 when none is imported.
  XQ_DECL std::int64_t opset() const noexcept;

  friend bool operator==(const model& a, const model& b) {
    return a.ir_version == b.ir_version && a.opset_imports == b.opset_imports && a.producer_name == b.producer_name &&
           a.producer_version == b.producer_version && a.domain == b.domain && a.model_version == b.model_version &&
           a.doc_string == b.doc_string && a.metadata_props == b.metadata_props && a.graph == b.graph;
  }
  friend bool operator!=(const model& a, const model& b) { return !(a == b); }
};

/// Checks what ONNX's checker would reject and what xq::onnx cannot write: an IR version
/// below 3; no opset of the default domain, or one imported twice; an empty graph name; an
/// empty op_type or attribute name, an attribute twice in a node, an attribute type other
/// than those of attribute_type; a node input that is not a graph input, an initializer or
/// an output of an earlier node; a value produced twice (by nodes, graph inputs or
/// initializers; an initializer may share its name with a graph input, its default); a graph
/// output nothing produces; a graph input or output without a shape; an unknown or
/// undefined data type (string tensors included: xq::onnx writes raw data only); a negative
/// dimension; raw data whose size is not what the type and dims need. Throws
/// xq::argument_error naming the node, initializer or value, what was expected and given.
XQ_DECL void validate(const model& m);

/// The model as ONNX protobuf bytes (what onnx.load reads), after validate(m).
XQ_DECL std::string serialize(const model& m);

/// serialize(m) written to `path` atomically (io/atomic_file.hpp): a failure leaves any
/// previous file as it was. Throws argument_error (validate) or io_error naming `path`.
XQ_DECL void save(const model& m, const std::string& path);

/// Reads ONNX protobuf bytes: the subset that serialize writes (tensor types of value
/// infos; raw, float, int32 and int64 tensor data; the attribute types of attribute_type),
/// skipping annotations it does not keep (metadata of nodes and values, quantization
/// annotations). Anything else that would change the model's meaning (subgraphs, functions,
/// external or string data, sparse initializers), bytes that are not valid protobuf, and a
/// model that fails validate() throw xq::argument_error saying what and at which byte:
/// never a partial model.
XQ_DECL model parse(const std::string& bytes);

/// parse() of the file at `path`; errors are io_errors naming `path`.
XQ_DECL model load(const std::string& path);

}  // namespace xq::onnx

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/onnx_model.ipp"
#endif
