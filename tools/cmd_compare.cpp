// oracle compare: another engine's logits (safetensors or .npy, with their
// token ids) against the reference teacher-forced on the same ids, or two
// dumps against each other; --trace compares trace dumps op by op
// (docs/interop.md, "oracle compare"). Logic in audit/interop/compare.h.
//   oracle compare THEIRS.safetensors [--model M]            reference vs theirs
//   oracle compare OURS.safetensors THEIRS.safetensors       dump vs dump
//   oracle compare --trace THEIRS_TRACE.safetensors [OURS_TRACE] [--model M]
// Exit 0 within the thresholds, 1 beyond them, 2 bad input.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "audit/interop/compare.h"
#include "audit/interop/dumps.h"
#include "base/atomic_file.h"
#include "base/errors.h"
#include "tools/commands.h"
#include "tools/model_args.h"
#include "tools/numerics_arg.h"

namespace oracle::tools {

struct CompareOptions {
  std::vector<std::string> files;  // THEIRS [OURS]... positional: got [want]
  ModelOptions model;
  std::string prompt_ids, token_ids;  // files with ids (for .npy logits)
  bool trace = false;
  bool json = false;
  std::string markdown;  // --markdown FILE
  CompareThresholds t;
  std::string numerics = "canonical";  // --numerics: the reference's profile (tools/numerics_arg.h)
};

static void check_model(const std::map<std::string, std::string>& meta, const LoadedModel& lm, const std::string& path) {
  auto it = meta.find("model_sha256");
  if (it == meta.end() || it->second.empty()) return;
  require_input(it->second == lm.model.sha256, path, "model_sha256",
                "the dump was made with model " + it->second + ", the reference " +
                    (lm.model.path.empty() ? std::string("(embedded default)") : lm.model.path) + " is " +
                    lm.model.sha256);
}

static void emit(const nlohmann::json& j, const std::string& md, const CompareOptions& o) {
  if (!o.markdown.empty())
    write_file_atomic(o.markdown, [&](std::ostream& out) { out << md; });
  if (o.json) std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

// ---- logits --------------------------------------------------------------------------------
static int compare_logits_files(const CompareOptions& o) {
  LogitsInput got = read_logits_input(o.files[0]);
  if (!o.token_ids.empty()) got.token_ids = read_ids_file(o.token_ids);
  if (!o.prompt_ids.empty()) got.prompt_ids = read_ids_file(o.prompt_ids);
  LogitsInput want;
  std::string want_name;
  if (o.files.size() == 2) {
    want = read_logits_input(o.files[1]);
    want_name = o.files[1];
    require_input(want.steps == got.steps && want.vocab == got.vocab, o.files[1], "logits shape",
                  "(" + std::to_string(want.steps) + ", " + std::to_string(want.vocab) + ") vs " + o.files[0] + "'s (" +
                      std::to_string(got.steps) + ", " + std::to_string(got.vocab) + ")");
    require_input(want.token_ids.empty() || got.token_ids.empty() || want.token_ids == got.token_ids, o.files[1],
                  "token_ids", "the two dumps followed different token ids");
  } else {
    require_input((int)got.token_ids.size() == got.steps, o.files[0], "token_ids",
                  "the reference is teacher-forced on the dump's ids: give token_ids (tensor or --token-ids)");
    require_input(!got.prompt_ids.empty(), o.files[0], "prompt_ids",
                  "the reference needs the prompt ids (tensor prompt_ids or --prompt-ids)");
    const LoadedModel lm = load_model_and_tokenizer(o.model);
    check_model(got.metadata, lm, o.files[0]);
    require_input(got.vocab == lm.model.config.vocab_size, o.files[0], "logits shape",
                  "vocabulary " + std::to_string(got.vocab) + ", the reference has " +
                      std::to_string(lm.model.config.vocab_size));
    want.logits = teacher_forced_logits(lm.model, got.prompt_ids, got.token_ids, nullptr, numerics_arg(o.numerics));
    want_name = "reference " + (lm.model.path.empty() ? std::string("(embedded default)") : lm.model.path) +
                (o.numerics == "canonical" ? "" : " (numerics " + o.numerics + ")");
  }
  const std::vector<int>& ids = got.token_ids.empty() ? want.token_ids : got.token_ids;
  const LogitsComparison c = compare_logit_rows(want.logits, got.logits, got.steps, got.vocab, ids, o.t);
  const nlohmann::json j = comparison_json(c, o.t);
  emit(j, comparison_markdown(c, o.t, want_name, o.files[0]), o);
  if (!o.json) {
    std::printf("oracle compare: %s against %s: %d steps, vocab %d\n", o.files[0].c_str(), want_name.c_str(), c.steps,
                c.vocab);
    std::printf("KLD mean %.6g max %.6g; top-1 %d/%d (%d ties, %d flips); max abs %.6g, max ULP %llu, max NMSE %.6g\n",
                c.kld_mean, c.kld_max, c.top1_agree, c.steps, c.ties, c.flips, c.max_abs,
                (unsigned long long)c.max_ulp, c.nmse_max);
    std::printf("first bit difference at step %d; first argmax difference at step %d\n", c.first_bit_diff,
                c.first_argmax_diff);
    for (const std::string& f : c.failures) std::printf("FAIL %s\n", f.c_str());
    std::printf("%s\n", c.pass ? "PASS" : "FAIL");
  }
  return c.pass ? kExitOk : kExitCheckFailed;
}

// ---- traces --------------------------------------------------------------------------------
static int compare_trace_files(const CompareOptions& o) {
  std::vector<int> prompt, tokens;
  const std::vector<TraceEntry> got = read_trace_dump(o.files[0], &prompt, &tokens);
  std::vector<TraceEntry> want;
  std::string want_name;
  if (o.files.size() == 2) {
    want = read_trace_dump(o.files[1]);
    want_name = o.files[1];
  } else {
    if (!o.token_ids.empty()) tokens = read_ids_file(o.token_ids);
    if (!o.prompt_ids.empty()) prompt = read_ids_file(o.prompt_ids);
    require_input(!prompt.empty(), o.files[0], "prompt_ids", "the reference trace needs the prompt ids");
    const LoadedModel lm = load_model_and_tokenizer(o.model);
    teacher_forced_logits(lm.model, prompt, tokens, &want, numerics_arg(o.numerics));
    want = canonical_trace_order(std::move(want));
    want_name = "reference " + (lm.model.path.empty() ? std::string("(embedded default)") : lm.model.path) +
                (o.numerics == "canonical" ? "" : " (numerics " + o.numerics + ")");
  }
  const double max_nmse = o.t.max_nmse >= 0 ? o.t.max_nmse : 1e-7;
  const TraceComparison c = compare_trace_dumps(want, got, max_nmse);
  emit(trace_comparison_json(c, want, got), trace_comparison_markdown(c, want_name, o.files[0]), o);
  if (!o.json) std::fputs(trace_comparison_markdown(c, want_name, o.files[0]).c_str(), stdout);
  return c.pass ? kExitOk : kExitCheckFailed;
}

Command setup_compare(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* sub = app.add_subcommand("compare", "Compare another engine's logits or trace with the reference");
  sub->add_option("files", o->files, "THEIRS [OURS]: dumps (.safetensors, or .npy logits)")->required()->expected(1, 2);
  add_model_options(sub, o->model);
  sub->add_option("--prompt-ids", o->prompt_ids, "Prompt ids (.npy, JSON array or comma list) for .npy logits");
  sub->add_option("--token-ids", o->token_ids, "Generated ids (.npy, JSON array or comma list) for .npy logits");
  sub->add_flag("--trace", o->trace, "Compare trace dumps op by op (oracle run --dump-trace)");
  sub->add_flag("--json", o->json, "Print one JSON object");
  sub->add_option("--markdown", o->markdown, "Write a Markdown report to this file");
  add_numerics_option(sub, o->numerics, "--numerics",
                      "The reference's profile: canonical (default) or ggml (as llama.cpp's CPU backend runs the file)");
  sub->add_option("--max-kld", o->t.max_kld, "Per-step KLD limit in nats")->capture_default_str();
  sub->add_option("--max-flips", o->t.max_flips, "Argmax disagreements beyond the tie bound allowed")
      ->capture_default_str();
  sub->add_option("--tie-rel", o->t.tie_rel, "Logit tolerance for ties: tie_rel x max(1, max|logit|)")
      ->capture_default_str();
  sub->add_option("--max-abs", o->t.max_abs, "Per-step max |difference| limit (default: not checked)");
  sub->add_option("--max-nmse", o->t.max_nmse, "NMSE limit (logits: not checked by default; --trace: 1e-7)");
  sub->add_option("--max-ulp", o->t.max_ulp, "Per-step max ULP limit (default: not checked)");
  return {sub, [o] { return guarded("compare", [o] { return o->trace ? compare_trace_files(*o) : compare_logits_files(*o); }); }};
}

}  // namespace oracle::tools
