// The device pipeline (optimized/device_pipeline.h) over optimized::Backend, for
// whichever kernel library this library is built with: the emulated one
// (ORACLE_CUDA_EMULATION, oracle_optimized_emu: "cuda-emu") or the real one
// (oracle_optimized_cuda, inside the plugin liboracle_device_cuda.so: "cuda").
#include "optimized/device_pipeline.h"

#include <algorithm>
#include <functional>

#include "base/stopwatch.h"
#include "optimized/backend.h"
#include "optimized/device_sampler.h"
#include "optimized/kernel_cases.h"
#include "numerics/numerics.h"
#include "reference/sampling/sampler.h"

namespace oracle::optimized {
namespace {

optimized::BackendOptions backend_options(DeviceMode mode, num::NumericsProfile numerics, Trace* trace = nullptr) {
  optimized::BackendOptions bo;
  bo.numerics = numerics;
  bo.mode = is_fast(mode) ? optimized::Mode::Fast : optimized::Mode::Deterministic;
  bo.precision = mode == DeviceMode::FastTf32   ? kernels::FastPrecision::TF32
                 : mode == DeviceMode::FastBf16 ? kernels::FastPrecision::BF16
                                                : kernels::FastPrecision::F32;
  bo.trace = trace;
  // Stored types stay the file's blocks on the device (the dequantizing GEMV: the same bits),
  // so a quantized model reads its own bytes per step; fast mode's cuBLAS runs on float32 matrices.
  bo.keep_quantized = true;
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

// One sequence, KV blocks of 16: every device run of the tools.
optimized::Backend single_sequence(const Model& m, const optimized::BackendOptions& bo) {
  return optimized::Backend(m, {1, 16, 0}, bo);
}
optimized::Backend single_sequence(const Model& m, DeviceMode mode, num::NumericsProfile numerics) {
  return single_sequence(m, backend_options(mode, numerics));
}

// The device greedy loop of every tool: prefill `prompt`, then at step i = 0, 1, ...
// the device argmax of the last logits row (argmax_lowest: ties to the lowest id)
// goes to on_token(i, id, those logits) and is fed back while on_token returns true.
void greedy_loop(optimized::Backend& dev, std::span<const int> prompt,
                 const std::function<bool(int, int, const std::vector<float>&)>& on_token) {
  std::vector<float> logits = dev.forward(0, prompt);  // (1, vocab_size)
  for (int i = 0;; i++) {
    const int next = dev.argmax_last()[0];
    if (!on_token(i, next, logits)) return;
    logits = dev.forward(0, std::span<const int>(&next, 1));
  }
}

// ---- generation ------------------------------------------------------------------------
// One request on the device: Backend's forward, DeviceSampler over its logits.
class DeviceEngine : public StepEngine {
 public:
  DeviceEngine(const Model& m, const SamplerConfig& s, DeviceMode mode, num::NumericsProfile numerics)
      : dev_(single_sequence(m, mode, numerics)), sampler_(s, m.config.vocab_size) {}
  std::vector<float> forward(std::span<const int> tokens) override { return dev_.forward(0, tokens); }
  SampledToken sample(std::span<const float>, const SamplingContext& ctx, int top_n) override {
    optimized::DeviceSample d = sampler_.sample(dev_.logits_device(), std::span<const SamplingContext>(&ctx, 1), top_n)[0];
    return {d.token, std::move(d.logprobs)};
  }

 private:
  optimized::Backend dev_;
  optimized::DeviceSampler sampler_;
};

GenerationResult generate(const Model& m, const Tokenizer& tok, const std::string& prompt, const GenerateOptions& o,
                          DeviceMode mode) {
  validate(o.sampler, m.config.vocab_size);  // before anything reaches the device
  DeviceEngine engine(m, o.sampler, mode, o.numerics);
  return generate_with(engine, m, tok, prompt, o);
}

// ---- fast mode's golden check ----------------------------------------------------------------
int greedy_agreement(const Model& m, const std::vector<int>& prompt, const std::vector<int>& ids, DeviceMode mode) {
  optimized::Backend dev = single_sequence(m, mode, num::NumericsProfile::Canonical);  // fast modes: canonical
  dev.forward(0, prompt);
  int agree = 0;
  for (size_t i = 0; i < ids.size(); i++) {
    agree += dev.argmax_last()[0] == ids[i];
    if (i + 1 < ids.size()) dev.forward(0, std::span<const int>(&ids[i], 1));
  }
  return agree;
}

// ---- oracle certify ---------------------------------------------------------------------------
std::vector<float> logits(const Model& m, const std::vector<int>& tokens, bool all_logits, DeviceMode mode,
                          num::NumericsProfile numerics) {
  optimized::Backend dev = single_sequence(m, mode, numerics);
  return dev.forward(0, tokens, all_logits);
}

// ---- oracle diff -----------------------------------------------------------------------------
void trace(const Model& m, const std::vector<int>& tokens, int prompt_tokens, DeviceMode mode,
           num::NumericsProfile numerics, Trace& t, std::vector<FastOpCheck>* fast_ops) {
  optimized::BackendOptions bo = backend_options(mode, numerics, &t);
  optimized::FastAudit audit(bo.precision);
  if (fast_ops && is_fast(mode)) bo.audit = &audit;
  optimized::Backend dev = single_sequence(m, bo);
  dev.forward(0, std::span<const int>(tokens.data(), (size_t)prompt_tokens));
  for (size_t i = (size_t)prompt_tokens; i < tokens.size(); i++) dev.forward(0, std::span<const int>(&tokens[i], 1));
  if (!bo.audit) return;
  for (const auto& [op, s] : audit.ops())
    fast_ops->push_back({op, s.K, s.rel_bound, s.elements, s.over, s.worst_ratio});
}

// ---- benchmark ------------------------------------------------------------------------------
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

nlohmann::json bench(const Model& m, DeviceMode mode, bool cuda_graphs, int prompt_tokens, int decode_tokens,
                     num::NumericsProfile numerics) {
  const Config& c = m.config;
  std::vector<int> prompt((size_t)prompt_tokens);  // BOS then a fixed sequence (content does not matter)
  for (int i = 0; i < prompt_tokens; i++) prompt[(size_t)i] = i == 0 ? 1 % c.vocab_size : (3 + 31 * i) % c.vocab_size;
  optimized::BackendOptions bo = backend_options(mode, numerics);
  bo.cuda_graphs = cuda_graphs;
  optimized::Backend dev = single_sequence(m, bo);
  Stopwatch prefill, decode;
  double prefill_s = 0.0;
  int token = -1;
  greedy_loop(dev, prompt, [&](int i, int next, const std::vector<float>&) {
    if (i == 0) prefill_s = prefill.seconds(), decode = Stopwatch();  // prefill + its argmax
    token = next;
    return i < decode_tokens;
  });
  const double decode_s = decode.seconds();
  const double decode_tok_s = decode_tokens / decode_s, bytes = dev.model().decode_weight_bytes();
  const double peak = peak_bandwidth();
  return {{"model", m.path}, {"model_sha256", m.sha256}, {"mode", mode_name(mode)}, {"context", c.seq_len},
          {"prefill_tokens", prompt_tokens}, {"prefill_tok_s", prompt_tokens / prefill_s},
          {"ttft_ms", prefill_s * 1e3}, {"decode_tokens", decode_tokens}, {"decode_tok_s", decode_tok_s},
          {"tpot_ms", decode_s * 1e3 / decode_tokens}, {"decode_weight_bytes", bytes},
          {"decode_weight_bytes_s", decode_tok_s * bytes}, {"peak_bandwidth_bytes_s", peak},
          {"bandwidth_fraction_of_peak", peak > 0 ? decode_tok_s * bytes / peak : 0.0},
          {"roofline_decode_tok_s", peak > 0 ? peak / bytes : 0.0}, {"cuda_graphs", cuda_graphs}, {"graphs_captured", dev.graphs().captured()},
          {"graph_launches", dev.graphs().replays()}, {"last_token", token}};
}

// ---- kernel cases (oracle kernels) --------------------------------------------------------------
nlohmann::json case_json(const optimized::cases::KernelCase& c, const optimized::cases::CaseTiming& t) {
  const optimized::cases::CaseVerdict& v = t.verdict;
  nlohmann::json j = {{"op", c.op}, {"label", c.label}, {"seed", c.seed},
                      {"tolerance", c.tolerance == optimized::cases::Tolerance::Exact ? "exact" : "fast_gemm_bound"},
                      {"bytes", c.bytes}, {"flops", c.flops}, {"elements", v.elements},
                      {"mismatches", v.mismatches}, {"pass", v.pass()}, {"first_mismatches", v.first}};
  if (c.tolerance == optimized::cases::Tolerance::FastGemmBound) j["worst_ratio"] = v.worst_ratio;
  if (t.reps > 0)
    j.update({{"reps", t.reps}, {"us_per_call", t.seconds_per_call * 1e6}, {"gb_s", t.gb_s}, {"gflop_s", t.gflop_s}});
  return j;
}

nlohmann::json kernel_cases(const std::string& set, const std::string& op, int reps) {
  namespace oc = optimized::cases;
  const oc::CaseSet s = set == "check" ? oc::CaseSet::Check : set == "bench-model" ? oc::CaseSet::BenchModel : oc::CaseSet::BenchTiny;
  nlohmann::json cases = nlohmann::json::array();
  for (const oc::KernelCase& c : oc::kernel_cases(s, op)) cases.push_back(case_json(c, oc::time_case(c, reps)));
  return {{"clock", oc::timing_clock()}, {"emulated", oc::timing_is_emulated()}, {"cases", cases}};
}

std::vector<std::string> kernel_case_ops() { return optimized::cases::kernel_case_ops(); }

}  // namespace

const DevicePipeline& device_pipeline() {
#if defined(ORACLE_CUDA_EMULATION)
  static const DevicePipeline p{"cuda-emu", unavailable, generate, greedy_agreement, logits, bench, trace, kernel_cases, kernel_case_ops};
#else
  static const DevicePipeline p{"cuda", unavailable, generate, greedy_agreement, logits, bench, trace, kernel_cases, kernel_case_ops};
#endif
  return p;
}

}  // namespace oracle::optimized
