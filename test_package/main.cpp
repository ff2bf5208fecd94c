// test_package: include an installed xquant, call one operator, one GEMM (CBLAS: proves
// that xquant::xquant links the BLAS) and read one gzip-compressed IDX file (zlib: proves
// it links zlib), check the results. Exits non-zero on failure.
#include <xquant/xquant.hpp>
#include <xquant/io/idx.hpp>
#include <xquant/kernels/gemm.hpp>

#include <xtensor/xarray.hpp>
#include <xtensor/xio.hpp>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>

namespace {

int fail(const char* what) {
  std::cerr << "test_package: " << what << '\n';
  return 1;
}

}  // namespace

int main() {
  xt::xarray<float> y = xq::tf::fake_quant_with_min_max_vars(
      xt::xarray<float>{-1.f, -0.5f, 0.f, 0.3f}, -1.f, 1.f);
  std::cout << "xq::tf::fake_quant_with_min_max_vars({-1, -0.5, 0, 0.3}, -1, 1) = " << y
            << '\n';
  if (y.size() != 4 || y(2) != 0.f) return fail("unexpected fake_quant result");

  // [1 2 3; 4 5 6] · [1 0; 0 1; 1 1] = [4 5; 10 11]
  const float a[6] = {1, 2, 3, 4, 5, 6};
  const float b[6] = {1, 0, 0, 1, 1, 1};
  float c[4] = {0, 0, 0, 0};
  xq::kernels::gemm(false, false, 2, 2, 3, 1.f, a, 3, b, 2, 0.f, c, 2);
  std::cout << "xq::kernels::gemm: [" << c[0] << ' ' << c[1] << "; " << c[2] << ' ' << c[3] << "]\n";
  if (c[0] != 4 || c[1] != 5 || c[2] != 10 || c[3] != 11) return fail("unexpected gemm result");

  // A 2×3 ubyte IDX file, gzip-compressed with zlib's gzwrite, read back by xquant.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("xquant_test_package_" + std::to_string(std::random_device{}()) + ".idx.gz"))
                               .string();
  const unsigned char idx[] = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 10, 20, 30, 40, 50, 60};
  gzFile gz = gzopen(path.c_str(), "wb");
  if (!gz || gzwrite(gz, idx, sizeof idx) != static_cast<int>(sizeof idx) || gzclose(gz) != Z_OK)
    return fail("cannot write the gzip test file");
  const xq::io::idx_array read = xq::io::read_idx(path);
  std::remove(path.c_str());
  std::cout << "xq::io::read_idx (gzip, zlib " << zlibVersion() << "): shape (" << read.shape.at(0)
            << ", " << read.shape.at(1) << "), last value " << int(read.bytes.at(5)) << '\n';
  if (read.shape.size() != 2 || read.shape[1] != 3 || read.bytes.at(5) != 60)
    return fail("unexpected read_idx result");

  std::cout << "test_package: OK\n";
  return 0;
}
