// Fake-quantizes one tensor under each peer's 8-bit semantics and prints the
// results side by side, so the differences the peers' users trip over are
// visible: where ties go, how the range is nudged, which step a symmetric
// scheme gets, and where gradient is let through.
//
//   build/examples/fake_quant_side_by_side

#include <cstdio>

#include <xquant/numerics.hpp>
#include <xquant/xquant.hpp>

int main() {
  // Ties at the 8-bit steps of amax = 1 (k + 0.5 steps of 1/127), the ends,
  // values past them, and zero.
  const xq::tensor x = {-1.2f, -1.0f, -0.5f, 0.0f, 2.5f / 127, 0.3f, 0.50390625f,
                        62.5f / 127, 0.8f, 0.999f, 1.0f, 1.3f};

  // TF FakeQuant (tfmot weights: symmetric narrow, range [-1, 1]): nudged
  // grid [1, 255], ties round up on the shifted value.
  const xq::tensor tfmot = xq::tf::fake_quant_with_min_max_vars(x, -1.0f, 1.0f, 8, true);
  const auto tfmot_grad = xq::tf::fake_quant_with_min_max_vars_and_mask(x, -1.0f, 1.0f, 8, true);

  // NVIDIA QDQ: quantize_and_dequantize_v2, signed narrow [-127, 127], range
  // given, ties to even.
  xq::tf::qdq_options nvidia;
  nvidia.narrow_range = true;
  nvidia.range_given = true;
  const xq::tensor qdq = xq::tf::quantize_and_dequantize_v4(x, -1.0f, 1.0f, nvidia);

  // PyTorch qint8 symmetric observer on [-1, 1]: scale amax/127.5, grid
  // [-128, 127], round then clamp, ties to even.
  xq::torch::observer_options o;
  o.type = xq::torch::dtype::qint8;
  o.scheme = xq::torch::qscheme::per_tensor_symmetric;
  xq::torch::observer obs(xq::torch::observer_kind::min_max, o);
  obs(xq::tensor{-1.0f, 1.0f});
  const auto qp = obs.calculate_qparams();
  const auto torch = xq::torch::fake_quantize_per_tensor_affine_and_mask(x, qp.scale(0), qp.zero_point(0), -128, 127);

  std::printf("8-bit fake quantization of the same tensor under each peer's rules\n");
  std::printf("  tf_fake_quant : TF FakeQuantWithMinMaxVars, [-1, 1], narrow (tfmot weights)\n");
  std::printf("  tf_qdq        : TF QuantizeAndDequantizeV4, [-1, 1] given, narrow (NVIDIA)\n");
  std::printf("  torch         : PyTorch fake_quantize_per_tensor_affine, qint8 symmetric, scale %.9g\n",
              double(qp.scale(0)));
  std::printf("  g = gradient passes (straight-through mask)\n\n");
  std::printf("%14s | %14s g | %14s | %14s g\n", "x", "tf_fake_quant", "tf_qdq", "torch");
  for (std::size_t i = 0; i < x.size(); ++i)
    std::printf("%14.9g | %14.9g %d | %14.9g | %14.9g %d\n", double(x(i)), double(tfmot(i)),
                int(tfmot_grad.mask(i)), double(qdq(i)), double(torch.y(i)), int(torch.mask(i)));
  std::printf("\nRows to read: -0.5, 2.5/127 and 62.5/127 are ties on the 1/127 grid: TF FakeQuant\n"
              "rounds them up, QDQ to even. PyTorch's symmetric qint8 step is amax/127.5, so 1.0 lands\n"
              "on 127 steps = 0.996; its mask is decided on the rounded integer, so 0.999 (127.4\n"
              "steps) still passes gradient. Past the range (-1.2, 1.3) no peer passes gradient.\n");
  return 0;
}
