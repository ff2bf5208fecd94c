#pragma once
/// \file parity_log.hpp
/// A parity report (deploy/parity.hpp) in TensorBoard: per quantized tensor (its label,
/// spaces as underscores: `<t>`) `parity_identical/<t>` (the share of identical integers),
/// `parity_max_steps/<t>` and `parity_sqnr_db/<t>` (left out where infinite: every value
/// identical); for the output `parity_output_identical`, `parity_output_sqnr_db` and
/// `parity_same_top1`; and the report's table as the text `parity`.
///
/// \code
///   auto report = xq::deploy::parity(qat, engine, images, &labels);
///   xq::deploy::log_parity(writer, report);
/// \endcode

#include <cstdint>

#include "../config.hpp"
#include "../io/summary_writer.hpp"
#include "parity.hpp"

namespace xq::deploy {

/// Writes `report` at `step` (see the file comment).
XQ_DECL void log_parity(summary_writer& writer, const parity_report& report, std::int64_t step = 0);

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/parity_log.ipp"
#endif
