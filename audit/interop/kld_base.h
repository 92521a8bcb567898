#pragma once
// ============================================================================
// llama.cpp's KL-divergence base file (`llama-perplexity --kl-divergence-base`),
// read and written byte for byte as tools/perplexity/perplexity.cpp does
// (docs/interop.md, "llama.cpp"). Little endian:
//   char[8]  "_logits_"
//   uint32   n_ctx
//   int32    n_vocab
//   int32    n_chunk
//   int32    tokens[n_chunk * n_ctx]     the tokenized corpus (BOS first), chunk c =
//                                        tokens[c n_ctx, (c+1) n_ctx); the BOS that
//                                        replaces each chunk's first token is NOT stored
//   then per chunk, per scored position j in [n_ctx/2, n_ctx-1):
//   uint16   record[nv], nv = 2 ((n_vocab + 1) / 2) + 4:
//              float32 scale, float32 min_log_prob (the first 4 uint16),
//              uint16 q[n_vocab], zero padding to nv
//   ln p(k) = scale * q[k] + min_log_prob, the logits' range clamped to 16 nats
//   below the maximum (q = 0 below it); scale = range / 65535.
// Position j's record is the distribution predicting chunk token j + 1.
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

#include "audit/interop/logit_stats.h"

namespace oracle {

struct KldBase {
  uint32_t n_ctx = 0;
  int32_t n_vocab = 0;
  int32_t n_chunk = 0;
  std::vector<int32_t> tokens;    // (n_chunk * n_ctx)
  std::vector<uint16_t> records;  // (n_chunk, scored_per_chunk(), nv())

  int first_scored() const { return (int)n_ctx / 2; }
  int scored_per_chunk() const { return (int)n_ctx - 1 - (int)n_ctx / 2; }
  int nv() const { return 2 * ((n_vocab + 1) / 2) + 4; }
  // Record of chunk c, scored position j (first_scored() <= j < n_ctx - 1).
  const uint16_t* record(int chunk, int j) const;
  uint16_t* record(int chunk, int j);
};

inline constexpr uint64_t kKldBaseHeaderBytes = 8 + 4 + 4 + 4;

// Strict: magic, sizes, the exact file length and every token id in range;
// InputError(path, field, ...) otherwise.
KldBase read_kld_base(const std::string& path);
// Atomic (temp + rename).
void write_kld_base(const std::string& path, const KldBase& base);
// The file's bytes (header, tokens, records) as write_kld_base writes them.
std::string kld_base_bytes(const KldBase& base);

// llama.cpp's log_softmax(n_vocab, logits, log_prob, tok) writer: one record (nv uint16).
void encode_kld_record(const float* logits, int n_vocab, uint16_t* record);
// ln p(k) = scale * q[k] + min_log_prob in float32, (n_vocab).
std::vector<float> decode_kld_record(const uint16_t* record, int n_vocab);
// ---- the oracle's sidecar (docs/interop.md "KLD base files") ---------------------------------
// llama.cpp's format has no room for our metadata, so a base file the oracle writes
// gets a JSON sidecar beside it, F + ".oracle.json": {"format": "oracle-kld-base-sidecar",
// "numerics_version", "file" (F's name), "n_ctx", "n_vocab", "n_chunk"}. F itself stays
// byte for byte llama.cpp's.
std::string kld_sidecar_path(const std::string& base_path);
// Atomic; call after the base file is written.
void write_kld_sidecar(const std::string& base_path, const KldBase& base);
// The sidecar of `base_path`, when there is one, must carry this oracle's numerics_version
// (InputError(sidecar, "numerics_version", ...) otherwise, saying how to rebuild: `regenerate`).
// `ours`: the base file can only be the oracle's (a --reference-cache), so a missing sidecar
// reads as a record without the field (numerics version 1); otherwise a base file without a
// sidecar is llama.cpp's and is not checked. Returns whether a sidecar was read.
bool check_kld_sidecar(const std::string& base_path, bool ours, const std::string& regenerate);

// llama.cpp's nearest_int: round to nearest, ties to even, via 1.5 * 2^23.
int kld_nearest_int(float x);

// The base as reference, the candidate's float32 logits: llama-perplexity's
// statistics (tokens with ln p_base <= -16 are left out of the KLD sum; the
// base's top is its first maximum), in float64.
TokenRecord compare_base_logits(const uint16_t* base_record, const float* cand, int n_vocab, int next);
// Our float32 reference logits against a base file's record as the candidate.
TokenRecord compare_logits_base(const float* ref, const uint16_t* cand_record, int n_vocab, int next);
// Two base files' records: the reference side as compare_base_logits reads it (cut at
// ln p <= -16, first maximum), the candidate side as compare_logits_base reads it (the
// decoded log-probabilities as they are, first maximum).
TokenRecord compare_base_records(const uint16_t* ref_record, const uint16_t* cand_record, int n_vocab, int next);

}  // namespace oracle
