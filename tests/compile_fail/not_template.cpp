// Must not compile: a composite that is not a class template over its child types, so
// the trait cannot spell its twin (it would need a conv_block with other member types).
// Fix: `template <class Conv = xq::conv2d, class Norm = xq::batch_norm> struct conv_block`,
// or specialize xq::quantize<conv_block>.

#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/transform/registry.hpp>

namespace {

struct conv_block {
  xq::conv2d conv{xq::conv2d(4, 3)};
  xq::batch_norm norm;
  XQ_CHILDREN(conv, norm)
  xq::var operator()(const xq::var& x) { return norm(conv(x)); }
};

}  // namespace

void quantize_it() {
  conv_block model;
  auto twin = xq::quantize_layer(model);
  (void)twin;
}
