#pragma once
/// \file weight_import.ipp
/// The weight import's code that does not depend on the model's type
/// (io/weight_import.hpp).

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

#include "../npy.hpp"
#include "../weight_import.hpp"

namespace xq::io::detail {

XQ_DECL std::string replace_separator(std::string s, char separator) {
  std::replace(s.begin(), s.end(), '/', separator);
  return s;
}

XQ_DECL std::string layer_path_of(const parameter& p) {
  const std::string& n = p.name();
  const std::string& s = p.short_name();
  if (n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0 && n[n.size() - s.size() - 1] == '/')
    return n.substr(0, n.size() - s.size() - 1);
  return "";
}

XQ_DECL std::string permutation_string(const std::vector<std::size_t>& perm) {
  std::string s = "(";
  for (std::size_t i = 0; i < perm.size(); ++i) s += (i ? ", " : "") + std::to_string(perm[i]);
  return s + ")";
}

XQ_DECL weight_format format_of(const parameter& p, weight_layout layout) {
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

XQ_DECL tensor depthwise_to_xquant(const tensor& t, std::size_t channels, std::size_t multiplier) {
  const std::size_t kh = t.shape()[2], kw = t.shape()[3];
  tensor grouped = t;
  grouped.reshape({channels, multiplier, kh, kw});
  tensor out = xt::transpose(grouped, {2, 3, 0, 1});
  return out;
}

XQ_DECL bool is_regular_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

XQ_DECL void check_weight_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw io_error(dir.string(), "not a directory (the weight files' directory)");
}

XQ_DECL import_report import_parameters(const std::vector<parameter_ptr>& params, const std::filesystem::path& dir,
                                        weight_layout layout, const import_options& options) {
  namespace fs = std::filesystem;
  const char* where = "xq::io::import_weights";
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

}  // namespace xq::io::detail
