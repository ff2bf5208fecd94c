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

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <xtensor/xmanipulation.hpp>

#include "../core/error.hpp"
#include "../core/model.hpp"
#include "../core/parameter.hpp"
#include "../core/tensor.hpp"
#include "npy.hpp"

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

inline std::string replace_separator(std::string s, char separator) {
  std::replace(s.begin(), s.end(), '/', separator);
  return s;
}

// The layer path of a parameter name ("block/conv/kernel" -> "block/conv"; "" for none).
inline std::string layer_path_of(const parameter& p) {
  const std::string& n = p.name();
  const std::string& s = p.short_name();
  if (n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0 && n[n.size() - s.size() - 1] == '/')
    return n.substr(0, n.size() - s.size() - 1);
  return "";
}

// How one parameter is stored in one layout: its file's short name(s), shape, and the
// permutation back to xquant's layout.
struct weight_format {
  std::vector<std::string> short_names;  // file short names to try, first is the main one
  std::vector<std::size_t> file_shape;
  std::string description;               // "a PyTorch Conv2d weight (O, I, KH, KW)"
  enum class kind { as_is, permute, depthwise } how = kind::as_is;
  std::vector<std::size_t> permutation;  // file axes -> xquant axes (permute, depthwise)
};

inline std::string permutation_string(const std::vector<std::size_t>& perm) {
  std::string s = "(";
  for (std::size_t i = 0; i < perm.size(); ++i) s += (i ? ", " : "") + std::to_string(perm[i]);
  return s + ")";
}

inline weight_format format_of(const parameter& p, weight_layout layout) {
  const std::string& s = p.short_name();
  const auto& shape = p.value.shape();
  const std::vector<std::size_t> xq_shape(shape.begin(), shape.end());
  weight_format f;
  f.file_shape = xq_shape;
  if (layout == weight_layout::keras) {
    f.short_names = {s};
    // Keras 3 names DepthwiseConv2D's kernel "kernel"; Keras 2 named it "depthwise_kernel".
    if (s == "depthwise_kernel") f.short_names.push_back("kernel");
    f.description = "a Keras weight";
    return f;
  }
  if (s == "kernel" && xq_shape.size() == 4) {  // (KH, KW, I, O) <- (O, I, KH, KW)
    f.short_names = {"weight"};
    f.file_shape = {xq_shape[3], xq_shape[2], xq_shape[0], xq_shape[1]};
    f.description = "a PyTorch Conv2d weight (O, I, KH, KW)";
    f.how = weight_format::kind::permute;
    f.permutation = {2, 3, 1, 0};
  } else if (s == "kernel" && xq_shape.size() == 2) {  // (in, out) <- (out, in)
    f.short_names = {"weight"};
    f.file_shape = {xq_shape[1], xq_shape[0]};
    f.description = "a PyTorch Linear weight (out, in)";
    f.how = weight_format::kind::permute;
    f.permutation = {1, 0};
  } else if (s == "kernel") {
    throw argument_error(p.name(),
                         "a kernel of rank 4 (conv2d) or 2 (dense) to import from a PyTorch weight",
                         concat("a kernel of shape ", shape_string(xq_shape)));
  } else if (s == "depthwise_kernel" && xq_shape.size() == 4) {  // (KH, KW, C, M) <- (C*M, 1, KH, KW)
    f.short_names = {"weight"};
    f.file_shape = {xq_shape[2] * xq_shape[3], 1, xq_shape[0], xq_shape[1]};
    f.description = "a PyTorch depthwise Conv2d(groups=C) weight (C*M, 1, KH, KW)";
    f.how = weight_format::kind::depthwise;
    f.permutation = {2, 3, 0, 1};
  } else {
    static const std::map<std::string, std::string> renamed = {
        {"gamma", "weight"},
        {"beta", "bias"},
        {"moving_mean", "running_mean"},
        {"moving_variance", "running_var"},
        {"embeddings", "weight"},
    };
    const auto it = renamed.find(s);
    f.short_names = {it == renamed.end() ? s : it->second};
    f.description = concat("a PyTorch '", f.short_names[0], "'");
  }
  return f;
}

// A depthwise kernel from PyTorch's (C*M, 1, KH, KW) to (KH, KW, C, M): a grouped
// convolution's output channels come group by group, so channel c*M + m is input channel
// c's filter m, as in TF.
inline tensor depthwise_to_xquant(const tensor& t, std::size_t channels, std::size_t multiplier) {
  const std::size_t kh = t.shape()[2], kw = t.shape()[3];
  tensor grouped = t;
  grouped.reshape({channels, multiplier, kh, kw});
  tensor out = xt::transpose(grouped, {2, 3, 0, 1});
  return out;
}

inline bool is_regular_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

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
  namespace fs = std::filesystem;
  using detail::concat;
  const char* where = "xq::io::import_weights";
  {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw io_error(dir.string(), "not a directory (the weight files' directory)");
  }
  set_paths(model);
  const std::vector<parameter_ptr> params = parameters(model);
  if (params.empty())
    throw argument_error(where, "a built model (call xq::build(model, input_shape) first)",
                         "a model without parameters");
  for (const auto& entry : options.file_names) {
    const std::string& name = entry.first;
    const std::string& file = entry.second;
    const bool known =
        std::any_of(params.begin(), params.end(), [&](const parameter_ptr& p) { return p->name() == name; });
    if (!known) {
      std::string names;
      for (const auto& p : params) names += (names.empty() ? "" : ", ") + p->name();
      throw argument_error(concat(where, ": import_options::file_names"),
                           concat("the name of a parameter of the model (", names, ")"),
                           concat("'", name, "' (mapped to '", file, "')"));
    }
  }

  import_report report;
  std::vector<std::pair<parameter*, tensor>> values;  // written only once all are read
  std::set<fs::path> used;
  const auto with_npy = [](std::string f) {
    if (f.size() < 4 || f.compare(f.size() - 4, 4, ".npy") != 0) f += ".npy";
    return f;
  };
  for (const parameter_ptr& p : params) {
    const detail::weight_format format = detail::format_of(*p, layout);
    // The candidate files, the main one first.
    std::vector<fs::path> candidates;
    const auto mapped = options.file_names.find(p->name());
    if (mapped != options.file_names.end()) {
      candidates.push_back(dir / with_npy(mapped->second));
    } else {
      const std::string path = detail::layer_path_of(*p);
      for (const std::string& s : format.short_names)
        candidates.push_back(dir / (detail::replace_separator(path.empty() ? s : path + "/" + s, options.separator) +
                                    ".npy"));
    }
    std::vector<fs::path> present;
    for (const auto& c : candidates)
      if (detail::is_regular_file(c)) present.push_back(c);
    if (present.empty()) {
      if (options.allow_missing) {
        report.missing.push_back(p->name());
        continue;
      }
      std::string also;
      for (std::size_t i = 1; i < candidates.size(); ++i) also += concat(" or ", candidates[i].string());
      throw io_error(candidates[0].string(),
                     concat("no such file", also.empty() ? "" : " (nor" + also + ")", ": parameter '", p->name(),
                            "' needs it (", layout == weight_layout::keras ? "keras" : "pytorch", " layout, ",
                            format.description, " of shape ", detail::shape_string(format.file_shape), ")"));
    }
    if (present.size() > 1)
      throw io_error(present[0].string(), concat("ambiguous: parameter '", p->name(), "' could come from it or from ",
                                                 present[1].string(), "; remove one"));
    const fs::path& file = present[0];

    tensor t;
    try {
      t = load_npy(file.string());
    } catch (const io_error& e) {  // add the parameter to load_npy's message
      const std::string what = e.what();
      const std::string tail = what.size() > e.file().size() + 2 ? what.substr(e.file().size() + 2) : what;
      throw io_error(e.file(), concat(tail, " (parameter '", p->name(), "')"));
    }
    const std::vector<std::size_t> given(t.shape().begin(), t.shape().end());
    if (given != format.file_shape)
      throw shape_error(p->name(),
                        concat(format.description, " of shape ", detail::shape_string(format.file_shape), " in ",
                               file.string()),
                        detail::shape_string(given));

    imported_parameter entry{p->name(), file, given, "as is"};
    tensor value;
    switch (format.how) {
      case detail::weight_format::kind::as_is:
        value = std::move(t);
        break;
      case detail::weight_format::kind::permute:
        value = xt::transpose(t, format.permutation);
        entry.transform = (format.permutation.size() == 2 ? std::string("transpose ")
                                                          : std::string("permute ")) +
                          detail::permutation_string(format.permutation);
        break;
      case detail::weight_format::kind::depthwise:
        value = detail::depthwise_to_xquant(t, p->value.shape()[2], p->value.shape()[3]);
        entry.transform = "view (C, M, KH, KW), permute (2, 3, 0, 1)";
        break;
    }
    used.insert(file.lexically_normal());
    report.loaded.push_back(std::move(entry));
    values.emplace_back(p.get(), std::move(value));
  }

  // Every file is read and checked: now write, into the existing storage (shapes match).
  for (auto& [p, value] : values) std::copy(value.data(), value.data() + value.size(), p->value.data());

  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".npy" || !detail::is_regular_file(it->path())) continue;
    if (!used.count(it->path().lexically_normal())) report.unused_files.push_back(it->path());
  }
  std::sort(report.unused_files.begin(), report.unused_files.end());
  return report;
}

}  // namespace xq::io
