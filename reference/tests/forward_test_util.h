#pragma once
// Helpers shared by test_forward and test_kv_cache: fixture and synthetic
// models, and "run these tokens in chunks" drivers returning all logits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "reference/model/model.h"
#include "reference/model/synthetic.h"
#include "test_support.h"

namespace oracle::test {

// Loads a fixture model; a missing fixture fails the test with its path.
inline Model fixture_model(const std::string& rel) {
  std::string path = models(rel);
  INFO("fixture " << path << " (set ORACLE_SHARED_DIR)");
  REQUIRE(have(path));
  LoadOptions lo;
  lo.compute_sha256 = false;
  return load_model(path, lo);
}

// A small synthetic model with the given head layout (seeded weights).
inline Model small_synthetic(int n_heads, int n_kv_heads, bool tied, uint64_t seed = 7) {
  SyntheticPreset p;
  p.name = "test";
  p.config.dim = 64;
  p.config.hidden_dim = 100;
  p.config.n_layers = 2;
  p.config.n_heads = n_heads;
  p.config.n_kv_heads = n_kv_heads;
  p.config.head_dim = 64 / n_heads;
  p.config.vocab_size = 97;
  p.config.seq_len = 160;
  p.config.tied_classifier = tied;
  return synthetic_model(p, seed, Vocab{});
}

inline std::vector<int> test_tokens(const Model& m, int n, int salt = 0) {
  std::vector<int> t(n);
  for (int i = 0; i < n; i++) t[i] = (i * 37 + salt * 11 + 5) % m.config.vocab_size;
  return t;
}

// Runs `tokens` through sequence `seq` in chunks of `chunk` tokens (all_logits);
// returns (n, vocab) logits.
inline std::vector<float> run_chunks(const Model& m, KvCache& kv, int seq, std::span<const int> tokens,
                                     int chunk, int threads = 1) {
  std::vector<float> all;
  ForwardOptions o;
  o.all_logits = true;
  o.threads = threads;
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    size_t n = std::min(tokens.size() - i, (size_t)chunk);
    auto l = forward(m, kv, seq, tokens.subspan(i, n), o);
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

inline std::vector<float> run_fresh(const Model& m, std::span<const int> tokens, int chunk,
                                    KvCacheOptions ko = {}, int threads = 1) {
  KvCache kv(m.config, ko);
  return run_chunks(m, kv, 0, tokens, chunk, threads);
}

}  // namespace oracle::test
