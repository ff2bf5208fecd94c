// The v2 (pre-activation) network through the example's story (variant.hpp), in its own
// translation unit.

#include "resnet.hpp"
#include "variant.hpp"

namespace resnet {

variant_result run_v2(const fashion::splits& data, const fashion::run_options& s) {
  return run_variant("v2", make_resnet_v2(s.seed), xq::qdq_cases::resnet_v2(), data, s);
}

}  // namespace resnet
