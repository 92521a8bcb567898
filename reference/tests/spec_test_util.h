#pragma once
// Fixtures shared by the speculative-decoding tests: the real draft/target
// pair (stories260K, llama2xs: same tok512 vocabulary), llama2.c's greedy run
// from "Once upon a time", and the sampler configurations.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "forward_test_util.h"
#include "reference/generate/speculative.h"

namespace oracle::test {

// ---- fixtures ---------------------------------------------------------------------
struct Pair {
  Model stories = fixture_model("stories260K/stories260K.bin");
  Model xs = fixture_model("llama2xs/llama2xs.bin");
};

inline const Pair& pair() {
  static const Pair p;  // loaded once per test binary (read-only)
  return p;
}

// llama2.c's greedy run from "Once upon a time": prompt ids after BOS, then the
// generated ids (positions 1..200).
inline std::vector<int> reference_ids() {
  const std::string path = models("stories260K/expected_greedy_once_upon_a_time_200steps.ids.txt");
  std::ifstream f(path);
  INFO("fixture " << path);
  REQUIRE(f.good());
  return std::vector<int>(std::istream_iterator<int>(f), {});
}

// BOS + the first 10 ids of the reference run (the prompt is shorter than 10
// tokens, so the reference continuation from here is greedy).
inline std::vector<int> prompt_ids() {
  std::vector<int> ids = reference_ids();
  std::vector<int> p{1};
  p.insert(p.end(), ids.begin(), ids.begin() + 10);
  return p;
}

inline std::string first_id_mismatch(const std::vector<int>& a, const std::vector<int>& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); i++)
    if (a[i] != b[i]) return "first mismatch at output " + std::to_string(i) + ": " + std::to_string(a[i]) +
                              " vs " + std::to_string(b[i]);
  if (a.size() != b.size()) return "lengths differ: " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  return "";
}

inline SamplerConfig greedy_config() {
  SamplerConfig c;
  c.temperature = 0.0f;
  return c;
}

// temperature, top-k, top-p, min-p and a repetition penalty all active.
inline SamplerConfig sampling_config(uint64_t seed = 0) {
  SamplerConfig c = preset_config(Preset::LlamaCpp);  // temp 0.8, top-k 40, top-p 0.95, min-p 0.05
  c.repetition_penalty = 1.1f;
  c.seed = seed;
  return c;
}

inline KvCacheOptions cache(bool paged) {
  KvCacheOptions o;
  o.paged = paged;
  o.block_size = 16;
  return o;
}

}  // namespace oracle::test
