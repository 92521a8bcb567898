// Cross-check against llama.cpp (an engine nobody here wrote), one synthetic
// F32 model per architecture / RoPE mode: our float32 logits and llama.cpp's
// (golden/crosscheck/llamacpp_<preset>.f32, written by scripts/arch_crosscheck.sh
// with the peer; $ORACLE_CROSSCHECK_DIR overrides the folder when the peer reran)
// must agree within a bound derived below, and have the same argmax wherever
// the top-2 margin exceeds it.
//
// THE BOUND (Monte Carlo arithmetic: Parker 1997; Vignes' CESTAC). Every
// IEEE float32 implementation of the same math, in any operation order,
// obeys the standard model fl(a op b) = (a op b)(1 + d), |d| <= u = 2^-24 — one
// d per elementary operation, its value depending on the order. So the float32
// error of a logit is a sum of very many small terms d_k * (sensitivity_k),
// which we estimate directly: `Shadow` is an independent float64 forward pass
// (plain loops, libm in double, ggml's RoPE/YaRN formulas transcribed from
// ggml-cpu/ops.cpp), run once exactly (z*) and N = 16 times with every
// elementary result multiplied by (1 + d), d uniform in [-u, u] (dot products:
// every product and every partial sum; RoPE: the i + 2 float multiplies ggml's
// theta_scale^i takes, the frequency-factor division, the YaRN mix, cos/sin,
// mscale; softmax: subtraction, exp, sum, division; SwiGLU: exp, add, div, mul).
// sigma_v = RMS over the runs of (z_noisy - z*). Ours and llama.cpp's errors
// are two independent realisations, so |ours - llama.cpp| has standard deviation
// sqrt(2) sigma_v; 6 of those is 8.5 sigma_v; sigma is estimated from 16 runs,
// whose estimate is >= 0.58 sigma with probability 0.999 (chi_16 / 4), so
//   bound_v = 8.5 / 0.58 * sigma_v ~= 15 sigma_v,  floored at 4 ulp(|z_v|)
// (each side's last rounding alone is half an ulp). The test also checks
// |ours - z*| <= bound_v / sqrt(2) (our scaled RoPE against the independent
// transcription) and that ignoring an architecture switch moves the logits by
// more than 100 bounds (so the check can fail).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "crosscheck.h"
#include "test_support.h"

using namespace oracle;
using namespace oracle::crosscheck;

TEST_CASE("crosscheck: our logits are within bound / sqrt(2) of the exact-math shadow, per preset",
          "[crosscheck][exact]") {
  crosscheck_presets(false);
}

// Registered by CMake only while golden/crosscheck holds the fixtures (scripts/arch_crosscheck.sh).
TEST_CASE("crosscheck: llama.cpp F32 logits agree with ours within the derived bound, per preset",
          "[crosscheck][llamacpp]") {
  crosscheck_presets(true);
}

TEST_CASE("crosscheck: the bound is tight enough to catch an ignored switch", "[crosscheck][exact]") {
  // Dropping each preset's switch (scaling, factors, biases) moves the logits by far more than the bound.
  const std::vector<int> tokens = crosscheck_tokens();
  for (const char* name : {"qwen2-tiny", "llama3-tiny", "linear-tiny", "yarn-tiny", "llama31-tiny", "qwen25-yarn-tiny"}) {
    INFO("preset " << name);
    const SyntheticPreset& p = synthetic_preset(name);
    Model m = synthetic_model(p, kDefaultSeed, synthetic_byte_vocab(p.config.vocab_size));
    const Reference ref = reference_of(m, tokens, 4);
    m.config.rope = RopeConfig{};
    for (LayerWeights& w : m.weights.layers) w.bq = w.bk = w.bv = nullptr;
    KvCache kv(m.config, {});
    ForwardOptions o;
    o.all_logits = true;
    const std::vector<float> plain = forward(m, kv, 0, tokens, o);
    double worst = 0;
    for (size_t t = 0; t < tokens.size(); t++)
      for (int v = 0; v < m.config.vocab_size; v++)
        worst = std::max(worst, std::fabs(plain[t * m.config.vocab_size + v] - ref.exact[t][v]) / ref.bound[t][v]);
    CHECK(worst > 100.0);
  }
}
