#pragma once
/// \file io.hpp
/// Every file xquant reads or writes, in one include: IDX (the MNIST format) and the
/// Fashion-MNIST loader, NumPy `.npy`, weight import from Keras and PyTorch exports,
/// checkpoints, and TensorBoard event files with fit's TensorBoard callback (calibration's
/// log: io/calibration_log.hpp). Not part of <xquant/xquant.hpp>: a program that builds and trains a model
/// from tensors it already has pays nothing for file formats (in header-only mode,
/// checkpoints bring in nlohmann::json). Each format also has its own header under io/.
/// Deployment files (ONNX, integer models) are under deploy/.

#include "io/checkpoint.hpp"
#include "io/fashion_mnist.hpp"
#include "io/idx.hpp"
#include "io/npy.hpp"
#include "io/summary_writer.hpp"
#include "io/tensorboard.hpp"
#include "io/weight_import.hpp"
