// Must not compile: code written when checkpoints were reachable from the umbrella header
// calls xq::save_checkpoint with only <xquant/xquant.hpp> included (issue 34, item 17). It
// used to fail with "'save_checkpoint' is not a member of 'xq'"; the diagnostic now names the
// header to include (include/xquant/io/checkpoint_hint.hpp).
// Fix: #include <xquant/io/checkpoint.hpp>

#include <xquant/xquant.hpp>

void save_it() {
  xq::dense model(3);
  xq::build(model, {1, 4});
  xq::save_checkpoint("model.xqc", model);
}
