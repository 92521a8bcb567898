// oracle diff: runs the reference and the device pipeline (cuda-emu or cuda) on
// the same tokens, compares every traced intermediate (per layer, op, position)
// and reports the first divergent op (docs/diff.md).
//   oracle diff --backend cuda-emu|cuda --mode deterministic|fast [--prompt P] [--max-tokens N] [--json]
// Exit 0: within the mode's bound (deterministic: every bit equal; fast: the
// logits bound of docs/cuda.md); 1: beyond it; 2: bad input / backend unavailable.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "optimized/backend.h"
#include "reference/base/errors.h"
#include "reference/compute/kv_cache.h"
#include "numerics/numerics.h"
#include "tools/commands.h"
#include "tools/device_backend.h"
#include "tools/diff_support.h"
#include "tools/model_args.h"

namespace oracle::tools {

struct DiffOptions {
  ModelOptions model;
  std::string prompt = "Once upon a time";
  std::string backend = "cuda-emu";
  std::string mode = "deterministic";
  int max_tokens = 16;  // greedy steps after the prefill, teacher-forced from the reference
  bool json = false;
};

// Fast-mode bound (docs/cuda.md): per step max |logit_fast - logit_ref| <=
// 1e-4 * max(1, max |logit_ref|), and the greedy choices disagree on at most
// 2 of every 128 steps.
constexpr double kFastRelBound = 1e-4;
static int fast_allowed_disagreements(int steps) { return steps * 2 / 128; }

// ---- running both pipelines ---------------------------------------------------------------
struct DiffRun {
  std::vector<TraceEntry> want, got;  // reference, backend traces (execution order)
  std::vector<int> tokens;            // prompt then the teacher-forced greedy tokens
  int prompt_tokens = 0;
};

static DiffRun run_both(const LoadedModel& lm, const DiffOptions& o) {
  DiffRun r;
  r.tokens = lm.tokenizer.encode(o.prompt, true);
  r.prompt_tokens = (int)r.tokens.size();
  require_input(r.prompt_tokens + o.max_tokens <= lm.model.config.seq_len, lm.model.path, "context_length",
                std::to_string(r.prompt_tokens + o.max_tokens) + " positions do not fit a context of " +
                    std::to_string(lm.model.config.seq_len) + " (raise --context or lower --max-tokens)");
  Trace tw = trace_recorder(r.want), tg = trace_recorder(r.got);
  optimized::BackendOptions bo;
  bo.trace = &tg;
  bo.mode = parse_mode(o.mode);
  optimized::Backend dev(lm.model, {1, 16, 0}, bo);
  KvCache kv(lm.model.config, {});
  ForwardOptions fo;
  fo.trace = &tw;
  std::vector<float> logits = forward(lm.model, kv, 0, r.tokens, fo);
  dev.forward(0, r.tokens);
  for (int step = 0; step < o.max_tokens; step++) {
    const int next = num::argmax_lowest(logits.data(), lm.model.config.vocab_size);
    r.tokens.push_back(next);
    logits = forward(lm.model, kv, 0, std::span<const int>(&next, 1), fo);
    dev.forward(0, std::span<const int>(&next, 1));
  }
  return r;
}

// ---- the fast-mode verdict on the logits ---------------------------------------------------
struct LogitsVerdict {
  int steps = 0, greedy_agree = 0;
  double worst_rel = 0.0;  // max over steps of max_abs / max(1, max |ref|)
  bool within = true;
};

static LogitsVerdict judge_logits(const DiffRun& r, const TraceDiff& d) {
  LogitsVerdict v;
  for (const EntryDiff& e : d.entries) {
    if (e.name != "logits") continue;
    const auto& want = r.want[e.index].values;
    const auto& got = r.got[e.index].values;
    const double scale = e.stats.max_abs_want > 1.0f ? e.stats.max_abs_want : 1.0;
    const double rel = e.stats.max_abs / scale;
    if (!(rel <= v.worst_rel)) v.worst_rel = rel;
    v.steps++;
    v.greedy_agree += num::argmax_lowest(want.data(), (int)want.size()) ==
                      num::argmax_lowest(got.data(), (int)got.size());
  }
  v.within = v.worst_rel <= kFastRelBound && v.steps - v.greedy_agree <= fast_allowed_disagreements(v.steps);
  return v;
}

// ---- report ---------------------------------------------------------------------------------
static nlohmann::json entry_json(const EntryDiff& e, const DiffRun& r) {
  nlohmann::json j = {{"index", e.index}, {"op", e.name}, {"layer", layer_of(e.name)}, {"pos", e.pos},
                      {"max_abs", e.stats.max_abs}, {"max_ulp", e.stats.max_ulp}, {"nmse", e.stats.nmse},
                      {"element", e.stats.first_diff}};
  if (e.stats.first_diff >= 0) {
    j["reference_value"] = r.want[e.index].values[e.stats.first_diff];
    j["backend_value"] = r.got[e.index].values[e.stats.first_diff];
  }
  return j;
}

static nlohmann::json report_json(const LoadedModel& lm, const DiffOptions& o, const DiffRun& r,
                                  const TraceDiff& d, const LogitsVerdict& v, bool pass) {
  nlohmann::json j = {{"model", lm.model.path}, {"backend", o.backend}, {"mode", o.mode},
                      {"prompt_tokens", r.prompt_tokens}, {"steps", o.max_tokens},
                      {"tensors_compared", d.entries.size()}, {"bit_exact", d.first_divergent < 0 && d.structure_error.empty()},
                      {"first_divergent", nullptr}, {"structure_error", d.structure_error}, {"within_bound", pass}};
  if (d.first_divergent >= 0) j["first_divergent"] = entry_json(d.entries[d.first_divergent], r);
  uint64_t worst_ulp = 0;
  for (const EntryDiff& e : d.entries) worst_ulp = e.stats.max_ulp > worst_ulp ? e.stats.max_ulp : worst_ulp;
  j["max_ulp"] = worst_ulp;
  j["logits"] = {{"steps", v.steps}, {"greedy_agree", v.greedy_agree}, {"worst_rel", v.worst_rel}};
  j["bound"] = o.mode == "fast" ? nlohmann::json{{"rel", kFastRelBound},
                                                 {"max_greedy_disagreements", fast_allowed_disagreements(v.steps)}}
                                : nlohmann::json{{"max_ulp", 0}};
  return j;
}

static void print_human(const nlohmann::json& j) {
  std::printf("oracle diff: %s, backend %s, mode %s: %zu tensors compared (%d prompt tokens + %d steps)\n",
              j["model"].get<std::string>().c_str(), j["backend"].get<std::string>().c_str(),
              j["mode"].get<std::string>().c_str(), j["tensors_compared"].get<size_t>(),
              j["prompt_tokens"].get<int>(), j["steps"].get<int>());
  if (!j["structure_error"].get<std::string>().empty())
    std::printf("traces do not line up: %s\n", j["structure_error"].get<std::string>().c_str());
  const auto& f = j["first_divergent"];
  if (f.is_null()) std::printf("no divergence: every tensor bit-identical\n");
  else
    std::printf("first divergent op: %s (layer %d, pos %d, entry %zu): max abs %.6g, max ULP %llu, NMSE %.6g\n",
                f["op"].get<std::string>().c_str(), f["layer"].get<int>(), f["pos"].get<int>(),
                f["index"].get<size_t>(), f["max_abs"].get<double>(),
                (unsigned long long)f["max_ulp"].get<uint64_t>(), f["nmse"].get<double>());
  std::printf("logits: worst relative error %.6g, greedy agreement %d/%d; %s the %s bound\n",
              j["logits"]["worst_rel"].get<double>(), j["logits"]["greedy_agree"].get<int>(),
              j["logits"]["steps"].get<int>(), j["within_bound"].get<bool>() ? "within" : "BEYOND",
              j["mode"].get<std::string>().c_str());
}

int run_diff(const DiffOptions& o) {
  require_input(require_backend(o.backend), o.backend, "--backend", "diff compares a device backend (cuda-emu or cuda) with the reference");
  parse_mode(o.mode);
  const LoadedModel lm = load_model_and_tokenizer(o.model);
  const DiffRun r = run_both(lm, o);
  const TraceDiff d = compare_traces(r.want, r.got);
  const LogitsVerdict v = judge_logits(r, d);
  const bool structure_ok = d.structure_error.empty() && !d.entries.empty();
  const bool pass = structure_ok && (o.mode == "fast" ? v.within : d.first_divergent < 0);
  const nlohmann::json j = report_json(lm, o, r, d, v, pass);
  if (o.json) std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  else print_human(j);
  return pass ? kExitOk : kExitCheckFailed;
}

Command setup_diff(CLI::App& app) {
  auto opts = std::make_shared<DiffOptions>();
  auto* sub = app.add_subcommand("diff", "Compare every intermediate of the device pipeline with the reference");
  add_model_options(sub, opts->model);
  sub->add_option("--prompt,-p", opts->prompt, "Prompt text (BOS added)");
  sub->add_option("--backend", opts->backend, "cuda-emu (host emulation of the kernels) or cuda (GPU)");
  sub->add_option("--mode", opts->mode, "deterministic (0 ULP) or fast (docs/cuda.md bound)");
  sub->add_option("--max-tokens,-n", opts->max_tokens, "Greedy steps after the prefill (teacher-forced)")
      ->check(CLI::Range(0, 1 << 20));
  sub->add_flag("--json", opts->json, "Print one JSON object");
  return {sub, [opts] { return run_diff(*opts); }};
}

}  // namespace oracle::tools
