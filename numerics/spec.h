#pragma once
// ============================================================================
// Spec constants shared by both pipelines (docs/numerics.md). Defined once
// here; reference/ and kernels/ refer to these names, never to literals.
// Header-only, no dependencies, compiles as C++ and CUDA.
// ============================================================================

namespace oracle::spec {

// Attention: positions per partial (chunk length S), aligned to absolute
// position 0, merged in increasing chunk order (docs/numerics.md, attention).
constexpr int kAttnChunk = 32;

// ggml block formats (GGUF spec): elements per block and bytes per block.
constexpr int kQuantBlock = 32;    // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1
constexpr int kQuantSuperBlock = 256;  // k-quants (Q2_K .. Q8_K)
constexpr int kQ8_0BlockBytes = 34;  // fp16 d + 32 int8
constexpr int kQ4_0BlockBytes = 18;  // fp16 d + 16 bytes of nibbles

}  // namespace oracle::spec
