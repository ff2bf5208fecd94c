// Must not compile: a leaf layer with neither an xq::quantize specialization nor
// children has no quantized twin, here reached the usual way (quantize_model on a
// sequential that holds it). The diagnostic names both fixes.
// Fix: `template <> struct xq::quantize<my_leaf> { using type = xq::input_quantized<my_leaf>; };`

#include <xquant/layers/activation.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/transform/quantize_model.hpp>

namespace {

/// A complete layer, but nobody told xquant how to quantize it.
class my_leaf : public xq::layer<my_leaf> {
 public:
  my_leaf() : xq::layer<my_leaf>("my_leaf") {}
  xq::var operator()(const xq::var& x) const { return xq::ops::relu(x); }
  std::vector<xq::parameter_ptr> parameters() const { return {}; }
};

}  // namespace

void quantize_it() {
  xq::sequential<xq::relu, my_leaf> model;
  auto twin = xq::quantize_model(model, xq::quantize_options{});
  (void)twin;
}
