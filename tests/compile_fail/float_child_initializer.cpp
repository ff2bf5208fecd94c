// Must not compile: a child initialised from a float object of a fixed type
// (`Inner inner{inner<>(16)}`): the quantized twin's child type cannot be made from it,
// though the float composite can be default-constructed. The diagnostic says so and how
// to write it (`Inner inner{16}`).

#include <xquant/layers/conv2d.hpp>
#include <xquant/transform/registry.hpp>

namespace {

template <class Conv = xq::conv2d>
struct inner {
  Conv conv;
  XQ_CHILDREN(conv)
  explicit inner(std::size_t filters = 8) : conv(xq::conv2d(filters, 3)) {}
  xq::var operator()(const xq::var& x) { return conv(x); }
};

template <class Inner = inner<>>
struct outer {
  Inner block{inner<>(16)};
  XQ_CHILDREN(block)
  xq::var operator()(const xq::var& x) { return block(x); }
};

}  // namespace

void quantize_it() {
  outer<> model;
  auto twin = xq::quantize_layer(model);
  (void)twin;
}
