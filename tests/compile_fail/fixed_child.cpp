// Must not compile: a composite class template whose conv child has a fixed type,
// `xq::conv2d`, so its twin (block<quantized_batch_norm>) still holds an xq::conv2d and
// cannot take the conv's twin, xq::weight_quantized<xq::conv2d>.
// Fix: make the child's type a parameter too (template <class Conv = xq::conv2d, ...> ... Conv conv;).

#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/transform/registry.hpp>

namespace {

template <class Norm = xq::batch_norm>
struct block {
  xq::conv2d conv{xq::conv2d(4, 3)};
  Norm norm;
  XQ_CHILDREN(conv, norm)
  xq::var operator()(const xq::var& x) { return norm(conv(x)); }
};

}  // namespace

void quantize_it() {
  block<> model;
  auto twin = xq::quantize_layer(model);
  (void)twin;
}
