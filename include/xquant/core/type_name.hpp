#pragma once
/// \file type_name.hpp
/// The short, readable name of a type: what path names of unnamed composites and
/// `quantization_spec` entries by layer type use.

#include <string>
#include <typeinfo>

#include "../config.hpp"

namespace xq {
namespace detail {

/// The unqualified name, without template arguments, of the type whose mangled name
/// (`typeid(T).name()`) is `mangled`; "layer" when nothing is left.
XQ_DECL std::string short_name_of_mangled(const char* mangled);

/// The unqualified name of a type without template arguments ("conv_block" for
/// `fashion::conv_block<xq::conv2d>`, "conv2d" for `xq::conv2d`). The demangling and string
/// work is one compiled function: a model's layer types instantiate only this call.
template <class T>
std::string type_short_name() {
  return short_name_of_mangled(typeid(T).name());
}

}  // namespace detail
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/type_name.ipp"
#endif
