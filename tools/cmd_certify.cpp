// oracle certify: how far a candidate (quantized) model is from its reference
// on a corpus — KLD, Δp, same top-1, perplexity, greedy agreement — written as
// a certificate (JSON + Markdown + SVG) with PASS/FAIL per threshold
// (docs/certify.md).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "audit/certify.h"
#include "audit/certify_report.h"
#include "reference/base/errors.h"
#include "reference/base/sha256.h"
#include "tools/certify_kld_cli.h"
#include "tools/commands.h"
#include "tools/version.h"

namespace oracle::tools {

struct CertifyOptions {
  std::string reference, candidate, corpus, thresholds, out = "certificate";
  oracle::CertifyOptions options;
  bool progress = true;
  KldCliArgs kld;          // KLD-base modes (tools/certify_kld_cli.h)
  bool ctx_given = false;  // --ctx on the command line
};

static std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), path, "corpus", "cannot open the corpus");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A one-line progress bar on stderr, only when stderr is a terminal.
static void progress_bar(int done, int total) {
  const int width = 40;
  int filled = total > 0 ? done * width / total : width;
  std::fprintf(stderr, "\r[%.*s%*s] %d/%d", filled, "########################################",
               width - filled, "", done, total);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

static void print_summary(const CertifyResult& r, const std::vector<ThresholdCheck>& checks,
                          const std::vector<std::string>& paths) {
  const Summary& s = r.summary;
  std::printf("protocol %s, ctx %d, %d chunks, %lld scored tokens (corpus %d tokens)\n", r.protocol.c_str(),
              r.ctx, r.chunks, (long long)s.n, r.corpus_tokens);
  std::printf("mean KLD        %.6f ± %.6f   (99%% %.6f, max %.6f)\n", s.kld.mean, s.kld.se,
              s.kld_percentiles[2].second, s.kld_percentiles[0].second);
  std::printf("same top-1      %.3f%% ± %.3f%%\n", 100 * s.same_top.mean, 100 * s.same_top.se);
  std::printf("RMS Δp (next)   %.3f%% ± %.3f%%   RMS Δp (ref top) %.3f%%\n", 100 * s.rms_dp_next.mean,
              100 * s.rms_dp_next.se, 100 * s.rms_dp_top.mean);
  std::printf("PPL ref / cand  %.6f / %.6f   ratio %.6f ± %.6f\n", s.perplexity.ppl_ref.mean,
              s.perplexity.ppl_cand.mean, s.perplexity.ratio.mean, s.perplexity.ratio.se);
  if (r.greedy.prompts > 0)
    std::printf("greedy          first divergence mean %.2f of %d steps\n", r.greedy.mean_first_divergence,
                r.greedy.steps);
  else
    std::printf("greedy          not computed (no reference or no candidate model)\n");
  for (const ThresholdCheck& c : checks)
    std::printf("%-4s %s %s %g (value %g)\n", c.pass ? "PASS" : "FAIL", c.threshold.metric.c_str(),
                c.threshold.at_most ? "<=" : ">=", c.threshold.limit, c.value);
  for (const std::string& p : paths) std::printf("wrote %s\n", p.c_str());
}

// Thresholds, certificate files and the summary of a finished result.
static int finish_certify(const CertifyOptions& a, const CertifyResult& r, const CertificateInfo& info) {
  std::vector<Threshold> t = default_thresholds(info.weight_type);
  if (!a.thresholds.empty()) t = load_thresholds(a.thresholds, t);
  std::vector<ThresholdCheck> checks = check_thresholds(r, t);
  std::vector<std::string> paths = write_certificate(a.out, r, info, checks);
  print_summary(r, checks, paths);
  return all_pass(checks) ? kExitOk : kExitCheckFailed;
}

static int run_certify(CertifyOptions& a) {
  if (a.progress && isatty(2)) a.options.progress = progress_bar;
  if (kld_requested(a.kld))
    return run_certify_kld(a.kld, a.reference, a.candidate, a.corpus, a.options, a.ctx_given,
                           [&a](const CertifyResult& r, const CertificateInfo& info) { return finish_certify(a, r, info); });
  require_input(!a.reference.empty() && !a.candidate.empty() && !a.corpus.empty(), "--reference", "option",
                "certify needs --reference, --candidate and --corpus");
  LoadOptions lo;
  lo.context_length_override = a.options.ctx;  // GGUF conversions understate it (PROVENANCE.md)
  Model ref = load_model(a.reference, lo);
  Model cand = load_model(a.candidate, lo);
  std::string corpus = read_text(a.corpus);
  CertifyResult r = certify(ref, cand, corpus, a.options);
  CertificateInfo info{a.reference, ref.sha256, a.candidate, cand.sha256, a.corpus,
                       sha256_hex(corpus.data(), corpus.size()), kOracleVersion,
                       dominant_weight_type(cand), a.options.candidate_kv_int8};
  if (a.options.candidate_kv_int8 && info.weight_type == "F32") info.weight_type = "KV_I8";
  return finish_certify(a, r, info);
}

Command setup_certify(CLI::App& app) {
  auto args = std::make_shared<CertifyOptions>();
  auto* sub = app.add_subcommand("certify", "Certify a candidate (quantized) model against a reference");
  sub->add_option("--reference", args->reference, "Reference model (e.g. F32 GGUF)");
  sub->add_option("--candidate", args->candidate, "Candidate model (e.g. quantized GGUF)");
  sub->add_option("--corpus", args->corpus, "UTF-8 text to score");
  sub->add_option("--ctx", args->options.ctx, "Tokens per chunk")
      ->capture_default_str()
      ->each([args](const std::string&) { args->ctx_given = true; });
  sub->add_option("--protocol", args->options.protocol, "full (default) or llamacpp")->capture_default_str();
  sub->add_option("--thresholds", args->thresholds, "JSON overriding the default thresholds");
  sub->add_option("--out", args->out, "Output directory for the certificate")->capture_default_str();
  sub->add_option("--threads", args->options.threads, "Chunks processed in parallel")->capture_default_str();
  sub->add_option("--max-chunks", args->options.max_chunks, "Score at most this many chunks (0: all)");
  sub->add_flag("--candidate-kv-int8", args->options.candidate_kv_int8,
                "Candidate stores its KV cache as per-row int8 (I8_ROW)");
  sub->add_option("--greedy-prompts", args->options.greedy_prompts, "Prompts for greedy agreement")
      ->capture_default_str();
  sub->add_option("--greedy-prompt-tokens", args->options.greedy_prompt_tokens, "Prompt length")
      ->capture_default_str();
  sub->add_option("--greedy-steps", args->options.greedy_steps, "Greedy tokens per prompt")
      ->capture_default_str();
  sub->add_flag("!--no-progress", args->progress, "No progress bar");
  add_kld_options(sub, args->kld);
  return {sub, [args] { return guarded("certify", [args] { return run_certify(*args); }); }};
}

}  // namespace oracle::tools
