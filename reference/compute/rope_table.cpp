// RoPE table rows — see rope_table.h and docs/numerics.md §4.3.
#include "reference/compute/rope_table.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "numerics/numerics.h"
#include "reference/compute/ops.h"

namespace oracle {

namespace {
constexpr double kTwoPi = 6.283185307179586476925;

// ggml_rope_yarn_corr_dim: the pair index whose wavelength fits n_rot turns
// into the original context: hd * log(ctx / (n_rot * 2 pi)) / (2 log(theta)).
double corr_dim(int head_dim, int original_context, double n_rot, double log_theta) {
  return (double)head_dim * num::log_d((double)original_context / (n_rot * kTwoPi)) / (2.0 * log_theta);
}
}  // namespace

YarnCorrDims yarn_corr_dims(int head_dim, int original_context, double theta, double beta_fast,
                            double beta_slow) {
  const double log_theta = num::log_d(theta);
  const double start = std::floor(corr_dim(head_dim, original_context, beta_fast, log_theta));
  const double end = std::ceil(corr_dim(head_dim, original_context, beta_slow, log_theta));
  return {std::max(0.0, start), std::min((double)(head_dim - 1), end)};
}

namespace {

// Angle and magnitude of pair i at position pos (ggml rope_yarn, float64).
void scaled_pair(const Config& c, const YarnCorrDims& cd, double log_theta, int pos, int i,
                 float* cos_out, float* sin_out) {
  const RopeConfig& r = c.rope;
  const double base = num::exp_d(-((double)(2 * i) / (double)c.head_dim) * log_theta);
  double extrap = (double)pos * base;  // theta_extrap = pos * theta^(-2i/hd) / ff_i
  if (!r.freq_factors.empty()) extrap = extrap / (double)r.freq_factors[i];
  const double freq_scale = r.scaling == RopeScaling::None ? 1.0 : 1.0 / (double)r.factor;
  const double interp = freq_scale * extrap;
  double angle = interp, mscale = (double)r.attn_factor;
  if (r.scaling == RopeScaling::Yarn) {  // ext_factor = 1 (llama.cpp's value for YaRN)
    const double y = ((double)i - cd.lo) / std::max(0.001, cd.hi - cd.lo);
    const double ramp_mix = 1.0 - std::min(1.0, std::max(0.0, y));
    angle = interp * (1.0 - ramp_mix) + extrap * ramp_mix;
    // llama.cpp: attn_factor = get_mscale(factor) / (1 + 0.1 ln factor), then
    // ggml multiplies by 1 + 0.1 ln(1 / freq_scale): net 1 + 0.1 ln factor (factor > 1).
    if (r.factor > 1.0f) mscale = mscale * (1.0 + 0.1 * num::log_d((double)r.factor));
  }
  double s, co;
  num::sincos_d(angle, &s, &co);
  *cos_out = (float)(co * mscale);
  *sin_out = (float)(s * mscale);
}

}  // namespace

void rope_table_row(const Config& c, int pos, float* cos_row, float* sin_row) {
  const int half = c.head_dim / 2;
  if (c.rope.plain()) {  // the original float32 table: bit-identical to before scaling existed
    std::vector<float> freqs(half);  // (head_dim / 2)
    ops::rope_freqs(freqs.data(), c.rope_theta, c.head_dim);
    ops::rope_row(cos_row, sin_row, freqs.data(), c.head_dim, pos);
    return;
  }
  YarnCorrDims cd;
  if (c.rope.scaling == RopeScaling::Yarn)
    cd = yarn_corr_dims(c.head_dim, c.rope.original_context, (double)c.rope_theta, c.rope.beta_fast,
                        c.rope.beta_slow);
  const double log_theta = num::log_d((double)c.rope_theta);
  for (int i = 0; i < half; i++) scaled_pair(c, cd, log_theta, pos, i, &cos_row[i], &sin_row[i]);
}

void rope_table_row_ggml(const Config& c, int pos, float* cos_row, float* sin_row) {
  if (!c.rope.plain()) return rope_table_row(c, pos, cos_row, sin_row);
  const float exponent = num::div_rn(-2.0f, (float)c.head_dim);  // -2.0f / n_dims
  const float theta_scale = (float)num::exp_d((double)exponent * num::log_d((double)c.rope_theta));  // powf
  float angle = (float)pos;
  for (int i = 0; i < c.head_dim / 2; i++) {
    double s, co;
    num::sincos_d((double)angle, &s, &co);  // cosf / sinf of the float32 angle
    cos_row[i] = (float)co;
    sin_row[i] = (float)s;
    angle = num::mul_rn(angle, theta_scale);
  }
}

}  // namespace oracle
