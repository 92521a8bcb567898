#pragma once
// ============================================================================
// Writing a certificate: JSON (every statistic, hashes, protocol, verdicts),
// a Markdown summary, and two SVG plots (KLD histogram, mean KLD by position).
// ============================================================================
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/certify.h"

namespace oracle {

struct CertificateInfo {
  std::string reference_path, reference_sha256;
  std::string candidate_path, candidate_sha256;
  std::string corpus_path, corpus_sha256;
  std::string tool_version;
  std::string weight_type;          // dominant candidate weight type (or KV_I8)
  bool candidate_kv_int8 = false;
};

nlohmann::json certificate_json(const CertifyResult& r, const CertificateInfo& info,
                                const std::vector<ThresholdCheck>& checks);
std::string certificate_markdown(const CertifyResult& r, const CertificateInfo& info,
                                 const std::vector<ThresholdCheck>& checks);

// Writes <dir>/certificate.json, certificate.md, kld_histogram.svg, kld_by_position.svg.
// Returns the paths written. InputError(dir, "output", ...) when a file cannot be written.
std::vector<std::string> write_certificate(const std::string& dir, const CertifyResult& r,
                                           const CertificateInfo& info,
                                           const std::vector<ThresholdCheck>& checks);

bool all_pass(const std::vector<ThresholdCheck>& checks);

}  // namespace oracle
