#pragma once
/// \file quantizer_layer.ipp
/// quantizer_base's code (quantizers/quantizer_layer.hpp): the call, paths, metrics, copies.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../core/layer.hpp"
#include "../quantizer_call_observer.hpp"
#include "../quantizer_layer.hpp"

namespace xq {

XQ_DECL var quantizer_base::operator()(const var& x) {
  if (!enabled_) return x;
  return detail::run_leaf_call(this, path_, type_name_, layer_role::quantizer, [&] { return run(x); }, x);
}

XQ_DECL void quantizer_base::set_path(std::string p) {
  path_ = std::move(p);
  for_each_parameter_slot([this](parameter_ptr& param) {
    if (param) param->set_owner_path(path_);
  });
}

XQ_DECL std::string quantizer_base::describe() const { return kind(); }

XQ_DECL bool quantizer_base::has_seen_data() const { return true; }

XQ_DECL low_bit_format quantizer_base::dynamic_format() const { return {}; }

XQ_DECL std::optional<quantization_grid> quantizer_base::grid_of(const tensor& x) const {
  (void)x;
  return std::nullopt;
}

XQ_DECL std::vector<parameter_ptr> quantizer_base::parameters() const { return {}; }

XQ_DECL void quantizer_base::for_each_parameter_slot(const std::function<void(parameter_ptr&)>& f) { (void)f; }

XQ_DECL void quantizer_base::set_metrics(quantizer_metric m) {
  metrics_chosen_ = true;
  flip_ = has_metric(m, quantizer_metric::flip_ratio) ? std::make_shared<flip_ratio>() : nullptr;
  flow_ = has_metric(m, quantizer_metric::gradient_flow) ? std::make_shared<gradient_flow>() : nullptr;
}

XQ_DECL void quantizer_base::adopt_scope_metrics() {
  if (!metrics_chosen_ && metrics_scope::current() != quantizer_metric::none) {
    set_metrics(metrics_scope::current());
    metrics_chosen_ = false;
  }
}

XQ_DECL void quantizer_base::reset_metrics() {
  if (flip_) flip_->reset();
  if (flow_) flow_->reset();
}

XQ_DECL quantizer_base::quantizer_base(const quantizer_base& o)
    : name_(o.name_), path_(o.path_), type_name_(o.type_name_), enabled_(o.enabled_),
      observer_enabled_(o.observer_enabled_), fake_quant_enabled_(o.fake_quant_enabled_),
      metrics_chosen_(o.metrics_chosen_) {
  copy_metrics(o);
}

XQ_DECL quantizer_base& quantizer_base::operator=(const quantizer_base& o) {
  if (this != &o) {
    name_ = o.name_;
    path_ = o.path_;
    type_name_ = o.type_name_;
    enabled_ = o.enabled_;
    observer_enabled_ = o.observer_enabled_;
    fake_quant_enabled_ = o.fake_quant_enabled_;
    metrics_chosen_ = o.metrics_chosen_;
    copy_metrics(o);
  }
  return *this;
}

XQ_DECL void quantizer_base::rename(std::string n) {
  name_ = std::move(n);
  set_path(name_);
}

XQ_DECL void quantizer_base::observe(const tensor& x) { (void)x; }

XQ_DECL var quantizer_base::run(const var& x) {
  if (observer_enabled_ && is_training()) observe(x.value());
  quantizer_call_observer* const watching = quantizer_call_observer::current();
  if (!fake_quant_enabled_) {
    if (watching) watching->called(*this, x.value(), x.value());
    return x;
  }
  var y = quantize(x);
  if (flip_ && is_training()) flip_->update(y.value());
  if (watching) watching->called(*this, x.value(), y.value());
  return y;
}

XQ_DECL void quantizer_base::copy_metrics(const quantizer_base& o) {
  flip_ = o.flip_ ? std::make_shared<flip_ratio>(*o.flip_) : nullptr;
  flow_ = o.flow_ ? std::make_shared<gradient_flow>(*o.flow_) : nullptr;
}

}  // namespace xq
