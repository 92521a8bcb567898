// Tensor parallelism is bit-exact (docs/scale.md): for every golden model, a
// prefill and greedy decode steps give the same logits bits (SHA-256 per
// step) with 1, 2, 3 and 4 ranks (uneven splits included) as the plain forward.
// The ranks are threads of this process (dist::run_in_process); the MPI run of
// the same code is tools/tests/cli_mpi.sh. Catches TP_RANK_SUM_ORDER.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "distributed/tensor_parallel.h"
#include "base/sha256.h"
#include "reference/compute/forward.h"
#include "numerics/numerics.h"
#include "test_support.h"

using namespace oracle;

namespace {

// Per-step logits hashes: prefill of `prompt`, then `steps` greedy tokens.
std::vector<std::string> run_hashes(const Model& m, const TensorSplit* split, int steps) {
  KvCache kv(kv_slice_config(m.config, split), KvCacheOptions{});
  ForwardOptions fo;
  fo.split = split;
  const std::vector<int> prompt = {1, 7, 42, 3, 99, 5, 11};
  std::vector<float> logits = forward(m, kv, 0, prompt, fo);  // (vocab)
  std::vector<std::string> out;
  for (int s = 0; s < steps; s++) {
    out.push_back(sha256_hex(logits.data(), logits.size() * sizeof(float)));
    int next = num::argmax_lowest(logits.data(), m.config.vocab_size);
    logits = forward(m, kv, 0, std::vector<int>{next}, fo);
  }
  return out;
}

// Rank 0's hashes with `ranks` thread ranks; every rank must agree with rank 0.
std::vector<std::string> tp_hashes(const Model& m, int ranks, int steps) {
  std::vector<std::vector<std::string>> per_rank(ranks);  // (ranks) slot r written by rank r
  dist::run_in_process(ranks, [&](dist::Communicator& comm) {
    const TensorSplit split = dist::tensor_split(comm);
    per_rank[comm.rank()] = run_hashes(m, &split, steps);
  });
  for (int r = 1; r < ranks; r++) CHECK(per_rank[r] == per_rank[0]);
  return per_rank[0];
}

void check_model(const std::string& path, int steps) {
  if (!test::have(path)) FAIL("missing fixture " << path);
  const Model m = load_model(path);
  const std::vector<std::string> plain = run_hashes(m, nullptr, steps);
  for (int ranks = 1; ranks <= 4; ranks++) {
    INFO(path << " with " << ranks << " ranks");
    CHECK(tp_hashes(m, ranks, steps) == plain);
  }
}

}  // namespace

TEST_CASE("split_range: contiguous, in rank order, uneven splits first", "[tp]") {
  CHECK(split_range(10, 0, 3).begin == 0);
  CHECK(split_range(10, 0, 3).end == 4);
  CHECK(split_range(10, 1, 3).begin == 4);
  CHECK(split_range(10, 2, 3).end == 10);
  CHECK(split_range(3, 3, 4).size() == 0);  // more ranks than rows: the last gets none
  for (int n : {1, 5, 64, 512})
    for (int ranks = 1; ranks <= 5; ranks++) {
      int at = 0;
      for (int r = 0; r < ranks; r++) {
        CHECK(split_range(n, r, ranks).begin == at);
        at = split_range(n, r, ranks).end;
      }
      CHECK(at == n);
    }
}

TEST_CASE("in-process all_gather: every rank's block in rank order, exact", "[tp]") {
  dist::run_in_process(3, [](dist::Communicator& comm) {
    const std::vector<int> counts = {2, 1, 0};
    std::vector<float> mine((size_t)counts[comm.rank()], 0.1f * (float)(comm.rank() + 1));
    std::vector<float> all(3, -1.0f);
    comm.all_gather(mine, counts, all.data());
    CHECK(all == std::vector<float>{0.1f, 0.1f, 0.2f});
    const std::vector<std::string> got = comm.gather(std::to_string(comm.rank()));
    if (comm.rank() == 0) CHECK(got == std::vector<std::string>{"0", "1", "2"});
    else CHECK(got.empty());
    CHECK(comm.broadcast(comm.rank() == 0 ? 7 : -1) == 7);
    CHECK(comm.stats().all_gathers == 1);
  });
}

TEST_CASE("in-process group: a rank's exception ends the group and is rethrown", "[tp]") {
  CHECK_THROWS_WITH(dist::run_in_process(3,
                                         [](dist::Communicator& comm) {
                                           if (comm.rank() == 1) throw std::invalid_argument("rank 1 failed");
                                           std::vector<float> all(3);
                                           const std::vector<int> counts = {1, 1, 1};
                                           const float x = 1.0f;
                                           comm.all_gather(std::span<const float>(&x, 1), counts, all.data());
                                         }),
                    "rank 1 failed");
}

TEST_CASE("tensor-parallel forward: same logits bits for 1-4 ranks on the golden models", "[tp]") {
  for (const char* m : {"gguf/stories260K.gguf", "gguf/stories260K-f16.gguf", "stories260K/stories260K.bin",
                        "gguf/aidreams260K.gguf", "gguf/llama2xs.gguf", "gguf/llama2xs-q8_0.gguf",
                        "gguf/llama2xs-q4_0.gguf", "aidreams260K/aidreams260K.bin", "llama2xs/llama2xs.bin"})
    check_model(test::models(m), 6);
}

TEST_CASE("tensor-parallel forward: the KV cache holds this rank's kv heads only", "[tp]") {
  const Model m = load_model(test::models("gguf/stories260K.gguf"));
  const int heads = m.config.n_kv_heads;
  for (int ranks = 2; ranks <= 4; ranks++) {  // each rank's cache: split_range(heads) of it; together all heads
    int total = 0;
    for (int r = 0; r < ranks; r++) {
      TensorSplit s;
      s.rank = r;
      s.ranks = ranks;
      const int mine = kv_slice_config(m.config, &s).n_kv_heads;
      CHECK(mine == heads / ranks + (r < heads % ranks ? 1 : 0));
      total += mine;
    }
    CHECK(total == heads);
  }
  uint64_t bytes = 0;
  for (int r = 0; r < 3; r++) bytes += slice_weight_bytes(m, slice_layout(m.config, r, 3));
  CHECK(bytes - 2 * (uint64_t)(2 * m.config.n_layers + 1) * m.config.dim * 4 ==
        slice_weight_bytes(m, slice_layout(m.config, 0, 1)));  // slices partition the matrices; norms on every rank
}

TEST_CASE("tensor-parallel forward on SmolLM2-135M: same logits bits for 1-4 ranks", "[smollm2][.]") {
  check_model(test::models("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"), 3);
}
