#pragma once
/// \file site_quantizers.ipp
/// site_quantizers' code (wrappers/site_quantizers.hpp).

#include "../site_quantizers.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(site_quantizers)

XQ_DECL var site_quantizers::operator()(const var& x) {
  if (!sites_[0].enabled()) return x;
  if (sites_.size() == 1) return sites_[0](x);
  fake_quantizer& q = sites_[next_];
  next_ = (next_ + 1) % sites_.size();
  return q(x);
}

XQ_DECL void site_quantizers::set_call_sites(std::size_t sites) {
  if (sites == 0) sites = 1;
  if (sites == sites_.size()) return;
  const fake_quantizer first = sites_[0];
  sites_.assign(sites, first);
  for (std::size_t i = 1; i < sites_.size(); ++i) sites_[i].detach_state();
  next_ = 0;
}

XQ_DECL void site_quantizers::configure(const quantizer_config& c, bool enabled) {
  for (auto& q : sites_) {
    q.configure(c);
    q.enable(enabled);
  }
}

XQ_DECL void site_quantizers::visit_sites(const std::string& name,
                                          void (*call)(void*, fake_quantizer&, const std::string&), void* f) {
  if (sites_.size() == 1) {
    call(f, sites_[0], name);
    return;
  }
  for (std::size_t i = 0; i < sites_.size(); ++i) call(f, sites_[i], name + "_" + std::to_string(i));
}

XQ_DECL void site_quantizers::visit_sites(const std::string& name,
                                          void (*call)(void*, const fake_quantizer&, const std::string&),
                                          void* f) const {
  if (sites_.size() == 1) {
    call(f, sites_[0], name);
    return;
  }
  for (std::size_t i = 0; i < sites_.size(); ++i) call(f, sites_[i], name + "_" + std::to_string(i));
}

XQ_DECL site_quantizers::site_quantizers() : sites_(1) {}

}  // namespace xq
