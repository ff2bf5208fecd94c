#pragma once
/// \file file_envelope.hpp
/// The envelope of xquant's own files — checkpoints (checkpoint_format.hpp) and lowered
/// integer models (deploy/engine/integer_model_file.hpp): a CBOR map of four entries, in
/// this order,
///
///     {"format": <name>, "version": <n>, "crc32": <CRC-32 of the payload>, "payload": <bytes>}
///
/// so that every file of a format starts with the same bytes (its magic: a4 66 "format"
/// and the name as CBOR text), a foreign file is refused by its first bytes, and a payload
/// damaged anywhere is refused by its CRC-32 (zlib's, the ISO-HDLC / PNG / gzip one) before
/// anything reads it. The CBOR is read with its nesting bounded (32 levels: the parser
/// recurses once per level), the payload's too (io/detail/cbor_codec.hpp). Every problem is
/// an io_error naming the file: empty, foreign, truncated, corrupted, of a version this
/// xquant does not read.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../config.hpp"

namespace xq::io {

/// One file format in the envelope.
struct file_format {
  const char* name;          ///< the "format" entry: "xquant-checkpoint"
  const char* what;          ///< what messages call a file of it: "checkpoint"
  unsigned version;          ///< the version this xquant writes
  unsigned oldest;           ///< the oldest version it reads
  /// Said after the version of a file older than `oldest` ("lower the model again").
  const char* older = "";
  /// Also recognize a map whose "format" entry is not first (older files of a format
  /// written before the envelope was shared), to name their version rather than call
  /// them foreign.
  bool any_key_order = false;
};

/// The magic of `f`: the bytes every file of it starts with.
XQ_DECL std::string envelope_magic(const file_format& f);

/// zlib's CRC-32 of `n` bytes.
XQ_DECL std::uint32_t crc32(const std::uint8_t* data, std::size_t n);

/// "a4 66 ...": `n` bytes in hex, for messages.
XQ_DECL std::string hex_bytes(const std::uint8_t* data, std::size_t n);

/// The file around `payload`: format, version (f.version), CRC-32, payload.
XQ_DECL std::vector<std::uint8_t> wrap_envelope(const file_format& f, std::vector<std::uint8_t> payload);

/// The payload of a file's bytes, after checking the magic, the structure, the version
/// (f.oldest to f.version) and the CRC-32; `version` gets the file's. io_error naming
/// `source` otherwise.
XQ_DECL std::vector<std::uint8_t> open_envelope(const file_format& f, const std::uint8_t* data, std::size_t size,
                                                const std::string& source, unsigned& version);

}  // namespace xq::io

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/file_envelope.ipp"
#endif
