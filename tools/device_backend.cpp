// The device pipeline behind `--backend` — see device_backend.h.
#include "tools/device_backend.h"

#include <algorithm>

#include "reference/base/errors.h"
#include "numerics/numerics.h"
#include "reference/base/sha256.h"
#include "tools/bench_support.h"

#if defined(ORACLE_TOOLS_CUDA)
#include <cuda_runtime.h>
#endif

namespace oracle::tools {

// ---- which backend ------------------------------------------------------------------
bool require_backend(const std::string& backend) {
  if (backend == "reference") return false;
  require_input(backend == "cuda" || backend == "cuda-emu", backend, "--backend",
                "unknown backend (want reference, cuda-emu or cuda)");
#if defined(ORACLE_TOOLS_CUDA)
  require_input(backend == "cuda", backend, "--backend",
                "this oracle is built with the real CUDA kernels; cuda-emu needs a build with -DORACLE_ENABLE_CUDA=OFF");
  int n = 0;
  require_input(cudaGetDeviceCount(&n) == cudaSuccess && n > 0, backend, "--backend", "no CUDA GPU found");
#else
  require_input(backend == "cuda-emu", backend, "--backend",
                "this oracle is built without CUDA (configure with -DORACLE_ENABLE_CUDA=ON on a GPU machine)");
#endif
  return true;
}

optimized::Mode parse_mode(const std::string& mode) {
  require_input(mode == "deterministic" || mode == "fast", mode, "--mode", "want deterministic or fast");
  return mode == "fast" ? optimized::Mode::Fast : optimized::Mode::Deterministic;
}

// ---- greedy generation ------------------------------------------------------------------
std::vector<int> device_greedy(const Model& m, const std::vector<int>& prompt, int max_tokens, const std::vector<int>& stop_ids,
                               optimized::Mode mode) {
  optimized::BackendOptions bo;
  bo.mode = mode;
  optimized::Backend dev(m, {1, 16, 0}, bo);
  std::vector<int> out;
  dev.forward(0, prompt);
  for (int i = 0; i < max_tokens; i++) {
    const int next = dev.argmax_last()[0];
    out.push_back(next);
    if (std::find(stop_ids.begin(), stop_ids.end(), next) != stop_ids.end() || (int)prompt.size() + i + 1 >= m.config.seq_len) break;
    if (i + 1 < max_tokens) dev.forward(0, std::span<const int>(&next, 1));
  }
  return out;
}

// ---- golden transcripts ------------------------------------------------------------------
static bool greedy_record(const nlohmann::json& r) {
  const nlohmann::json& s = r["sampler"];
  return s.value("temperature", 1.0f) <= 0.0f && s.value("repetition_penalty", 1.0f) == 1.0f &&
         s.value("frequency_penalty", 0.0f) == 0.0f && s.value("presence_penalty", 0.0f) == 0.0f &&
         s.value("logit_bias", nlohmann::json::array()).empty() &&
         s.value("banned_tokens", nlohmann::json::array()).empty() && r["stop_strings"].empty();
}

std::string device_golden_mismatch(const nlohmann::json& r, const Model& m, optimized::Mode mode, bool* skipped) {
  *skipped = !greedy_record(r);
  if (*skipped) return "";
  const auto prompt = r["prompt_ids"].get<std::vector<int>>();
  const auto want_ids = r["output_ids"].get<std::vector<int>>();
  const auto want_hash = r["logits_sha256"].get<std::vector<std::string>>();
  optimized::BackendOptions bo;
  bo.mode = mode;
  optimized::Backend dev(m, {1, 16, 0}, bo);
  std::vector<float> logits = dev.forward(0, prompt);  // (1, vocab_size)
  for (size_t i = 0; i < want_ids.size() && i < want_hash.size(); i++) {
    const std::string hash = sha256_hex(logits.data(), logits.size() * sizeof(float));
    if (hash != want_hash[i]) return "step " + std::to_string(i) + ": logits sha256 golden " + want_hash[i] + ", device " + hash;
    const int next = num::argmax_lowest(logits.data(), (int)logits.size());
    if (next != want_ids[i])
      return "step " + std::to_string(i) + ": token golden " + std::to_string(want_ids[i]) + ", device " + std::to_string(next);
    if (i + 1 < want_ids.size()) logits = dev.forward(0, std::span<const int>(&next, 1));
  }
  return "";
}

// ---- benchmark ------------------------------------------------------------------------------
// float32 bytes one decode step reads: every layer matrix, the norms and the LM head
// (the device keeps float32 weights: docs/cuda.md).
static double decode_weight_bytes(const Config& c) {
  const double q_dim = (double)c.n_heads * c.head_dim, kv_dim = (double)c.n_kv_heads * c.head_dim;
  const double layer = c.dim * (q_dim + 2 * kv_dim) + q_dim * c.dim + 3.0 * c.dim * c.hidden_dim + 2.0 * c.dim;
  return 4.0 * (c.n_layers * layer + c.dim + (double)c.vocab_size * c.dim);
}

// Peak memory bandwidth of GPU 0 (bytes/s; 0 on the emulation or if unknown).
static double peak_bandwidth() {
#if defined(ORACLE_TOOLS_CUDA)
  int khz = 0, bits = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0) != cudaSuccess) return 0.0;
  if (cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, 0) != cudaSuccess) return 0.0;
  return 2.0 * khz * 1e3 * (bits / 8.0);
#else
  return 0.0;
#endif
}

nlohmann::json device_bench(const Model& m, const std::string& backend, optimized::Mode mode, int prompt_tokens,
                            int decode_tokens) {
  const Config& c = m.config;
  std::vector<int> prompt((size_t)prompt_tokens);  // BOS then a fixed sequence (content does not matter)
  for (int i = 0; i < prompt_tokens; i++) prompt[(size_t)i] = i == 0 ? 1 % c.vocab_size : (3 + 31 * i) % c.vocab_size;
  optimized::BackendOptions bo;
  bo.mode = mode;
  optimized::Backend dev(m, {1, 16, 0}, bo);
  Stopwatch prefill;
  dev.forward(0, prompt);
  int token = dev.argmax_last()[0];
  const double prefill_s = prefill.seconds();
  Stopwatch decode;
  for (int i = 0; i < decode_tokens; i++) {
    dev.forward(0, std::span<const int>(&token, 1));
    token = dev.argmax_last()[0];
  }
  const double decode_s = decode.seconds();
  const double decode_tok_s = decode_tokens / decode_s, bytes = decode_weight_bytes(c);
  const double peak = peak_bandwidth();
  return {{"model", m.path}, {"model_sha256", m.sha256}, {"backend", backend},
          {"mode", mode == optimized::Mode::Fast ? "fast" : "deterministic"}, {"context", c.seq_len},
          {"prefill_tokens", prompt_tokens}, {"prefill_tok_s", prompt_tokens / prefill_s},
          {"ttft_ms", prefill_s * 1e3}, {"decode_tokens", decode_tokens}, {"decode_tok_s", decode_tok_s},
          {"tpot_ms", decode_s * 1e3 / decode_tokens}, {"decode_weight_bytes", bytes},
          {"decode_weight_bytes_s", decode_tok_s * bytes}, {"peak_bandwidth_bytes_s", peak},
          {"bandwidth_fraction_of_peak", peak > 0 ? decode_tok_s * bytes / peak : 0.0}, {"last_token", token}};
}

}  // namespace oracle::tools
