#pragma once
/// \file graph_decisions.hpp
/// The decisions both back-ends need, made once on the deploy graph and recorded in
/// `deploy_graph::decisions` (one `node_decisions` per node):
///
///  - **batch-norm absorption**: a batch norm whose input is a linear op's output and
///    nothing else's, with no quantization point between, is absorbed by that op (the
///    engine scales its accumulator per channel; the exporter adds the affine to the bias
///    or after the op). When the batch norm is the one folded into the op's kernel
///    (`op::batch_norm::folded` and the kernel's fold divisor), the fold cancels: the
///    deployed kernel is the quantized folded kernel and the bias the folded bias, the
///    form every integer runtime runs;
///  - **landing grids**: the quantization point an op's output reaches through ops that
///    commute with rounding (graph_ops.hpp's commutes_with_rounding: relu, max pooling,
///    reshapes, layout moves; relu6 as a clamp), where every use reaches the same grid
///    and the value is no graph output. An integer op may then requantize its accumulator
///    straight onto that grid, and the point after the commuting ops finds its input
///    already rounded. An op whose own output quantizer follows directly lands there.
///
/// Both are properties of the graph, not of a back-end: the engine requantizes where the
/// landing grid says, the exporter writes the quantization points where they are, and
/// neither re-derives who feeds whom.

#include "../../config.hpp"
#include "deploy_graph.hpp"

namespace xq::deploy {

/// Fills `g.decisions` (see the file comment).
XQ_DECL void decide(deploy_graph& g);

/// The quantization point (a quantize node) whose integers value `v` holds: `v` is its
/// output, or was made from it by single-input ops that commute with rounding (relu, max
/// pooling, reshapes, layout moves), which keep the integers on its grid. no_index: none.
/// What a linear op's bias can be rounded onto (int32 at s_in * s_w).
XQ_DECL std::size_t quantized_by(const deploy_graph& g, value_id v);

/// Whether two grids are the same integers for the same reals (scale, zero point, range,
/// element kind and granularity).
XQ_DECL bool same_grid(const quantization_grid& a, const quantization_grid& b) noexcept;

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/graph_decisions.ipp"
#endif
