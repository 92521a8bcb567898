// The KLD-base modes of certify as a library call (certify_kld_modes.h).
#include "audit/certify/certify_kld_modes.h"

#include "base/errors.h"
#include "base/sha256.h"

namespace oracle {

bool kld_mode_requested(const KldModeRequest& k) {
  return !k.write_base.empty() || !k.reference_base.empty() || !k.candidate_base.empty() || !k.cache.empty();
}

namespace {

void need(bool ok, const std::string& option, const std::string& why) {
  require_input(ok, option, "option", why);
}

Model load_at(const std::string& path, int ctx) {
  LoadOptions lo;
  lo.context_length_override = ctx;  // GGUF conversions understate it (PROVENANCE.md)
  lo.allow_context_extension = true;  // a KLD base file fixes the context it was written with
  return load_model(path, lo);
}

// The file's context is the protocol's: --ctx, when given, must agree.
void adopt_ctx(const KldBase& b, const std::string& path, CertifyOptions& o, bool ctx_given) {
  require_input(!ctx_given || o.ctx == (int)b.n_ctx, path, "n_ctx",
                "the file was written with context " + std::to_string(b.n_ctx) + ", --ctx says " +
                    std::to_string(o.ctx));
  o.ctx = (int)b.n_ctx;
}

// With a corpus next to a base file: the corpus must tokenize to the file's tokens.
void check_corpus_tokens(const KldBase& b, const std::string& path, const Model& m, const std::string& corpus_path,
                         const CertifyOptions& o) {
  if (corpus_path.empty()) return;
  const KldBase want = kld_base_layout(m, read_corpus(corpus_path), o);
  require_input(want.tokens == b.tokens, path, "tokens",
                "the file's tokens are not " + m.path + "'s tokenization of " + corpus_path);
}

KldModeOutcome write_mode(const KldModeRequest& k, const CertifyOptions& o) {
  need(!k.reference.empty() && !k.corpus.empty(), "--write-kld-base", "needs --reference and --corpus");
  const Model ref = load_at(k.reference, o.ctx);
  KldModeOutcome out;
  out.written = make_kld_base(ref, kld_base_layout(ref, read_corpus(k.corpus), o), o);
  write_kld_base(k.write_base, out.written);
  write_kld_sidecar(k.write_base, out.written);  // our metadata (numerics_version) beside llama.cpp's format
  out.written.records.clear();
  return out;
}

KldModeOutcome reference_base_mode(const KldModeRequest& k, CertifyOptions o) {
  need(!k.candidate.empty(), "--reference-kld-base", "needs --candidate");
  check_kld_sidecar(k.reference_base, false, "re-write it with `oracle certify --write-kld-base`");
  const KldBase b = read_kld_base(k.reference_base);
  adopt_ctx(b, k.reference_base, o, k.ctx_given);
  const Model cand = load_at(k.candidate, o.ctx);
  check_corpus_tokens(b, k.reference_base, cand, k.corpus, o);
  Model ref;
  if (!k.reference.empty()) ref = load_at(k.reference, o.ctx);
  KldModeOutcome out;
  out.result = certify_against_base(b, cand, o, k.reference.empty() ? nullptr : &ref);
  out.info.reference_path = k.reference_base + " (llama.cpp KLD base)";
  out.info.reference_sha256 = sha256_file(k.reference_base);
  out.info.candidate_path = k.candidate;
  out.info.candidate_sha256 = cand.sha256;
  out.info.weight_type = dominant_weight_type(cand);
  return out;
}

KldModeOutcome candidate_base_mode(const KldModeRequest& k, CertifyOptions o) {
  need(!k.reference.empty() && k.candidate.empty(), "--candidate-kld-base", "needs --reference and no --candidate");
  need(o.candidate_numerics == num::NumericsProfile::Canonical, "--candidate-numerics",
       "the candidate is the file's log-probabilities: no forward pass to run in another profile");
  check_kld_sidecar(k.candidate_base, false, "re-write it with `oracle certify --write-kld-base`");
  const KldBase b = read_kld_base(k.candidate_base);
  adopt_ctx(b, k.candidate_base, o, k.ctx_given);
  const Model ref = load_at(k.reference, o.ctx);
  check_corpus_tokens(b, k.candidate_base, ref, k.corpus, o);
  KldModeOutcome out;
  out.result = certify_base_candidate(ref, b, o);
  out.info.reference_path = k.reference;
  out.info.reference_sha256 = ref.sha256;
  out.info.candidate_path = k.candidate_base + " (llama.cpp KLD base)";
  out.info.candidate_sha256 = sha256_file(k.candidate_base);
  out.info.weight_type = "KLD_BASE";
  return out;
}

KldModeOutcome files_mode(const KldModeRequest& k, CertifyOptions o) {
  need(k.reference.empty() && k.candidate.empty() && k.corpus.empty(), "--candidate-kld-base",
       "with --reference-kld-base both sides are files: no --reference, --candidate or --corpus");
  need(o.candidate_numerics == num::NumericsProfile::Canonical, "--candidate-numerics",
       "the candidate is the file's log-probabilities: no forward pass to run in another profile");
  check_kld_sidecar(k.reference_base, false, "re-write it with `oracle certify --write-kld-base`");
  check_kld_sidecar(k.candidate_base, false, "re-write it with `oracle certify --write-kld-base`");
  const KldBase ref = read_kld_base(k.reference_base), cand = read_kld_base(k.candidate_base);
  adopt_ctx(ref, k.reference_base, o, k.ctx_given);
  KldModeOutcome out;
  out.result = certify_base_base(ref, cand, k.candidate_base, o);
  out.info.reference_path = k.reference_base + " (llama.cpp KLD base)";
  out.info.reference_sha256 = sha256_file(k.reference_base);
  out.info.candidate_path = k.candidate_base + " (llama.cpp KLD base)";
  out.info.candidate_sha256 = sha256_file(k.candidate_base);
  out.info.weight_type = "KLD_BASE";
  return out;
}

KldModeOutcome cache_mode(const KldModeRequest& k, const CertifyOptions& o) {
  need(!k.reference.empty() && !k.candidate.empty() && !k.corpus.empty(), "--reference-cache",
       "needs --reference, --candidate and --corpus");
  const Model ref = load_at(k.reference, o.ctx), cand = load_at(k.candidate, o.ctx);
  require_comparable(ref, cand);
  check_certify_options(ref, cand, o);
  KldModeOutcome out;
  const KldBase b = reference_cache(k.cache, ref, read_corpus(k.corpus), o, out.cache_reused);
  out.result = certify_against_base(b, cand, o, &ref);
  out.info.reference_path = k.reference;
  out.info.reference_sha256 = ref.sha256;
  out.info.candidate_path = k.candidate;
  out.info.candidate_sha256 = cand.sha256;
  out.info.weight_type = dominant_weight_type(cand);
  out.info.candidate_kv_int8 = o.candidate_kv_int8;
  return out;
}

}  // namespace

KldModeOutcome run_kld_mode(const KldModeRequest& k, CertifyOptions o) {
  const bool files = !k.reference_base.empty() && !k.candidate_base.empty();  // both sides files
  const int modes = !k.write_base.empty() + !k.reference_base.empty() + !k.candidate_base.empty() + !k.cache.empty();
  need(modes == 1 || (files && modes == 2), "--write-kld-base",
       "give one of --write-kld-base, --reference-kld-base, --candidate-kld-base (or both of those two), "
       "--reference-cache");
  need(o.protocol == Protocol::LlamaCpp, "--protocol",
       "KLD base files hold llama-perplexity's protocol (llamacpp, implied when --protocol is not given)");
  if (!k.write_base.empty()) return write_mode(k, o);
  KldModeOutcome out = files                      ? files_mode(k, o)
                       : !k.reference_base.empty() ? reference_base_mode(k, o)
                       : !k.candidate_base.empty() ? candidate_base_mode(k, o)
                                                   : cache_mode(k, o);
  out.scored = true;
  out.info.candidate_numerics = o.candidate_numerics;  // the reference side is canonical (or the file)
  out.info.corpus_path = k.corpus;
  if (!k.corpus.empty()) out.info.corpus_sha256 = sha256_file(k.corpus);
  return out;
}

}  // namespace oracle
