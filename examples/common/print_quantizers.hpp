#pragma once
// One line per quantizer of a model that is on: its path and what it runs (its grid, or
// its low-bit format, its blocks and axis): which layers a scheme and spec reached.

#include <iostream>

#include <xquant/quantizers/model_quantizers.hpp>

namespace examples {

template <class Model>
void print_quantizers(Model& model, std::ostream& out = std::cout) {
  xq::for_each_quantizer(model, [&](auto& q) {
    if (q.enabled()) out << "    " << q.path() << ": " << q.describe() << "\n";
  });
}

}  // namespace examples
