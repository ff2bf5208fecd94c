#pragma once
/// \file padding_value_term.hpp
/// A constant padding value as a term added to a zero-padded convolution.
///
/// Larq pads a binarized conv's input with +1 (`pad_values = 1`) so that the border stays
/// binary. Padding the input and running a valid window is what Larq does, and it costs a
/// padded copy of every input and its gradient, and convolutions on the larger padded
/// shape, which oneDNN runs 8-15% slower than the same-padded ones (measured on the
/// binarized CNN's layers). The padding's contribution does not depend on the input:
///
///   conv(pad_v(x), k)[n, oh, ow, f] = conv_same(x, k)[n, oh, ow, f]
///                                     + v * sum over the taps (kh, kw) of window (oh, ow)
///                                       that lie on the padding of  sum_c k[kh, kw, c, f]
///
/// which is nonzero only on the border pixels. So the zero-padded convolution runs, and
/// this term is added in place; its gradient reaches the kernel only (v times the sum of
/// dy over the border outputs whose window has that tap on the padding, for every input
/// channel). With binary inputs and kernels every sum is an integer, and the result is
/// the padded convolution's bit for bit; with float ones they differ by rounding.

#include <string>

#include "../config.hpp"
#include "../core/tape.hpp"
#include "../kernels/padding.hpp"

namespace xq::ops {

/// `y` (the output of a conv2d with same padding over the window `g`, kernel `kernel` of
/// shape (KH, KW, C, F)) plus `value` times the kernel's taps on the padding, computed in
/// `y`'s buffer: conv2d's backward never reads its output, and `y` is the conv's fresh
/// result. Records the kernel's gradient when it wants one. `path` names the layer in errors.
/// `in_value`: y already holds the term (a convolution that padded with `value` itself,
/// xnor_forward.hpp's); only the gradient is recorded.
XQ_DECL var add_padding_value_term(var y, const var& kernel, const window2d& g, float value,
                                   const std::string& path, bool in_value = false);

}  // namespace xq::ops

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/padding_value_term.ipp"
#endif
