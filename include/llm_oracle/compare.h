#pragma once
// ============================================================================
// llm_oracle: how far an engine's numbers are from the reference's — the
// figures `oracle compare` prints (docs/interop.md): per step KLD (nats),
// argmax flips and ties, max |diff|, max ULP and NMSE (ggml test-backend-ops').
// ============================================================================
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "llm_oracle/errors.h"

namespace llm_oracle {

// Representable floats between a and b (+0 and -0 are 0 apart; NaN against
// anything else: UINT64_MAX).
uint64_t ulp_distance(float a, float b);

struct TensorStats {
  bool bit_equal = true;
  int64_t first_diff = -1;  // first index whose bits differ (-1: none)
  double max_abs = 0.0;
  uint64_t max_ulp = 0;
  double nmse = 0.0;        // sum (got - want)^2 / sum want^2
  float max_abs_want = 0.0f;
};
TensorStats compare_tensor(std::span<const float> want, std::span<const float> got);

struct CompareThresholds {
  double max_kld = 1e-4;   // per step, nats
  int max_flips = 0;       // argmax disagreements that are not ties
  double tie_rel = 1e-4;   // tie bound 2 * tie_rel * max(1, max|want|)
  double max_abs = -1.0;   // < 0: not checked
  double max_nmse = -1.0;
  int64_t max_ulp = -1;
};

struct StepReport {
  int step = 0, token = -1;
  double kld = 0.0;
  int top_want = 0, top_got = 0;
  bool tie = false;
  double margin = 0.0, tie_bound = 0.0;
  TensorStats stats;
};

struct CompareReport {
  int steps = 0, vocab = 0;
  std::vector<StepReport> per_step;
  int first_bit_diff = -1, first_argmax_diff = -1, first_failure = -1;
  int top1_agree = 0, ties = 0, flips = 0;
  double kld_mean = 0.0, kld_max = 0.0, max_abs = 0.0, nmse_max = 0.0;
  uint64_t max_ulp = 0;
  bool pass = true;
  std::vector<std::string> failures;
  std::string json;      // `oracle compare --json`'s object
  std::string markdown;  // `oracle compare --markdown`'s table
};

// want = reference, got = engine under test: (steps, vocab) row-major each;
// tokens (steps) or empty. InputError("compare", field, ...) on a size mismatch.
CompareReport compare_logits(std::span<const float> want, std::span<const float> got, int steps, int vocab,
                             std::span<const int> tokens = {}, const CompareThresholds& t = {},
                             const std::string& want_name = "reference", const std::string& got_name = "candidate");

}  // namespace llm_oracle
