#pragma once
// `oracle certify` through llama.cpp's KL-divergence base file (docs/certify.md,
// "KLD base files"): --write-kld-base, --reference-kld-base, --candidate-kld-base
// and --reference-cache. The statistics and certificate are certify's own.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "audit/certify/certify.h"
#include "audit/certify/certify_report.h"

namespace oracle::tools {

struct KldOptions {
  std::string write_base;      // write the reference's base file and stop
  std::string reference_base;  // the reference is this file (corpus = its tokens)
  std::string candidate_base;  // the candidate is this file
  std::string cache;           // --reference-cache: written once, reused
};

void add_kld_options(CLI::App* sub, KldOptions& k);
bool kld_requested(const KldOptions& k);

// What cmd_certify does with a finished result: thresholds, certificate, summary.
using CertifyFinish = std::function<int(const CertifyResult&, const CertificateInfo&)>;

// Runs the requested mode; --reference/--candidate/--corpus are checked here per mode
// (InputError naming the missing or extra option).
int run_certify_kld(const KldOptions& k, const std::string& reference, const std::string& candidate,
                    const std::string& corpus_path, oracle::CertifyOptions o, bool ctx_given, const CertifyFinish& finish);

}  // namespace oracle::tools
