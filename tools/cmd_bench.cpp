// oracle bench: prefill / decode speed of the CPU reference on one model, with
// the KV cache and process memory, and a same-run memory-bandwidth baseline
// (docs/cli.md#bench, docs/performance.md).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "reference/base/errors.h"
#include "reference/compute/forward.h"
#include "numerics/numerics.h"
#include "reference/base/thread_pool.h"
#include "tools/bench_support.h"
#include "tools/commands.h"
#include "tools/device_backend.h"
#include "tools/model_args.h"
#include "tools/spec_args.h"

namespace oracle::tools {

struct BenchOptions {
  ModelOptions model;
  int prompt_tokens = 128;
  int decode_tokens = 128;
  int probe_repeats = 3;
  bool json = false;
  DraftOptions spec;  // --draft-model / --spec-ngram (tools/spec_args.h)
  std::string backend = "reference";  // or cuda-emu / cuda (tools/device_backend.h)
  std::string mode = "deterministic"; // device backends: deterministic or fast
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
                                  ThreadPool& pool) {
  ForwardOptions fo;
  fo.threads = o.model.threads;
  fo.pool = &pool;
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
  const uint64_t kv_formula = 2ull * c.n_layers * (uint64_t)c.seq_len * c.n_kv_heads * c.head_dim * 4;
  const double decode_tok_s = o.decode_tokens / t.decode_s;
  const double decode_bytes_s = decode_tok_s * (double)weight_bytes(m);
  return {
      {"model", m.path}, {"model_sha256", m.sha256}, {"format", m.format},
      {"threads", o.model.threads}, {"context", c.seq_len},
      {"prefill_tokens", o.prompt_tokens}, {"prefill_tok_s", o.prompt_tokens / t.prefill_s},
      {"decode_tokens", o.decode_tokens}, {"decode_tok_s", decode_tok_s},
      {"ttft_ms", t.ttft_s * 1e3}, {"tpot_ms", t.decode_s * 1e3 / o.decode_tokens},
      {"kv_bytes_formula", kv_formula}, {"kv_bytes_allocated", kvr.bytes_allocated},
      {"weight_bytes", weight_bytes(m)},
      {"peak_rss_bytes", after.peak_rss}, {"rss_file_backed", after.rss_file},
      {"rss_anon", after.rss_anon}, {"rss_anon_before_load", before.rss_anon},
      {"probe_read_bytes_s", probe.bytes_per_s}, {"decode_weight_bytes_s", decode_bytes_s},
      {"decode_bandwidth_ratio", probe.bytes_per_s > 0 ? decode_bytes_s / probe.bytes_per_s : 0.0},
      {"probe_checksum", probe.checksum},
  };
}

static void print_human(const nlohmann::json& j) {
  std::printf("model %s, %d thread(s)\n", j["model"].get<std::string>().c_str(), j["threads"].get<int>());
  std::printf("prefill %d tokens: %.1f tok/s, time to first token %.2f ms\n",
              j["prefill_tokens"].get<int>(), j["prefill_tok_s"].get<double>(), j["ttft_ms"].get<double>());
  std::printf("decode %d tokens: %.1f tok/s, %.3f ms per token (%.0f%% of a plain weight read)\n",
              j["decode_tokens"].get<int>(), j["decode_tok_s"].get<double>(), j["tpot_ms"].get<double>(),
              100.0 * j["decode_bandwidth_ratio"].get<double>());
  std::printf("KV cache %llu bytes (formula %llu); peak RSS %llu bytes (file-backed %llu, anon %llu)\n",
              j["kv_bytes_allocated"].get<unsigned long long>(), j["kv_bytes_formula"].get<unsigned long long>(),
              j["peak_rss_bytes"].get<unsigned long long>(), j["rss_file_backed"].get<unsigned long long>(),
              j["rss_anon"].get<unsigned long long>());
}

int run_bench(const BenchOptions& o) {
  const ProcessMemory before = read_process_memory();
  const Model m = load_model_arg(o.model);
  require_input(o.prompt_tokens + o.decode_tokens <= m.config.seq_len, m.path, "context_length",
                std::to_string(o.prompt_tokens + o.decode_tokens) + " positions do not fit a context of " +
                    std::to_string(m.config.seq_len) + " (use --context or fewer tokens)");
  if (require_backend(o.backend)) {  // device pipeline: speed and achieved bandwidth only
    require_input(!speculative_enabled(o.spec), o.backend, "--backend", "speculative bench runs on the reference only");
    const nlohmann::json j = device_bench(m, o.backend, parse_mode(o.mode), o.prompt_tokens, o.decode_tokens);
    if (o.json) std::printf("%s\n", j.dump().c_str());
    else std::printf("%s %s: prefill %.1f tok/s, decode %.1f tok/s (%.3g GB/s of weights)\n", o.backend.c_str(),
                     o.mode.c_str(), j["prefill_tok_s"].get<double>(), j["decode_tok_s"].get<double>(),
                     j["decode_weight_bytes_s"].get<double>() / 1e9);
    return kExitOk;
  }
  KvCache kv(m.config, KvCacheOptions{});
  ThreadPool pool(o.model.threads);
  const BenchTimes t = time_generation(m, kv, o, pool);
  const ProbeResult probe = probe_weights(m, o.probe_repeats);
  nlohmann::json j = bench_json(m, o, t, kv, before, probe);
  if (speculative_enabled(o.spec))
    j.update(bench_speculative(m, o.spec, bench_prompt(m.config, o.prompt_tokens), o.decode_tokens, o.model.threads));
  if (o.json) std::printf("%s\n", j.dump().c_str());
  else print_human(j);
  if (!o.json && speculative_enabled(o.spec)) print_speculative_bench(j);
  return kExitOk;
}

Command setup_bench(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand("bench", "Measure prefill/decode speed, KV cache and memory");
  add_model_options(sub, opts->model);
  sub->add_option("--prompt-tokens", opts->prompt_tokens, "Tokens prefilled in one forward call")
      ->check(CLI::PositiveNumber);
  sub->add_option("--decode-tokens", opts->decode_tokens, "Tokens decoded one at a time")
      ->check(CLI::PositiveNumber);
  sub->add_option("--probe-repeats", opts->probe_repeats, "Passes of the bandwidth probe (best taken)")
      ->check(CLI::Range(1, 100));
  sub->add_flag("--json", opts->json, "Print one JSON object");
  add_speculative_options(sub, opts->spec);
  sub->add_option("--backend", opts->backend, "reference, cuda-emu or cuda");
  sub->add_option("--mode", opts->mode, "Device backends: deterministic or fast");
  return {sub, [opts] { return run_bench(*opts); }};
}

}  // namespace oracle::tools
