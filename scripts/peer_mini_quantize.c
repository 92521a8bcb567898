// A stand-in for llama-quantize made of the peer's own libggml-base (its gguf
// reader/writer, to_float, ggml_quantize_chunk, ggml_validate_row_data):
// llama_model_quantize_impl's writer steps, with the per-tensor types and
// order given in PLAN. Used by scripts/quantize_digests.py (--ggml-base) when
// the peer's libggml-base is built but llama-quantize is not: the bytes and
// the file layout are then ggml's, only the type choices are ours.
// Build: gcc -O2 -I<llama.cpp>/ggml/include peer_mini_quantize.c -L<peer>/bin -lggml-base
// usage: peer_mini_quantize IN OUT FTYPE PLAN   (PLAN: "name ggml_type" per line)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "gguf.h"
int main(int argc, char** argv) {
  struct ggml_context* gctx = NULL;
  struct gguf_init_params ip = {false, &gctx};
  struct gguf_context* in = gguf_init_from_file(argv[1], ip);
  if (!in) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
  struct gguf_context* out = gguf_init_empty();
  gguf_set_kv(out, in);
  gguf_set_val_u32(out, "general.quantization_version", 2);
  gguf_set_val_u32(out, "general.file_type", (unsigned)atoi(argv[3]));
  gguf_remove_key(out, "split.no"); gguf_remove_key(out, "split.count"); gguf_remove_key(out, "split.tensors.count");
  FILE* p = fopen(argv[4], "r");
  char name[512]; int type; int n = 0;
  static char names[4096][128]; static int types[4096];
  while (fscanf(p, "%511s %d", name, &type) == 2) { strcpy(names[n], name); types[n] = type; n++; }
  fclose(p);
  for (int i = 0; i < n; i++) gguf_add_tensor(out, ggml_get_tensor(gctx, names[i]));
  for (int i = 0; i < n; i++) {
    struct ggml_tensor* t = ggml_get_tensor(gctx, names[i]);
    enum ggml_type nt = (enum ggml_type)types[i];
    if (nt == t->type) { gguf_set_tensor_data(out, names[i], t->data); continue; }
    int64_t n_per_row = t->ne[0], nrows = ggml_nelements(t) / n_per_row;
    float* f32 = (float*)t->data;
    if (t->type != GGML_TYPE_F32) {
      f32 = malloc(ggml_nelements(t) * 4);
      ggml_get_type_traits(t->type)->to_float(t->data, f32, ggml_nelements(t));
    }
    void* q = malloc(nrows * ggml_row_size(nt, n_per_row));
    size_t sz = ggml_quantize_chunk(nt, f32, q, 0, nrows, n_per_row, NULL);
    if (!ggml_validate_row_data(nt, q, sz)) { fprintf(stderr, "validation failed %s\n", names[i]); return 1; }
    gguf_set_tensor_type(out, names[i], nt);
    gguf_set_tensor_data(out, names[i], q);
  }
  if (!gguf_write_to_file(out, argv[2], false)) { fprintf(stderr, "write failed\n"); return 1; }
  return 0;
}
