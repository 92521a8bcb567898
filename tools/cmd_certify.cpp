// oracle certify: how far a candidate (quantized) model is from its reference
// on a corpus — KLD, Δp, same top-1, perplexity, greedy agreement — written as
// a certificate (JSON + Markdown + SVG) with PASS/FAIL per threshold
// (docs/certify.md).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "audit/certify/certify.h"
#include "audit/certify/certify_report.h"
#include "base/errors.h"
#include "base/escape.h"
#include "base/utf8.h"
#include "base/sha256.h"
#include "base/thread_pool.h"
#include "tools/certify_kld_cli.h"
#include "base/file_io.h"
#include "tools/commands.h"
#include "tools/device_backend.h"
#include "tools/model_args.h"
#include "tools/numerics_arg.h"
#include "tools/progress.h"
#include "tools/shard.h"
#include "tools/version.h"

extern char** environ;  // for posix_spawnp

namespace oracle::tools {

struct CertifyOptions {
  std::string reference, candidate, corpus, thresholds, out = "certificate";
  std::string tokenizer;  // --tokenizer: the reference's vocabulary (a llama2.c reference embeds none)
  oracle::CertifyOptions options;
  std::string protocol = "full";  // --protocol (parsed into options.protocol)
  bool protocol_given = false;    // --protocol on the command line (a KLD base file implies llamacpp)
  KldOptions kld;          // KLD-base modes (tools/certify_kld_cli.h)
  bool ctx_given = false;  // --ctx on the command line
  bool no_progress = false, quiet = false, json = false, no_png = false;
  bool allow_context_extension = false;  // --ctx above the models' trained context
  ShardOptions shard;                    // --shard I/N --part FILE (tools/shard.h)
  std::string backend = "reference";     // the candidate's forward pass (tools/device_backend.h)
  std::string mode = "deterministic";
  std::string candidate_numerics = "canonical";  // --candidate-numerics (tools/numerics_arg.h)
};

// --backend cuda-emu|cuda: the candidate's logits from the device pipeline (the
// reference model stays on the reference); what the device does not do is refused.
static void use_backend(CertifyOptions& a) {
  const DevicePipeline* dev = require_backend(a.backend);
  const DeviceMode mode = parse_mode(a.mode);
  if (!dev) return;
  const std::string on = " (not on --backend " + a.backend + ")";
  require_input(!a.options.candidate_kv_int8, "--candidate-kv-int8", "option", "the device KV cache is float32" + on);
  require_input(a.options.candidate_numerics == num::NumericsProfile::Canonical || !is_fast(mode), a.candidate_numerics,
                "--candidate-numerics", "the ggml profile runs on the device in deterministic mode only (not --mode " +
                a.mode + ")");
  require_input(a.options.threads == 1, std::to_string(a.options.threads), "--threads", "chunks run one at a time" + on);
  const KldOptions& k = a.kld;
  const char* kld_flag = !k.write_base.empty() ? "--write-kld-base" : !k.reference_base.empty() ? "--reference-kld-base"
                         : !k.candidate_base.empty() ? "--candidate-kld-base" : "--reference-cache";
  require_input(!kld_requested(k), "KLD base", kld_flag, "KLD-base modes are reference-only" + on);
  const num::NumericsProfile numerics = a.options.candidate_numerics;
  a.options.candidate_forward = [dev, mode, numerics](const Model& m, const std::vector<int>& tokens, bool all) {
    return dev->logits(m, tokens, all, mode, numerics);
  };
}

// certificate.svg -> certificate.png with rsvg-convert (librsvg2-bin) when it
// is installed; "" when written, else why not. Written to a temp name, renamed.
static std::string render_png(const std::string& svg, const std::string& png) {
  const std::string tmp = png + ".tmp";
  std::vector<std::string> argv_s = {"rsvg-convert", "--format", "png", "--background-color", "white", "--output", tmp, svg};
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, "rsvg-convert", nullptr, nullptr, argv.data(), environ) != 0)
    return "rsvg-convert not found (apt install librsvg2-bin)";
  int status = 0;
  waitpid(pid, &status, 0);
  std::error_code ec;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::filesystem::remove(tmp, ec);
    return "rsvg-convert failed";
  }
  std::filesystem::rename(tmp, png, ec);
  return ec ? "cannot rename " + tmp : "";
}

static void print_summary(const CertifyResult& r, const std::vector<ThresholdCheck>& checks,
                          const std::vector<std::string>& paths) {
  const Summary& s = r.summary;
  std::printf("protocol %s, ctx %d, %d chunks, %lld scored tokens (corpus %d tokens)\n", protocol_name(r.protocol),
              r.ctx, r.chunks, (long long)s.n, r.corpus_tokens);
  std::printf("mean KLD        %.6g ± %.6g   (99%% %.6g, max %.6g)\n", s.kld.mean, s.kld.se,
              s.kld_percentiles[2].second, s.kld_percentiles[0].second);
  std::printf("same top-1      %.3f%% ± %.3f%%\n", 100 * s.same_top.mean, 100 * s.same_top.se);
  std::printf("RMS Δp (next)   %.3f%% ± %.3f%%   RMS Δp (ref top) %.3f%%\n", 100 * s.rms_dp_next.mean,
              100 * s.rms_dp_next.se, 100 * s.rms_dp_top.mean);
  std::printf("PPL ref / cand  %.6f / %.6f   ratio %.6f ± %.6g\n", s.perplexity.ppl_ref.mean,
              s.perplexity.ppl_cand.mean, s.perplexity.ratio.mean, s.perplexity.ratio.se);
  if (r.greedy.prompts > 0)
    std::printf("greedy          first divergence mean %.2f of %d steps\n", r.greedy.mean_first_divergence,
                r.greedy.steps);
  else
    std::printf("greedy          not computed (no reference or no candidate model)\n");
  std::printf("\n%s\n", llama_perplexity_block(r).c_str());
  for (const ThresholdCheck& c : checks)
    std::printf("%-4s %s %s %g (value %g)\n", c.pass ? "PASS" : "FAIL", c.threshold.metric.c_str(),
                c.threshold.at_most ? "<=" : ">=", c.threshold.limit, c.value);
  std::printf("verdict: %s\n", all_pass(checks) ? "PASS" : "FAIL");
  for (const std::string& p : paths) std::printf("wrote %s\n", p.c_str());
}

// Everything that can be checked before the (long) scoring: the thresholds file
// parses, and --out is a directory or can become one.
static void check_before_scoring(const CertifyOptions& a) {
  if (!a.thresholds.empty()) load_thresholds(a.thresholds, {});
  std::error_code ec;
  require_input(!std::filesystem::exists(a.out, ec) || std::filesystem::is_directory(a.out, ec), a.out, "output",
                "exists and is not a directory (--out names the certificate's directory)");
}

// Thresholds, certificate files and the summary of a finished result.
static int finish_certify(const CertifyOptions& a, const CertifyResult& r, const CertificateInfo& info) {
  std::vector<Threshold> t = default_thresholds(info.weight_type);
  if (!a.thresholds.empty()) t = load_thresholds(a.thresholds, t);
  std::vector<ThresholdCheck> checks = check_thresholds(r, t);
  std::vector<std::string> paths = write_certificate(a.out, r, info, checks);
  std::string png_note = "--no-png";
  if (!a.no_png) {
    png_note = render_png(a.out + "/certificate.svg", a.out + "/certificate.png");
    if (png_note.empty()) paths.push_back(a.out + "/certificate.png");
  }
  if (a.json) {
    nlohmann::json j = certificate_json(r, info, checks);
    j["files"] = paths;
    if (!png_note.empty()) j["png_skipped"] = png_note;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    print_summary(r, checks, paths);
    if (!a.no_png && !png_note.empty()) std::printf("certificate.png not written: %s\n", png_note.c_str());
  }
  return all_pass(checks) ? kExitOk : kExitCheckFailed;
}

// ---- sharded runs (tools/shard.h): items = chunks, then greedy prompts -----------------------
static nlohmann::json record_json(const TokenRecord& t) {
  return {t.chunk, t.pos, t.next, t.top_ref, t.top_cand, exact_double(t.kld), exact_double(t.nll_ref),
          exact_double(t.nll_cand), exact_double(t.dp_top), exact_double(t.dp_next)};
}

static TokenRecord record_from(const nlohmann::json& j) {
  TokenRecord t;
  t.chunk = j.at(0), t.pos = j.at(1), t.next = j.at(2), t.top_ref = j.at(3), t.top_cand = j.at(4);
  t.kld = exact_double_from(j.at(5), "part");
  t.nll_ref = exact_double_from(j.at(6), "part");
  t.nll_cand = exact_double_from(j.at(7), "part");
  t.dp_top = exact_double_from(j.at(8), "part");
  t.dp_next = exact_double_from(j.at(9), "part");
  return t;
}

// Everything the certificate depends on: the inputs' identity, the result's
// head and the output options (every part must agree).
static nlohmann::json certify_job(const CertifyOptions& a, const CertifyResult& head, const CertificateInfo& info) {
  return {{"reference", info.reference_path}, {"reference_sha256", info.reference_sha256},
          {"candidate", info.candidate_path}, {"candidate_sha256", info.candidate_sha256},
          {"corpus", info.corpus_path}, {"corpus_sha256", info.corpus_sha256}, {"version", info.tool_version},
          {"weight_type", info.weight_type}, {"kv_int8", info.candidate_kv_int8},
          {"candidate_numerics", std::string(num::numerics_profile_name(info.candidate_numerics))},
          {"trained_context", info.trained_context}, {"protocol", protocol_name(head.protocol)}, {"ctx", head.ctx},
          {"corpus_tokens", head.corpus_tokens}, {"chunks", head.chunks}, {"greedy_steps", a.options.greedy_steps},
          {"out", a.out}, {"thresholds", a.thresholds}, {"no_png", a.no_png}, {"json", a.json}};
}

int finish_certify_job(const nlohmann::json& job, const std::vector<nlohmann::json>& results) {
  CertifyOptions a;
  a.out = job.at("out"), a.thresholds = job.at("thresholds"), a.no_png = job.at("no_png"), a.json = job.at("json");
  a.options.greedy_steps = job.at("greedy_steps");
  CertificateInfo info{job.at("reference"), job.at("reference_sha256"), job.at("candidate"),
                       job.at("candidate_sha256"), job.at("corpus"), job.at("corpus_sha256"), job.at("version"),
                       job.at("weight_type"), job.at("kv_int8")};
  info.trained_context = job.at("trained_context");
  info.candidate_numerics = numerics_arg(job.value("candidate_numerics", std::string("canonical")), "candidate_numerics");
  CertifyItems items;
  items.head.protocol = parse_protocol(job.at("protocol"));
  items.head.ctx = job.at("ctx"), items.head.corpus_tokens = job.at("corpus_tokens");
  items.head.chunks = job.at("chunks");
  for (size_t i = 0; i < results.size(); i++) {
    if ((int)i >= items.head.chunks) {
      items.first_divergence.push_back(results[i].get<int>());
      continue;
    }
    items.chunks.emplace_back();
    for (const nlohmann::json& t : results[i]) items.chunks.back().push_back(record_from(t));
  }
  return finish_certify(a, certify_reduce(std::move(items), a.options), info);
}

// This worker's items as {index, result}: a chunk's records, a prompt's first divergence.
static std::vector<nlohmann::json> item_results(const CertifyItems& it, const ShardRun& run) {
  std::vector<nlohmann::json> out;
  const size_t n_chunks = it.chunks.size();
  for (size_t i = 0; i < n_chunks + it.first_divergence.size(); i++) {
    if (!run.mine(i)) continue;
    nlohmann::json r = nlohmann::json::array();
    if (i < n_chunks)
      for (const TokenRecord& t : it.chunks[i]) r.push_back(record_json(t));
    else
      r = it.first_divergence[i - n_chunks];
    out.push_back({{"index", i}, {"result", r}});
  }
  return out;
}

// The models' context is certify's --ctx: a refusal names that option, not context_length.
template <class Load>
static auto ctx_named(Load load) {
  try {
    return load();
  } catch (const InputError& e) {
    if (e.field() != "context_length") throw;
    throw InputError(e.file(), "--ctx", input_error_message(e));
  }
}

static int run_certify(CertifyOptions& a) {
  if (kld_requested(a.kld) && !a.protocol_given) a.protocol = "llamacpp";  // base files hold llama-perplexity's protocol
  a.options.protocol = parse_protocol(a.protocol);
  a.options.candidate_numerics = numerics_arg(a.candidate_numerics, "--candidate-numerics");
  use_backend(a);
  check_before_scoring(a);
  ShardRun run("certify", a.shard);
  Progress progress("certify", 0, run.root() && !a.no_progress && !a.quiet && !a.json);  // chunks + greedy prompts
  a.options.progress = [&progress](int done, int total) { progress.update(done, total); };
  if (kld_requested(a.kld)) {
    require_input(!run.sharded(), "--shard", "shard", "the KLD-base modes run in one process (no --shard, no mpirun)");
    return run_certify_kld(a.kld, a.reference, a.candidate, a.corpus, a.options, a.ctx_given,
                           [&](const CertifyResult& r, const CertificateInfo& info) {
                             progress.finish();
                             return finish_certify(a, r, info);
                           });
  }
  require_input(!a.reference.empty() && !a.candidate.empty() && !a.corpus.empty(), "command line", "--reference",
                "certify needs --reference, --candidate and --corpus");
  LoadOptions lo;
  lo.context_length_override = a.options.ctx;  // above the file's: --allow-context-extension
  lo.allow_context_extension = a.allow_context_extension;  // (GGUF conversions understate it, PROVENANCE.md)
  ModelOptions ra;
  ra.model = a.reference;
  ra.tokenizer = a.tokenizer;
  ra.context = a.options.ctx;
  ra.allow_context_extension = a.allow_context_extension;
  Model ref, cand;
  auto load_reference = [&] {
    ref = ctx_named([&] {  // --tokenizer, or the model's own; the loaded Tokenizer is freed here
      LoadedModel lm = load_model_and_tokenizer(ra);
      Model m = std::move(lm.model);
      m.vocab = lm.tokenizer.vocab();
      return m;
    });
  };
  auto load_candidate = [&] { cand = ctx_named([&] { return load_model(a.candidate, lo); }); };
  if (a.options.threads >= 2) {  // both files hashed and checked at once; the reference's error first
    ThreadPool two(2);
    two.parallel_for(2, [&](int begin, int) { begin == 0 ? load_reference() : load_candidate(); });
  } else {
    load_reference();
    load_candidate();
  }
  std::string corpus = read_corpus(a.corpus);
  CertifyItems items = certify_items(ref, cand, corpus, a.options, [&run](int i) { return run.mine((size_t)i); });
  progress.finish();
  CertificateInfo info{a.reference, ref.sha256, a.candidate, cand.sha256, a.corpus,
                       sha256_hex(corpus.data(), corpus.size()), kOracleVersion,
                       dominant_weight_type(cand), a.options.candidate_kv_int8};
  info.candidate_numerics = a.options.candidate_numerics;
  if (ref.config.context_extended || cand.config.context_extended)
    info.trained_context = std::min(ref.config.trained_context, cand.config.trained_context);
  if (a.options.candidate_kv_int8 && info.weight_type == "F32") info.weight_type = "KV_I8";
  if (!run.sharded()) return finish_certify(a, certify_reduce(std::move(items), a.options), info);
  const nlohmann::json job = certify_job(a, items.head, info);
  const size_t n_items = items.chunks.size() + items.first_divergence.size();
  return run.finish(job, n_items, item_results(items, run),
                    [&job](const std::vector<nlohmann::json>& all) { return finish_certify_job(job, all); });
}

Command setup_certify(CLI::App& app) {
  auto args = std::make_shared<CertifyOptions>();
  auto* sub = app.add_subcommand("certify", "Certify a candidate (quantized) model against a reference");
  sub->add_option("--reference", args->reference, "Reference model (e.g. F32 GGUF, or a llama2.c .bin with --tokenizer)");
  sub->add_option("--tokenizer,-z", args->tokenizer,
                  "The reference's tokenizer: llama2.c tokenizer.bin or a GGUF (default: its own, or one beside it)");
  sub->add_option("--candidate", args->candidate, "Candidate model (e.g. quantized GGUF)");
  sub->add_option("--corpus", args->corpus, "UTF-8 text to score");
  sub->add_option("--ctx", args->options.ctx, "Tokens per chunk")
      ->capture_default_str()
      ->check(int_in<int>(4, 1 << 24))
      ->each([args](const std::string&) { args->ctx_given = true; });
  sub->add_flag("--allow-context-extension", args->allow_context_extension,
                "Allow --ctx above the models' trained context (recorded in the certificate)");
  sub->add_option("--protocol", args->protocol, "full (default) or llamacpp (implied by the KLD-base options)")
      ->capture_default_str()
      ->each([args](const std::string&) { args->protocol_given = true; });
  sub->add_option("--thresholds", args->thresholds, "JSON overriding the default thresholds");
  sub->add_option("--out", args->out, "Output directory for the certificate")->capture_default_str();
  sub->add_option("--threads", args->options.threads, "Threads (at 2 or more the two models run at the same time, each on its share; changes no bit)")->capture_default_str()
      ->check(int_in<int>(1, 1024));
  sub->add_option("--max-chunks", args->options.max_chunks, "Score at most this many chunks (0: all)")
      ->check(int_in<int>(0));
  sub->add_flag("--candidate-kv-int8", args->options.candidate_kv_int8,
                "Candidate stores its KV cache as per-row int8 (I8_ROW)");
  add_numerics_option(sub, args->candidate_numerics, "--candidate-numerics",
                      "The candidate's operation orders: canonical (default) or ggml (as llama.cpp's CPU backend "
                      "runs the file); the reference stays canonical");
  sub->add_option("--greedy-prompts", args->options.greedy_prompts, "Prompts for greedy agreement")
      ->capture_default_str()->check(int_in<int>(0, 1 << 20));
  sub->add_option("--greedy-prompt-tokens", args->options.greedy_prompt_tokens, "Prompt length")
      ->capture_default_str()->check(int_in<int>(0, 1 << 24));
  sub->add_option("--greedy-steps", args->options.greedy_steps, "Greedy tokens per prompt")
      ->capture_default_str()->check(int_in<int>(1, 1 << 24));
  sub->add_flag("--no-progress", args->no_progress, "No progress on stderr (same as --quiet)");
  sub->add_flag("--quiet,-q", args->quiet, "No progress on stderr");
  sub->add_flag("--json", args->json, "Print the certificate JSON (and the files written) instead of the summary");
  sub->add_flag("--no-png", args->no_png, "Do not render certificate.png (needs rsvg-convert: librsvg2-bin)");
  add_kld_options(sub, args->kld);
  add_shard_options(sub, args->shard);
  sub->add_option("--backend", args->backend, "reference, cuda-emu or cuda: where the candidate runs");
  sub->add_option("--mode", args->mode, "Device backends: deterministic, fast, fast-tf32 or fast-bf16");
  return {sub, [args] { return run_certify(*args); }};
}

}  // namespace oracle::tools
