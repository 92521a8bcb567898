#pragma once
// ============================================================================
// Certification through llama.cpp's KL-divergence base file (kld_base.h,
// docs/interop.md "llama.cpp", docs/certify.md "KLD base files"). The chunks
// are exactly certify()'s "llamacpp" protocol: the file's tokens are the
// corpus, chunk c's first token is replaced by BOS, positions [n/2, n-1) scored.
//   write     — the reference's records, so llama-perplexity scores any build
//               against the oracle (`--kl-divergence-base FILE --kl-divergence`);
//   reference — a base file (ours or llama.cpp's) is the reference, our
//               candidate is scored against it (llama-perplexity's formulas);
//   candidate — a base file is the candidate (e.g. llama.cpp's Q4_0 logits),
//               scored against our float32 reference;
//   cache     — `--reference-cache`: the reference's base file, written once and
//               reused for every candidate (its header and tokens must match).
// ============================================================================
#include <string>

#include "audit/interop/kld_base.h"
#include "audit/certify/certify.h"

namespace oracle {

// Header and tokens of the base `reference` writes for `corpus` (records empty):
// the corpus tokenized with BOS, ⌊N / ctx⌋ chunks (at most o.max_chunks).
// InputError("corpus", "tokens", ...) when shorter than one chunk.
KldBase kld_base_layout(const Model& reference, const std::string& corpus, const CertifyOptions& o);
// Runs the reference on every chunk of `layout` and fills its records.
KldBase make_kld_base(const Model& reference, KldBase layout, const CertifyOptions& o);

// InputError(path, field, ...) unless `base` fits `model` (vocabulary, context).
void require_base_fits(const KldBase& base, const Model& model, const std::string& path);

// `base` as the reference, `candidate` scored against it; greedy agreement is
// computed only when `reference` is given (o.greedy_prompts otherwise ignored).
CertifyResult certify_against_base(const KldBase& base, const Model& candidate, const CertifyOptions& o,
                                   const Model* reference = nullptr);
// Our reference against `base` as the candidate (no greedy agreement).
CertifyResult certify_base_candidate(const Model& reference, const KldBase& base, const CertifyOptions& o);

// Both sides from base files (--reference-kld-base with --candidate-kld-base): only the
// statistics, no model. InputError naming the candidate file's field unless both files
// hold the same n_ctx, n_vocab, chunks and tokens.
CertifyResult certify_base_base(const KldBase& reference, const KldBase& candidate, const std::string& candidate_path,
                                const CertifyOptions& o);

// --reference-cache: reads `path` when it exists (InputError naming the field
// that differs from what `reference` would write for this corpus), else makes
// the base and writes it atomically. `reused` tells which happened.
KldBase reference_cache(const std::string& path, const Model& reference, const std::string& corpus,
                        const CertifyOptions& o, bool& reused);

}  // namespace oracle
