// llm_oracle: compare (audit/interop/compare.h, the figures of `oracle compare`) on
// caller-supplied logit rows.
#include <nlohmann/json.hpp>

#include "audit/interop/compare.h"
#include "audit/interop/tensor_compare.h"
#include "api/convert.h"
#include "llm_oracle/compare.h"
#include "base/errors.h"

namespace llm_oracle {

namespace {

TensorStats from_internal(const oracle::TensorStats& s) {
  return {s.bit_equal, s.first_diff, s.max_abs, s.max_ulp, s.nmse, s.max_abs_want};
}

}  // namespace

namespace detail {

// rows * vocab values in each of `a` and `b`.
void need_rows(const char* op, size_t a, size_t b, int rows, int vocab, const char* a_name, const char* b_name) {
  oracle::require_input(rows > 0 && vocab > 0, op, "shape", "rows and vocab must be positive");
  const size_t want = (size_t)rows * (size_t)vocab;
  oracle::require_input(a == want, op, a_name,
                        std::to_string(a) + " values, expected " + std::to_string(rows) + " x " + std::to_string(vocab));
  oracle::require_input(b == want, op, b_name,
                        std::to_string(b) + " values, expected " + std::to_string(rows) + " x " + std::to_string(vocab));
}

}  // namespace detail

uint64_t ulp_distance(float a, float b) { return oracle::ulp_distance(a, b); }

TensorStats compare_tensor(std::span<const float> want, std::span<const float> got) {
  oracle::require_input(want.size() == got.size(), "compare", "shape",
                        "want has " + std::to_string(want.size()) + " values, got " + std::to_string(got.size()));
  return from_internal(oracle::compare_tensor(want, got));
}

CompareReport compare_logits(std::span<const float> want, std::span<const float> got, int steps, int vocab,
                             std::span<const int> tokens, const CompareThresholds& t, const std::string& want_name,
                             const std::string& got_name) {
  detail::need_rows("compare", want.size(), got.size(), steps, vocab, "want", "got");
  oracle::require_input(tokens.empty() || (int)tokens.size() == steps, "compare", "tokens",
                        "needs one id per step (" + std::to_string(steps) + "), got " + std::to_string(tokens.size()));
  const oracle::CompareThresholds th{t.max_kld, t.max_flips, t.tie_rel, t.max_abs, t.max_nmse, t.max_ulp};
  const oracle::LogitsComparison c =
      oracle::compare_logit_rows(std::vector<float>(want.begin(), want.end()), std::vector<float>(got.begin(), got.end()),
                                 steps, vocab, std::vector<int>(tokens.begin(), tokens.end()), th);
  CompareReport r;
  r.steps = c.steps, r.vocab = c.vocab;
  for (const oracle::StepDiff& s : c.per_step)
    r.per_step.push_back({s.step, s.token, s.kld, s.top_want, s.top_got, s.tie, s.margin, s.tie_bound,
                          from_internal(s.stats)});
  r.first_bit_diff = c.first_bit_diff, r.first_argmax_diff = c.first_argmax_diff, r.first_failure = c.first_failure;
  r.top1_agree = c.top1_agree, r.ties = c.ties, r.flips = c.flips;
  r.kld_mean = c.kld_mean, r.kld_max = c.kld_max, r.max_abs = c.max_abs, r.nmse_max = c.nmse_max;
  r.max_ulp = c.max_ulp, r.pass = c.pass, r.failures = c.failures;
  r.json = oracle::comparison_json(c, th).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.markdown = oracle::comparison_markdown(c, th, want_name, got_name);
  return r;
}

}  // namespace llm_oracle
