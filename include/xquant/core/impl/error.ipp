#pragma once
/// \file error.ipp
/// The exceptions' code (core/error.hpp).

#include "../error.hpp"

namespace xq {

XQ_DECL argument_error::argument_error(const std::string& where, const std::string& expected,
                                       const std::string& given)
    : error(where + ": expected " + expected + ", given " + given), where_(where), expected_(expected), given_(given) {}

XQ_DECL io_error::io_error(const std::string& file, const std::string& what_was_wrong)
    : error(file + ": " + what_was_wrong), file_(file) {}

}  // namespace xq
