// One device pipeline (tools/device_backend.h) over optimized::Backend. This
// file is compiled twice: against the emulated kernels (ORACLE_CUDA_EMULATION,
// exporting device_pipeline_emu) and, in CUDA builds, against the real ones
// (exporting device_pipeline_cuda). Everything else here has internal linkage
// and the two kernel libraries live in different namespaces
// (kernels/CMakeLists.txt), so both copies link into one `oracle`.
#include <algorithm>

#include "optimized/backend.h"
#include "numerics/numerics.h"
#include "reference/base/sha256.h"
#include "tools/bench_support.h"
#include "tools/device_backend.h"

namespace oracle::tools {
namespace {

optimized::BackendOptions backend_options(DeviceMode mode, Trace* trace = nullptr) {
  optimized::BackendOptions bo;
  bo.mode = mode == DeviceMode::Fast ? optimized::Mode::Fast : optimized::Mode::Deterministic;
  bo.trace = trace;
  return bo;
}

std::string unavailable() {
#if defined(ORACLE_CUDA_EMULATION)
  return "";
#else
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? "" : "no CUDA GPU found";
#endif
}

// ---- greedy generation ------------------------------------------------------------------
std::vector<int> greedy(const Model& m, const std::vector<int>& prompt, int max_tokens, const std::vector<int>& stop_ids,
                        DeviceMode mode) {
  optimized::Backend dev(m, {1, 16, 0}, backend_options(mode));
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
bool greedy_record(const nlohmann::json& r) {
  const nlohmann::json& s = r["sampler"];
  return s.value("temperature", 1.0f) <= 0.0f && s.value("repetition_penalty", 1.0f) == 1.0f &&
         s.value("frequency_penalty", 0.0f) == 0.0f && s.value("presence_penalty", 0.0f) == 0.0f &&
         s.value("logit_bias", nlohmann::json::array()).empty() &&
         s.value("banned_tokens", nlohmann::json::array()).empty() && r["stop_strings"].empty();
}

std::string golden_mismatch(const nlohmann::json& r, const Model& m, DeviceMode mode, bool* skipped) {
  *skipped = !greedy_record(r);
  if (*skipped) return "";
  const auto prompt = r["prompt_ids"].get<std::vector<int>>();
  const auto want_ids = r["output_ids"].get<std::vector<int>>();
  const auto want_hash = r["logits_sha256"].get<std::vector<std::string>>();
  optimized::Backend dev(m, {1, 16, 0}, backend_options(mode));
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

// ---- oracle diff -----------------------------------------------------------------------------
void trace(const Model& m, const std::vector<int>& tokens, int prompt_tokens, DeviceMode mode, Trace& t) {
  optimized::Backend dev(m, {1, 16, 0}, backend_options(mode, &t));
  dev.forward(0, std::span<const int>(tokens.data(), (size_t)prompt_tokens));
  for (size_t i = (size_t)prompt_tokens; i < tokens.size(); i++) dev.forward(0, std::span<const int>(&tokens[i], 1));
}

// ---- benchmark ------------------------------------------------------------------------------
// float32 bytes one decode step reads: every layer matrix, the norms and the LM head
// (the device keeps float32 weights: docs/cuda.md).
double decode_weight_bytes(const Config& c) {
  const double q_dim = (double)c.n_heads * c.head_dim, kv_dim = (double)c.n_kv_heads * c.head_dim;
  const double layer = c.dim * (q_dim + 2 * kv_dim) + q_dim * c.dim + 3.0 * c.dim * c.hidden_dim + 2.0 * c.dim;
  return 4.0 * (c.n_layers * layer + c.dim + (double)c.vocab_size * c.dim);
}

// Peak memory bandwidth of GPU 0 (bytes/s; 0 on the emulation or if unknown).
double peak_bandwidth() {
#if defined(ORACLE_CUDA_EMULATION)
  return 0.0;
#else
  int khz = 0, bits = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0) != cudaSuccess) return 0.0;
  if (cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, 0) != cudaSuccess) return 0.0;
  return 2.0 * khz * 1e3 * (bits / 8.0);
#endif
}

nlohmann::json bench(const Model& m, DeviceMode mode, int prompt_tokens, int decode_tokens) {
  const Config& c = m.config;
  std::vector<int> prompt((size_t)prompt_tokens);  // BOS then a fixed sequence (content does not matter)
  for (int i = 0; i < prompt_tokens; i++) prompt[(size_t)i] = i == 0 ? 1 % c.vocab_size : (3 + 31 * i) % c.vocab_size;
  optimized::Backend dev(m, {1, 16, 0}, backend_options(mode));
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
  return {{"model", m.path}, {"model_sha256", m.sha256}, {"mode", mode_name(mode)}, {"context", c.seq_len},
          {"prefill_tokens", prompt_tokens}, {"prefill_tok_s", prompt_tokens / prefill_s},
          {"ttft_ms", prefill_s * 1e3}, {"decode_tokens", decode_tokens}, {"decode_tok_s", decode_tok_s},
          {"tpot_ms", decode_s * 1e3 / decode_tokens}, {"decode_weight_bytes", bytes},
          {"decode_weight_bytes_s", decode_tok_s * bytes}, {"peak_bandwidth_bytes_s", peak},
          {"bandwidth_fraction_of_peak", peak > 0 ? decode_tok_s * bytes / peak : 0.0}, {"last_token", token}};
}

}  // namespace

#if defined(ORACLE_CUDA_EMULATION)
const DevicePipeline& device_pipeline_emu() {
  static const DevicePipeline p{"cuda-emu", unavailable, greedy, golden_mismatch, bench, trace};
  return p;
}
#else
const DevicePipeline* device_pipeline_cuda() {
  static const DevicePipeline p{"cuda", unavailable, greedy, golden_mismatch, bench, trace};
  return &p;
}
#endif

}  // namespace oracle::tools
