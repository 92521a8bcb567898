// `oracle certify` KLD-base modes (certify_kld_cli.h): options and printing only;
// the modes themselves are audit/certify/certify_kld_modes.h.
#include "tools/certify_kld_cli.h"

#include <cstdio>

#include "audit/certify/certify_kld_modes.h"
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

int run_certify_kld(const KldOptions& k, const std::string& reference, const std::string& candidate,
                    const std::string& corpus_path, oracle::CertifyOptions o, bool ctx_given, const CertifyFinish& finish) {
  const KldModeRequest req{k.write_base, k.reference_base, k.candidate_base, k.cache,
                           reference,    candidate,        corpus_path,      ctx_given};
  KldModeOutcome out = run_kld_mode(req, o);
  if (!out.scored) {
    const KldBase& b = out.written;
    std::printf("wrote %s: llama.cpp KL-divergence base, n_ctx %u, n_vocab %d, %d chunks, %d records\n",
                k.write_base.c_str(), b.n_ctx, b.n_vocab, b.n_chunk, b.n_chunk * b.scored_per_chunk());
    return 0;
  }
  if (!k.cache.empty()) std::printf("%s reference cache %s\n", out.cache_reused ? "reused" : "wrote", k.cache.c_str());
  out.info.tool_version = kOracleVersion;
  return finish(out.result, out.info);
}

}  // namespace oracle::tools
