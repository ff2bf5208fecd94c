#pragma once
/// \file scatter_plot.hpp
/// A scatter plot as one self-contained SVG document (no script, no external file): what a
/// Pareto table of budgets against accuracy looks like in a browser. Each series has its
/// colour and marker, optionally joined by a line in the order given; every point carries its
/// label as a tooltip (an SVG <title>) and, where asked, as text beside it. Axes take their
/// range from the data with a margin, ticks at 1, 2 or 5 times a power of ten.
///
/// \code
///   xq::plot_series searched{"search (HAWQ)", {{4.5, 0.41, "4.5 bits"}, {6.0, 0.40, "6 bits"}}, true};
///   xq::plot_series uniform{"uniform", {{4.25, 0.45, "mxfp4"}, {8.0, 0.40, "int8"}}};
///   const std::string svg = xq::scatter_plot_svg({searched, uniform}, {"Loss after QAT", "bits per weight", "test loss"});
/// \endcode

#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"  // argument_error

namespace xq {

struct plot_point {
  double x = 0, y = 0;
  std::string label{};
};

struct plot_series {
  std::string name;
  std::vector<plot_point> points;
  bool joined = false;        ///< a line through the points, in order
  bool label_points = false;  ///< each point's label written beside it
};

struct plot_options {
  std::string title, x_label, y_label;
  int width = 760, height = 480;
};

/// The SVG document. Non-finite points are left out (and said in a note under the plot);
/// argument_error for a size under 200 x 150.
XQ_DECL std::string scatter_plot_svg(const std::vector<plot_series>& series, const plot_options& options);

/// `text` with &, <, >, " and ' escaped for XML.
XQ_DECL std::string xml_escape(const std::string& text);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/scatter_plot.ipp"
#endif
