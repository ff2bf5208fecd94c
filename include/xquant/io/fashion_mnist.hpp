#pragma once
/// \file fashion_mnist.hpp
/// Loads Fashion-MNIST (Zalando's 28×28 grey-scale clothing images, 10 classes) from its
/// IDX files, as NHWC float images in [0, 1] and float class ids.
///
///     auto train = xq::io::load_fashion_mnist("train");   // 60000 images
///     auto test  = xq::io::load_fashion_mnist("test");    // 10000 images
///     // train.images: (60000, 28, 28, 1), train.labels: (60000)
///
/// The directory is $XQ_FASHION_MNIST_DIR if set, else /usr/share/datasets/fashion-mnist,
/// where Debian's package `dataset-fashion-mnist` puts the files.

#include <string>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "idx.hpp"

namespace xq::io {

/// One split of Fashion-MNIST: images (N, 28, 28, 1) in [0, 1], labels (N) in 0..9.
struct fashion_mnist_split {
  tensor images;
  tensor labels;
};

/// Where Debian's `dataset-fashion-mnist` installs the files.
inline const char* fashion_mnist_debian_dir() { return "/usr/share/datasets/fashion-mnist"; }

/// $XQ_FASHION_MNIST_DIR if set and not empty, else fashion_mnist_debian_dir().
XQ_DECL std::string default_fashion_mnist_dir();

/// Loads the split "train" (60000 images) or "test" (10000) from `dir`. Throws
/// xq::argument_error for another split name, xq::io_error when a file is missing or
/// corrupt, when images are not 28×28, when the image and label counts differ, or when a
/// label is outside 0..9.
XQ_DECL fashion_mnist_split load_fashion_mnist(const std::string& split,
                                               const std::string& dir = default_fashion_mnist_dir());

}  // namespace xq::io

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/fashion_mnist.ipp"
#endif
