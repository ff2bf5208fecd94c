#pragma once
/// \file site_quantizers.hpp
/// The activation quantizer of a layer that may be called from several places: one
/// `fake_quantizer`, or one per call site.
///
/// Range-tracking policy for reused layers: a layer called twice in one forward pass
/// (the feature extractor of a PWCNet applied to both images, a block reused in an
/// hourglass) has ONE range by default, updated by every call, like one Keras layer
/// object with one set of quantizer variables. With `per_call_site`, call k of each
/// pass uses its own quantizer, with a state of its own: the number of call sites comes
/// from the traced pass in `quantize_model`, and calls are numbered modulo that count,
/// so every pass must call the layer the same number of times (true of a fixed
/// architecture). After a pass that stopped half-way (an exception),
/// `reset_call_sites(model)` re-aligns.
///
/// Not a layer itself: the wrapper that holds it lists its quantizers as its children
/// ("conv/input_quantizer", or "conv/input_quantizer_0", "..._1" per call site).

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../quantizers/fake_quantizer.hpp"

namespace xq {

class site_quantizers {
 public:
  XQ_SPECIAL_MEMBERS(site_quantizers)
  XQ_DECL site_quantizers();

  /// Fake-quantizes `x` with the quantizer of this call's site.
  XQ_DECL var operator()(const var& x);

  /// One quantizer per call site (`sites` >= 1), all with the shared one's settings and
  /// each with its own state (a copy of the shared one's).
  XQ_DECL void set_call_sites(std::size_t sites);
  std::size_t call_sites() const noexcept { return sites_.size(); }
  void reset_call_sites() noexcept { next_ = 0; }

  XQ_DECL void configure(const quantizer_config& c, bool enabled);
  bool enabled() const noexcept { return sites_[0].enabled(); }

  /// The quantizer of call site `i` (0 when shared).
  fake_quantizer& site(std::size_t i = 0) { return sites_.at(i); }
  const fake_quantizer& site(std::size_t i = 0) const { return sites_.at(i); }

  /// Calls `f(quantizer, name)` for each site: `name`, or `name_0`, `name_1`, ... . The loop
  /// is compiled once (visit_sites); each walker only adds the call of `f`: every model walk
  /// reaches every wrapper's quantizers through here, and a template loop instantiated per
  /// walker and wrapper type was a quarter of a QAT program's object code.
  template <class F>
  void visit(const std::string& name, F&& f) {
    visit_sites(name, &call_visitor<std::remove_reference_t<F>, fake_quantizer>, erase(f));
  }
  template <class F>
  void visit(const std::string& name, F&& f) const {
    visit_sites(name, &call_visitor<std::remove_reference_t<F>, const fake_quantizer>, erase(f));
  }

 private:
  template <class F, class Q>
  static void call_visitor(void* f, Q& q, const std::string& name) {
    (*static_cast<F*>(f))(q, name);
  }
  template <class F>
  static void* erase(F& f) noexcept {
    return const_cast<void*>(static_cast<const void*>(std::addressof(f)));
  }
  XQ_DECL void visit_sites(const std::string& name, void (*call)(void*, fake_quantizer&, const std::string&),
                           void* f);
  XQ_DECL void visit_sites(const std::string& name,
                           void (*call)(void*, const fake_quantizer&, const std::string&), void* f) const;

  std::vector<fake_quantizer> sites_;
  std::size_t next_ = 0;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/site_quantizers.ipp"
#endif
