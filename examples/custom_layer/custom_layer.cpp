// Two layers xquant does not have, ShuffleNet's grouped 1x1 convolution and channel
// shuffle, written to the layer contract (docs/layer_contract.md) and given quantized
// twins without touching the library: one specialization of `xq::quantize` each, which
// turns their QDQ on by default (NVIDIA's procedure: defining the wrapper registers the
// layer; the scheme's placement for unlisted weighted and weightless layers applies). The model mixes
// them with library layers inside a composite and a sequential; `quantize_model`
// quantizes it, and one training-mode pass shows which quantizers ran and how far the
// quantized output is from the float one.
//
//   build/examples/custom_layer/custom_layer

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include <xquant/xquant.hpp>

namespace my {

namespace ops {

/// "(2, 8, 8, 3)", for error messages.
inline std::string shape_string(const xq::tensor::shape_type& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

/// Grouped 1x1 convolution over the last axis (NHWC pixels, or any (..., C_in)): input
/// channels [g*ci, (g+1)*ci) feed output channels [g*co, (g+1)*co) only. `w` is
/// (C_in / groups, C_out), TF's layout for a grouped kernel, so its last axis is the
/// output channel, the axis weight_quantized quantizes per channel by default.
inline xq::var grouped_pointwise(const xq::var& x, const xq::var& w, const xq::var* b, std::size_t groups,
                                 const std::string& path) {
  if (w.dimension() != 2 || w.shape()[1] % groups != 0)
    throw xq::shape_error(path, "kernel (C_in / groups, C_out) with C_out divisible by " + std::to_string(groups),
                          shape_string(w.shape()));
  const std::size_t ci = w.shape()[0], out = w.shape()[1], co = out / groups, in = ci * groups;
  if (x.dimension() < 2 || x.shape().back() != in)
    throw xq::shape_error(path, "input with " + std::to_string(in) + " channels on the last axis",
                          shape_string(x.shape()));
  const std::size_t rows = x.size() / in;
  xq::tensor::shape_type y_shape = x.shape();
  y_shape.back() = out;
  xq::tensor y = xq::tensor::from_shape(y_shape);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < out; ++j) y.data()[r * out + j] = b ? b->value().data()[j] : 0.0f;
  // One GEMM per group on strided blocks: X[:, g*ci:] (lda = in) times W[:, g*co:] (ldb = out).
  for (std::size_t g = 0; g < groups; ++g)
    xq::kernels::gemm(false, false, rows, co, ci, 1.0f, x.value().data() + g * ci, in, w.value().data() + g * co, out,
                      1.0f, y.data() + g * co, out);

  const bool record = b ? xq::needs_grad(x, w, *b) : xq::needs_grad(x, w);
  const xq::var bias = b ? *b : xq::var();
  return xq::make_result(std::move(y), record, [x, w, bias, rows, ci, co, in, out, groups](const xq::tensor& dy) {
    if (x.requires_grad()) {  // dX_g = dY_g · W_gᵀ
      xq::tensor dx = xq::tensor::from_shape(x.shape());
      for (std::size_t g = 0; g < groups; ++g)
        xq::kernels::gemm(false, true, rows, ci, co, 1.0f, dy.data() + g * co, out, w.value().data() + g * co, out,
                          0.0f, dx.data() + g * ci, in);
      xq::add_grad(x, std::move(dx));
    }
    if (w.requires_grad()) {  // dW_g = X_gᵀ · dY_g
      xq::tensor dw = xq::tensor::from_shape(w.shape());
      for (std::size_t g = 0; g < groups; ++g)
        xq::kernels::gemm(true, false, ci, co, rows, 1.0f, x.value().data() + g * ci, in, dy.data() + g * co, out,
                          0.0f, dw.data() + g * co, out);
      xq::add_grad(w, std::move(dw));
    }
    if (bias.defined() && bias.requires_grad()) {
      xq::tensor db = xt::zeros<float>({out});
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < out; ++j) db.data()[j] += dy.data()[r * out + j];
      xq::add_grad(bias, std::move(db));
    }
  });
}

/// ShuffleNet's channel shuffle: channels seen as (groups, n) are transposed to (n, groups),
/// so output channel k*groups + g is input channel g*n + k. A permutation: the gradient
/// goes back through the inverse one.
inline xq::var channel_shuffle(const xq::var& x, std::size_t groups, const std::string& path) {
  const std::size_t channels = x.dimension() == 0 ? 0 : x.shape().back();
  if (channels == 0 || channels % groups != 0)
    throw xq::shape_error(path, "input whose last axis is divisible by " + std::to_string(groups),
                          shape_string(x.shape()));
  const std::size_t n = channels / groups, rows = x.size() / channels;
  std::vector<std::size_t> source(channels);  // output channel -> input channel
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t k = 0; k < n; ++k) source[k * groups + g] = g * n + k;
  xq::tensor y = xq::tensor::from_shape(x.shape());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < channels; ++c) y.data()[r * channels + c] = x.value().data()[r * channels + source[c]];
  return xq::make_result(std::move(y), xq::needs_grad(x), [x, source, rows, channels](const xq::tensor& dy) {
    xq::tensor dx = xq::tensor::from_shape(x.shape());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < channels; ++c) dx.data()[r * channels + source[c]] = dy.data()[r * channels + c];
    xq::add_grad(x, std::move(dx));
  });
}

}  // namespace ops

/// A weighted layer. `call` is its forward (xq::layer<Self>::operator() runs it, and records
/// it in the graph trace with its role: a convolution, so batch-norm folding and NVIDIA's
/// placement cases treat it as one). What makes it quantizable is weight_quantized's part
/// of the contract: kernel(), bias(), ensure_built(x) and call_with(x, kernel, bias). The twin calls
/// call_with with the fake-quantized kernel (or, with batch-norm folding, the folded
/// one), so call_with must use the kernel it is given, never kernel_, and be linear in
/// it with the output channels on the kernel's last axis (true of any convolution).
class grouped_pointwise_conv : public xq::layer<grouped_pointwise_conv> {
 public:
  explicit grouped_pointwise_conv(std::size_t filters = 1, std::size_t groups = 1)
      : xq::layer<grouped_pointwise_conv>("grouped_pointwise_conv"), filters_(filters), groups_(groups) {
    if (groups == 0) throw xq::argument_error("grouped_pointwise_conv", "at least 1 group", "0");
  }
  static constexpr xq::layer_role role = xq::layer_role::conv;

  xq::var call(const xq::var& x) {
    ensure_built(x);
    return call_with(x, xq::var(kernel_), xq::var(bias_));
  }
  void ensure_built(const xq::var& x) {
    if (kernel_) return;
    const std::size_t in = x.dimension() == 0 ? 0 : x.shape().back();
    if (in == 0 || in % groups_ != 0 || filters_ % groups_ != 0)
      throw xq::shape_error(path(),
                            "input channels and " + std::to_string(filters_) + " filters divisible by " +
                                std::to_string(groups_) + " groups",
                            std::to_string(in) + " input channels");
    // Keras's fans for a grouped kernel of shape (1, 1, in / groups, filters).
    kernel_ = xq::make_parameter("kernel", xq::glorot_uniform({in / groups_, filters_}, in / groups_, filters_));
    bias_ = xq::make_parameter("bias", xt::zeros<float>({filters_}));
    name_parameters();
  }
  xq::var call_with(const xq::var& x, const xq::var& kernel, const xq::var& bias) const {
    return ops::grouped_pointwise(x, kernel, bias.defined() ? &bias : nullptr, groups_, path());
  }

  const xq::parameter_ptr& kernel() const noexcept { return kernel_; }
  const xq::parameter_ptr& bias() const noexcept { return bias_; }
  std::vector<xq::parameter_ptr> parameters() const { return {kernel_, bias_}; }

 private:
  std::size_t filters_, groups_;
  xq::parameter_ptr kernel_, bias_;
};

/// A weightless layer: input_quantized only needs a layer with a `call` (its role is the
/// default, `other`).
class channel_shuffle : public xq::layer<channel_shuffle> {
 public:
  explicit channel_shuffle(std::size_t groups = 1) : xq::layer<channel_shuffle>("channel_shuffle"), groups_(groups) {
    if (groups == 0) throw xq::argument_error("channel_shuffle", "at least 1 group", "0");
  }
  xq::var call(const xq::var& x) const { return ops::channel_shuffle(x, groups_, path()); }
  std::vector<xq::parameter_ptr> parameters() const { return {}; }

 private:
  std::size_t groups_;
};

}  // namespace my

// The whole of xquant's side: one specialization per layer, outside the library. A
// specialization's QDQ is on by default; `static constexpr bool quantized_by_default =
// false;` in it would leave the layer off until a scheme or a spec names it (as the
// built-in max_pool2d and batch_norm are under NVIDIA's scheme).
template <>
struct xq::quantize<my::grouped_pointwise_conv> {
  using type = xq::weight_quantized<my::grouped_pointwise_conv>;  // input + kernel per channel
};
template <>
struct xq::quantize<my::channel_shuffle> {
  using type = xq::input_quantized<my::channel_shuffle>;  // NVIDIA's NonWeighted wrapper: its input
};
static_assert(xq::quantized_by_default_v<my::channel_shuffle>);
static_assert(!xq::quantized_by_default_v<xq::max_pool2d>);

/// A ShuffleNet unit (stride 1), written as a class template over its children so that
/// its twin is the same template over theirs.
template <class Group = my::grouped_pointwise_conv, class Shuffle = my::channel_shuffle,
          class Depthwise = xq::depthwise_conv2d, class Expand = my::grouped_pointwise_conv, class Skip = xq::add>
struct shuffle_unit {
  Group group;
  Shuffle shuffle;
  Depthwise depthwise;
  Expand expand;
  Skip skip;
  XQ_CHILDREN(group, shuffle, depthwise, expand, skip)

  explicit shuffle_unit(std::size_t channels = 8, std::size_t groups = 2)
      : group(my::grouped_pointwise_conv(channels, groups)),
        shuffle(my::channel_shuffle(groups)),
        depthwise(xq::depthwise_conv2d(3).padding(xq::padding::same)),
        expand(my::grouped_pointwise_conv(channels, groups)) {}

  xq::var operator()(const xq::var& x) {
    return xq::ops::relu(skip(x, expand(depthwise(shuffle(xq::ops::relu(group(x)))))));
  }
};

using net = xq::sequential<xq::conv2d, xq::relu, shuffle_unit<>, xq::global_average_pool2d, xq::dense>;

// What the trait made of it, checked at compile time.
static_assert(std::is_same_v<xq::quantize_t<shuffle_unit<>>,
                             shuffle_unit<xq::weight_quantized<my::grouped_pointwise_conv>,
                                          xq::input_quantized<my::channel_shuffle>,
                                          xq::weight_quantized<xq::depthwise_conv2d>,
                                          xq::weight_quantized<my::grouped_pointwise_conv>,
                                          xq::each_input_quantized<xq::add>>>);
static_assert(std::is_same_v<xq::quantize_t<net>,
                             xq::sequential<xq::weight_quantized<xq::conv2d>, xq::input_quantized<xq::relu>,
                                            xq::quantize_t<shuffle_unit<>>,
                                            xq::input_quantized<xq::global_average_pool2d>,
                                            xq::weight_quantized<xq::dense>>>);

namespace {

/// max |v| over a quantizer's stored range (every channel).
float range_amax(const xq::fake_quantizer& q) {
  float m = 0.0f;
  for (std::size_t c = 0; c < q.min().size(); ++c) m = std::max({m, std::fabs(q.min()(c)), std::fabs(q.max()(c))});
  return m;
}

}  // namespace

int main() {
  const xq::tensor::shape_type input_shape{4, 8, 8, 3};
  net model(xq::conv2d(8, 3).padding(xq::padding::same).name("stem"), xq::relu(), shuffle_unit<>(8, 2),
            xq::global_average_pool2d(), xq::dense(5).name("logits"));
  xq::build(model, input_shape);

  xq::quantize_options options;  // NVIDIA's scheme, full mode: nothing about the new layers
  auto qat = xq::quantize_model(model, options, input_shape);

  // One training-mode pass of both models on the same batch: the twin's quantizers take
  // their ranges from it (NVIDIA's last-value ranges). The twin shares the float model's
  // parameters, so the difference is the quantization alone.
  const xq::tensor x = xq::random_uniform(input_shape, 1.0f);
  const xq::training_mode training(true);
  const xq::no_grad forward_only;
  const xq::tensor y_float = model(xq::var(x)).value();
  const xq::tensor y_quantized = qat(xq::var(x)).value();

  std::printf("quantizers on (path: config, stored range):\n");
  const xq::fake_quantizer* group_kernel = nullptr;
  const xq::fake_quantizer* shuffle_input = nullptr;
  xq::for_each_quantizer(qat, [&](xq::fake_quantizer& q) {
    if (!q.enabled()) return;
    std::printf("  %-40s %s, %zu channel(s), max |range| %.6g\n", q.path().c_str(), xq::describe(q.config()).c_str(),
                q.min().size(), double(range_amax(q)));
    if (q.path() == "shuffle_unit/group/kernel_quantizer") group_kernel = &q;
    if (q.path() == "shuffle_unit/shuffle/input_quantizer") shuffle_input = &q;
  });

  float max_diff = 0.0f;
  for (std::size_t i = 0; i < y_float.size(); ++i)
    max_diff = std::max(max_diff, std::fabs(y_float.data()[i] - y_quantized.data()[i]));
  std::printf("max |float - quantized| output difference: %.6g\n", double(max_diff));

  // The custom layers' quantizers must be on and have seen the batch; quantization must
  // have changed the output, but not wildly.
  const bool ran = group_kernel && shuffle_input && group_kernel->batches_seen() == 1 &&
                   shuffle_input->batches_seen() == 1 && range_amax(*group_kernel) > 0.0f &&
                   range_amax(*shuffle_input) > 0.0f;
  if (!ran || !(max_diff > 0.0f && max_diff < 0.1f)) {
    std::printf("FAILED: the custom layers' quantizers did not run as expected\n");
    return 1;
  }
  std::printf("custom layers quantized: %s (%zu channels, max |w| %.6g), %s (max |x| %.6g)\n",
              group_kernel->path().c_str(), group_kernel->min().size(), double(range_amax(*group_kernel)),
              shuffle_input->path().c_str(), double(range_amax(*shuffle_input)));
  return 0;
}
