#pragma once
/// \file fashion_mnist.ipp
/// The Fashion-MNIST loader (io/fashion_mnist.hpp).

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "../fashion_mnist.hpp"

namespace xq::io {

XQ_DECL std::string default_fashion_mnist_dir() {
  const char* env = std::getenv("XQ_FASHION_MNIST_DIR");
  return env && *env ? std::string(env) : std::string(fashion_mnist_debian_dir());
}

namespace detail {

using xq::detail::concat;

// The file `stem` (e.g. "train-images-idx3-ubyte") in `dir`: gzip-compressed as
// distributed, or already decompressed.
XQ_DECL std::string fashion_mnist_file(const std::string& dir, const std::string& stem) {
  const std::filesystem::path base(dir);
  const std::string gz = (base / (stem + ".gz")).string();
  const std::string raw = (base / stem).string();
  std::error_code ec;
  if (std::filesystem::exists(gz, ec)) return gz;
  if (std::filesystem::exists(raw, ec)) return raw;
  throw io_error(gz, concat("not found (nor ", stem, "); Debian's package dataset-fashion-mnist ",
                            "provides it in ", fashion_mnist_debian_dir(),
                            " (apt-get install dataset-fashion-mnist), or set XQ_FASHION_MNIST_DIR "
                            "to a directory that holds it"));
}

}  // namespace detail

XQ_DECL fashion_mnist_split load_fashion_mnist(const std::string& split, const std::string& dir) {
  using detail::concat;
  if (split != "train" && split != "test")
    throw argument_error("xq::io::load_fashion_mnist", "split \"train\" or \"test\"", concat('"', split, '"'));
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string images_path = detail::fashion_mnist_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = detail::fashion_mnist_file(dir, prefix + "-labels-idx1-ubyte");

  fashion_mnist_split out;
  out.images = read_idx_images(images_path);
  const auto& s = out.images.shape();
  if (s[1] != 28 || s[2] != 28 || s[3] != 1)
    throw io_error(images_path, concat("expected Fashion-MNIST images of shape (N, 28, 28), the file holds (",
                                       s[0], ", ", s[1], ", ", s[2], s[3] == 1 ? "" : concat(", ", s[3]), ")"));
  out.labels = read_idx_labels(labels_path);
  if (out.labels.size() != s[0])
    throw io_error(labels_path, concat("holds ", out.labels.size(), " labels, but ", images_path, " holds ",
                                       s[0], " images"));
  const float* y = out.labels.data();
  for (std::size_t i = 0; i < out.labels.size(); ++i)
    if (!(y[i] >= 0.f && y[i] <= 9.f))
      throw io_error(labels_path, concat("label ", y[i], " at index ", i, " is outside the classes 0..9"));
  return out;
}

}  // namespace xq::io
