#pragma once
/// \file op_registry.hpp
/// Which decoder loads an op of each kind from a saved model (integer_model_file.hpp): a
/// registry by kind name. Every op of the engine registers its static `decode` for its
/// kinds; an op defined elsewhere registers its own with `register_op_decoder` before a
/// model holding it is loaded.
///
/// \code
///   xq::deploy::register_op_decoder("correlation", &my::correlation_op::decode);
/// \endcode

#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "lowered_op.hpp"

namespace xq::deploy {

/// Reads an op of `kind` (its own fields: the file sets its path, inputs and output).
/// Throws io_error through `r.fail`, or argument_error (the file names the op then).
using op_decoder = std::unique_ptr<lowered_op> (*)(const std::string& kind, const op_reader& r);

/// Registers `decode` for ops of `kind`, replacing an earlier decoder of that kind.
XQ_DECL void register_op_decoder(const std::string& kind, op_decoder decode);
/// The decoder of `kind`, or nullptr.
XQ_DECL op_decoder find_op_decoder(const std::string& kind);
/// The kinds that have a decoder, sorted (for messages).
XQ_DECL std::vector<std::string> registered_op_kinds();

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/op_registry.ipp"
#endif
