#pragma once
// ============================================================================
// `oracle compare` (docs/interop.md, "oracle compare"): one engine's logits
// against another's (usually the reference teacher-forced on the same ids),
// step by step, and traces op by op.
//
// Per step s (rows want = reference, got = candidate, float32 (vocab)):
//   kld      KL(P_want || P_got) in nats (float64, logit_stats.h's log-softmax)
//   top1     argmax equal (ties to the lowest id)
//   max_abs, max_ulp, nmse = Σ(got − want)² / Σ want²  (ggml test-backend-ops' NMSE)
// Tie rule: where the argmaxes differ, m = want[a] − want[b] (a = want's argmax,
// b = got's) is the reference's margin. An engine within the logit tolerance
// τ = tie_rel · max(1, max|want|) of every logit can flip the argmax only if
// m ≤ 2τ (each of the two logits moves at most τ), so such a flip is a TIE,
// not a failure; m > 2τ is a real disagreement. Default tie_rel = 1e-4, the
// fast-mode logit bound of docs/cuda.md.
// Verdict (exit 0/1): no real argmax disagreement beyond max_flips, every step's
// KLD ≤ max_kld, and max_abs / max_ulp / nmse within their limits when set.
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/interop/tensor_compare.h"

namespace oracle {

struct CompareThresholds {
  double max_kld = 1e-4;   // per step, nats (certify's F16-class mean bound)
  int max_flips = 0;       // argmax disagreements that are not ties
  double tie_rel = 1e-4;   // τ = tie_rel · max(1, max|want|)
  double max_abs = -1.0;   // < 0: not checked
  double max_nmse = -1.0;  // < 0: not checked
  int64_t max_ulp = -1;    // < 0: not checked
};

struct StepDiff {
  int step = 0;
  int token = -1;           // the id chosen at this step (-1 unknown)
  double kld = 0.0;
  int top_want = 0, top_got = 0;
  bool tie = false;         // argmaxes differ within 2τ
  double margin = 0.0;      // want[top_want] − want[top_got] (0 when equal)
  double tie_bound = 0.0;   // 2τ
  TensorStats stats;
};

struct LogitsComparison {
  int steps = 0, vocab = 0;
  std::vector<StepDiff> per_step;
  int first_bit_diff = -1;      // first step whose rows differ in any bit
  int first_argmax_diff = -1;   // first step whose argmaxes differ (tie or not)
  int first_failure = -1;       // first step that breaks a threshold
  int top1_agree = 0, ties = 0, flips = 0;
  double kld_mean = 0.0, kld_max = 0.0, max_abs = 0.0, nmse_max = 0.0;
  uint64_t max_ulp = 0;
  bool pass = true;
  // One sentence per broken threshold or counted flip, in step order, the first 8 only (a
  // run that fails everywhere prints 8 lines; first_failure, max_ulp, flips, ... count every step).
  std::vector<std::string> failures;
};

// want/got: (steps, vocab). tokens: (steps) or empty.
LogitsComparison compare_logit_rows(const std::vector<float>& want, const std::vector<float>& got, int steps,
                                    int vocab, const std::vector<int>& tokens, const CompareThresholds& t);

// Trace against trace (canonical order, tensor_compare.h's compare_traces):
// the first op that is not bit-identical and the first whose NMSE exceeds max_nmse.
struct TraceComparison {
  TraceDiff diff;
  int first_beyond = -1;  // index into diff.entries
  double max_nmse = 1e-7; // threshold used (test-backend-ops' default max_nmse_err)
  bool pass = true;
};
TraceComparison compare_trace_dumps(const std::vector<TraceEntry>& want, const std::vector<TraceEntry>& got,
                                    double max_nmse);

nlohmann::json comparison_json(const LogitsComparison& c, const CompareThresholds& t);
std::string comparison_markdown(const LogitsComparison& c, const CompareThresholds& t, const std::string& want_name,
                                const std::string& got_name);
nlohmann::json trace_comparison_json(const TraceComparison& c, const std::vector<TraceEntry>& want,
                                     const std::vector<TraceEntry>& got);
std::string trace_comparison_markdown(const TraceComparison& c, const std::string& want_name,
                                      const std::string& got_name);

}  // namespace oracle
