// Low-bit formats in the quantizers quantize_model places (issue 36): a fake quantizer
// naming a format computes what the format's own quantizer computes, forward and backward;
// the schemes put the peers' recipes on the layers, blocks along each kernel's reduction
// axis; a spec mixes formats by path and type; checkpoints keep the format and refuse
// another; the grid of every format gives back the simulation's values exactly.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/io/checkpoint.hpp>
#include <xquant/quantizers/fp8_quantizer.hpp>
#include <xquant/quantizers/intx_quantizer.hpp>
#include <xquant/quantizers/mx_quantizer.hpp>
#include <xquant/quantizers/nvfp4_quantizer.hpp>
#include <xquant/quantizers/quantize_on_grid.hpp>
#include <xquant/train/sgd.hpp>

#include "models.hpp"

namespace {

xq::tensor wavy(const xq::tensor::shape_type& shape, float phase = 0.3f) {
  xq::tensor x = xq::tensor::from_shape(shape);
  for (std::size_t i = 0; i < x.size(); ++i)
    x.data()[i] = std::sin(0.37f * float(i) + phase) * (1.0f + 0.5f * std::cos(0.011f * float(i)));
  return x;
}

bool same_bits(const xq::tensor& a, const xq::tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The value a grid gives integer / code q at flat index i: what DequantizeLinear computes
/// (value · (scale · tensor scale), each product rounded to float), plus the offset where
/// the grid has one (torchao's int4 weight-only: DequantizeLinear, then an Add).
std::vector<float> dequantized(const xq::quantization_grid& g, const std::vector<std::int32_t>& q,
                               const xq::tensor::shape_type& shape) {
  std::vector<float> y(q.size());
  const std::vector<std::size_t> sh(shape.begin(), shape.end());
  const auto l = g.granularity() == xq::grid_granularity::per_tensor
                     ? xq::kernels::channel_layout{1, q.size(), 1}
                     : xq::kernels::channel_layout::of(sh, g.channel_axis, "test");
  xq::detail::for_each_scale_run(g, l.outer, l.channels, l.inner,
                                 [&](std::size_t first, std::size_t count, std::size_t si, std::size_t step) {
                                   for (std::size_t k = 0; k < count; ++k) {
                                     const std::size_t i = first + k, c = si + k * step;
                                     const float s = g.tensor_scale ? g.scale[c] * *g.tensor_scale : g.scale[c];
                                     const float v = xq::is_float_element(g.element)
                                                         ? xq::element_value(g.element, std::uint32_t(q[i]))
                                                         : float(q[i] - g.zero_point[c]);
                                     y[i] = g.offset.empty() ? v * s : v * s + g.offset[c];
                                   }
                                 });
  return y;
}

template <class Q>
void check_format_matches_quantizer(const xq::low_bit_format& f, const Q& standalone, const xq::tensor& x) {
  xq::quantizer_config c;
  c.format = f;
  xq::fake_quantizer q(c);
  INFO(xq::describe(f));
  // Forward, on the tape, and its gradient, against the format's own quantizer.
  Q own = standalone;
  xq::var xa(x, true), xb(x, true);
  const xq::tensor dy = wavy(x.shape(), 1.1f);
  {
    xq::tape tape;
    const xq::var ya = q(xa);
    tape.backward(ya, dy);
  }
  {
    xq::tape tape;
    const xq::var yb = own(xb);
    tape.backward(yb, dy);
  }
  CHECK(same_bits(q.fake_quantize(x), own.fake_quantize(x)));
  CHECK(same_bits(xa.grad(), xb.grad()));
  // No state kept; the precision is the element's.
  CHECK(q.parameters().empty());
  CHECK(q.has_seen_data());
  CHECK(q.precision() == own.precision());
  // The grid gives the simulation's values back exactly, from its integers or codes.
  const auto g = q.grid_of(x);
  REQUIRE(g);
  CHECK(g->dynamic);
  const std::vector<std::int32_t> ints = q.integers(x);
  const std::vector<float> back = dequantized(*g, ints, x.shape());
  const xq::tensor fq = q.fake_quantize(x);
  CHECK(std::memcmp(back.data(), fq.data(), back.size() * sizeof(float)) == 0);
  // The standalone quantizer reports the same grid.
  const auto g2 = own.grid_of(x);
  REQUIRE(g2);
  CHECK(g2->scale == g->scale);
  CHECK(g2->block_size == g->block_size);
}

/// A first conv on 3 channels (no block of 32 fits it), a second on 32, a pooled dense head.
template <class Conv = xq::conv2d, class Pool = xq::global_average_pool2d, class Head = xq::dense>
struct block_net {
  Conv first{xq::conv2d(32, 3).padding(xq::padding::same)};
  Conv second{xq::conv2d(32, 3).padding(xq::padding::same)};
  Pool pool;
  Head head{xq::dense(16)};
  XQ_CHILDREN(first, second, pool, head)
  xq::var operator()(const xq::var& x) { return head(pool(xq::ops::relu(second(xq::ops::relu(first(x)))))); }
};

/// The scheme tests' input: 2 images of 8 x 8 with 3 channels.
const xq::tensor::shape_type net_input{2, 8, 8, 3};

/// A block_net built on net_input from `seed`.
block_net<> built_block_net(unsigned seed) {
  block_net<> model;
  xq::set_seed(seed);
  xq::build(model, net_input);
  return model;
}

}  // namespace

TEST_CASE("a fake quantizer naming a format runs the format's own quantizer, and its grid is exact",
          "[low_bit][quantize][formats]") {
  const xq::tensor x = wavy({6, 64});
  xq::low_bit::mx_spec mx;
  check_format_matches_quantizer(mx, xq::mx_quantizer(mx), x);
  mx.element.type = xq::low_bit::element_type::e4m3fn;
  mx.variant = xq::low_bit::mx_variant::microxcaling_even;
  check_format_matches_quantizer(mx, xq::mx_quantizer(mx), x);
  xq::low_bit::nvfp4_spec nv;
  check_format_matches_quantizer(nv, xq::nvfp4_quantizer(nv), x);
  nv.variant = xq::low_bit::nvfp4_variant::modelopt_qtensor;
  check_format_matches_quantizer(nv, xq::nvfp4_quantizer(nv), x);
  xq::low_bit::fp8_spec f8;
  check_format_matches_quantizer(f8, xq::fp8_quantizer(f8), x);
  f8.granularity = xq::low_bit::fp8_granularity::per_tensor;
  f8.variant = xq::low_bit::fp8_variant::transformer_engine;
  check_format_matches_quantizer(f8, xq::fp8_quantizer(f8), x);
  xq::low_bit::intx_spec w4;  // 8da4w's weights
  check_format_matches_quantizer(w4, xq::intx_quantizer(w4), x);
  xq::low_bit::intx_spec a8;  // 8da4w's activations: per token, asymmetric
  a8.scheme = xq::low_bit::intx_scheme::intx_per_token;
  a8.bits = 8;
  check_format_matches_quantizer(a8, xq::intx_quantizer(a8), x);

  // int4 weight-only: (q - 8) · scale + the group's float zero point, rounded twice; its
  // grid carries the zero points as offsets and rounds from each group's min.
  xq::low_bit::intx_spec wo;
  wo.scheme = xq::low_bit::intx_scheme::int4_weight_only;
  check_format_matches_quantizer(wo, xq::intx_quantizer(wo), x);
  xq::quantizer_config c;
  c.format = wo;
  xq::fake_quantizer q(c);
  const auto g = q.grid_of(x);
  REQUIRE(g);
  CHECK(g->offset.size() == g->scale.size());
  CHECK(g->rounding.op == xq::rounding_operator::torchao_int4_weight_only);
  const std::vector<std::int32_t> ints = q.integers(x);
  CHECK(xq::quantize_on_grid(*g, x, "test") == ints);
  CHECK(*std::min_element(ints.begin(), ints.end()) == 0);
  CHECK(*std::max_element(ints.begin(), ints.end()) == 15);
  // A grid whose offsets do not match its scales is refused, naming the count.
  xq::quantization_grid broken = *g;
  broken.offset.pop_back();
  CHECK_THROWS_WITH(xq::check_grid(broken, "w"), Catch::Contains("offset"));
  // A spec its quantizer refuses is refused by the config.
  xq::low_bit::intx_spec bad;
  bad.bits = 9;
  c.format = bad;
  CHECK_THROWS_WITH(xq::fake_quantizer(c), Catch::Contains("[2, 8]"));
}

TEST_CASE("low-bit schemes put the peers' recipes on the layers, blocks along the reduction axis",
          "[low_bit][quantize][schemes]") {
  const xq::tensor::shape_type shape = net_input;
  block_net<> model = built_block_net(3);

  xq::quantize_options o;
  o.scheme = xq::schemes::mx();
  auto q = xq::quantize_model(model, o, shape);
  // The first conv's 3 input channels hold no block of 32: it keeps the integer grid, as
  // torchao's filters leave such a layer.
  CHECK_FALSE(q.first.weight_quantizer().config().format);
  CHECK_FALSE(q.first.input_quantizer().site().config().format);
  CHECK(q.first.weight_quantizer().precision() == 8);
  const auto& conv_w = q.second.weight_quantizer();
  REQUIRE(conv_w.enabled());
  const auto* spec = conv_w.config().format.get_if<xq::low_bit::mx_spec>();
  REQUIRE(spec);
  CHECK(spec->axis == 2);  // HWIO: the input channels
  CHECK(conv_w.precision() == 4);
  const auto* head_spec = q.head.weight_quantizer().config().format.get_if<xq::low_bit::mx_spec>();
  REQUIRE(head_spec);
  CHECK(head_spec->axis == 0);  // a dense kernel (in, out)
  const auto& conv_in = q.second.input_quantizer();
  REQUIRE(conv_in.enabled());
  CHECK(conv_in.site().config().format.get_if<xq::low_bit::mx_spec>()->axis == -1);
  CHECK_FALSE(q.pool.input_quantizer().enabled());  // the peers quantize linear layers only
  // The kernel's grid: one E8M0 scale per block of 32 input channels (one per tap and filter).
  const auto g = conv_w.grid_of(q.second.float_layer().kernel()->value);
  REQUIRE(g);
  CHECK(g->element == xq::grid_element::fp4_e2m1);
  CHECK(g->scale_type == xq::scale_element::e8m0);
  CHECK(g->channel_axis == 2);
  CHECK(g->scale.size() == 3 * 3 * 32);

  // A training step runs and reaches every kernel.
  xq::tensor x = wavy(shape);
  {
    xq::training_mode train;
    xq::tape tape;
    xq::var y = q(xq::var(x));
    xq::tensor ones = xq::tensor::from_shape(y.value().shape());
    for (float& v : ones) v = 1.0f;
    tape.backward(y, ones);
  }
  const xq::tensor& grad = q.second.float_layer().kernel()->grad;
  float biggest = 0.0f;
  for (float v : grad) biggest = std::max(biggest, std::fabs(v));
  CHECK(biggest > 0.0f);

  // Weight-only: inputs untouched; w4a8: NVIDIA's int8 inputs beside int4 kernels.
  o.scheme = xq::schemes::mx_weight_only();
  auto wo = xq::quantize_model(model, o, shape);
  CHECK_FALSE(wo.second.input_quantizer().enabled());
  CHECK(wo.second.weight_quantizer().enabled());
  o.scheme = xq::schemes::w4a8();
  auto w4 = xq::quantize_model(model, o, shape);
  CHECK_FALSE(w4.second.input_quantizer().site().config().format);
  CHECK(w4.second.input_quantizer().site().config().num_bits == 8);
  CHECK(w4.second.weight_quantizer().config().format.get_if<xq::low_bit::intx_spec>());
  CHECK(w4.pool.input_quantizer().enabled());
}

TEST_CASE("a spec mixes formats by path and type, and checkpoints keep the format", "[low_bit][quantize][spec]") {
  const xq::tensor::shape_type shape = net_input;
  block_net<> model = built_block_net(4);
  xq::quantize_options o;
  o.scheme = xq::schemes::torchao_8da4w(16);
  xq::quantization_spec spec;
  xq::layer_quantization int8_head;
  int8_head.weight_format = xq::low_bit_format{};  // the head back to the scheme's integer grid
  int8_head.input_format = xq::low_bit_format{};
  spec.add("head", int8_head);
  xq::layer_quantization nvfp4_convs;
  nvfp4_convs.weight_format = xq::low_bit::nvfp4_spec{};
  spec.add_type("conv2d", nvfp4_convs);
  o.spec = spec;
  auto q = xq::quantize_model(model, o, shape);
  CHECK_FALSE(q.head.weight_quantizer().config().format);
  CHECK(q.head.weight_quantizer().precision() == 8);
  CHECK(q.second.weight_quantizer().config().format.get_if<xq::low_bit::nvfp4_spec>());
  // The conv's input keeps the scheme's per-token int8; the first conv, whose 3 channels no
  // NVFP4 block fits, keeps the integer grid on both.
  CHECK_FALSE(q.first.weight_quantizer().config().format);
  CHECK_FALSE(q.first.input_quantizer().site().config().format);
  CHECK(q.second.input_quantizer().site().config().format.get_if<xq::low_bit::intx_spec>());

  {
    xq::training_mode train;
    q(xq::var(wavy(shape)));
  }
  const std::vector<std::uint8_t> bytes = xq::save_checkpoint_bytes(q);
  auto same = xq::quantize_model(model, o, shape);
  xq::load_checkpoint_bytes(bytes.data(), bytes.size(), "mixed.xqc", same);
  CHECK(same_bits(same(xq::var(wavy(shape))).value(), q(xq::var(wavy(shape))).value()));

  // A model whose conv runs another format refuses the file, naming the quantizer.
  xq::quantization_spec other = spec;
  xq::layer_quantization mx_convs;
  mx_convs.weight_format = xq::low_bit::mx_spec{};
  other.add_type("conv2d", mx_convs);
  o.spec = other;
  auto different = xq::quantize_model(model, o, shape);
  CHECK_THROWS_WITH(xq::load_checkpoint_bytes(bytes.data(), bytes.size(), "mixed.xqc", different),
                    Catch::Contains("second") && Catch::Contains("nvfp4") && Catch::Contains("mxfp4"));
}

TEST_CASE("torchao's range learning: the group scales are learned, trained, saved and deployed",
          "[low_bit][quantize][range_learning]") {
  const xq::tensor::shape_type shape = net_input;
  block_net<> model = built_block_net(5);
  xq::quantize_options o;
  o.scheme = xq::schemes::with_range_learning(xq::schemes::w4a8(32));
  auto q = xq::quantize_model(model, o, shape);
  auto& w = q.second.weight_quantizer();
  REQUIRE(w.learns_scales());
  // quantize_model's call started the scales from the kernel: one per group of 32 input
  // channels (HWIO: 3 x 3 x 1 x 32), trainable, listed with the model's parameters.
  const xq::tensor& kernel = q.second.float_layer().kernel()->value;
  xq::low_bit::intx_spec spec = *w.config().format.get_if<xq::low_bit::intx_spec>();
  const xq::low_bit::intx_state start = xq::low_bit::intx_learned_state(kernel, spec, "test");
  const xq::parameter_ptr scale = w.learned_scales();
  REQUIRE(scale->value.size() == 3 * 3 * 32);
  CHECK(scale->trainable());
  for (std::size_t g = 0; g < scale->value.size(); ++g) CHECK(scale->value.data()[g] == start.values[2 * g]);
  const auto trainable = xq::trainable_parameters(q);
  CHECK(std::find(trainable.begin(), trainable.end(), scale) != trainable.end());
  CHECK_FALSE(w.dynamic_format());  // the grid is the learned scales', not each tensor's

  // The scales' gradient on the tape is torchao's (intx_learned_scale_gradient), the
  // kernel's its mask's; an optimizer step moves the scales and the output follows them.
  const xq::tensor dy = wavy(kernel.shape(), 0.9f);
  xq::var k(kernel, true);
  scale->zero_grad();
  {
    xq::training_mode train;
    xq::tape tape;
    tape.backward(w(k), dy);
  }
  xq::low_bit::intx_state st = start;
  const std::vector<float> want = xq::low_bit::intx_learned_scale_gradient(kernel, dy, spec, st, "test");
  REQUIRE(scale->grad.size() == want.size());
  CHECK(std::memcmp(scale->grad.data(), want.data(), want.size() * sizeof(float)) == 0);
  std::vector<unsigned char> mask(kernel.size());
  xq::low_bit::intx_apply(kernel, spec, st, "test", reinterpret_cast<bool*>(mask.data()));
  CHECK(same_bits(k.grad(), xq::low_bit::intx_backward(kernel, dy, spec, st, reinterpret_cast<bool*>(mask.data()))));
  xq::sgd opt({scale}, {1e-5f});
  opt.step();
  for (std::size_t g = 0; g < scale->value.size(); ++g) st.values[2 * g] = scale->value.data()[g];
  CHECK_FALSE(same_bits(scale->value, xq::tensor::from_shape(scale->value.shape())));
  CHECK(same_bits(w.fake_quantize(kernel), xq::low_bit::intx_apply(kernel, spec, st, "test")));
  const auto g = w.grid_of(kernel);
  REQUIRE(g);
  CHECK_FALSE(g->dynamic);
  CHECK(g->scale == std::vector<float>(scale->value.begin(), scale->value.end()));
  // A scale an optimizer took below zero (torchao does not stop it) still has a grid: |s|,
  // the integers -q - 1 and zero point -1, which give the simulation's values exactly.
  scale->value.data()[0] = -scale->value.data()[0];
  st.values[0] = scale->value.data()[0];
  const xq::tensor fq = w.fake_quantize(kernel);
  CHECK(same_bits(fq, xq::low_bit::intx_apply(kernel, spec, st, "test")));
  const auto negative = w.grid_of(kernel);
  REQUIRE(negative);
  CHECK(negative->scale[0] == -scale->value.data()[0]);
  CHECK(negative->zero_point[0] == -1);
  CHECK(negative->zero_point[1] == 0);
  CHECK(xq::quantize_on_grid(*negative, kernel, "test") == xq::grid_integers(*negative, fq, "test"));

  // Saved and loaded with the checkpoint; a model without range learning refuses the file.
  const std::vector<std::uint8_t> bytes = xq::save_checkpoint_bytes(q);
  auto again = xq::quantize_model(model, o, shape);
  xq::load_checkpoint_bytes(bytes.data(), bytes.size(), "learned.xqc", again);
  CHECK(same_bits(again.second.weight_quantizer().learned_scales()->value, scale->value));
  o.scheme = xq::schemes::w4a8(32);
  auto fixed = xq::quantize_model(model, o, shape);
  CHECK_THROWS_WITH(xq::load_checkpoint_bytes(bytes.data(), bytes.size(), "learned.xqc", fixed),
                    Catch::Contains("second") && Catch::Contains("range_learning"));

  // Deployed as a static int4 grid: the engine's values are the simulation's (after a
  // training pass gives the first conv's int8 grids their ranges).
  const xq::tensor images = wavy(shape, 0.4f);
  {
    xq::training_mode train;
    q(xq::var(images));
  }
  const auto engine = xq::deploy::lower(q, {8, 8, 3});
  const auto report = xq::deploy::parity(q, engine, images);
  INFO(report.table());
  CHECK(report.same_top1 == report.samples);
  CHECK(report.output_sqnr_db() > 100.0);

  // Only symmetric integer groups learn their scales.
  CHECK_THROWS_WITH(xq::schemes::with_range_learning(xq::schemes::mx()), Catch::Contains("symmetric integer weight groups"));
  xq::low_bit::intx_spec token;
  token.scheme = xq::low_bit::intx_scheme::intx_per_token;
  token.range_learning = true;
  xq::quantizer_config c;
  c.format = token;
  CHECK_THROWS_WITH(xq::fake_quantizer(c), Catch::Contains("range learning on intx_symmetric"));
  CHECK_THROWS_WITH(xq::intx_quantizer(spec), Catch::Contains("range_learning"));
}
