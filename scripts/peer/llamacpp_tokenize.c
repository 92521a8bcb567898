// Tokenization driver (never part of the product build): llama.cpp's
// llama_tokenize on many strings in one process, for the differential
// tokenizer fixtures (scripts/tokenizer_diff.py, docs/testing.md). Compiled by
// that script against the peer's libllama (scripts/build_peer.sh).
// Usage:
//   llamacpp_tokenize VOCAB.gguf vocab        one line per token id: id attr is_eog hex(text),
//                                             after a header line: n_vocab bos eos add_bos add_eos
//   llamacpp_tokenize VOCAB.gguf fim          one line: the FIM ids pre suf mid pad rep sep (-1: none)
//   llamacpp_tokenize VOCAB.gguf tokenize     stdin: one hex-encoded text per line; stdout per
//                                             line: ids of (add_special=0, parse_special=0) '|'
//                                             ids of (add_special=1, parse_special=1)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char* text, void* user) {
  (void)level, (void)text, (void)user;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static void print_ids(const struct llama_vocab* v, const char* text, int len, int special) {
  int cap = len * 4 + 16;
  llama_token* ids = malloc(sizeof(llama_token) * (size_t)cap);
  int n = llama_tokenize(v, text, len, ids, cap, special, special);
  if (n < 0) {
    cap = -n;
    ids = realloc(ids, sizeof(llama_token) * (size_t)cap);
    n = llama_tokenize(v, text, len, ids, cap, special, special);
  }
  for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
  free(ids);
}

static int dump_vocab(const struct llama_vocab* v) {
  const int n = llama_vocab_n_tokens(v);
  printf("%d %d %d %d %d\n", n, llama_vocab_bos(v), llama_vocab_eos(v), llama_vocab_get_add_bos(v) ? 1 : 0,
         llama_vocab_get_add_eos(v) ? 1 : 0);
  for (int id = 0; id < n; id++) {
    const char* t = llama_vocab_get_text(v, id);
    printf("%d %d %d ", id, (int)llama_vocab_get_attr(v, id), llama_vocab_is_eog(v, id) ? 1 : 0);
    for (const unsigned char* p = (const unsigned char*)t; *p; p++) printf("%02x", *p);
    printf("\n");
  }
  return 0;
}

static int tokenize_lines(const struct llama_vocab* v) {
  static char line[1 << 20], text[1 << 19];
  while (fgets(line, sizeof line, stdin)) {
    int len = 0;
    for (int i = 0; hexval(line[i]) >= 0 && hexval(line[i + 1]) >= 0; i += 2)
      text[len++] = (char)(hexval(line[i]) * 16 + hexval(line[i + 1]));
    print_ids(v, text, len, 0);
    printf("|");
    print_ids(v, text, len, 1);
    printf("\n");
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s VOCAB.gguf vocab|fim|tokenize\n", argv[0]);
    return 2;
  }
  llama_log_set(quiet, NULL);
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  struct llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  const struct llama_vocab* v = llama_model_get_vocab(model);
  int rc = 0;
  if (strcmp(argv[2], "vocab") == 0) {
    rc = dump_vocab(v);
  } else if (strcmp(argv[2], "fim") == 0) {
    printf("%d %d %d %d %d %d\n", llama_vocab_fim_pre(v), llama_vocab_fim_suf(v), llama_vocab_fim_mid(v),
           llama_vocab_fim_pad(v), llama_vocab_fim_rep(v), llama_vocab_fim_sep(v));
  } else {
    rc = tokenize_lines(v);
  }
  llama_model_free(model);
  llama_backend_free();
  return rc;
}
