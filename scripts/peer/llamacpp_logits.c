// Cross-check driver (never part of the product build): writes llama.cpp's
// float32 logits for every position of a token sequence to OUT as raw
// little-endian float32, (n_tokens, n_vocab) row-major. Compiled by
// scripts/arch_crosscheck.sh against the peer's libllama (scripts/build_peer.sh)
// only when the peer is present.
// Usage: llamacpp_logits MODEL.gguf N_CTX OUT.f32 TOKEN...
// Settings that keep llama.cpp in float32: F32 K/V cache (default is F16),
// no flash attention, CPU only, one thread, one batch holding every token.
#include <stdio.h>
#include <stdlib.h>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s MODEL.gguf N_CTX OUT.f32 TOKEN...\n", argv[0]);
    return 2;
  }
  const int n = argc - 4;
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  struct llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = (uint32_t)atoi(argv[2]);
  cp.n_batch = cp.n_ubatch = (uint32_t)n;
  cp.n_threads = cp.n_threads_batch = 1;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  struct llama_batch b = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; i++) {
    b.token[i] = atoi(argv[4 + i]);
    b.pos[i] = i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = 1;
  }
  b.n_tokens = n;
  if (llama_decode(ctx, b) != 0) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE* out = fopen(argv[3], "wb");
  if (!out) return 1;
  for (int i = 0; i < n; i++)
    if (fwrite(llama_get_logits_ith(ctx, i), sizeof(float), (size_t)n_vocab, out) != (size_t)n_vocab) return 1;
  if (fclose(out) != 0) return 1;
  llama_batch_free(b);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
