#pragma once
/// \file op_codec.ipp
/// op_writer's and op_reader's helpers (deploy/engine/op_codec.hpp).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../../core/error.hpp"
#include "../op_codec.hpp"

namespace xq::deploy {

XQ_DECL void op_writer::check_endianness() {
  if (!host_is_little_endian()) throw io_error("integer model", "saving needs a little-endian host (the file is little-endian)");
}

XQ_DECL void op_writer::window(const char* key, const window_geometry& g) {
  map(key, [&](op_writer& w) {
    w.sizes("window", {g.window[0], g.window[1]});
    w.sizes("strides", {g.strides[0], g.strides[1]});
    w.sizes("dilation", {g.dilation[0], g.dilation[1]});
    w.sizes("pads", {g.pads[0], g.pads[1], g.pads[2], g.pads[3]});
  });
}

XQ_DECL void op_writer::tensor_value(const char* key, const tensor& t) {
  map(key, [&](op_writer& w) {
    w.sizes("shape", std::vector<std::size_t>(t.shape().begin(), t.shape().end()));
    w.numbers("data", std::vector<float>(t.begin(), t.end()));
  });
}

XQ_DECL window_geometry op_reader::window(const char* key) const {
  const std::unique_ptr<op_reader> w = map(key);
  auto fixed = [&](const char* name, std::size_t n) {
    const std::vector<std::size_t> v = w->sizes(name, n, max_window_extent);
    if (v.size() != n) w->fail(xq::detail::concat(name, ": expected ", n, " sizes, given ", v.size()));
    return v;
  };
  window_geometry g;
  const auto win = fixed("window", 2), strides = fixed("strides", 2), dilation = fixed("dilation", 2), pads = fixed("pads", 4);
  g.window = {win[0], win[1]};
  g.strides = {strides[0], strides[1]};
  g.dilation = {dilation[0], dilation[1]};
  g.pads = {pads[0], pads[1], pads[2], pads[3]};
  try {
    check_window(g, w->where());
  } catch (const argument_error& e) {
    w->fail(e.what());
  }
  return g;
}

XQ_DECL tensor op_reader::tensor_value(const char* key, std::uint64_t max_elements) const {
  const std::unique_ptr<op_reader> t = map(key);
  const std::vector<std::size_t> shape = t->sizes("shape", 8, max_elements);
  std::uint64_t bound = 1, count = 1;
  for (std::size_t d : shape) {
    bound *= d ? d : 1;  // a 0 holds nothing but still multiplies the strides (addressable_shape.hpp)
    count *= d;
    if (bound > max_elements) t->fail(xq::detail::concat("shape: expected at most ", max_elements, " elements (a 0 counted as 1)"));
  }
  const std::vector<float> data = t->numbers<float>("data", std::size_t(count));
  tensor v = tensor::from_shape(shape);
  std::copy(data.begin(), data.end(), v.begin());
  return v;
}

}  // namespace xq::deploy
