#pragma once
/// \file compiled_twins.ipp
/// The definitions that transform/registry.hpp declares `extern template` in separate mode:
/// the registry's twins and the built-in layers' walk tables (transform/compiled_twins.hpp).
/// Included by <xquant/src.hpp> only (through transform/impl/all.ipp).

#include "../compiled_twins.hpp"
#include "../registry.hpp"

namespace xq {
XQ_REGISTRY_INSTANTIATIONS(template)
}  // namespace xq
