// Must not compile: a leaf child built from the layer's constructor arguments
// (`Conv conv{4, 3}`): the float composite builds, but the twin's child type,
// xq::weight_quantized<xq::conv2d>, is made from a float layer object, not from arguments.
// The diagnostic states the rule (issue 34, finding 13: it used to say the opposite).
// Fix: `Conv conv{xq::conv2d(4, 3)};` — leaf children from a float layer object,
// composite children from arguments.

#include <xquant/layers/conv2d.hpp>
#include <xquant/transform/registry.hpp>

namespace {

template <class Conv = xq::conv2d>
struct block {
  Conv conv{4, 3};
  XQ_CHILDREN(conv)
  xq::var operator()(const xq::var& x) { return conv(x); }
};

}  // namespace

void quantize_it() {
  block<> model;
  auto twin = xq::quantize_layer(model);
  (void)twin;
}
