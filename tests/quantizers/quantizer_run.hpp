#pragma once
// Runs a quantizer layer once on the tape, for the quantizer tests: its output and the
// gradient it passes back for a given upstream gradient.

#include <xquant/core/tape.hpp>
#include <xquant/core/var.hpp>

namespace qtest {

struct quantizer_result {
  xq::tensor y, dx;
};

/// q(x) and its input gradient for upstream gradient dy.
template <class Q>
quantizer_result run_quantizer(Q& q, const xq::tensor& x, const xq::tensor& dy) {
  xq::tape t;
  xq::var xv(x, true);
  xq::var y = q(xv);
  t.backward(y, dy);
  return {y.value(), xv.grad()};
}

}  // namespace qtest
