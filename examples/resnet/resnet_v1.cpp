// The v1 network through the example's story (variant.hpp), in its own translation unit.

#include "resnet.hpp"
#include "variant.hpp"

namespace resnet {

variant_result run_v1(const fashion::splits& data, const fashion::run_options& s) {
  return run_variant("v1", make_resnet_v1(s.seed), xq::qdq_cases::resnet_v1(), data, s);
}

}  // namespace resnet
