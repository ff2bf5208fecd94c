#pragma once
/// \file all.ipp
/// The io room's compiled code, for <xquant/src.hpp>: every .ipp of io/impl/.

#include "atomic_file.ipp"
#include "calibration_log.ipp"
#include "checkpoint.ipp"
#include "cbor_codec.ipp"
#include "checkpoint_format.ipp"
#include "fashion_mnist.ipp"
#include "file_envelope.ipp"
#include "idx.ipp"
#include "npy.ipp"
#include "summary_writer.ipp"
#include "tensorboard.ipp"
#include "weight_import.ipp"
