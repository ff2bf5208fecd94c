#pragma once
/// \file integer_model_file.hpp
/// Saving and loading a lowered `integer_model`: `save_integer_model(engine, path)` writes
/// it atomically (io/atomic_file.hpp: a crash or a full disk never leaves a half file), and
/// `load_integer_model(path)` reads it back or throws — nothing is half-loaded.
///
/// The file is CBOR (nlohmann::json, as checkpoints are): a map {"format":
/// "xquant-integer-model", "version": 1, "crc32": <CRC-32 of the payload>, "payload":
/// <bytes>}, the payload a CBOR map of the model: its input shape, requantization, tensor
/// count, ops (each a map naming its kind, inputs, output and fields; integers as byte
/// strings of little-endian int16/int32/uint64, floats as float32), and parity points.
/// Loading checks the envelope, the CRC, every field's type, every tensor index, that each
/// op's inputs are computed before it, and each op's weights against its shape; any problem
/// is an io_error naming the file and the field.

#include <cstdint>
#include <string>
#include <vector>

#include "../config.hpp"
#include "integer_model.hpp"

namespace xq::deploy {

/// "xquant-integer-model".
inline constexpr const char* integer_model_format_name = "xquant-integer-model";
inline constexpr unsigned integer_model_format_version = 1;

/// The file's bytes.
XQ_DECL std::vector<std::uint8_t> encode_integer_model(const integer_model& m);
/// The model in a file's bytes; io_error naming `source` for anything wrong.
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
