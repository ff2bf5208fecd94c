#pragma once
/// \file site_quantizers.hpp
/// The activation quantizer of a layer that may be called from several places.
///
/// Range-tracking policy for reused layers: a layer called twice in one forward pass
/// (the feature extractor of a PWCNet applied to both images, a block reused in an
/// hourglass) has ONE range by default, updated by every call, like one Keras layer
/// object with one set of quantizer variables. With `per_call_site`, call k of each
/// pass uses its own quantizer: the number of call sites comes from the traced pass
/// in `quantize_model`, and calls are numbered modulo that count, so every pass must
/// call the layer the same number of times (true of a fixed architecture). After a
/// pass that stopped half-way (an exception), `reset_call_sites(model)` re-aligns.

#include <cstddef>
#include <string>
#include <vector>

#include "../quantizers/fake_quantizer.hpp"

namespace xq {

class site_quantizers {
 public:
  site_quantizers() : sites_(1) {}

  /// Fake-quantizes `x` with the quantizer of this call's site.
  var operator()(const var& x) {
    if (!sites_[0].enabled()) return x;
    if (sites_.size() == 1) return sites_[0](x);
    fake_quantizer& q = sites_[next_];
    next_ = (next_ + 1) % sites_.size();
    return q(x);
  }

  /// One quantizer per call site (`sites` >= 1), all with the shared one's settings.
  void set_call_sites(std::size_t sites) {
    if (sites == 0) sites = 1;
    if (sites == sites_.size()) return;
    const fake_quantizer first = sites_[0];
    sites_.assign(sites, first);
    rename();
    next_ = 0;
  }
  std::size_t call_sites() const noexcept { return sites_.size(); }
  void reset_call_sites() noexcept { next_ = 0; }

  void configure(const quantizer_config& c, bool enabled) {
    for (auto& q : sites_) {
      q.configure(c);
      q.enable(enabled);
    }
  }
  bool enabled() const noexcept { return sites_[0].enabled(); }

  /// The quantizer of call site `i` (0 when shared).
  fake_quantizer& site(std::size_t i = 0) { return sites_.at(i); }
  const fake_quantizer& site(std::size_t i = 0) const { return sites_.at(i); }

  void set_path(std::string p) {
    path_ = std::move(p);
    rename();
  }

  template <class F>
  void for_each(F&& f) {
    for (auto& q : sites_) f(q);
  }

 private:
  void rename() {
    if (sites_.size() == 1) {
      sites_[0].set_path(path_);
      return;
    }
    for (std::size_t i = 0; i < sites_.size(); ++i) sites_[i].set_path(path_ + "_" + std::to_string(i));
  }
  std::vector<fake_quantizer> sites_;
  std::size_t next_ = 0;
  std::string path_;
};

}  // namespace xq
