// xq::onnx (deploy/onnx_model.hpp): the in-memory ONNX model, its protobuf writer and
// reader. Round trips of every type the writer knows, a model written by protobuf itself
// (onnx.helper), every validation error, the atomic save, and corrupt bytes. That the files
// are what ONNX and onnxruntime read is the job of the onnx.qdq_opset* tests
// (tests/deploy/onnx_fixture_main.cpp + tools/onnx_check.py).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>
#include <xquant/deploy/onnx_model.hpp>

namespace {

namespace fs = std::filesystem;
using namespace xq::onnx;
using Catch::Matchers::Contains;

// A fresh directory under the system temp dir, removed at scope exit.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("xq_test_onnx_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// x -> QuantizeLinear -> DequantizeLinear(axis) -> Conv(w) -> y: a small valid model.
model small_model() {
  graph g;
  g.inputs.push_back({"x", data_type::float32, {"N", 2, 4, 4}});
  g.add_initializer(tensor_data::float32_scalar("x_scale", 0.5f));
  g.add_initializer(tensor_data::int8_scalar("x_zero_point", -3));
  g.add_initializer(tensor_data::int8("w_q", {3, 2, 1, 1}, {1, -2, 3, -4, 5, -128}));
  g.add_initializer(tensor_data::float32("w_scale", {3}, {0.25f, 0.5f, 1.0f}));
  g.add_initializer(tensor_data::int8("w_zero_point", {3}, {0, 0, 0}));
  g.add_node("QuantizeLinear", {"x", "x_scale", "x_zero_point"}, {"x_q"});
  g.add_node("DequantizeLinear", {"x_q", "x_scale", "x_zero_point"}, {"x_dq"});
  g.add_node("DequantizeLinear", {"w_q", "w_scale", "w_zero_point"}, {"w"}, {int_attribute("axis", 0)});
  g.add_node("Conv", {"x_dq", "w", ""}, {"y"}, {ints_attribute("kernel_shape", {1, 1})}, "conv");
  g.outputs.push_back({"y", data_type::float32, {"N", 3, 4, 4}});
  return model(std::move(g), 13);
}

// Every attribute type, every tensor constructor, value infos of every kind.
model rich_model() {
  model m = small_model();
  graph& g = m.graph;
  g.doc_string = "graph doc";
  g.add_initializer(tensor_data::uint8("u8", {2, 2}, {0, 1, 254, 255}));
  g.add_initializer(tensor_data::int32("i32", {3}, {-2147483647 - 1, 0, 2147483647}));
  g.add_initializer(tensor_data::int64("i64", {2}, {-1, INT64_MAX}));
  g.add_initializer(tensor_data::int4("i4", {5}, {-8, -1, 0, 3, 7}));
  g.add_initializer(tensor_data::uint4("u4", {3}, {0, 9, 15}));
  g.add_initializer(tensor_data::uint8_scalar("u8s", 200));
  g.add_initializer(tensor_data::int32_scalar("i32s", -5));
  g.add_initializer(tensor_data::int64_scalar("i64s", 1LL << 40));
  g.add_initializer(tensor_data::float32("empty", {0, 3}, {}));
  node& n = g.add_node("Identity", {"y"}, {"z"},
                       {float_attribute("f", -1.5f), int_attribute("i", -7), string_attribute("s", "text"),
                        tensor_attribute("t", tensor_data::float32("value", {2}, {1.0f, -0.0f})),
                        floats_attribute("floats", {0.5f, 2.0f}), ints_attribute("ints", {-1, 0, 1LL << 50}),
                        strings_attribute("strings", {"a", "", "c"})});
  n.domain = "";
  n.doc_string = "node doc";
  g.outputs.push_back({"z", data_type::float32, {dimension(), 3, "H", 4}});
  g.value_infos.push_back({"x_q", data_type::int8, {"N", 2, 4, 4}});
  g.value_infos.push_back({"w", data_type::float32});  // unknown rank
  m.opset_imports.push_back({"com.example", 2});
  m.producer_name = "xquant test";
  m.producer_version = "9.9";
  m.domain = "org.xquant";
  m.model_version = 42;
  m.doc_string = "model doc";
  m.metadata_props = {{"xquant.rounding", "half_to_even"}, {"empty", ""}};
  return m;
}

}  // namespace

TEST_CASE("onnx_model: serialize then parse gives the same model and the same bytes", "[deploy][onnx]") {
  for (const model& m : {small_model(), rich_model()}) {
    const std::string bytes = serialize(m);
    const model back = parse(bytes);
    CHECK(back == m);
    CHECK(serialize(back) == bytes);
  }
  const model back = parse(serialize(rich_model()));
  const graph& g = back.graph;
  CHECK(g.find_initializer("x_scale")->float32_values() == std::vector<float>{0.5f});
  CHECK(g.find_initializer("w_q")->integer_values() == std::vector<std::int64_t>{1, -2, 3, -4, 5, -128});
  CHECK(g.find_initializer("u8")->integer_values() == std::vector<std::int64_t>{0, 1, 254, 255});
  CHECK(g.find_initializer("i32")->integer_values() == std::vector<std::int64_t>{-2147483647LL - 1, 0, 2147483647});
  CHECK(g.find_initializer("i64")->integer_values() == std::vector<std::int64_t>{-1, INT64_MAX});
  CHECK(g.find_initializer("i4")->integer_values() == std::vector<std::int64_t>{-8, -1, 0, 3, 7});
  CHECK(g.find_initializer("u4")->integer_values() == std::vector<std::int64_t>{0, 9, 15});
  CHECK(g.find_initializer("i64s")->integer_values() == std::vector<std::int64_t>{1LL << 40});
  CHECK(g.find_initializer("empty")->element_count() == 0);
  const node* identity = g.producer("z");
  REQUIRE(identity != nullptr);
  CHECK(identity->find_attribute("f")->f == -1.5f);
  CHECK(identity->find_attribute("t")->t.float32_values() == std::vector<float>{1.0f, -0.0f});
  CHECK(identity->find_attribute("ints")->ints == std::vector<std::int64_t>{-1, 0, 1LL << 50});
  CHECK(identity->find_attribute("strings")->strings == std::vector<std::string>{"a", "", "c"});
  CHECK(identity->find_attribute("absent") == nullptr);
  CHECK(g.outputs[1].shape->at(0) == dimension());
  CHECK(g.outputs[1].shape->at(2).is_symbolic());
  CHECK_FALSE(g.value_infos[1].shape.has_value());
}

TEST_CASE("onnx_model: the bytes follow onnx.proto", "[deploy][onnx]") {
  // int4 packs two per byte, the first in the low nibble; int8 is two's complement.
  CHECK(tensor_data::int4("a", {3}, {-8, 7, -1}).raw == std::string("\x78\x0f", 2));
  CHECK(tensor_data::uint4("a", {2}, {1, 2}).raw == std::string("\x21", 1));
  CHECK(tensor_data::int8("a", {2}, {-1, 2}).raw == std::string("\xff\x02", 2));
  CHECK(tensor_data::float32_scalar("a", 1.0f).raw == std::string("\x00\x00\x80\x3f", 4));
  CHECK(tensor_data::int64_scalar("a", -2).raw == std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8));
  // ModelProto: ir_version (field 1, varint) first, the graph (field 7) last.
  const std::string bytes = serialize(small_model());
  CHECK(bytes.substr(0, 2) == std::string("\x08\x07", 2));
  CHECK(bytes.find(std::string("\x42\x04\x0a\x00\x10\x0d", 6)) != std::string::npos);  // opset_import {"", 13}
  CHECK(ir_version_for_opset(13) == 7);
  CHECK(ir_version_for_opset(17) == 8);
  CHECK(ir_version_for_opset(21) == 10);
  CHECK(ir_version_for_opset(23) == 11);
  CHECK(model(graph(), 21).ir_version == 10);
  CHECK(model(graph(), 21).opset() == 21);
  CHECK(data_type_name(data_type::int4) == "INT4");
  CHECK(data_type_name(static_cast<data_type>(99)) == "UNKNOWN(99)");
  CHECK(element_bits(data_type::int4) == 4);
  CHECK(element_bits(data_type::float32) == 32);
  CHECK(element_bits(data_type::string) == 0);
}

TEST_CASE("onnx_model: parse reads what protobuf writes (onnx.helper: typed data, packed fields)", "[deploy][onnx]") {
  // onnx 1.23.2, tools: onnx.helper.make_model of MatMul(x, w) -> Reshape(shape) ->
  // Transpose(perm=[1, 0]) -> t, and DequantizeLinear(q, one, zp) -> d; w, shape, zp, one
  // and q made by onnx.helper.make_tensor without raw=True (float_data, int64_data and
  // int32_data, packed), the graph before opset_import as protobuf orders fields. It
  // passes onnx.checker.check_model(full_check=True).
  static const char bytes[] =
      "\x08\x07\x12\x0b\x6f\x6e\x6e\x78\x2e\x68\x65\x6c\x70\x65\x72\x3a\xac\x02\x0a\x15\x0a\x01\x78\x0a"
      "\x01\x77\x12\x01\x79\x1a\x02\x6d\x6d\x22\x06\x4d\x61\x74\x4d\x75\x6c\x0a\x1a\x0a\x01\x79\x0a\x05"
      "\x73\x68\x61\x70\x65\x12\x01\x72\x1a\x02\x72\x73\x22\x07\x52\x65\x73\x68\x61\x70\x65\x0a\x24\x0a"
      "\x01\x72\x12\x01\x74\x1a\x02\x74\x72\x22\x09\x54\x72\x61\x6e\x73\x70\x6f\x73\x65\x2a\x0d\x0a\x04"
      "\x70\x65\x72\x6d\x40\x01\x40\x00\xa0\x01\x07\x0a\x25\x0a\x01\x71\x0a\x03\x6f\x6e\x65\x0a\x02\x7a"
      "\x70\x12\x01\x64\x1a\x02\x64\x71\x22\x10\x44\x65\x71\x75\x61\x6e\x74\x69\x7a\x65\x4c\x69\x6e\x65"
      "\x61\x72\x12\x01\x67\x2a\x1b\x08\x02\x08\x02\x10\x01\x22\x10\x00\x00\x80\x3f\x00\x00\x00\xc0\x00"
      "\x00\x00\x3f\x00\x00\x80\x40\x42\x01\x77\x2a\x18\x08\x02\x10\x07\x3a\x0b\x01\xff\xff\xff\xff\xff"
      "\xff\xff\xff\xff\x01\x42\x05\x73\x68\x61\x70\x65\x2a\x12\x10\x03\x2a\x0a\xfd\xff\xff\xff\xff\xff"
      "\xff\xff\xff\x01\x42\x02\x7a\x70\x2a\x0d\x10\x01\x22\x04\x00\x00\x00\x3f\x42\x03\x6f\x6e\x65\x2a"
      "\x15\x08\x03\x10\x03\x2a\x0c\x80\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\x7f\x42\x01\x71\x5a\x14"
      "\x0a\x01\x78\x12\x0f\x0a\x0d\x08\x01\x12\x09\x0a\x03\x12\x01\x4e\x0a\x02\x08\x02\x62\x0f\x0a\x01"
      "\x74\x12\x0a\x0a\x08\x08\x01\x12\x04\x0a\x00\x0a\x00\x62\x0f\x0a\x01\x64\x12\x0a\x0a\x08\x08\x01"
      "\x12\x04\x0a\x02\x08\x03\x42\x04\x0a\x00\x10\x0d";
  const model m = parse(std::string(bytes, sizeof bytes - 1));
  CHECK(m.ir_version == 7);
  CHECK(m.opset() == 13);
  CHECK(m.producer_name == "onnx.helper");
  const graph& g = m.graph;
  CHECK(g.name == "g");
  REQUIRE(g.nodes.size() == 4);
  CHECK(g.nodes[2].op_type == "Transpose");
  CHECK(g.nodes[2].find_attribute("perm")->ints == std::vector<std::int64_t>{1, 0});
  CHECK(g.find_initializer("w")->dims == std::vector<std::int64_t>{2, 2});
  CHECK(g.find_initializer("w")->float32_values() == std::vector<float>{1.0f, -2.0f, 0.5f, 4.0f});
  CHECK(g.find_initializer("shape")->integer_values() == std::vector<std::int64_t>{1, -1});
  CHECK(g.find_initializer("zp")->integer_values() == std::vector<std::int64_t>{-3});
  CHECK(g.find_initializer("q")->integer_values() == std::vector<std::int64_t>{-128, 0, 127});
  CHECK(g.inputs[0].shape == std::vector<dimension>{"N", 2});
  CHECK(g.outputs[0].shape == std::vector<dimension>{dimension(), dimension()});
  // Written again by xq::onnx (raw data), it reads back as the same model.
  CHECK(parse(serialize(m)) == m);
}

TEST_CASE("onnx_model: add_node names nodes uniquely, unique_name avoids every name in the graph", "[deploy][onnx]") {
  graph g;
  g.inputs.push_back({"x", data_type::float32, {1}});
  CHECK(g.add_node("Relu", {"x"}, {"Relu_1"}).name == "Relu");
  CHECK(g.add_node("Relu", {"Relu_1"}, {"y"}).name == "Relu_2");  // Relu_1 is a value
  CHECK(g.unique_name("x") == "x_1");
  CHECK(g.unique_name("fresh") == "fresh");
  CHECK(g.add_node("Relu", {"y"}, {"z"}, {}, "mine").name == "mine");
  CHECK(g.producer("z")->name == "mine");
  CHECK(g.producer("x") == nullptr);
}

TEST_CASE("onnx_model: each invalid model is an argument_error naming the node and what was expected",
          "[deploy][onnx]") {
  SECTION("an empty op_type") {
    model m = small_model();
    m.graph.nodes[3].op_type.clear();
    CHECK_THROWS_WITH(serialize(m), Contains("node #3 \"conv\"") && Contains("expected an op_type") &&
                                        Contains("given an empty one"));
  }
  SECTION("an input nothing produces") {
    model m = small_model();
    m.graph.nodes[3].inputs[1] = "w_typo";
    CHECK_THROWS_WITH(serialize(m),
                      Contains("node #3 \"conv\" (Conv)") &&
                          Contains("input \"w_typo\" produced by a node, an initializer or a graph input") &&
                          Contains("a name that nothing in the graph produces"));
  }
  SECTION("an input produced by a later node: nodes must be in topological order") {
    model m = small_model();
    std::swap(m.graph.nodes[0], m.graph.nodes[1]);
    CHECK_THROWS_WITH(validate(m), Contains("node #0") && Contains("input \"x_q\" produced by an earlier node") &&
                                       Contains("an output of the later onnx graph \"main\", node #1"));
  }
  SECTION("an output produced twice") {
    model m = small_model();
    m.graph.nodes[1].outputs[0] = "x_q";
    CHECK_THROWS_WITH(validate(m), Contains("node #1") &&
                                       Contains("output \"x_q\" a name that nothing else produces") &&
                                       Contains("already produced by onnx graph \"main\", node #0"));
    m = small_model();
    m.graph.nodes[0].outputs[0] = "w_q";
    CHECK_THROWS_WITH(validate(m), Contains("already produced by an initializer"));
    m = small_model();
    m.graph.nodes[0].outputs[0] = "x";
    CHECK_THROWS_WITH(validate(m), Contains("already produced by a graph input"));
    m = small_model();
    m.graph.initializers.push_back(tensor_data::float32_scalar("x_scale", 1.0f));
    CHECK_THROWS_WITH(validate(m), Contains("initializer \"x_scale\"") && Contains("initializer names used once"));
  }
  SECTION("unknown data types") {
    model m = small_model();
    m.graph.initializers[0].type = static_cast<data_type>(99);
    CHECK_THROWS_WITH(validate(m), Contains("initializer \"x_scale\"") && Contains("known ONNX data type") &&
                                       Contains("given code 99"));
    m = small_model();
    m.graph.inputs[0].type = data_type::undefined;
    CHECK_THROWS_WITH(validate(m), Contains("input \"x\"") && Contains("given code 0"));
    m = small_model();
    m.graph.nodes[3].attributes.push_back(tensor_attribute("t", tensor_data::float32_scalar("v", 1.0f)));
    m.graph.nodes[3].attributes.back().t.type = static_cast<data_type>(-4);
    CHECK_THROWS_WITH(validate(m), Contains("node #3 \"conv\" (Conv), attribute \"t\"") && Contains("given code -4"));
    m = small_model();
    m.graph.initializers[0].type = data_type::string;
    CHECK_THROWS_WITH(validate(m), Contains("a numeric data type"));
  }
  SECTION("raw data that does not fit the dims") {
    model m = small_model();
    m.graph.initializers[3].raw.pop_back();
    CHECK_THROWS_WITH(validate(m), Contains("initializer \"w_scale\"") &&
                                       Contains("expected 12 bytes of raw data (3 FLOAT elements, dims (3))") &&
                                       Contains("given 11 bytes"));
    m = small_model();
    m.graph.initializers[3].dims = {-3};
    CHECK_THROWS_WITH(validate(m), Contains("non-negative dims"));
  }
  SECTION("graph outputs, names, opsets, attributes") {
    model m = small_model();
    m.graph.outputs[0].name = "nowhere";
    CHECK_THROWS_WITH(validate(m),
                      Contains("output \"nowhere\"") && Contains("a name that nothing in the graph produces"));
    m = small_model();
    m.graph.outputs[0].shape.reset();
    CHECK_THROWS_WITH(validate(m), Contains("output \"y\"") && Contains("expected a shape"));
    m = small_model();
    m.graph.name.clear();
    CHECK_THROWS_WITH(validate(m), Contains("onnx graph: expected a name"));
    m = small_model();
    m.opset_imports = {{"com.example", 1}};
    CHECK_THROWS_WITH(validate(m), Contains("an opset import of the default domain"));
    m = small_model();
    m.opset_imports.push_back({"ai.onnx", 13});
    CHECK_THROWS_WITH(validate(m), Contains("each opset domain imported once"));
    m = small_model();
    m.ir_version = 2;
    CHECK_THROWS_WITH(validate(m), Contains("an IR version of at least 3"));
    m = small_model();
    m.graph.nodes[2].attributes.push_back(int_attribute("axis", 1));
    CHECK_THROWS_WITH(validate(m), Contains("node #2") && Contains("given attribute \"axis\" twice"));
    m = small_model();
    m.graph.nodes[2].attributes[0].type = attribute_type::undefined;
    CHECK_THROWS_WITH(validate(m), Contains("attribute \"axis\" of a type in xq::onnx::attribute_type"));
  }
  SECTION("named constructors check their values") {
    CHECK_THROWS_WITH(tensor_data::float32("w", {2, 3}, {1.0f}), Contains("onnx tensor \"w\"") &&
                                                                     Contains("dims (2, 3) (6 elements)") &&
                                                                     Contains("given 1 values"));
    CHECK_THROWS_WITH(tensor_data::int4("w", {2}, {0, 8}),
                      Contains("INT4 values in [-8, 7]") && Contains("given 8 at element 1"));
    CHECK_THROWS_WITH(tensor_data::uint4("w", {1}, {16}), Contains("UINT4 values in [0, 15]"));
    CHECK_THROWS_WITH(tensor_data::int8_scalar("w", 1).float32_values(), Contains("a FLOAT tensor"));
    CHECK_THROWS_WITH(tensor_data::float32_scalar("w", 1).integer_values(), Contains("an integer or BOOL tensor"));
  }
  SECTION("the error carries where, expected and given") {
    model m = small_model();
    m.graph.nodes[3].op_type.clear();
    try {
      validate(m);
      FAIL("no error");
    } catch (const xq::argument_error& e) {
      CHECK(e.where() == "onnx graph \"main\", node #3 \"conv\" (no op_type)");
      CHECK(e.expected() == "an op_type (e.g. \"Conv\")");
      CHECK(e.given() == "an empty one");
    }
  }
}

TEST_CASE("onnx_model: save writes atomically and leaves the old file when it fails", "[deploy][onnx]") {
  temp_dir dir;
  const std::string path = dir / "model.onnx";
  save(small_model(), path);
  CHECK(read_bytes(path) == serialize(small_model()));
  CHECK(load(path) == small_model());
  save(rich_model(), path);  // replaces it
  CHECK(load(path) == rich_model());
  model bad = small_model();
  bad.graph.nodes[0].op_type.clear();
  CHECK_THROWS_AS(save(bad, path), xq::argument_error);
  CHECK(load(path) == rich_model());  // untouched
  CHECK_THROWS_AS(save(small_model(), dir / "no/such/dir/model.onnx"), xq::io_error);
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) files += e.is_regular_file();
  CHECK(files == 1);  // no temporary left behind
  CHECK_THROWS_WITH(load(dir / "missing.onnx"), Contains("missing.onnx") && Contains("cannot open"));
}

TEST_CASE("onnx_model: corrupt bytes are a clear error, never a crash or a partial model", "[deploy][onnx]") {
  const std::string bytes = serialize(rich_model());
  SECTION("every truncation") {
    // The graph is written last, so a cut anywhere ends inside an announced length or
    // leaves no graph.
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      INFO("first " << n << " of " << bytes.size() << " bytes");
      CHECK_THROWS_AS(parse(bytes.substr(0, n)), xq::argument_error);
    }
    CHECK_THROWS_WITH(parse(""),
                      Contains("expected a graph (ModelProto field 7)") && Contains("given a model without one"));
    CHECK_THROWS_WITH(parse(bytes.substr(0, bytes.size() - 1)), Contains("xq::onnx::parse") && Contains("bytes left"));
  }
  SECTION("bad varints, wire types and lengths") {
    CHECK_THROWS_WITH(parse(std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11)),
                      Contains("a varint of at most 64 bits"));
    CHECK_THROWS_WITH(parse(std::string("\x08", 1)),
                      Contains("expected a varint in ModelProto at byte 1") && Contains("the end of the message"));
    CHECK_THROWS_WITH(parse(std::string("\x0b", 1)), Contains("start-group"));     // field 1, wire type 3
    CHECK_THROWS_WITH(parse(std::string("\x0f", 1)), Contains("invalid (7)"));     // wire type 7
    CHECK_THROWS_WITH(parse(std::string("\x00", 1)), Contains("a field number"));  // field 0
    CHECK_THROWS_WITH(parse(std::string("\x3a\x05\x0a", 3)),
                      Contains("a length-delimited value of 5 bytes") && Contains("1 bytes left"));
    CHECK_THROWS_WITH(parse(std::string("\x3d\x00\x00\x00\x00", 5)),
                      Contains("field 7 (graph) as length-delimited") && Contains("given fixed32"));
  }
  SECTION("random bit flips: an error, or a model that validates") {
    std::mt19937 gen(12345);
    std::size_t rejected = 0;
    for (int trial = 0; trial < 2000; ++trial) {
      std::string b = bytes;
      for (int k = 0; k < 3; ++k) b[gen() % b.size()] ^= static_cast<char>(1u << (gen() % 8));
      try {
        const model m = parse(b);
        validate(m);  // what parse returns is whole and valid
        CHECK(parse(serialize(m)) == m);
      } catch (const xq::argument_error&) {
        ++rejected;
      }
    }
    CHECK(rejected > 1000);
  }
  SECTION("what xq::onnx does not represent") {
    model m = small_model();
    std::string b = serialize(m);
    b += std::string("\xca\x01\x00", 3);  // ModelProto.functions (field 25), empty
    CHECK_THROWS_WITH(parse(b), Contains("functions (field 25)"));
  }
  SECTION("load names the file") {
    temp_dir dir;
    const std::string path = dir / "bad.onnx";
    std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    CHECK_THROWS_AS(load(path), xq::io_error);
    CHECK_THROWS_WITH(load(path), Contains("bad.onnx: xq::onnx::parse"));
  }
}
