#pragma once
// ============================================================================
// The four KLD-base modes of `oracle certify` as one library call (the CLI in
// tools/certify_kld_cli.cpp only parses options and prints; docs/certify.md
// "KLD base files"). Exactly one of the four file fields is set (or both
// reference_base and candidate_base: the statistics of two base files, no model):
//   write_base      the reference's base file for `corpus` is written, no score;
//   reference_base  that file is the reference, `candidate` is scored against it
//                   (greedy agreement too when `reference` is also given);
//   candidate_base  that file is the candidate, scored against `reference`;
//   cache           the reference's base file, written once and then reused.
// Each mode checks which of reference / candidate / corpus it needs and refuses
// the rest (InputError naming the option). The base file's context is the
// protocol's: `ctx_given` with a different --ctx is refused naming n_ctx.
// ============================================================================
#include <string>

#include "audit/certify/certify_kld.h"
#include "audit/certify/certify_report.h"

namespace oracle {

struct KldModeRequest {
  std::string write_base, reference_base, candidate_base, cache;  // one set (or the two bases)
  std::string reference, candidate, corpus;                       // model and corpus paths ("" = not given)
  bool ctx_given = false;                                         // --ctx given explicitly
};

struct KldModeOutcome {
  bool scored = false;      // false: write_base mode (only `written` is meaningful)
  KldBase written;          // write_base: the header of the file written (records cleared)
  bool cache_reused = false;  // cache mode: the cache file existed and matched
  CertifyResult result;     // scored modes
  CertificateInfo info;     // scored modes: identities of the inputs (tool_version left to the caller)
};

// True when any of the four KLD-base fields is set.
bool kld_mode_requested(const KldModeRequest& k);

// Runs the requested mode (o.protocol must be LlamaCpp). Writes files atomically.
KldModeOutcome run_kld_mode(const KldModeRequest& k, CertifyOptions o);

}  // namespace oracle
