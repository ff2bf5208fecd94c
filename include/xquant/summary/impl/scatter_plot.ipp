#pragma once
/// \file scatter_plot.ipp
/// scatter_plot's code (summary/scatter_plot.hpp).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "../scatter_plot.hpp"
#include "../../core/error.hpp"

namespace xq {

XQ_DECL std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab and newline are not XML 1.0 characters.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';
        else out += c;
    }
  }
  return out;
}

namespace detail {

/// A number as an axis label prints it: no trailing zeros, at most 4 significant digits.
inline std::string tick_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

/// A tick step of 1, 2 or 5 times a power of ten giving about `count` ticks over `span`.
inline double tick_step(double span, int count) {
  const double raw = span / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0})
    if (raw <= m * power) return m * power;
  return 10.0 * power;
}

struct axis_range {
  double low = 0, high = 1;
};

/// The data's range with 6% margins (a unit around a single value).
inline axis_range padded(double low, double high) {
  if (!(high > low)) {
    const double pad = std::abs(low) > 0 ? std::abs(low) * 0.05 : 0.5;
    return {low - pad, high + pad};
  }
  const double pad = (high - low) * 0.06;
  return {low - pad, high + pad};
}

}  // namespace detail

XQ_DECL std::string scatter_plot_svg(const std::vector<plot_series>& series, const plot_options& o) {
  if (o.width < 200 || o.height < 150)
    throw argument_error("xq::scatter_plot_svg", "a plot of at least 200 x 150",
                         detail::concat(o.width, " x ", o.height));
  static const char* const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  std::size_t dropped = 0;
  for (const plot_series& s : series)
    for (const plot_point& p : s.points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y)) {
        ++dropped;
        continue;
      }
      x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
    }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  const detail::axis_range xr = detail::padded(x0, x1), yr = detail::padded(y0, y1);
  // The plotting area: room for the title, the axis labels and the legend on the right.
  const double left = 70, top = 40, right = o.width - 190.0, bottom = o.height - 55.0;
  const auto px = [&](double x) { return left + (x - xr.low) / (xr.high - xr.low) * (right - left); };
  const auto py = [&](double y) { return bottom - (y - yr.low) / (yr.high - yr.low) * (bottom - top); };

  std::ostringstream svg;
  svg.precision(6);
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width << "\" height=\"" << o.height
      << "\" viewBox=\"0 0 " << o.width << ' ' << o.height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<title>" << xml_escape(o.title) << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << (left + right) / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
      << xml_escape(o.title) << "</text>\n";
  // Grid and ticks.
  svg << "<g stroke=\"#e5e5e5\">\n";
  const double xs = detail::tick_step(xr.high - xr.low, 8), ys = detail::tick_step(yr.high - yr.low, 6);
  std::ostringstream labels;
  labels.precision(6);
  for (double t = std::ceil(xr.low / xs) * xs; t <= xr.high + 1e-9 * xs; t += xs) {
    svg << "<line x1=\"" << px(t) << "\" y1=\"" << top << "\" x2=\"" << px(t) << "\" y2=\"" << bottom << "\"/>\n";
    labels << "<text x=\"" << px(t) << "\" y=\"" << bottom + 16 << "\" text-anchor=\"middle\">" << detail::tick_text(t)
           << "</text>\n";
  }
  for (double t = std::ceil(yr.low / ys) * ys; t <= yr.high + 1e-9 * ys; t += ys) {
    svg << "<line x1=\"" << left << "\" y1=\"" << py(t) << "\" x2=\"" << right << "\" y2=\"" << py(t) << "\"/>\n";
    labels << "<text x=\"" << left - 6 << "\" y=\"" << py(t) + 4 << "\" text-anchor=\"end\">" << detail::tick_text(t)
           << "</text>\n";
  }
  svg << "</g>\n" << labels.str()
      << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << right - left << "\" height=\"" << bottom - top
      << "\" fill=\"none\" stroke=\"#333\"/>\n"
      << "<text x=\"" << (left + right) / 2 << "\" y=\"" << o.height - 18 << "\" text-anchor=\"middle\">"
      << xml_escape(o.x_label) << "</text>\n"
      << "<text transform=\"translate(18 " << (top + bottom) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << xml_escape(o.y_label) << "</text>\n";
  // The series, each with its legend entry.
  for (std::size_t k = 0; k < series.size(); ++k) {
    const plot_series& s = series[k];
    const char* colour = colours[k % (sizeof colours / sizeof *colours)];
    svg << "<g fill=\"" << colour << "\" stroke=\"" << colour << "\">\n";
    if (s.joined) {
      svg << "<polyline fill=\"none\" stroke-width=\"1.5\" points=\"";
      for (const plot_point& p : s.points)
        if (std::isfinite(p.x) && std::isfinite(p.y)) svg << px(p.x) << ',' << py(p.y) << ' ';
      svg << "\"/>\n";
    }
    for (const plot_point& p : s.points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
      const std::string tip = xml_escape(s.name + (p.label.empty() ? "" : ": " + p.label) + " (" +
                                         detail::tick_text(p.x) + ", " + detail::tick_text(p.y) + ")");
      if (k % 2 == 0)
        svg << "<circle cx=\"" << px(p.x) << "\" cy=\"" << py(p.y) << "\" r=\"4.5\"><title>" << tip << "</title></circle>\n";
      else
        svg << "<rect x=\"" << px(p.x) - 4 << "\" y=\"" << py(p.y) - 4 << "\" width=\"8\" height=\"8\"><title>" << tip
            << "</title></rect>\n";
      if (s.label_points && !p.label.empty())
        svg << "<text x=\"" << px(p.x) + 7 << "\" y=\"" << py(p.y) - 6 << "\" stroke=\"none\" font-size=\"10\">"
            << xml_escape(p.label) << "</text>\n";
    }
    const double ly = top + 8 + 20.0 * double(k);
    svg << "<rect x=\"" << right + 16 << "\" y=\"" << ly - 5 << "\" width=\"10\" height=\"10\"/>"
        << "<text x=\"" << right + 32 << "\" y=\"" << ly + 4 << "\" stroke=\"none\" fill=\"#222\">" << xml_escape(s.name)
        << "</text>\n</g>\n";
  }
  if (dropped)
    svg << "<text x=\"" << left << "\" y=\"" << o.height - 4 << "\" font-size=\"10\" fill=\"#555\">" << dropped
        << " point(s) not finite, not drawn</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace xq
