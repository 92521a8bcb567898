#pragma once
// ============================================================================
// Writing a certificate: JSON (every statistic, hashes, protocol, verdicts),
// a Markdown summary, and SVG figures (audit/certify/certify_figures.h).
// ============================================================================
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/certify/certify.h"
#include "numerics/profile.h"

namespace oracle {

struct CertificateInfo {
  std::string reference_path, reference_sha256;
  std::string candidate_path, candidate_sha256;
  std::string corpus_path, corpus_sha256;
  std::string tool_version;
  std::string weight_type;          // dominant candidate weight type (or KV_I8)
  bool candidate_kv_int8 = false;
  int trained_context = 0;          // > 0: --ctx exceeded it (--allow-context-extension)
  num::NumericsProfile candidate_numerics = num::NumericsProfile::Canonical;  // --candidate-numerics
};

// How the candidate's logits were computed: the pipeline line of the certificate.
std::string candidate_pipeline(const CertificateInfo& info);

nlohmann::json certificate_json(const CertifyResult& r, const CertificateInfo& info,
                                const std::vector<ThresholdCheck>& checks);
std::string certificate_markdown(const CertifyResult& r, const CertificateInfo& info,
                                 const std::vector<ThresholdCheck>& checks);

// llama-perplexity --kl-divergence's three statistics blocks (perplexity, KL
// divergence, token probability), same labels, order and printf formats
// (tools/perplexity/perplexity.cpp of the vendored llama.cpp); Q = candidate.
std::string llama_perplexity_block(const CertifyResult& r);

// Writes <dir>/certificate.json, certificate.md, certificate.svg (the summary
// page) and kld_cdf.svg, delta_p.svg, same_top_by_position.svg,
// kld_by_position.svg (certify_figures.h), each atomically.
// Returns the paths written. InputError(dir, "output", ...) when a file cannot be written.
std::vector<std::string> write_certificate(const std::string& dir, const CertifyResult& r,
                                           const CertificateInfo& info,
                                           const std::vector<ThresholdCheck>& checks);

bool all_pass(const std::vector<ThresholdCheck>& checks);

}  // namespace oracle
