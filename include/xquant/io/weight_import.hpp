#pragma once
/// \file weight_import.hpp
/// `xq::io::import_weights`: loads float weights exported from Keras or PyTorch as one
/// `.npy` file per weight into a built model, matched by parameter path name, with
/// PyTorch's layouts permuted into xquant's (which are Keras's).
///
/// \code
///   my_net net;
///   xq::build(net, {1, 32, 32, 3});                      // parameters must exist
///   xq::io::import_weights(net, "weights/", xq::io::weight_layout::keras);
///   // block/conv/kernel <- weights/block.conv.kernel.npy, as it is (HWIO)
///
///   my_net torch_net;  torch_net.block.norm.epsilon(1e-5f);  // PyTorch's, see below
///   xq::build(torch_net, {1, 32, 32, 3});
///   auto report = xq::io::import_weights(torch_net, "sd/", xq::io::weight_layout::pytorch);
///   // block/conv/kernel <- sd/block.conv.weight.npy, (O, I, KH, KW) -> (KH, KW, I, O)
/// \endcode
///
/// **File names.** Every parameter of `xq::parameters(model)` (a tied weight once) is read
/// from `<dir>/<stem>.npy`. Its xquant name is "<layer path>/<short name>"
/// ("block/conv/kernel"); the stem is that name with each '/' replaced by
/// `import_options::separator` ('.' by default), and in the pytorch layout with the
/// short name replaced by PyTorch's:
///
/// | layer            | xquant short name | keras file      | pytorch file    |
/// |------------------|-------------------|-----------------|-----------------|
/// | conv2d, dense    | kernel            | `<path>.kernel` | `<path>.weight` |
/// | depthwise_conv2d | depthwise_kernel  | `<path>.depthwise_kernel` (or `<path>.kernel`) | `<path>.weight` |
/// | any with a bias  | bias              | `<path>.bias`   | `<path>.bias`   |
/// | batch_norm       | gamma             | `<path>.gamma`  | `<path>.weight` |
/// | batch_norm       | beta              | `<path>.beta`   | `<path>.bias`   |
/// | batch_norm       | moving_mean       | `<path>.moving_mean` | `<path>.running_mean` |
/// | batch_norm       | moving_variance   | `<path>.moving_variance` | `<path>.running_var` |
/// | embedding        | embeddings        | `<path>.embeddings` | `<path>.weight` |
/// | other            | s                 | `<path>.s`      | `<path>.s`      |
///
/// So a PyTorch module nested like the xquant model, with submodules named like its layers,
/// exports with `for k, v in m.state_dict().items(): np.save(f"{k}.npy", v.numpy())`, and a
/// Keras model with `np.save(f"{w.path.replace('/', '.')}.npy", w.numpy())` when its layer
/// paths are xquant's. Keras 3 calls DepthwiseConv2D's kernel "kernel", Keras 2 (tf_keras)
/// "depthwise_kernel": the keras layout takes either file, and rejects a directory holding
/// both. Where the names differ, `import_options::file_names` maps an xquant name to any
/// file under `dir` ("features.0.weight", say); the layout transform still follows the
/// xquant parameter. `.npy` files no parameter read (PyTorch's `num_batches_tracked`, the
/// second key of a tied weight) are listed in the report, not an error.
///
/// **Layouts.** Keras's layouts are xquant's: files are taken as they are. PyTorch's are
/// permuted (the file's shape is checked before the permutation, in PyTorch's terms):
///
/// | xquant parameter (shape)              | PyTorch file (shape)             | to xquant |
/// |---------------------------------------|----------------------------------|-----------|
/// | conv2d kernel (KH, KW, I, O)          | Conv2d weight (O, I, KH, KW)     | permute (2, 3, 1, 0) |
/// | dense kernel (in, out)                | Linear weight (out, in)          | transpose |
/// | depthwise_conv2d kernel (KH, KW, C, M) | Conv2d(groups=C) weight (C·M, 1, KH, KW) | view (C, M, KH, KW), permute (2, 3, 0, 1) |
/// | bias, gamma, beta, moving statistics (C,) | bias, weight, bias, running_mean/var (C,) | as is |
/// | embedding table (V, D)                | Embedding weight (V, D)          | as is |
///
/// Depthwise output channel c·M + m is input channel c's filter m in both frameworks (a
/// grouped convolution's output channels come group by group), hence the view. A rank-4
/// "kernel" is taken for a Conv2d weight and a rank-2 one for a Linear weight; a
/// "kernel" of another rank has no PyTorch layout and is rejected.
///
/// **Hyper-parameters are not imported.** Only values are: set the layers' options to the
/// exporter's yourself. Above all batch norm: PyTorch's eps is 1e-5 and Keras's 1e-3
/// (`xq::batch_norm().epsilon(1e-5f)` for PyTorch weights), and PyTorch's `momentum` is
/// xquant's and Keras's 1 - momentum (0.1 there is `.momentum(0.9f)` here; it matters
/// only for training on). Padding too: xquant has Keras's `valid`/`same`; a PyTorch
/// `padding=k//2` with an odd kernel and stride 1 is `same`.
///
/// **All or nothing.** Every file is read, converted and checked before any parameter is
/// written: a missing file, a bad file or a wrong shape throws and leaves the model as it
/// was. Values are written into the parameters' existing storage, so every layer that
/// shares a parameter (a tied projection, a reused layer) sees the new values.
/// float32 files are copied bit for bit; float64, integer and boolean files are converted
/// by `xq::io::load_npy` (rounded to nearest); other dtypes are rejected by it.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/model.hpp"
#include "../core/parameter.hpp"
#include "../core/tensor.hpp"

namespace xq::io {

/// Whose names and layouts the files follow.
enum class weight_layout {
  keras,   ///< Keras names, xquant's layouts (HWIO, (in, out), (KH, KW, C, M)): no permutation
  pytorch  ///< PyTorch state_dict names and layouts ((O, I, KH, KW), (out, in), ...)
};

/// Options of `import_weights`.
struct import_options {
  /// Replaces each '/' of a parameter name in its file name ("block/conv/kernel" ->
  /// "block.conv.kernel.npy"). '.' gives PyTorch's state_dict keys.
  char separator = '.';
  /// File per xquant parameter name, relative to the directory, with or without ".npy"
  /// ({"block/conv/kernel", "features.0.weight"}), in place of the naming rule. A name that
  /// is no parameter of the model is an error (a typo would otherwise load nothing).
  std::map<std::string, std::string> file_names;
  /// Leave parameters without a file as they are (a partial import, a backbone only)
  /// instead of failing; the report lists them.
  bool allow_missing = false;
};

/// One parameter `import_weights` wrote.
struct imported_parameter {
  std::string name;                   ///< xquant name, "block/conv/kernel"
  std::filesystem::path file;         ///< the file it came from
  std::vector<std::size_t> file_shape;  ///< the array's shape in the file
  std::string transform;              ///< "as is", "permute (2, 3, 1, 0)", ...
};

/// What `import_weights` did.
struct import_report {
  std::vector<imported_parameter> loaded;         ///< in `xq::parameters(model)` order
  std::vector<std::string> missing;               ///< parameters left as they were (allow_missing)
  std::vector<std::filesystem::path> unused_files;  ///< .npy files under the directory nobody read, sorted
};

namespace detail {

using xq::detail::concat;
using xq::detail::shape_string;

XQ_DECL std::string replace_separator(std::string s, char separator);

// The layer path of a parameter name ("block/conv/kernel" -> "block/conv"; "" for none).
XQ_DECL std::string layer_path_of(const parameter& p);

// How one parameter is stored in one layout: its file's short name(s), shape, and the
// permutation back to xquant's layout.
struct weight_format {
  std::vector<std::string> short_names;  // file short names to try, first is the main one
  std::vector<std::size_t> file_shape;
  std::string description;               // "a PyTorch Conv2d weight (O, I, KH, KW)"
  enum class kind { as_is, permute, depthwise } how = kind::as_is;
  std::vector<std::size_t> permutation;  // file axes -> xquant axes (permute, depthwise)
};

XQ_DECL std::string permutation_string(const std::vector<std::size_t>& perm);

XQ_DECL weight_format format_of(const parameter& p, weight_layout layout);

// A depthwise kernel from PyTorch's (C*M, 1, KH, KW) to (KH, KW, C, M): a grouped
// convolution's output channels come group by group, so channel c*M + m is input channel
// c's filter m, as in TF.
XQ_DECL tensor depthwise_to_xquant(const tensor& t, std::size_t channels, std::size_t multiplier);

XQ_DECL bool is_regular_file(const std::filesystem::path& p);

/// Throws io_error unless `dir` is a directory (import_weights' first check).
XQ_DECL void check_weight_directory(const std::filesystem::path& dir);

/// What import_weights does once it has the model's parameters, `params` (in
/// `xq::parameters(model)` order, named after their paths).
XQ_DECL import_report import_parameters(const std::vector<parameter_ptr>& params, const std::filesystem::path& dir,
                                        weight_layout layout, const import_options& options);

}  // namespace detail

/// Loads every parameter of `model` from the `.npy` files in `dir`, named and laid out as
/// `layout` says (the tables at the top of this file). Calls `xq::set_paths(model)` first;
/// the model must be built (`xq::build(model, input_shape)` or a first call). Reads and
/// checks every file before writing any parameter. Throws `xq::io_error` naming the file
/// for a missing file (and the parameter that needs it) or an unreadable one,
/// `xq::shape_error` naming the parameter, the expected shape in the file's layout and
/// the given one, and `xq::argument_error` for an unbuilt model or a `file_names` entry
/// that names no parameter. On a throw the model is unchanged.
template <class Model>
import_report import_weights(Model& model, const std::filesystem::path& dir, weight_layout layout,
                             const import_options& options = {}) {
  detail::check_weight_directory(dir);
  set_paths(model);
  return detail::import_parameters(parameters(model), dir, layout, options);
}

}  // namespace xq::io

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/weight_import.ipp"
#endif
