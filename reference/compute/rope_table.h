#pragma once
// ============================================================================
// Rows of a model's RoPE table: (head_dim / 2) cos and sin for one position.
// Plain RoPE (no scaling, no frequency factors, attn_factor 1) is the float32
// table of ops::rope_freqs / ops::rope_row, unchanged. Scaled RoPE (linear,
// YaRN, Llama 3 rope_freqs factors, attn_factor) follows ggml's rope_yarn /
// ggml_rope_cache_init operation by operation, evaluated in float64 with our
// own exp/log/sincos and rounded once to float32 (docs/numerics.md §4.3).
// Both pipelines take their tables from here (the CUDA one uploads them).
// ============================================================================
#include "reference/model/model.h"
#include "reference/model/rope_factors.h"

namespace oracle {

// YaRN correction range [lo, hi] of pair indices (ggml_rope_yarn_corr_dims in float64).
struct YarnCorrDims {
  double lo = 0.0, hi = 0.0;
};
YarnCorrDims yarn_corr_dims(int head_dim, int original_context, double theta, double beta_fast,
                            double beta_slow);

// cos_row, sin_row: (head_dim / 2) — row `pos` of the table of config `c`.
void rope_table_row(const Config& c, int pos, float* cos_row, float* sin_row);

// The ggml numerics profile's row (docs/numerics.md §5.2): plain RoPE as
// ggml_rope_cache_init computes it — theta_scale = powf(theta, -2.0f / hd),
// angle_0 = (float)pos, angle_{i+1} = angle_i · theta_scale (float32 products
// in increasing i), cos/sin of each float32 angle rounded once to float32 —
// with our own pow/sincos (float64, rounded once). Scaled RoPE: rope_table_row.
void rope_table_row_ggml(const Config& c, int pos, float* cos_row, float* sin_row);

}  // namespace oracle
