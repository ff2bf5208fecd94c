// The scatter plot's SVG (summary/scatter_plot.hpp): names that need escaping come out
// escaped, every finite point is drawn with its tooltip, a non-finite one is left out and
// said, the tags balance, and a size too small is refused. (A CTest test parses the
// layer_sensitivity example's plot with Python's XML parser: example_layer_sensitivity_plot_is_xml.)
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <xquant/summary/scatter_plot.hpp>

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("scatter_plot_svg: escaped names, one marker per finite point, balanced tags", "[plot]") {
  const xq::plot_series searched{"search <HAWQ> & knapsack", {{4.25, 0.45, "4.25 bits"}, {6.0, 0.40, "6 \"bits\""}}, true};
  const xq::plot_series uniform{"uniform 'formats'",
                                {{4.25, 0.47, "mxfp4"}, {8.0, 0.39, "int8"}, {NAN, 0.5, "lost"}}, false, true};
  xq::plot_options o;
  o.title = "loss < 1 & bits";
  o.x_label = "bits";
  o.y_label = "loss";
  const std::string svg = xq::scatter_plot_svg({searched, uniform}, o);
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  CHECK(svg.find("search &lt;HAWQ&gt; &amp; knapsack") != std::string::npos);
  CHECK(svg.find("uniform &apos;formats&apos;") != std::string::npos);
  CHECK(svg.find("loss &lt; 1 &amp; bits") != std::string::npos);
  CHECK(svg.find("<HAWQ>") == std::string::npos);
  CHECK(count(svg, "<circle ") == 2);          // the first series' markers
  CHECK(count(svg, "</title></rect>") == 2);   // the second's (the NaN point left out)
  CHECK(svg.find("1 point(s) not finite") != std::string::npos);
  CHECK(count(svg, "<polyline") == 1);
  CHECK(svg.find(">mxfp4</text>") != std::string::npos);  // labelled points
  CHECK(count(svg, "<g ") == count(svg, "</g>"));
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK(count(svg, "<svg") == 1);
  CHECK(svg.find("</svg>") == svg.size() - 7);
  CHECK(xq::xml_escape(std::string("a\x01") + "b") == "a b");
  o.width = 100;
  CHECK_THROWS_AS(xq::scatter_plot_svg({searched}, o), xq::argument_error);
}
