// The non-template half of deployment.hpp: files and onnxruntime, compiled once for the
// examples that use it.

#include "deployment.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <xquant/deploy/onnx_model.hpp>
#include <xquant/io/npy.hpp>

#ifndef XQ_ONNX_CHECK
#define XQ_ONNX_CHECK "tools/onnx_check.py"
#endif

namespace fashion {

namespace {
/// mkdir -p (POSIX).
void make_directories(const std::string& path) {
  for (std::size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0755);
}
}  // namespace

void write_and_run(const xq::onnx::model& m, const xq::deploy::integer_model& engine, const xq::dataset& test,
                   const run_options& s, const std::string& name, deployment_result& r) {
  make_directories(s.export_dir);
  const std::string base = s.export_dir + "/" + name;
  r.onnx_file = base + ".onnx";
  xq::onnx::save(m, r.onnx_file);
  xq::io::save_npy(base + ".input.npy", test.inputs);
  xq::io::save_npy(base + ".labels.npy", test.targets);
  xq::io::save_npy(base + ".engine.npy", engine.run(test.inputs));
  std::cout << "onnx: wrote " << r.onnx_file << "\n";
  if (s.onnx_python.empty()) return;
  const std::string cmd = "'" + s.onnx_python + "' '" XQ_ONNX_CHECK "' '" + r.onnx_file + "' --input input='" + base +
                          ".input.npy' --expected output='" + base + ".engine.npy' --labels output='" + base +
                          ".labels.npy' --top1 --min-share 0 --paths optimized";
  // The checker's table goes to our output; its summary line gives the two numbers.
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    std::cout << "onnx: cannot run " << s.onnx_python << "\n";
    return;
  }
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    std::cout << line;
    double accuracy = 0, top1 = 0;
    if (std::sscanf(line, "onnx_check summary: path=optimized output=output accuracy=%lf top1=%lf", &accuracy,
                    &top1) == 2) {
      r.onnxruntime_accuracy = accuracy;
      r.onnxruntime_same_top1 = top1;
    }
  }
  if (pclose(p) != 0) std::cout << "onnx: the onnxruntime check failed (see above)\n";
}

}  // namespace fashion
