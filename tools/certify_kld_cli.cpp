// `oracle certify` KLD-base modes (certify_kld_cli.h).
#include "tools/certify_kld_cli.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "audit/certify/certify_kld.h"
#include "base/utf8.h"
#include "base/errors.h"
#include "base/sha256.h"
#include "tools/version.h"

namespace oracle::tools {

void add_kld_options(CLI::App* sub, KldOptions& k) {
  sub->add_option("--write-kld-base", k.write_base,
                  "Write the reference's llama.cpp KL-divergence base file (no candidate) and stop");
  sub->add_option("--reference-kld-base", k.reference_base,
                  "Reference = this llama.cpp KLD base file (its tokens are the corpus)");
  sub->add_option("--candidate-kld-base", k.candidate_base,
                  "Candidate = this llama.cpp KLD base file, scored against --reference");
  sub->add_option("--reference-cache", k.cache,
                  "Reference logits cached as a KLD base file: written if absent, reused if it matches");
}

bool kld_requested(const KldOptions& k) {
  return !k.write_base.empty() || !k.reference_base.empty() || !k.candidate_base.empty() || !k.cache.empty();
}

namespace {

std::string read_corpus(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), path, "corpus", "cannot open the corpus");
  std::stringstream ss;
  ss << in.rdbuf();
  require_utf8(ss.str(), path, "corpus");  // named here: the tokenizer would say "<text>: prompt"
  return ss.str();
}

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
void adopt_ctx(const KldBase& b, const std::string& path, oracle::CertifyOptions& o, bool ctx_given) {
  require_input(!ctx_given || o.ctx == (int)b.n_ctx, path, "n_ctx",
                "the file was written with context " + std::to_string(b.n_ctx) + ", --ctx says " +
                    std::to_string(o.ctx));
  o.ctx = (int)b.n_ctx;
}

// With --corpus next to a base file: the corpus must tokenize to the file's tokens.
void check_corpus_tokens(const KldBase& b, const std::string& path, const Model& m, const std::string& corpus_path,
                         const oracle::CertifyOptions& o) {
  if (corpus_path.empty()) return;
  const KldBase want = kld_base_layout(m, read_corpus(corpus_path), o);
  require_input(want.tokens == b.tokens, path, "tokens",
                "the file's tokens are not " + m.path + "'s tokenization of " + corpus_path);
}

int write_mode(const KldOptions& k, const std::string& reference, const std::string& corpus_path,
               const oracle::CertifyOptions& o) {
  need(!reference.empty() && !corpus_path.empty(), "--write-kld-base", "needs --reference and --corpus");
  const Model ref = load_at(reference, o.ctx);
  const KldBase b = make_kld_base(ref, kld_base_layout(ref, read_corpus(corpus_path), o), o);
  write_kld_base(k.write_base, b);
  std::printf("wrote %s: llama.cpp KL-divergence base, n_ctx %u, n_vocab %d, %d chunks, %d records\n",
              k.write_base.c_str(), b.n_ctx, b.n_vocab, b.n_chunk, b.n_chunk * b.scored_per_chunk());
  return 0;
}

}  // namespace

int run_certify_kld(const KldOptions& k, const std::string& reference, const std::string& candidate,
                    const std::string& corpus_path, oracle::CertifyOptions o, bool ctx_given, const CertifyFinish& finish) {
  const int modes = !k.write_base.empty() + !k.reference_base.empty() + !k.candidate_base.empty() + !k.cache.empty();
  need(modes == 1, "--write-kld-base", "give one of --write-kld-base, --reference-kld-base, --candidate-kld-base, "
       "--reference-cache");
  need(o.protocol == Protocol::LlamaCpp, "--protocol",
       "KLD base files hold llama-perplexity's protocol (llamacpp, implied when --protocol is not given)");
  if (!k.write_base.empty()) return write_mode(k, reference, corpus_path, o);
  CertificateInfo info;
  info.tool_version = kOracleVersion;
  info.candidate_numerics = o.candidate_numerics;  // the reference side is canonical (or the file)
  info.corpus_path = corpus_path;
  if (!corpus_path.empty()) info.corpus_sha256 = sha256_file(corpus_path);
  if (!k.reference_base.empty()) {
    need(!candidate.empty(), "--reference-kld-base", "needs --candidate");
    const KldBase b = read_kld_base(k.reference_base);
    adopt_ctx(b, k.reference_base, o, ctx_given);
    const Model cand = load_at(candidate, o.ctx);
    check_corpus_tokens(b, k.reference_base, cand, corpus_path, o);
    Model ref;
    if (!reference.empty()) ref = load_at(reference, o.ctx);
    const CertifyResult r = certify_against_base(b, cand, o, reference.empty() ? nullptr : &ref);
    info.reference_path = k.reference_base + " (llama.cpp KLD base)";
    info.reference_sha256 = sha256_file(k.reference_base);
    info.candidate_path = candidate;
    info.candidate_sha256 = cand.sha256;
    info.weight_type = dominant_weight_type(cand);
    return finish(r, info);
  }
  if (!k.candidate_base.empty()) {
    need(!reference.empty() && candidate.empty(), "--candidate-kld-base", "needs --reference and no --candidate");
    need(o.candidate_numerics == num::NumericsProfile::Canonical, "--candidate-numerics",
         "the candidate is the file's log-probabilities: no forward pass to run in another profile");
    const KldBase b = read_kld_base(k.candidate_base);
    adopt_ctx(b, k.candidate_base, o, ctx_given);
    const Model ref = load_at(reference, o.ctx);
    check_corpus_tokens(b, k.candidate_base, ref, corpus_path, o);
    const CertifyResult r = certify_base_candidate(ref, b, o);
    info.reference_path = reference;
    info.reference_sha256 = ref.sha256;
    info.candidate_path = k.candidate_base + " (llama.cpp KLD base)";
    info.candidate_sha256 = sha256_file(k.candidate_base);
    info.weight_type = "KLD_BASE";
    return finish(r, info);
  }
  need(!reference.empty() && !candidate.empty() && !corpus_path.empty(), "--reference-cache",
       "needs --reference, --candidate and --corpus");
  const Model ref = load_at(reference, o.ctx), cand = load_at(candidate, o.ctx);
  require_comparable(ref, cand);
  check_certify_options(ref, cand, o);
  bool reused = false;
  const KldBase b = reference_cache(k.cache, ref, read_corpus(corpus_path), o, reused);
  std::printf("%s reference cache %s\n", reused ? "reused" : "wrote", k.cache.c_str());
  const CertifyResult r = certify_against_base(b, cand, o, &ref);
  info.reference_path = reference;
  info.reference_sha256 = ref.sha256;
  info.candidate_path = candidate;
  info.candidate_sha256 = cand.sha256;
  info.weight_type = dominant_weight_type(cand);
  info.candidate_kv_int8 = o.candidate_kv_int8;
  return finish(r, info);
}

}  // namespace oracle::tools
