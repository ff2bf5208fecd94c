#pragma once
/// \file layout_ops.hpp
/// The engine's layout ops, which move elements and compute nothing: reshape and
/// concatenation, and the moves of function_op's layout functions (zero padding, cropping,
/// slicing, nearest upsampling, transposition: `move_elements`). On integers they move the
/// centred integers and keep the grid (a padded zero is the zero point, real 0, as the
/// simulation pads): rounding commutes with them. None reads or writes the batch axis
/// (axis 0) other than as a batch.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "lowered_op.hpp"

namespace xq::deploy {

/// A new shape for the same elements (flatten, reshape; dropout at inference is not
/// lowered at all). Its rule: target holds as many elements per sample as the input.
class reshape_op final : public lowered_op {
 public:
  std::vector<std::size_t> target;  ///< without the batch axis
  const char* kind() const noexcept override { return "reshape"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

/// Concatenation along `axis` (of the batch-first tensor, at least 1) of real tensors, or
/// of integer tensors on one grid (the integers are copied: rounding commutes with
/// concatenation). Its rule: inputs of one kind and rank, equal but along `axis`.
class concatenate_op final : public lowered_op {
 public:
  std::size_t axis = 0;
  const char* kind() const noexcept override { return "concatenate"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

/// Whether `f` with `ints` is a layout function move_elements computes: zero_padding2d,
/// cropping2d, slice, transpose, and upsampling2d when nearest (ints[2] == 0).
XQ_DECL bool is_layout_move(const std::string& f, const std::vector<std::int64_t>& ints) noexcept;

/// The shape layout function `f` (function_op's, with its arguments `ints`: zero_padding2d
/// and cropping2d top, bottom, left, right; slice axis, begin, end; upsampling2d size_h,
/// size_w, bilinear; transpose the permutation) gives a tensor of `shape`: its rule, an
/// argument_error naming `where` for what does not fit (a rank other than 4 for the 2-D
/// functions, a cropping larger than the image, a slice outside its axis, a permutation or
/// slice that moves the batch axis). upsampling2d's rule is the same for both interpolations.
XQ_DECL std::vector<std::size_t> layout_shape(const std::vector<std::size_t>& shape, const std::string& f,
                                              const std::vector<std::int64_t>& ints, const std::string& where);

/// `x` (real or integer) moved as layout function `f` moves it (is_layout_move): the
/// values the float function gives, bit for bit; integers keep their grid.
XQ_DECL engine_tensor move_elements(const engine_tensor& x, const std::string& f, const std::vector<std::int64_t>& ints,
                                   const std::string& where);

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/layout_ops.ipp"
#endif
