// oracle bench: prefill / decode speed of the CPU reference on one model, with
// the KV cache and process memory, and a same-run memory-bandwidth baseline
// (docs/cli.md#bench, docs/performance.md). -r N repeats the measurement and
// reports mean ± standard deviation, in llama-bench's table (pp/tg rows) or JSON.
// Without --prompt-tokens / --decode-tokens the run fits itself to the context.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "base/numerics_version.h"

#include "distributed/tensor_parallel.h"
#include "base/errors.h"
#include "base/huge_pages.h"
#include "base/mmap_file.h"
#include "reference/compute/forward.h"
#include "reference/compute/isa.h"
#include "numerics/numerics.h"
#include "base/thread_pool.h"
#include "tools/bench_support.h"
#include "tools/commands.h"
#include "tools/device_backend.h"
#include "tools/model_args.h"
#include "tools/numerics_arg.h"
#include "tools/progress.h"
#include "tools/spec_args.h"

namespace oracle::tools {

struct BenchOptions {
  ModelOptions model;
  int prompt_tokens = 128;
  int decode_tokens = 128;
  int probe_repeats = 3;
  int repetitions = 5;               // -r N: measurements averaged (llama-bench's default)
  std::string output = "md";         // -o md|json (llama-bench); --json = -o json
  bool json = false, quiet = false;
  CLI::Option* prompt_opt = nullptr;  // given explicitly? (else fitted to the context)
  CLI::Option* decode_opt = nullptr;
  DraftOptions spec;  // --draft-model / --spec-ngram (tools/spec_args.h)
  std::string backend = "reference";  // or cuda-emu / cuda (tools/device_backend.h)
  std::string mode = "deterministic"; // device backends: deterministic or fast
  std::string cuda_graphs = "on";     // device backends: decode steps as CUDA graphs (on, off, both)
  int tp = 1;                         // --tp N: tensor-parallel ranks (mpirun -np N)
  std::string numerics = "canonical"; // --numerics (tools/numerics_arg.h): the reference's profile
  num::NumericsProfile profile = num::NumericsProfile::Canonical;
};

struct BenchTimes {
  double prefill_s = 0.0;  // one forward() over the prompt
  double ttft_s = 0.0;     // prefill + choosing the first token
  double decode_s = 0.0;   // decode_tokens single-token forward() calls
};

// Prompt ids: BOS then a fixed arithmetic sequence (content does not affect speed).
static std::vector<int> bench_prompt(const Config& c, int n) {
  std::vector<int> ids((size_t)n);
  for (int i = 0; i < n; i++) ids[(size_t)i] = i == 0 ? 1 % c.vocab_size : (3 + 31 * i) % c.vocab_size;
  return ids;
}

static int greedy(const std::vector<float>& logits) {
  return num::argmax_lowest(logits.data(), (int)logits.size());
}

static BenchTimes time_generation(const Model& m, KvCache& kv, const BenchOptions& o,
                                  ThreadPool& pool, const TensorSplit* split) {
  kv.truncate(0, 0);  // every repetition starts from an empty cache
  ForwardOptions fo;
  fo.threads = o.model.threads;
  fo.pool = &pool;
  fo.split = split;  // null: one rank
  fo.numerics = o.profile;
  const std::vector<int> prompt = bench_prompt(m.config, o.prompt_tokens);
  BenchTimes t;
  Stopwatch prefill;
  std::vector<float> logits = forward(m, kv, 0, prompt, fo);
  t.prefill_s = prefill.seconds();
  int token = greedy(logits);
  t.ttft_s = prefill.seconds();
  Stopwatch decode;
  for (int i = 0; i < o.decode_tokens; i++) {
    const int one[1] = {token};
    token = greedy(forward(m, kv, 0, one, fo));
  }
  t.decode_s = decode.seconds();
  return t;
}

// Bytes of weights one decode step reads (every tensor once; a tied head is the embedding).
static uint64_t weight_bytes(const Model& m) {
  uint64_t n = 0;
  for (const TensorInfo& t : m.tensors) n += t.n_bytes;
  return n;
}

// The checkpoint's files (a safetensors folder: its shards).
static std::vector<const MappedFile*> checkpoint_files(const Model& m) {
  std::vector<const MappedFile*> files;
  if (m.format == "safetensors")
    for (const auto& f : m.extra_files) files.push_back(f.get());
  else if (m.file)
    files.push_back(m.file.get());
  return files;
}

// The checkpoint's size: what the RSS bound counts (a huge-page copy holds at
// most 2 MiB more per file, within the bound's 64 MiB slack).
static uint64_t mapped_file_bytes(const Model& m) {
  uint64_t n = 0;
  for (const MappedFile* f : checkpoint_files(m)) n += f->size();
  return n;
}

// Where the weights live, and how much of them the kernel put on 2 MiB pages.
static nlohmann::json weights_residency_json(const Model& m) {
  const std::vector<const MappedFile*> files = checkpoint_files(m);
  uint64_t huge = 0;
  for (const MappedFile* f : files) huge += anon_huge_bytes(f->data(), f->size());
  const FileResidency r = files.empty() ? FileResidency::mapped : files.front()->residency();
  return {{"weights_residency", residency_name(r)}, {"weights_huge_page_bytes", huge}};
}

// Peak RSS budget: mapped file + KV formula + 64 MiB (code, activations,
// tokenizer, allocator slack) -- issue 11's bound, checked in `rss_within_bound`.
constexpr uint64_t kRssSlackBytes = 64ull << 20;

static ProbeResult probe_weights(const Model& m, int repeats) {
  std::vector<ByteRange> tensors;
  for (const TensorInfo& t : m.tensors) tensors.push_back({t.data, (size_t)t.n_bytes});
  return sequential_read_probe(tensors, repeats);
}

static nlohmann::json bench_json(const Model& m, const BenchOptions& o, const BenchTimes& t,
                                 const KvCache& kv, const ProcessMemory& before,
                                 const ProbeResult& probe) {
  const Config& c = m.config;
  const ProcessMemory after = read_process_memory();
  const KvMemoryReport kvr = kv.memory_report();
  // 2 * L * T * H_kv * D_h * 4 with T = tokens the run stored (prompt + decoded),
  // and the same with T = the whole context (what a full-context cache would take).
  const uint64_t kv_formula = kvr.bytes_formula;
  const uint64_t kv_full = 2ull * c.n_layers * (uint64_t)c.seq_len * c.n_kv_heads * c.head_dim * 4;
  const uint64_t file = mapped_file_bytes(m);
  const uint64_t rss_bound = file + kv_formula + kRssSlackBytes;
  const double decode_tok_s = o.decode_tokens / t.decode_s;
  const double decode_bytes_s = decode_tok_s * (double)weight_bytes(m);
  return {
      {"model", m.path}, {"model_sha256", m.sha256}, {"format", m.format},
      {"threads", o.model.threads}, {"context", c.seq_len},
      {"prefill_tokens", o.prompt_tokens}, {"prefill_tok_s", o.prompt_tokens / t.prefill_s},
      {"decode_tokens", o.decode_tokens}, {"decode_tok_s", decode_tok_s},
      {"ttft_ms", t.ttft_s * 1e3}, {"tpot_ms", t.decode_s * 1e3 / o.decode_tokens},
      {"kv_bytes_formula", kv_formula}, {"kv_bytes_allocated", kvr.bytes_allocated},
      {"kv_tokens", kvr.tokens_stored}, {"kv_bytes_full_context", kv_full},
      {"weight_bytes", weight_bytes(m)}, {"file_bytes", file},
      {"rss_bound_bytes", rss_bound}, {"rss_within_bound", after.peak_rss <= rss_bound},
      {"peak_rss_bytes", after.peak_rss}, {"rss_file_backed", after.rss_file},
      {"rss_anon", after.rss_anon}, {"rss_anon_before_load", before.rss_anon},
      {"probe_read_bytes_s", probe.bytes_per_s}, {"decode_weight_bytes_s", decode_bytes_s},
      {"decode_bandwidth_ratio", probe.bytes_per_s > 0 ? decode_bytes_s / probe.bytes_per_s : 0.0},
      {"probe_checksum", probe.checksum},
  };
}

// ---- repetitions --------------------------------------------------------------------------
struct MeanSd {
  double mean = 0.0, sd = 0.0;  // sd: sample standard deviation (n - 1), 0 for one sample
};
static MeanSd mean_sd(const std::vector<double>& v) {
  MeanSd r;
  for (double x : v) r.mean += x / (double)v.size();
  double ss = 0.0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.sd = v.size() > 1 ? std::sqrt(ss / (double)(v.size() - 1)) : 0.0;
  return r;
}

// Without explicit token counts: llama-bench's pp128 / tg128 when they fit,
// else half the context each (a 128-token model gets pp64 + tg64).
static void fit_to_context(BenchOptions& o, int context) {
  const bool given = o.prompt_opt->count() > 0 || o.decode_opt->count() > 0;
  if (given || o.prompt_tokens + o.decode_tokens <= context) return;
  o.prompt_tokens = std::max(1, context / 2);
  o.decode_tokens = std::max(1, context - o.prompt_tokens);
}

static nlohmann::json stats_json(const std::vector<double>& pp, const std::vector<double>& tg) {
  const MeanSd p = mean_sd(pp), t = mean_sd(tg);
  return {{"prefill_tok_s", p.mean}, {"prefill_tok_s_sd", p.sd}, {"decode_tok_s", t.mean}, {"decode_tok_s_sd", t.sd},
          {"samples", {{"prefill_tok_s", pp}, {"decode_tok_s", tg}}}};
}

static double n_params(const Model& m) {
  double n = 0;
  for (const TensorInfo& t : m.tensors) {
    double e = 1;
    for (auto d : t.shape) e *= (double)d;
    n += e;
  }
  return n;
}

// ---- llama-bench's markdown table -------------------------------------------------------------
static std::string size_text(double bytes) {
  char buf[32];
  if (bytes >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  else std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024));
  return buf;
}

static void print_table(const nlohmann::json& j, const Model& m, const std::string& backend) {
  const std::string name = m.path.empty() ? "embedded (synth tiny)" : std::filesystem::path(m.path).filename().string();
  char ppn[32], tgn[48], pps[64], tgs[64], par[32];
  std::snprintf(ppn, sizeof ppn, "pp%d", j["prefill_tokens"].get<int>());
  // decode follows the prefill, so its tokens attend to N earlier ones: llama-bench's "tgM @ dN"
  std::snprintf(tgn, sizeof tgn, "tg%d @ d%d", j["decode_tokens"].get<int>(), j["prefill_tokens"].get<int>());
  std::snprintf(pps, sizeof pps, "%.2f ± %.2f", j["prefill_tok_s"].get<double>(), j["prefill_tok_s_sd"].get<double>());
  std::snprintf(tgs, sizeof tgs, "%.2f ± %.2f", j["decode_tok_s"].get<double>(), j["decode_tok_s_sd"].get<double>());
  std::snprintf(par, sizeof par, "%.2f M", n_params(m) / 1e6);
  const std::string size = size_text(j.value("weight_bytes", 0.0));
  std::printf("| %-24s | %10s | %9s | %-9s | %7s | %13s | %20s |\n", "model", "size", "params", "backend", "threads",
              "test", "t/s");
  std::printf("| %s | %s: | %s: | %s | %s: | %s: | %s: |\n", std::string(24, '-').c_str(), std::string(9, '-').c_str(),
              std::string(8, '-').c_str(), std::string(9, '-').c_str(), std::string(6, '-').c_str(),
              std::string(12, '-').c_str(), std::string(19, '-').c_str());
  for (int row = 0; row < 2; row++)
    std::printf("| %-24s | %10s | %9s | %-9s | %7d | %13s | %21s |\n", name.c_str(), size.c_str(), par, backend.c_str(),
                j["threads"].get<int>(), row == 0 ? ppn : tgn, row == 0 ? pps : tgs);
  std::printf("\n%d repetition(s), context %d.\n", j["repetitions"].get<int>(), j["context"].get<int>());
}

static void print_human(const nlohmann::json& j) {
  std::string features;
  for (const auto& f : j["cpu_features"]) features += (features.empty() ? "" : " ") + f.get<std::string>();
  std::printf("ISA path %s (CPU features: %s); CPU vendor %s, decode prefetch %s (ORACLE_PREFETCH, docs/cli.md)\n",
              j["isa"].get<std::string>().c_str(), features.c_str(), j["cpu_vendor"].get<std::string>().c_str(),
              j["decode_prefetch"].get<std::string>().c_str());
  std::printf("weights %s (%llu bytes on 2 MiB pages; ORACLE_WEIGHTS, docs/cli.md)\n",
              j["weights_residency"].get<std::string>().c_str(), j["weights_huge_page_bytes"].get<unsigned long long>());
  std::printf("time to first token %.2f ms, %.3f ms per decoded token (%.0f%% of a plain weight read)\n",
              j["ttft_ms"].get<double>(), j["tpot_ms"].get<double>(), 100.0 * j["decode_bandwidth_ratio"].get<double>());
  std::printf("KV cache %llu bytes (formula %llu); peak RSS %llu bytes (file-backed %llu, anon %llu)\n",
              j["kv_bytes_allocated"].get<unsigned long long>(), j["kv_bytes_formula"].get<unsigned long long>(),
              j["peak_rss_bytes"].get<unsigned long long>(), j["rss_file_backed"].get<unsigned long long>(),
              j["rss_anon"].get<unsigned long long>());
  std::printf("RSS bound: file %llu + KV formula %llu (%llu tokens) + 64 MiB = %llu bytes: %s\n",
              j["file_bytes"].get<unsigned long long>(), j["kv_bytes_formula"].get<unsigned long long>(),
              j["kv_tokens"].get<unsigned long long>(), j["rss_bound_bytes"].get<unsigned long long>(),
              j["rss_within_bound"].get<bool>() ? "within" : "EXCEEDED");
}

// The target's tokenizer, for checking a draft model's vocabulary piece by piece.
static Vocab target_vocab(const BenchOptions& o) {
  if (o.spec.draft_model.empty()) return {};
  return load_model_and_tokenizer(o.model).tokenizer.vocab();
}

static bool json_output(const BenchOptions& o) { return o.json || o.output == "json"; }

static void print_report(const nlohmann::json& j, const Model& m, const BenchOptions& o) {
  if (json_output(o)) {
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  print_table(j, m, o.backend);
  if (o.backend == "reference") print_human(j);
}

// The fields every device report carries besides the pipeline's own.
static void add_device_fields(nlohmann::json& j, const Model& m, const BenchOptions& o) {
  stamp_numerics_version(j);  // docs/numerics.md "Versioning"
  j["backend"] = o.backend;
  j["numerics"] = o.numerics;
  j["threads"] = o.model.threads;
  j["repetitions"] = o.repetitions;
  j["tpot_ms"] = 1e3 / j["decode_tok_s"].get<double>();
  j["weight_bytes"] = j["decode_weight_bytes"];
  j["params"] = n_params(m);
}

// One side of a paired device bench: a mode, with or without decode-step graphs.
struct BenchVariant {
  const char* label;  // its key in the report ("deterministic", "fast", "eager", "graphs")
  DeviceMode mode;
  bool cuda_graphs;
};

// A paired bench (--mode both, --cuda-graphs both): the two variants alternate,
// repetition by repetition (the machine's noise falls on both alike); the report
// gives each one's means and `ratio`_decode / _prefill = second's tokens/s over
// the first's (the determinism tax; the graphs' speed-up, whose prefill ratio —
// prefill is never graphed — shows the run's noise).
static int bench_device_pair(const DevicePipeline& dev, const Model& m, const BenchOptions& o,
                             const BenchVariant (&v)[2], const std::string& ratio, const char* what) {
  Progress progress("bench", 2 * o.repetitions, !o.quiet && !json_output(o));
  std::vector<double> pp[2], tg[2];
  nlohmann::json last[2];
  for (int r = 0; r < o.repetitions; r++) {
    for (int k = 0; k < 2; k++) {
      last[k] = dev.bench(m, v[k].mode, v[k].cuda_graphs, o.prompt_tokens, o.decode_tokens, o.profile);
      pp[k].push_back(last[k]["prefill_tok_s"].get<double>());
      tg[k].push_back(last[k]["decode_tok_s"].get<double>());
      progress.update(2 * r + k + 1);
    }
  }
  progress.finish();
  nlohmann::json j = last[0];
  for (int k = 0; k < 2; k++) {
    last[k].update(stats_json(pp[k], tg[k]));
    j[v[k].label] = last[k];
  }
  j.update(stats_json(pp[0], tg[0]));  // the top level: the first variant
  j["mode"] = v[0].mode == v[1].mode ? mode_name(v[0].mode) : "both";
  j["cuda_graphs"] = v[0].cuda_graphs == v[1].cuda_graphs ? nlohmann::json(v[0].cuda_graphs) : nlohmann::json("both");
  j[ratio + "_decode"] = last[1]["decode_tok_s"].get<double>() / last[0]["decode_tok_s"].get<double>();
  j[ratio + "_prefill"] = last[1]["prefill_tok_s"].get<double>() / last[0]["prefill_tok_s"].get<double>();
  add_device_fields(j, m, o);
  if (json_output(o)) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    print_table(j, m, o.backend);
    std::printf("%s (%s / %s tokens/s, means of %d): decode %.3fx, prefill %.3fx\n", what, v[1].label, v[0].label,
                o.repetitions, j[ratio + "_decode"].get<double>(), j[ratio + "_prefill"].get<double>());
  }
  return kExitOk;
}

// --cuda-graphs on | off | both -> whether the single runs use graphs; InputError otherwise.
static bool parse_graphs(const BenchOptions& o) {
  require_input(o.cuda_graphs == "on" || o.cuda_graphs == "off" || o.cuda_graphs == "both", o.cuda_graphs,
                "--cuda-graphs", "expected on, off or both");
  require_input(o.cuda_graphs == "on" || o.backend != "reference", o.backend, "--cuda-graphs",
                "CUDA graphs are a device backend's (--backend cuda-emu or cuda)");
  require_input(o.cuda_graphs != "both" || o.mode != "both", o.mode, "--mode",
                "--mode both and --cuda-graphs both cannot be paired in one run: pick one of them");
  return o.cuda_graphs != "off";
}

static int bench_device(const DevicePipeline& dev, const Model& m, const BenchOptions& o) {
  require_input(!speculative_enabled(o.spec), o.backend, "--backend", "speculative bench runs on the reference only");
  const bool graphs = parse_graphs(o);
  if (o.mode == "both") {
    const BenchVariant v[2] = {{"deterministic", DeviceMode::Deterministic, graphs}, {"fast", DeviceMode::Fast, graphs}};
    return bench_device_pair(dev, m, o, v, "determinism_tax", "determinism tax");
  }
  const DeviceMode mode = parse_mode(o.mode);
  if (o.cuda_graphs == "both") {
    const BenchVariant v[2] = {{"eager", mode, false}, {"graphs", mode, true}};
    return bench_device_pair(dev, m, o, v, "graph_speedup", "CUDA graphs' speed-up");
  }
  Progress progress("bench", o.repetitions, !o.quiet && !json_output(o));
  std::vector<double> pp, tg;
  nlohmann::json j;
  for (int r = 0; r < o.repetitions; r++) {
    j = dev.bench(m, mode, graphs, o.prompt_tokens, o.decode_tokens, o.profile);
    pp.push_back(j["prefill_tok_s"].get<double>());
    tg.push_back(j["decode_tok_s"].get<double>());
    progress.update(r + 1);
  }
  progress.finish();
  j.update(stats_json(pp, tg));
  j.update(weights_residency_json(m));
  add_device_fields(j, m, o);
  print_report(j, m, o);
  return kExitOk;
}

// --tp N: this process is one of the N ranks of `mpirun -np N`; it keeps only
// the mapped pages of its rows (the load touched every block once).
static std::unique_ptr<dist::Communicator> tp_world(const BenchOptions& o, const Model& m) {
  if (o.tp == 1) return nullptr;
  require_input(o.backend == "reference", o.backend, "--tp", "tensor parallelism runs on the reference backend");
  require_input(!speculative_enabled(o.spec), "--tp", "tp", "a speculative bench runs on one rank");
  std::unique_ptr<dist::Communicator> world = dist::world();
  require_input(world->size() == o.tp, "--tp", "tp",
                "--tp " + std::to_string(o.tp) + " measures that many MPI ranks: run it as mpirun -np " +
                    std::to_string(o.tp) + " (this process has " + std::to_string(world->size()) + ")");
  if (m.file) m.file->drop_resident();
  return world;
}

// Every rank's memory and traffic (rank order), gathered to rank 0.
static nlohmann::json tp_ranks_json(dist::Communicator& comm, const KvCache& kv) {
  const ProcessMemory mem = read_process_memory();
  const nlohmann::json mine{{"rank", comm.rank()}, {"rss_bytes", mem.rss}, {"rss_file_backed", mem.rss_file},
                            {"rss_anon", mem.rss_anon}, {"kv_bytes_allocated", kv.memory_report().bytes_allocated},
                            {"all_gathers", comm.stats().all_gathers}, {"bytes_received", comm.stats().bytes_received}};
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& s : comm.gather(mine.dump())) all.push_back(nlohmann::json::parse(s));
  return all;
}

int run_bench(BenchOptions o) {
  const ProcessMemory before = read_process_memory();
  if (o.tp != 1) o.model.residency = FileResidency::mapped;  // each rank keeps only its rows (tp_world)
  const Model m = load_model_arg(o.model);
  if (o.mode != "both") parse_mode(o.mode);  // a bad --mode is refused for every backend
  require_input(o.mode != "both" || o.backend != "reference", o.mode, "--mode", "both is for device backends (cuda-emu, cuda)");
  parse_graphs(o);  // --cuda-graphs too
  o.profile = numerics_arg(o.numerics);
  require_input(o.profile == num::NumericsProfile::Canonical || !speculative_enabled(o.spec), o.numerics, "--numerics",
                "the ggml profile is benched on the plain loop only (no speculative decoding)");
  require_input(o.profile == num::NumericsProfile::Canonical || o.backend == "reference" || o.mode == "deterministic",
                o.numerics, "--numerics", "the ggml profile runs on the device in deterministic mode only (not --mode " +
                o.mode + ")");
  fit_to_context(o, m.config.seq_len);
  const int64_t positions = (int64_t)o.prompt_tokens + o.decode_tokens;  // int64: no overflow
  require_input(positions <= m.config.seq_len, m.path, "context_length",
                std::to_string(positions) + " positions do not fit a context of " +
                    std::to_string(m.config.seq_len) + " (use --context or fewer tokens)");
  require_input(o.output == "md" || o.output == "json", o.output, "--output", "want md or json");
  const std::unique_ptr<dist::Communicator> world = tp_world(o, m);
  std::optional<TensorSplit> split;  // this rank's slices under --tp
  if (world) split = dist::tensor_split(*world);
  const TensorSplit* sp = split ? &*split : nullptr;
  if (const DevicePipeline* dev = require_backend(o.backend)) return bench_device(*dev, m, o);
  const Vocab vocab = target_vocab(o);
  if (speculative_enabled(o.spec))  // a draft that does not fit is refused before anything is timed
    make_draft_source(o.spec, m, &vocab, SamplerConfig{}, o.model.threads);
  KvCacheOptions ko;
  ko.reserve_tokens = o.prompt_tokens + o.decode_tokens;  // sized by the run, never the context
  KvCache kv(kv_slice_config(m.config, sp), ko);  // this rank's kv heads (all with one rank)
  ThreadPool pool(o.model.threads);
  Progress progress("bench", o.repetitions, !o.quiet && !json_output(o));
  std::vector<double> pp, tg;
  BenchTimes t;
  for (int r = 0; r < o.repetitions; r++) {
    t = time_generation(m, kv, o, pool, sp);
    pp.push_back(o.prompt_tokens / t.prefill_s);
    tg.push_back(o.decode_tokens / t.decode_s);
    progress.update(r + 1);
  }
  progress.finish();
  // Under --tp the probe would map every page back in: skipped (0), memory read first.
  const nlohmann::json ranks = world ? tp_ranks_json(*world, kv) : nlohmann::json();
  const ProbeResult probe = world ? ProbeResult{} : probe_weights(m, o.probe_repeats);
  nlohmann::json j = bench_json(m, o, t, kv, before, probe);
  j.update(weights_residency_json(m));
  stamp_numerics_version(j);  // docs/numerics.md "Versioning"
  if (world) {
    j["tp"] = o.tp;
    j["tp_ranks"] = ranks;
    if (!world->root()) return kExitOk;  // rank 0 reports
  }
  // Speeds: the mean over the repetitions (bench_json has the last one); the rest follows from them.
  j.update(stats_json(pp, tg));
  j["tpot_ms"] = 1e3 / j["decode_tok_s"].get<double>();
  j["decode_weight_bytes_s"] = j["decode_tok_s"].get<double>() * j["weight_bytes"].get<double>();
  j["decode_bandwidth_ratio"] = probe.bytes_per_s > 0 ? j["decode_weight_bytes_s"].get<double>() / probe.bytes_per_s : 0.0;
  j["repetitions"] = o.repetitions;
  j["backend"] = "reference";
  j["numerics"] = o.numerics;
  j["isa"] = isa::isa_name(isa::kernels().isa);  // the CPU kernels' path (reference/compute/isa.h)
  j["cpu_features"] = isa::feature_names(isa::cpu_features());
  j["cpu_vendor"] = isa::vendor_name(isa::cpu_vendor());
  j["decode_prefetch"] = isa::prefetch_name(isa::decode_prefetch());  // ORACLE_PREFETCH or the vendor's (isa.h)
  j["params"] = n_params(m);
  if (speculative_enabled(o.spec))
    j.update(bench_speculative(m, o.spec, vocab, bench_prompt(m.config, o.prompt_tokens), o.decode_tokens,
                               o.model.threads));
  print_report(j, m, o);
  if (!json_output(o) && speculative_enabled(o.spec)) print_speculative_bench(j);
  return kExitOk;
}

Command setup_bench(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand("bench", "Measure prefill/decode speed, KV cache and memory");
  add_model_options(sub, opts->model);
  opts->prompt_opt = sub->add_option("--prompt-tokens", opts->prompt_tokens,
                                     "Tokens prefilled in one forward call (default 128, or half a smaller context)")
      ->check(int_in<int>(1, 1 << 24));
  opts->decode_opt = sub->add_option("--decode-tokens", opts->decode_tokens,
                                     "Tokens decoded one at a time (default 128, or the rest of a smaller context)")
      ->check(int_in<int>(1, 1 << 24));
  sub->add_option("--repetitions", opts->repetitions, "Measurements averaged (mean ± sd)")->check(CLI::Range(1, 1000));
  sub->add_option("--output", opts->output, "md (llama-bench's table) or json");
  sub->add_flag("--quiet,-q", opts->quiet, "No progress on stderr");
  sub->add_option("--probe-repeats", opts->probe_repeats, "Passes of the bandwidth probe (best taken)")
      ->check(int_in<int>(1, 100));
  sub->add_flag("--json", opts->json, "Print one JSON object");
  add_speculative_options(sub, opts->spec);
  sub->add_option("--backend", opts->backend, "reference, cuda-emu or cuda");
  sub->add_option("--mode", opts->mode, "Device backends: deterministic, fast, fast-tf32, fast-bf16, or both (deterministic and fast alternating; reports the determinism tax)");
  sub->add_option("--cuda-graphs", opts->cuda_graphs,
                  "Device backends: decode steps replayed as CUDA graphs (on, the default), launched one by one "
                  "(off), or both alternating (reports the graphs' speed-up)");
  add_numerics_option(sub, opts->numerics);
  sub->add_option("--tp", opts->tp, "Tensor-parallel ranks: run as mpirun -np N (docs/scale.md)")
      ->check(int_in<int>(1, 4096));
  return {sub, [opts] { return run_bench(*opts); }};
}

}  // namespace oracle::tools
