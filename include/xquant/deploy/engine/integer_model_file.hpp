#pragma once
/// \file integer_model_file.hpp
/// Saving and loading a lowered `integer_model`: `save_integer_model(engine, path)` writes
/// it atomically (io/atomic_file.hpp: a crash or a full disk never leaves a half file), and
/// `load_integer_model(path)` reads it back or throws — nothing is half-loaded.
///
/// The file is xquant's envelope (io/file_envelope.hpp, shared with checkpoints):
/// {"format": "xquant-integer-model", "version": 2, "crc32", "payload"}, the payload a CBOR
/// map of the model: the writer, its input shape, requantization, tensor count, input and
/// output tensors, ops (each a map of its kind, path, inputs and output, then the fields
/// the op writes itself: lowered_op::encode; integers as byte strings of little-endian
/// int16/int32/uint64, floats as float32, a quantization grid by io/'s grid codec), and
/// parity points. Files of version 1 (before the engine's ops saved themselves) are refused
/// with that said.
///
/// Loading checks the file as a whole before it returns a model, and refuses anything else
/// with an io_error naming the file and the place:
///  - the envelope, the CRC-32, CBOR nested at most 32 deep (the payload's too);
///  - every field's type and range as its op reads it (its decoder, registered by kind:
///    op_registry.hpp), byte strings of exactly the counts the op's shape asks for, shapes
///    bounded before anything is allocated (a zero-size axis counted as 1);
///  - the model as integer_model::check does for a batch of one: each tensor computed once
///    from tensors computed before it, every op's rule against the kinds and shapes it reads
///    from input_shape forward (rank, channels, kinds, weights against channel counts,
///    windows, axes, int32 sums), and engine_limits (ops, elements and multiply-adds per
///    sample). docs/guarantees.md states what this guarantees.

#include <cstdint>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../io/file_envelope.hpp"
#include "integer_model.hpp"

namespace xq::deploy {

/// "xquant-integer-model".
inline constexpr const char* integer_model_format_name = "xquant-integer-model";
/// The version this xquant writes and reads (1: before the engine became a runtime).
inline constexpr unsigned integer_model_format_version = 2;

/// The integer model's format in xquant's file envelope.
XQ_DECL const io::file_format& integer_model_file_format();

/// The file's bytes.
XQ_DECL std::vector<std::uint8_t> encode_integer_model(const integer_model& m);
/// The model in a file's bytes, checked as a whole (see the file comment); io_error naming
/// `source` for anything wrong.
XQ_DECL integer_model decode_integer_model(const std::uint8_t* data, std::size_t size,
                                           const std::string& source = "integer model");

/// Writes `m` to `path` atomically.
XQ_DECL void save_integer_model(const integer_model& m, const std::string& path);
/// Reads a model `save_integer_model` wrote; io_error naming the file otherwise.
XQ_DECL integer_model load_integer_model(const std::string& path);

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/integer_model_file.ipp"
#endif
