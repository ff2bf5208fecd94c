#pragma once
/// \file checkpoint_format.hpp
/// The xquant checkpoint file, version 2 (docs/checkpoint_format.md): what it holds
/// (`checkpoint_state`), how it is encoded (`encode_checkpoint`) and decoded, with every
/// check, into that state (`decode_checkpoint`). Nothing here knows about models:
/// checkpoint.hpp takes a model's state in and puts it back.
///
/// The encoding is CBOR (RFC 8949), written and read by nlohmann::json, not a format of
/// our own: a file is xquant's envelope (io/file_envelope.hpp, shared with the integer
/// model file) {"format": "xquant-checkpoint", "version": 2, "crc32": <CRC-32 of the
/// payload>, "payload": <byte string>} whose payload is itself
/// CBOR: parameters (quantizer state included), quantizers, batch-norm folds, optimizer.
/// Tensors are byte strings of little-endian float32 with their shape. Every problem
/// with the bytes (empty, foreign, truncated, corrupted, malformed, an unknown version)
/// is an xq::io_error that names the file; nothing is half-decoded. Version 1 files
/// (before quantizer state moved into parameters) still decode: their quantizer entries
/// carry the range, which checkpoint.hpp puts into the quantizer's parameters.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../quantizers/quantizer_config.hpp"
#include "../core/tensor.hpp"
#include "file_envelope.hpp"

namespace xq {

/// "xquant-checkpoint": the first entry of every checkpoint file.
inline constexpr const char* checkpoint_format_name = "xquant-checkpoint";
/// The format version this xquant writes (it reads this one and version 1).
inline constexpr unsigned checkpoint_format_version = 2;

/// One distinct parameter: stored once, with every layer that uses it.
struct checkpoint_parameter {
  std::string name;                ///< "block/conv/kernel"
  tensor value;
  bool trainable = true;
  std::vector<std::string> uses;   ///< layer paths that use it, in model order ("embed", "project")
};

/// One quantizer: what it is (checked on load) and its switches (restored). Its state
/// (a range, a learned scale) is among the parameters.
struct checkpoint_quantizer {
  std::string path;                         ///< "block/conv/kernel_quantizer"
  std::string kind;                         ///< its type ("fake_quantizer", "ste_sign", ...)
  std::optional<quantizer_config> config;   ///< a fake quantizer's configuration
  /// A fake quantizer's low-bit format as `describe` writes it ("" for none; written and
  /// compared as text: a format is configuration, its scales follow each tensor).
  std::string format;
  bool enabled = true;
  bool observer_enabled = true;
  bool fake_quant_enabled = true;
  std::size_t batches_seen = 0;             ///< a fake quantizer's training batches seen
  bool built = true;                        ///< a fake quantizer's state is part of the model (it was called)
  /// Version 1 only: the stored range, which version 2 keeps in the parameters.
  std::optional<vector> min, max;
};

/// A batch norm folded into the layer before it (one link, shared by both layers).
struct checkpoint_fold {
  std::vector<std::string> layers;  ///< paths of the layers that share the link (conv, batch norm)
  std::string gamma;                ///< parameter name; empty when the batch norm has no scale
  std::string moving_variance;      ///< parameter name
  float epsilon = 1e-3f;
  long freeze_after = -1;
  long training_calls = 0;
};

/// One parameter's optimizer state: a step count and named tensors ("exp_avg", ...).
struct checkpoint_slot {
  std::string parameter;
  std::size_t step = 0;
  std::vector<std::pair<std::string, tensor>> tensors;

  /// The tensor called `name`, or null.
  const tensor* find(const std::string& name) const;
};

/// An optimizer's state. `options` are written for people and tools to read; they are
/// not checked on load (a run may resume with another learning rate).
struct checkpoint_optimizer {
  std::string type;  ///< "adam", "adamw", "sgd", "bop"; "case" for an xq::case_optimizer
  std::size_t iterations = 0;
  std::vector<std::pair<std::string, double>> options;
  std::vector<checkpoint_slot> slots;  ///< one per optimizer parameter, in its order
  /// A case_optimizer's members, in order (no slots of its own); empty for the others.
  std::vector<checkpoint_optimizer> members;
};

/// A layer's random generator (a dropout's masks): its state as the layer writes it
/// (`std::mt19937`'s text form), so a resumed run draws what the uninterrupted one would.
struct checkpoint_generator {
  std::string path;   ///< the layer's path ("head/dropout")
  std::string state;
};

/// Everything a checkpoint holds.
struct checkpoint_state {
  unsigned version = checkpoint_format_version;  ///< the file's format version
  std::vector<checkpoint_parameter> parameters;  ///< the model's distinct parameters, first-use order
  std::vector<checkpoint_quantizer> quantizers;  ///< every fake_quantizer, model order
  std::vector<checkpoint_fold> batch_norm_folds;
  std::optional<checkpoint_optimizer> optimizer;
  /// Every layer's generator, model order. Absent in files written before generators
  /// were saved (they then keep their state on load).
  std::optional<std::vector<checkpoint_generator>> generators;
};

namespace detail::ckpt {

/// The checkpoint's format in xquant's file envelope (io/file_envelope.hpp): name, versions.
XQ_DECL const io::file_format& checkpoint_file_format();

/// The 26 bytes every checkpoint starts with: a CBOR map of 4 entries (a4), the text
/// "format" (66 ...) and the text "xquant-checkpoint" (71 ...).
XQ_DECL const std::string& checkpoint_magic();

/// Whether this machine stores integers little-endian.
XQ_DECL bool host_is_little_endian() noexcept;

/// zlib's CRC-32 (the ISO-HDLC / PNG / gzip one) of `n` bytes.
XQ_DECL std::uint32_t checkpoint_crc32(const std::uint8_t* data, std::size_t n);

/// "a4 66 ...": `n` bytes in hex, for messages.
XQ_DECL std::string hex_bytes(const std::uint8_t* data, std::size_t n);

/// The payload: a CBOR map (docs/checkpoint_format.md, "Payload").
XQ_DECL std::vector<std::uint8_t> encode_payload(const checkpoint_state& s);

/// The file around a payload: magic, version, CRC-32, payload.
XQ_DECL std::vector<std::uint8_t> wrap_checkpoint_payload(std::vector<std::uint8_t> payload);

/// The payload of a checkpoint file's bytes, after checking magic, structure, version
/// and CRC-32 (io_error naming `source` otherwise); `file_version` gets the file's version.
XQ_DECL std::vector<std::uint8_t> open_checkpoint_envelope(const std::uint8_t* data, std::size_t size,
                                                           const std::string& source, unsigned& file_version);

/// The state in a payload of format `version` (the CRC already checked).
XQ_DECL checkpoint_state read_checkpoint_payload(const std::vector<std::uint8_t>& payload,
                                                 const std::string& source, unsigned version);

}  // namespace detail::ckpt

/// The bytes of a checkpoint file holding `state` (docs/checkpoint_format.md).
XQ_DECL std::vector<std::uint8_t> encode_checkpoint(const checkpoint_state& state);

/// Decodes a checkpoint file's bytes (format version 2, or 1). Throws io_error naming
/// `source` (a file name, for messages) when they are empty, not a checkpoint, of an
/// unknown format version, truncated, corrupted (CRC-32) or malformed.
XQ_DECL checkpoint_state decode_checkpoint(const std::uint8_t* data, std::size_t size,
                                           const std::string& source = "checkpoint");

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/checkpoint_format.ipp"
#endif
